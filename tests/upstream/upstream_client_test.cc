// Tests of UpstreamClient against fake upstreams on loopback: the project's HttpServer (JSON
// and Server-Sent Events answers) and a raw socket server that counts connections.
#include "upstream/upstream_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <functional>
#include <future>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "http/http_server.h"
#include "tests/common/wait_until.h"

namespace switchyard::upstream {
namespace {

using namespace std::chrono_literals;
using ::switchyard::testing::kWaitSeconds;
using ::switchyard::testing::WaitUntil;

std::string Url(uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

// A port nothing listens on: bound once, then closed.
uint16_t ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Forwards and waits for the answer (status 0 when none came: WaitUntil's hang guard).
http::HttpResponse ForwardAndWait(UpstreamClient& client, const http::HttpRequest& req, size_t i,
                                  const std::string& auth = "") {
  auto promise = std::make_shared<std::promise<http::HttpResponse>>();
  auto future = promise->get_future();
  client.Forward(req, i, auth,
                 [promise](http::HttpResponse r) { promise->set_value(std::move(r)); });
  if (future.wait_for(std::chrono::duration<double>(kWaitSeconds)) != std::future_status::ready)
    return http::HttpResponse{0};
  return future.get();
}

http::HttpRequest Post(const std::string& target, const std::string& body) {
  http::HttpRequest req;
  req.method = "POST";
  req.target = target;
  req.body = body;
  req.headers["content-type"] = "application/json";
  req.headers["content-length"] = std::to_string(body.size());
  req.headers["host"] = "switchyard.example:8470";
  return req;
}

// A raw HTTP/1.1 server on one thread (one connection at a time) answering every request
// 200 with {"n":<request number>}; counts connections and requests. With idle_close_ms > 0
// it closes a connection idle that long without saying so (a keep-alive timeout).
class RawUpstream {
 public:
  explicit RawUpstream(int idle_close_ms = 0) : idle_close_ms_(idle_close_ms) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd_, 16);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~RawUpstream() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  int accepts() const { return accepts_.load(); }
  int requests() const { return requests_.load(); }
  int closes() const { return closes_.load(); }  // connections it closed

 private:
  void Loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      int conn = ::accept(fd_, nullptr, nullptr);
      if (conn < 0) continue;
      accepts_++;
      Serve(conn);
      ::close(conn);
      closes_++;
    }
  }

  void Serve(int conn) {
    std::string buf;
    while (!stop_) {
      pollfd p{conn, POLLIN, 0};
      int r = ::poll(&p, 1, idle_close_ms_ > 0 ? idle_close_ms_ : 20);
      if (r == 0 && idle_close_ms_ > 0) return;
      if (r <= 0) continue;
      char tmp[4096];
      ssize_t n = ::recv(conn, tmp, sizeof(tmp), 0);
      if (n <= 0) return;
      buf.append(tmp, static_cast<size_t>(n));
      while (TakeRequest(&buf)) {
        std::string body = "{\"n\":" + std::to_string(++requests_) + "}";
        std::string resp = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n" + body;
        ::send(conn, resp.data(), resp.size(), MSG_NOSIGNAL);
      }
    }
  }

  // Removes one complete request from `buf`; false when none is complete yet.
  static bool TakeRequest(std::string* buf) {
    size_t end = buf->find("\r\n\r\n");
    if (end == std::string::npos) return false;
    std::string head = buf->substr(0, end);
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t length = 0;
    if (size_t at = head.find("content-length:"); at != std::string::npos) {
      length = std::stoul(head.substr(at + 15));
    }
    if (buf->size() < end + 4 + length) return false;
    buf->erase(0, end + 4 + length);
    return true;
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  int idle_close_ms_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepts_{0}, requests_{0}, closes_{0};
};

// A blocking downstream client of the proxy server: one request, then its chunked body.
class Downstream {
 public:
  Downstream(uint16_t port, const std::string& target) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    std::string req = "POST " + target +
                      " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Content-Length: 2\r\n\r\n{}";
    if (connected_) ::send(fd_, req.data(), req.size(), MSG_NOSIGNAL);
  }
  ~Downstream() { Close(); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool connected() const { return connected_; }

  // The status line and headers ("" on a timeout).
  std::string ReadHead() {
    std::string head;
    if (!ReadUntil("\r\n\r\n", &head)) return "";
    return head;
  }
  // One chunk's data; "" at the last chunk, nullopt-like "\x01" on an error.
  std::string ReadChunk() {
    std::string line, data;
    if (!ReadUntil("\r\n", &line)) return "\x01";
    size_t size = std::stoul(line, nullptr, 16);
    if (size == 0) return ReadUntil("\r\n", &line) ? "" : "\x01";
    if (!ReadBytes(size + 2, &data)) return "\x01";
    return data.substr(0, size);
  }

 private:
  bool Fill() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(kWaitSeconds * 1000)) <= 0) return false;
    char tmp[4096];
    ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  bool ReadUntil(const std::string& delim, std::string* out) {
    size_t at;
    while ((at = buf_.find(delim)) == std::string::npos) {
      if (!Fill()) return false;
    }
    *out = buf_.substr(0, at);
    buf_.erase(0, at + delim.size());
    return true;
  }
  bool ReadBytes(size_t n, std::string* out) {
    while (buf_.size() < n) {
      if (!Fill()) return false;
    }
    *out = buf_.substr(0, n);
    buf_.erase(0, n);
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

constexpr int kStreamChunks = 5;

std::string SseChunk(int i) { return "data: {\"i\":" + std::to_string(i) + "}\n\n"; }

// Fake upstreams on HttpServer (2 of them) and a proxy server forwarding to the client.
//   /json: 200 application/json echoing what it saw in x-seen-* headers and the body;
//   /slow: no answer until the test gives one (AnswerSlow);
//   /stream, /forever: SSE chunks from a producer thread, chunk i once chunks_allowed_ > i
//   (the test lets them out): kStreamChunks of them then the end, or chunks until the
//   stream is cancelled.
class OpenAiUpstreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int u = 0; u < 2; ++u) {
      http::HttpServerOptions opts;
      opts.host = "127.0.0.1";
      opts.port = 0;
      auto server = std::make_unique<http::HttpServer>(
          opts, [this, u](const http::HttpRequest& req, http::HttpServer::Respond respond) {
            Handle(u, req, std::move(respond));
          });
      auto port = server->Start();
      ASSERT_TRUE(port.ok()) << port.status().ToString();
      ports_.push_back(*port);
      upstreams_.push_back(std::move(server));
    }
  }

  void TearDown() override {
    chunks_allowed_ = kStreamChunks;  // a held /stream ends; the rest end with Stop()
    AnswerSlow();
    if (proxy_) proxy_->Stop();
    client_.reset();
    for (auto& s : upstreams_) s->Stop();
    MutexLock lock(&mu_);
    for (auto& t : producers_) t.join();
  }

  void MakeClient(UpstreamOptions opts) {
    if (opts.urls.empty()) opts.urls = {Url(ports_[0]), Url(ports_[1])};
    auto client = UpstreamClient::Create(std::move(opts));
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  // A server forwarding every request to upstream 0; records `produced_` at `done`, and
  // what the hooks saw. With `transform`, the stream gets what it makes of the body, and
  // `tail` last (written by on_end while it holds the stream's end back).
  uint16_t StartProxy(std::function<std::string(std::string_view)> transform = nullptr,
                      std::string tail = "") {
    http::HttpServerOptions opts;
    opts.host = "127.0.0.1";
    opts.port = 0;
    proxy_ = std::make_unique<http::HttpServer>(
        opts,
        [this, transform, tail](const http::HttpRequest& req, http::HttpServer::Respond respond) {
          UpstreamClient::Hooks hooks;
          hooks.on_bytes = [this](std::string_view bytes) {
            MutexLock lock(&mu_);
            hooked_bytes_.append(bytes);
          };
          hooks.transform = transform;
          auto stream = std::make_shared<std::shared_ptr<http::ResponseStream>>();
          hooks.on_end = [this, stream, tail](bool complete, UpstreamClient::CloseHold) {
            if (*stream && !tail.empty()) (*stream)->Write(tail);
            ends_++;
            end_complete_ = complete;
          };
          client_->Forward(
              req, 0, "",
              [this, respond, stream](http::HttpResponse r) {
                produced_at_done_ = produced_.load();
                *stream = r.stream;
                respond(std::move(r));
              },
              std::move(hooks));
        });
    auto port = proxy_->Start();
    EXPECT_TRUE(port.ok());
    return port.ok() ? *port : 0;
  }

  void WaitForEnd() {
    WaitUntil([&] { return ends_.load() > 0; });
  }

  // Answers the /slow requests held so far (200, empty JSON).
  void AnswerSlow() {
    std::vector<http::HttpServer::Respond> held;
    {
      MutexLock lock(&mu_);
      held.swap(slow_);
    }
    for (auto& respond : held) {
      http::HttpResponse r;
      r.content_type = "application/json";
      r.body = "{}";
      respond(std::move(r));
    }
  }

  void Handle(int u, const http::HttpRequest& req, http::HttpServer::Respond respond) {
    std::string path(req.path());
    if (path == "/stream" || path == "/forever") return Stream(path == "/forever", respond);
    if (path == "/slow") {
      MutexLock lock(&mu_);
      slow_.push_back(std::move(respond));
      return;
    }
    http::HttpResponse r;
    r.status = path == "/busy" ? 429 : 200;
    r.content_type = "application/json; charset=utf-8";
    r.headers["x-upstream"] = std::to_string(u);
    for (const char* name : {"authorization", "host", "keep-alive", "x-secret", "x-session-id"}) {
      std::string v = req.Header(name);
      r.headers[std::string("x-seen-") + name] = v.empty() ? "<none>" : v;
    }
    r.headers["x-seen-request"] = req.method + " " + req.target;
    r.body = req.body;
    respond(std::move(r));
  }

  void Stream(bool forever, const http::HttpServer::Respond& respond) {
    auto stream = std::make_shared<http::ResponseStream>();
    stream->SetOnCancel([this] { upstream_cancelled_ = true; });
    http::HttpResponse r;
    r.content_type = "text/event-stream";
    r.stream = stream;
    respond(std::move(r));
    MutexLock lock(&mu_);
    producers_.emplace_back([this, stream, forever] {
      for (int i = 0; forever || i < kStreamChunks; ++i) {
        WaitUntil([&] { return chunks_allowed_.load() > i || stream->cancelled(); });
        if (chunks_allowed_.load() <= i || !stream->Write(SseChunk(i))) return;
        produced_++;
      }
      stream->Close();
    });
  }

  std::vector<uint16_t> ports_;
  std::vector<std::unique_ptr<http::HttpServer>> upstreams_;
  std::unique_ptr<UpstreamClient> client_;
  std::unique_ptr<http::HttpServer> proxy_;
  Mutex mu_;
  std::vector<std::thread> producers_;
  std::atomic<int> chunks_allowed_{kStreamChunks - 1};  // the last chunk waits for the test
  std::vector<http::HttpServer::Respond> slow_;         // guarded by mu_
  std::atomic<int> produced_{0};
  std::atomic<int> produced_at_done_{-1};
  std::atomic<bool> upstream_cancelled_{false};
  std::string hooked_bytes_;  // guarded by mu_
  std::atomic<int> ends_{0};
  std::atomic<bool> end_complete_{false};
};

TEST(OpenAiUpstreamCreate, RejectsBadUrls) {
  for (const char* bad :
       {"https://127.0.0.1:8000", "127.0.0.1:8000", "http://127.0.0.1:8000/v1", "http://:8000",
        "http://127.0.0.1:0", "http://127.0.0.1:99999", "http://h:80x", "http://u@h:80"}) {
    UpstreamOptions opts;
    opts.urls = {"http://127.0.0.1:8000", bad};
    auto client = UpstreamClient::Create(opts);
    ASSERT_FALSE(client.ok()) << bad;
    EXPECT_TRUE(client.status().IsInvalidArgument()) << bad;
    EXPECT_NE(client.status().message().find(bad), std::string::npos) << client.status().message();
  }
  UpstreamOptions https;
  https.urls = {"https://api.example.com"};
  EXPECT_NE(UpstreamClient::Create(https).status().message().find("https is not supported"),
            std::string::npos);
  EXPECT_FALSE(UpstreamClient::Create(UpstreamOptions{}).ok());

  UpstreamOptions good;
  good.urls = {"http://127.0.0.1:8000/", "http://localhost", "http://[::1]:9000"};
  auto client = UpstreamClient::Create(good);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ((*client)->size(), 3u);
  EXPECT_EQ((*client)->url(0), "http://127.0.0.1:8000");
}

TEST_F(OpenAiUpstreamTest, JsonAnswerPassesBackUnchanged) {
  MakeClient({});
  const std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
  http::HttpResponse r = ForwardAndWait(*client_, Post("/v1/chat/completions?x=1", body), 1);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, body);
  EXPECT_EQ(r.content_type, "application/json; charset=utf-8");
  EXPECT_EQ(r.stream, nullptr);
  EXPECT_EQ(r.headers["x-upstream"], "1");
  EXPECT_EQ(r.headers["x-seen-request"], "POST /v1/chat/completions?x=1");
  EXPECT_EQ(r.headers["x-seen-host"], "127.0.0.1:" + std::to_string(ports_[1]));
  EXPECT_EQ(r.headers.count("content-length"), 0u);
  EXPECT_EQ(r.headers.count("server"), 0u);

  // An upstream's own error passes back as it is, and is not a failure of the client.
  http::HttpResponse busy = ForwardAndWait(*client_, Post("/busy", "{}"), 1);
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.body, "{}");
  UpstreamClient::Stats s = client_->stats(1);
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.failures, 0u);
  EXPECT_EQ(s.bytes_in, body.size() + 2);
  EXPECT_EQ(client_->stats(0).requests, 0u);
}

TEST_F(OpenAiUpstreamTest, AuthorizationIsReplacedOrRemovedAndHopByHopDropped) {
  MakeClient({});
  http::HttpRequest req = Post("/json", "{}");
  req.headers["authorization"] = "Bearer client-key";
  req.headers["connection"] = "keep-alive, x-secret";
  req.headers["keep-alive"] = "timeout=5";
  req.headers["x-secret"] = "hop";
  req.headers["x-session-id"] = "s-1";
  http::HttpResponse replaced = ForwardAndWait(*client_, req, 0, "Bearer upstream-key");
  EXPECT_EQ(replaced.status, 200);
  EXPECT_EQ(replaced.headers["x-seen-authorization"], "Bearer upstream-key");
  EXPECT_EQ(replaced.headers["x-seen-keep-alive"], "<none>");
  EXPECT_EQ(replaced.headers["x-seen-x-secret"], "<none>");
  EXPECT_EQ(replaced.headers["x-seen-x-session-id"], "s-1");

  http::HttpResponse removed = ForwardAndWait(*client_, req, 0);
  EXPECT_EQ(removed.status, 200);
  EXPECT_EQ(removed.headers["x-seen-authorization"], "<none>");
}

TEST_F(OpenAiUpstreamTest, StreamedAnswerArrivesInOrderBeforeTheLastChunkIsProduced) {
  MakeClient({});
  uint16_t proxy = StartProxy();
  Downstream down(proxy, "/stream");
  ASSERT_TRUE(down.connected());
  std::string head = down.ReadHead();
  ASSERT_NE(head.find("200"), std::string::npos) << head;
  EXPECT_NE(head.find("text/event-stream"), std::string::npos) << head;
  EXPECT_NE(head.find("chunked"), std::string::npos) << head;
  std::string body;
  std::string chunk = down.ReadChunk();
  // The first chunk came through while the upstream was still producing: its last chunk
  // is held until now.
  EXPECT_LT(produced_.load(), kStreamChunks);
  // `done` ran as soon as the head came, before the last chunk existed.
  EXPECT_GE(produced_at_done_.load(), 0);
  EXPECT_LT(produced_at_done_.load(), kStreamChunks);
  chunks_allowed_ = kStreamChunks;
  while (!chunk.empty() && chunk != "\x01") {
    body += chunk;
    chunk = down.ReadChunk();
  }
  EXPECT_EQ(chunk, "") << "the stream did not end cleanly";
  std::string expected;
  for (int i = 0; i < kStreamChunks; ++i) expected += SseChunk(i);
  EXPECT_EQ(body, expected);
  WaitForEnd();  // the upstream's answer ended: the client's figures are final
  EXPECT_EQ(client_->stats(0).bytes_in, expected.size());
  EXPECT_EQ(client_->stats(0).failures, 0u);
  EXPECT_EQ(ends_.load(), 1);
  EXPECT_TRUE(end_complete_.load());
  MutexLock lock(&mu_);
  EXPECT_EQ(hooked_bytes_, expected);
}

TEST_F(OpenAiUpstreamTest, ATransformedStreamCarriesWhatTheTransformMadeThenTheCallersEnd) {
  MakeClient({});
  chunks_allowed_ = kStreamChunks;
  auto upper = [](std::string_view bytes) {
    std::string out(bytes);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
  };
  uint16_t proxy = StartProxy(upper, "event: end\n\n");
  Downstream down(proxy, "/stream");
  ASSERT_TRUE(down.connected());
  ASSERT_NE(down.ReadHead().find("200"), std::string::npos);
  std::string body, chunk;
  while (!(chunk = down.ReadChunk()).empty() && chunk != "\x01") body += chunk;
  EXPECT_EQ(chunk, "") << "the stream did not end cleanly";
  std::string expected;
  for (int i = 0; i < kStreamChunks; ++i) expected += SseChunk(i);
  EXPECT_EQ(body, upper(expected) + "event: end\n\n")
      << "the transform's bytes, then what on_end wrote before letting the stream end";
  WaitForEnd();
  EXPECT_TRUE(end_complete_.load());
  MutexLock lock(&mu_);
  EXPECT_EQ(hooked_bytes_, expected) << "on_bytes still sees the upstream's bytes";
}

TEST_F(OpenAiUpstreamTest, ClientCancellingTheStreamClosesTheUpstreamConnection) {
  MakeClient({});
  chunks_allowed_ = 2;  // then the producer holds its next chunk
  uint16_t proxy = StartProxy();
  Downstream down(proxy, "/forever");
  ASSERT_TRUE(down.connected());
  ASSERT_NE(down.ReadHead().find("200"), std::string::npos);
  std::string got;
  while (got.size() < (SseChunk(0) + SseChunk(1)).size()) {
    std::string chunk = down.ReadChunk();
    ASSERT_FALSE(chunk.empty() || chunk == "\x01") << "the stream ended after: " << got;
    got += chunk;
  }
  EXPECT_EQ(got, SseChunk(0) + SseChunk(1));
  EXPECT_FALSE(upstream_cancelled_.load());
  down.Close();
  // The producer is held (its next chunk waits): only the closed connections can cancel.
  EXPECT_TRUE(WaitUntil([&] { return upstream_cancelled_.load(); }))
      << "the upstream's stream is still open";
  EXPECT_EQ(client_->stats(0).failures, 0u);
  WaitForEnd();
  EXPECT_EQ(ends_.load(), 1);
  EXPECT_FALSE(end_complete_.load());
}

TEST_F(OpenAiUpstreamTest, PickIsStablePerKeyAndSpreadsKeys) {
  MakeClient({});
  int counts[2] = {0, 0};
  for (int k = 0; k < 200; ++k) {
    std::string key = "tenant-a/session-" + std::to_string(k);
    size_t first = client_->Pick(key);
    ASSERT_LT(first, 2u);
    for (int again = 0; again < 3; ++again) EXPECT_EQ(client_->Pick(key), first) << key;
    counts[first]++;
  }
  EXPECT_GT(counts[0], 60);
  EXPECT_GT(counts[1], 60);
  size_t a = client_->Pick(""), b = client_->Pick("");
  EXPECT_NE(a, b);  // round-robin
}

TEST_F(OpenAiUpstreamTest, UnreachableUpstreamGives502WithAnOpenAiError) {
  uint16_t closed = ClosedPort();
  UpstreamOptions opts;
  opts.urls = {Url(closed)};
  MakeClient(opts);
  http::HttpResponse r = ForwardAndWait(*client_, Post("/v1/chat/completions", "{}"), 0);
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body.rfind(R"({"error":{"message":"upstream )" + Url(closed), 0), 0u) << r.body;
  EXPECT_NE(r.body.find(R"("type":"upstream_error","param":null,"code":"upstream_unreachable"}})"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(client_->stats(0).failures, 1u);
}

// The upstream holds its answer until the test gives it, after the 504: the timeout, not
// the answer, ended the call.
TEST_F(OpenAiUpstreamTest, SlowUpstreamPastTheResponseTimeoutGives504) {
  UpstreamOptions opts;
  opts.response_timeout_ms = 200;
  MakeClient(opts);
  http::HttpResponse r = ForwardAndWait(*client_, Post("/slow", "{}"), 0);
  {
    MutexLock lock(&mu_);
    EXPECT_EQ(slow_.size(), 1u) << "the upstream got the request and has not answered it";
  }
  AnswerSlow();
  EXPECT_EQ(r.status, 504);
  EXPECT_NE(r.body.find(R"("code":"upstream_timeout")"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(Url(ports_[0])), std::string::npos) << r.body;
  EXPECT_EQ(client_->stats(0).failures, 1u);
}

TEST_F(OpenAiUpstreamTest, SequentialRequestsReuseOneConnection) {
  MakeClient({});
  for (int i = 0; i < 20; ++i) {
    http::HttpResponse r =
        ForwardAndWait(*client_, Post("/json", "{\"i\":" + std::to_string(i) + "}"), 0);
    ASSERT_EQ(r.status, 200);
  }
  EXPECT_EQ(client_->stats(0).connections, 1u);

  RawUpstream raw;
  UpstreamOptions opts;
  opts.urls = {Url(raw.port())};
  auto client = UpstreamClient::Create(opts);
  ASSERT_TRUE(client.ok());
  for (int i = 0; i < 20; ++i) {
    http::HttpResponse r = ForwardAndWait(**client, Post("/v1/completions", "{}"), 0);
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "{\"n\":" + std::to_string(i + 1) + "}");
  }
  EXPECT_EQ(raw.accepts(), 1);  // counted by the server
  EXPECT_EQ(raw.requests(), 20);
}

TEST_F(OpenAiUpstreamTest, IdleConnectionClosedByTheUpstreamIsReplacedWithoutDuplicates) {
  RawUpstream raw(/*idle_close_ms=*/30);
  UpstreamOptions opts;
  opts.urls = {Url(raw.port())};
  MakeClient(opts);
  for (int i = 0; i < 4; ++i) {
    http::HttpResponse r = ForwardAndWait(*client_, Post("/v1/completions", "{}"), 0);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body, "{\"n\":" + std::to_string(i + 1) + "}");
    // The upstream closes the idle connection (30 ms of silence) before the next request.
    ASSERT_TRUE(WaitUntil([&] { return raw.closes() == i + 1; }));
  }
  EXPECT_EQ(raw.requests(), 4);  // none sent twice
  EXPECT_EQ(raw.accepts(), 4);
  EXPECT_EQ(client_->stats(0).failures, 0u);
}

TEST_F(OpenAiUpstreamTest, ConcurrentStreamsDoNotHoldThreads) {
  UpstreamOptions opts;
  opts.threads = 1;
  MakeClient(opts);
  uint16_t proxy = StartProxy();
  std::vector<std::unique_ptr<Downstream>> downs;
  for (int i = 0; i < 6; ++i) downs.push_back(std::make_unique<Downstream>(proxy, "/stream"));
  std::string expected;
  for (int i = 0; i < kStreamChunks; ++i) expected += SseChunk(i);
  // Every stream's head and first chunk while none of them can end (their last chunks are
  // held): the client's one thread serves all six at once.
  std::vector<std::string> bodies(downs.size());
  for (size_t k = 0; k < downs.size(); ++k) {
    ASSERT_NE(downs[k]->ReadHead().find("200"), std::string::npos) << "stream " << k;
    bodies[k] = downs[k]->ReadChunk();  // chunk 0, perhaps with the next ones
    ASSERT_EQ(bodies[k].rfind(SseChunk(0), 0), 0u) << "stream " << k << ": " << bodies[k];
  }
  chunks_allowed_ = kStreamChunks;
  for (size_t k = 0; k < downs.size(); ++k) {
    std::string chunk;
    while (!(chunk = downs[k]->ReadChunk()).empty() && chunk != "\x01") bodies[k] += chunk;
    EXPECT_EQ(bodies[k], expected) << "stream " << k;
  }
}

}  // namespace
}  // namespace switchyard::upstream
