// The only Boost.Beast translation unit of the service (Beast is heavy to compile).
#include "http/http_server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/completion_batch.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "http/content_encoding.h"

namespace switchyard::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace beast_http = beast::http;
using tcp = asio::ip::tcp;

// The connection's side of ResponseStream (its private interface).
class StreamDriver {
 public:
  static bool Attach(ResponseStream& s, std::function<void()> wake) {
    return s.Attach(std::move(wake));
  }
  static ResponseStream::Batch Take(ResponseStream& s) { return s.Take(); }
  static void Finish(ResponseStream& s) { s.Finish(); }
  static void Cancel(ResponseStream& s, bool wake) { s.Cancel(wake); }
};

namespace {

// The streams handed to the server and not yet finished, so that Stop() can cancel them.
// Thread-safety: any thread.
class StreamRegistry {
 public:
  // Records `s`; once the server is stopping, cancels it instead and returns false.
  bool Add(const std::shared_ptr<ResponseStream>& s) {
    {
      MutexLock lock(&mu_);
      if (!stopping_) {
        open_[s.get()] = s;
        return true;
      }
    }
    StreamDriver::Cancel(*s, /*wake=*/false);
    return false;
  }

  void Remove(const ResponseStream* s) {
    MutexLock lock(&mu_);
    open_.erase(s);
  }

  // Marks the server stopping and cancels every open stream (on this thread).
  void CancelAll() {
    std::vector<std::shared_ptr<ResponseStream>> open;
    {
      MutexLock lock(&mu_);
      stopping_ = true;
      for (auto& [ptr, weak] : open_) {
        if (auto s = weak.lock()) open.push_back(std::move(s));
      }
      open_.clear();
    }
    for (auto& s : open) StreamDriver::Cancel(*s, /*wake=*/false);
  }

 private:
  Mutex mu_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::unordered_map<const ResponseStream*, std::weak_ptr<ResponseStream>> open_ GUARDED_BY(mu_);
};

// Bytes a client may send ahead (its next request) while a stream is being sent; more and
// the connection is dropped.
constexpr size_t kMaxReadAheadBytes = 64 * 1024;

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";
constexpr std::string_view kCrlfLastChunk = "\r\n0\r\n\r\n";

asio::const_buffer Buffer(std::string_view s) { return asio::buffer(s.data(), s.size()); }

bool IsEventStream(const std::string& content_type) {
  return content_type.compare(0, 17, "text/event-stream") == 0;
}

bool HasHeader(const std::map<std::string, std::string>& headers, std::string_view lower_name) {
  for (const auto& [k, v] : headers) {
    if (k.size() != lower_name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < k.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(k[i])) == lower_name[i];
    }
    if (same) return true;
  }
  return false;
}

const char* ReasonCode(int status) {
  switch (status) {
    case 413:
      return "payload_too_large";
    case 415:
      return "unsupported_media_type";
    case 400:
      return "bad_request";
    default:
      return "error";
  }
}

// A compressed body (Content-Encoding) decoded in place, the header dropped: handlers, and
// a proxy forwarding the request, see the body as plain bytes. The HTTP status of a failure.
int DecodeBody(HttpRequest* req, size_t limit, std::string* error) {
  auto it = req->headers.find("content-encoding");
  if (it == req->headers.end()) return 0;
  Status st = DecodeContentEncoding(it->second, limit, &req->body);
  if (!st.ok()) {
    *error = st.message();
    return st.code() == StatusCode::kNotSupported        ? 415
           : st.code() == StatusCode::kResourceExhausted ? 413
                                                         : 400;
  }
  req->headers.erase(it);
  if (req->headers.count("content-length")) {
    req->headers["content-length"] = std::to_string(req->body.size());
  }
  return 0;
}

// One connection: read a request, call the handler, write the response, repeat.
//
// A streamed response (HttpResponse::stream): the head goes out at once, then each batch of
// queued chunks as one HTTP chunk, one write at a time, pumped on this thread (the stream
// wakes it through a post that holds the session weakly). While the stream is open the
// session reads ahead (no timeout) to notice the client going away; what it reads is the
// start of the next request. The session is kept alive by that read and by its writes.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(asio::io_context& io, tcp::socket socket, const HttpServerOptions& options,
          const HttpServer::AsyncHandler& handler, std::atomic<size_t>* live,
          StreamRegistry* streams)
      : io_(io),
        stream_(std::move(socket)),
        options_(options),
        handler_(handler),
        live_(live),
        streams_(streams) {
    live_->fetch_add(1);
  }
  ~Session() {
    // The connection died with its stream open; no wake: the io_context may be going away.
    if (rs_ != nullptr) {
      StreamDriver::Cancel(*rs_, /*wake=*/false);
      streams_->Remove(rs_.get());
    }
    live_->fetch_sub(1);
  }

  void Start() {
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&Session::Read, shared_from_this()));
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->body_limit(options_.body_limit_bytes);
    parser_->header_limit(16 * 1024);
    stream_.expires_after(std::chrono::milliseconds(options_.read_timeout_ms));
    beast_http::async_read(stream_, buffer_, *parser_,
                           beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, size_t) {
    if (ec == beast_http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset) {
      return Close();
    }
    if (ec == beast_http::error::body_limit) {
      return Reply(JsonError(413, ReasonCode(413),
                             "request body exceeds the limit of " +
                                 std::to_string(options_.body_limit_bytes) + " bytes"),
                   /*keep_alive=*/false, 11);
    }
    if (ec) {
      return Reply(JsonError(400, ReasonCode(400), "malformed HTTP request: " + ec.message()),
                   false, 11);
    }
    auto& msg = parser_->get();
    HttpRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    for (const auto& field : msg) {
      std::string name(field.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers.emplace(std::move(name), std::string(field.value()));
    }
    req.body = std::move(msg.body());
    bool keep_alive = msg.keep_alive();
    unsigned version = msg.version();
    std::string error;
    if (int status = DecodeBody(&req, options_.body_limit_bytes, &error)) {
      return Reply(JsonError(status, ReasonCode(status), error), keep_alive, version);
    }
    if (peer_.empty()) {  // once per connection (a syscall)
      beast::error_code ignored;
      auto ep = stream_.socket().remote_endpoint(ignored);
      peer_ = ignored ? "?" : ep.address().to_string();
    }
    req.peer = peer_;
    // Answered exactly once, on this connection's I/O thread: inline when called there,
    // through the caller's CompletionBatch when one is open (one wake-up per batch and
    // thread), else posted.
    auto answered = std::make_shared<std::atomic<bool>>(false);
    HttpServer::Respond respond = [self = shared_from_this(), answered, keep_alive,
                                   version](HttpResponse r) {
      if (answered->exchange(true)) return;
      if (r.stream != nullptr && !self->streams_->Add(r.stream)) return;  // server stopping
      auto reply = [self, r = std::move(r), keep_alive, version]() mutable {
        self->Reply(std::move(r), keep_alive, version);
      };
      asio::io_context& io = self->io_;
      if (io.get_executor().running_in_this_thread()) return reply();
      CompletionBatch::Post(
          &io, [&io](CompletionBatch::Task t) { asio::post(io, std::move(t)); }, std::move(reply));
    };
    try {
      handler_(req, respond);
    } catch (const std::exception& e) {  // never let a handler bug take the server down
      Log(LogLevel::kError, "handler threw", LogKeys().With("what", e.what()));
      respond(JsonError(500, "internal", "internal error"));
    }
  }

  // The status line and headers are written by hand into one string and sent with the body
  // as two buffers: Beast's generic serializer cost more than the rest of the answer.
  void Reply(HttpResponse r, bool keep_alive, unsigned version) {
    if (r.stream != nullptr) return ReplyStream(std::move(r), keep_alive, version);
    StartHead(r, version);
    head_ += "Content-Length: ";
    head_ += std::to_string(r.body.size());
    head_ += "\r\n";
    EndHead(r, keep_alive, version);
    body_ = std::move(r.body);
    std::array<asio::const_buffer, 2> bufs{asio::buffer(head_), asio::buffer(body_)};
    stream_.expires_after(std::chrono::milliseconds(options_.read_timeout_ms));
    asio::async_write(stream_, bufs,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->Close();
                        self->Read();
                      });
  }

  // The status line, Server and Content-Type.
  void StartHead(const HttpResponse& r, unsigned version) {
    head_.clear();
    head_ += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    head_ += std::to_string(r.status);
    head_ += ' ';
    beast::string_view reason =
        beast_http::obsolete_reason(static_cast<beast_http::status>(r.status));
    head_.append(reason.data(), reason.size());
    head_ += "\r\nServer: switchyard\r\nContent-Type: ";
    head_ += r.content_type;
    head_ += "\r\n";
  }

  // The handler's headers, Connection, and the blank line.
  void EndHead(const HttpResponse& r, bool keep_alive, unsigned version) {
    for (const auto& [k, v] : r.headers) AddHeader(k, v);
    if (!keep_alive && version >= 11) head_ += "Connection: close\r\n";
    if (keep_alive && version < 11) head_ += "Connection: keep-alive\r\n";
    head_ += "\r\n";
  }

  // --- Streamed responses (on this connection's I/O thread) ---

  // Starts sending `r.stream`: attaches to it, sends the head (with what is queued), reads
  // ahead to notice a disconnect. HTTP/1.0 gets the raw bytes and then the connection closes.
  void ReplyStream(HttpResponse r, bool keep_alive, unsigned version) {
    rs_ = std::move(r.stream);
    rs_chunked_ = version >= 11;
    rs_keep_alive_ = keep_alive && rs_chunked_;
    std::weak_ptr<Session> weak = shared_from_this();
    asio::io_context* io = &io_;
    bool attached = StreamDriver::Attach(*rs_, [weak, io] {
      asio::post(*io, [weak] {
        if (auto self = weak.lock()) self->PumpStream();
      });
    });
    if (!attached) {  // cancelled before it got here, or given to two responses
      streams_->Remove(rs_.get());
      rs_.reset();
      rs_state_ = StreamState::kAborted;
      return stream_.close();
    }
    rs_state_ = StreamState::kOpen;
    StartHead(r, version);
    if (rs_chunked_) head_ += "Transfer-Encoding: chunked\r\n";
    if (IsEventStream(r.content_type) && !HasHeader(r.headers, "cache-control")) {
      head_ += "Cache-Control: no-cache\r\n";
    }
    EndHead(r, rs_keep_alive_, version);
    body_ = std::move(r.body);  // should be empty; if not it goes out first
    rs_head_pending_ = true;
    stream_.expires_never();  // the read timeout is for requests; writes set their own
    WatchStream();
    PumpStream();
  }

  // Sends what the stream has queued unless a write is in flight (its completion pumps
  // again); closes the connection once the stream is cancelled. Spurious calls are harmless.
  void PumpStream() {
    if (rs_state_ != StreamState::kOpen) return;
    if (rs_->cancelled()) return AbortStream();
    if (rs_writing_) return;
    auto batch = StreamDriver::Take(*rs_);  // ResponseStream::Batch (private)
    if (batch.bytes.empty() && !batch.end && !rs_head_pending_) return;  // idle
    WriteStream(std::move(batch.bytes), batch.end);
  }

  // One write: the head (first time), `bytes` as one chunk, the last chunk when `end`.
  void WriteStream(std::string bytes, bool end) {
    if (!rs_head_pending_) {
      head_.clear();
      body_ = std::move(bytes);
    } else if (body_.empty()) {
      body_ = std::move(bytes);
    } else {
      body_ += bytes;
    }
    rs_head_pending_ = false;
    chunk_line_.clear();
    std::string_view tail;
    if (rs_chunked_ && !body_.empty()) {
      char hex[2 * sizeof(size_t) + 1];
      auto res = std::to_chars(hex, hex + sizeof(hex), body_.size(), 16);
      chunk_line_.assign(hex, res.ptr);
      chunk_line_ += kCrlf;
      tail = end ? kCrlfLastChunk : kCrlf;
    } else if (rs_chunked_ && end) {
      tail = kLastChunk;
    }
    std::array<asio::const_buffer, 4> bufs{asio::buffer(head_), asio::buffer(chunk_line_),
                                           asio::buffer(body_), Buffer(tail)};
    rs_writing_ = true;
    // Only the write's timer: the read ahead is pending and keeps its own (none).
    stream_.expires_after(std::chrono::milliseconds(options_.read_timeout_ms));
    asio::async_write(stream_, bufs,
                      [self = shared_from_this(), end](beast::error_code ec, size_t) {
                        self->OnStreamWritten(ec, end);
                      });
  }

  void OnStreamWritten(beast::error_code ec, bool end) {
    rs_writing_ = false;
    if (rs_state_ != StreamState::kOpen) return;  // aborted meanwhile
    if (ec) return AbortStream();                 // client gone, or the write timed out
    if (end) return EndStream();
    PumpStream();
  }

  // Reads ahead while the stream is open: EOF or an error means the client went away.
  void WatchStream() {
    stream_.async_read_some(
        buffer_.prepare(4096),
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnWatch(ec, n); });
  }

  void OnWatch(beast::error_code ec, size_t n) {
    buffer_.commit(n);                       // the start of the next request, for the parser
    if (rs_state_ == StreamState::kEnded) {  // the read ahead is over: one read at a time
      if (rs_keep_alive_)
        Read();
      else
        Close();
      return;
    }
    if (rs_state_ != StreamState::kOpen) return;
    if (ec || buffer_.size() > kMaxReadAheadBytes) return AbortStream();
    WatchStream();
  }

  // The last chunk went out: the stream is done; once the read ahead has been cancelled
  // (OnWatch) the next request is read, or the connection closes (its lingering drain is
  // a read too, so it waits for the read ahead to end; the client sees the end at once).
  void EndStream() {
    rs_state_ = StreamState::kEnded;
    StreamDriver::Finish(*rs_);
    streams_->Remove(rs_.get());
    rs_.reset();
    beast::error_code ignored;
    if (!rs_keep_alive_) stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().cancel(ignored);
  }

  // The stream cannot go on (cancelled, or the connection failed): cancels it and closes the
  // connection (the response is incomplete); pending operations end with an error.
  void AbortStream() {
    if (rs_state_ != StreamState::kOpen) return;
    rs_state_ = StreamState::kAborted;
    StreamDriver::Cancel(*rs_, /*wake=*/false);
    streams_->Remove(rs_.get());
    rs_.reset();
    stream_.close();
  }

  // A header from the handler; CR and LF are dropped so that no value can start a header
  // of its own (response splitting).
  void AddHeader(const std::string& name, const std::string& value) {
    for (char c : name)
      if (c != '\r' && c != '\n') head_ += c;
    head_ += ": ";
    for (char c : value)
      if (c != '\r' && c != '\n') head_ += c;
    head_ += "\r\n";
  }

  // Ends the connection: no more sending, then what the client still sends is read and
  // dropped until it closes, for at most kLingerMs and kLingerBytes ("lingering close"):
  // closing a socket with unread bytes resets the connection, and a client still
  // uploading — a body past the limit, answered 413 at its headers — would get the reset
  // instead of the answer.
  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return;
    linger_left_ = kLingerBytes;
    stream_.expires_after(std::chrono::milliseconds(kLingerMs));
    Drain();
  }

  void Drain() {
    drain_.resize(64 * 1024);
    stream_.async_read_some(asio::buffer(drain_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              // EOF, an error, the time or the byte cap: the session ends.
                              if (ec || n >= self->linger_left_) return;
                              self->linger_left_ -= n;
                              self->Drain();
                            });
  }

  static constexpr int kLingerMs = 2000;
  static constexpr size_t kLingerBytes = size_t{64} << 20;

  asio::io_context& io_;  // the connection's I/O thread (one thread runs it: no strand)
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::string head_, body_;  // the answer being written (one at a time per connection)
  std::string drain_;        // lingering close: what the client still sent, dropped
  size_t linger_left_ = 0;
  std::optional<beast_http::request_parser<beast_http::string_body>> parser_;
  const HttpServerOptions& options_;
  const HttpServer::AsyncHandler& handler_;
  std::atomic<size_t>* live_;
  std::string peer_;
  // The streamed response being sent, if any.
  enum class StreamState : uint8_t { kNone, kOpen, kEnded, kAborted };
  StreamRegistry* streams_;
  std::shared_ptr<ResponseStream> rs_;  // set while kOpen
  StreamState rs_state_ = StreamState::kNone;
  bool rs_chunked_ = false;       // HTTP/1.1: chunked; HTTP/1.0: raw bytes, then close
  bool rs_keep_alive_ = false;    // read the next request after the stream
  bool rs_head_pending_ = false;  // the head is not yet written
  bool rs_writing_ = false;       // a write is in flight
  std::string chunk_line_;        // "<hex size>\r\n" of the chunk being written
};

}  // namespace

// One io_context per I/O thread, each run by exactly that thread: a connection lives on one
// context for its lifetime, so its handlers never run concurrently (no strands), and work a
// thread posts to itself stays in its private queue without waking anyone.
struct HttpServer::Impl {
  using Guard = asio::executor_work_guard<asio::io_context::executor_type>;
  HttpServerOptions options;
  AsyncHandler handler;
  std::atomic<size_t> live{0};  // before ios: sessions destroyed with a context count down
  StreamRegistry streams;       // before ios, likewise
  std::vector<std::unique_ptr<asio::io_context>> ios;
  std::vector<Guard> guards;  // keep idle contexts running
  std::unique_ptr<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  size_t next = 0;  // round-robin over ios for new connections (acceptor thread only)
  bool started = false;

  void Accept() {
    asio::io_context& io = *ios[next++ % ios.size()];
    acceptor->async_accept(io, [this, &io](beast::error_code ec, tcp::socket s) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        if (live.load() >= options.max_connections) {
          beast::error_code ignored;
          s.close(ignored);  // refuse: over the connection limit
        } else {
          // Answers go out as soon as they are written: no Nagle delay waiting for the
          // client's ACK of an earlier segment (a head and body split across writes, or a
          // pipelined client, would otherwise wait for a delayed ACK, up to 40 ms).
          beast::error_code ignored;
          s.set_option(tcp::no_delay(true), ignored);
          std::make_shared<Session>(io, std::move(s), options, handler, &live, &streams)->Start();
        }
      }
      Accept();
    });
  }
};

HttpServer::HttpServer(HttpServerOptions options, Handler handler)
    : HttpServer(std::move(options),
                 AsyncHandler([h = std::move(handler)](const HttpRequest& req, Respond respond) {
                   respond(h(req));
                 })) {}

HttpServer::HttpServer(HttpServerOptions options, AsyncHandler handler) : impl_(new Impl) {
  impl_->options = std::move(options);
  impl_->handler = std::move(handler);
  int n = std::max(1, impl_->options.threads);
  for (int i = 0; i < n; ++i) {
    impl_->ios.push_back(std::make_unique<asio::io_context>(1));
    impl_->guards.push_back(asio::make_work_guard(*impl_->ios.back()));
  }
  impl_->acceptor = std::make_unique<tcp::acceptor>(*impl_->ios[0]);
}

HttpServer::~HttpServer() { Stop(); }

Result<uint16_t> HttpServer::Start() {
  beast::error_code ec;
  auto addr = asio::ip::make_address(impl_->options.host, ec);
  if (ec) return Status::InvalidArgument("bad listen host '" + impl_->options.host + "'");
  tcp::endpoint ep(addr, impl_->options.port);
  auto& acc = *impl_->acceptor;
  acc.open(ep.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(ep, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::Unavailable("cannot listen on " + impl_->options.host + ":" +
                               std::to_string(impl_->options.port) + ": " + ec.message());
  }
  uint16_t port = acc.local_endpoint().port();
  impl_->Accept();
  impl_->started = true;
  for (size_t i = 0; i < impl_->ios.size(); ++i) {
    impl_->threads.emplace_back([ctx = impl_->ios[i].get(), i] {
      SetThreadName("sy-http-" + std::to_string(i));  // shown by top -H, perf, gdb
      ctx->run();
    });
  }
  return port;
}

void HttpServer::Stop() {
  if (!impl_ || !impl_->started) return;
  impl_->started = false;
  asio::post(*impl_->ios[0], [this] {
    beast::error_code ec;
    impl_->acceptor->close(ec);
  });
  for (auto& io : impl_->ios) io->stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
  impl_->streams.CancelAll();  // producers see cancelled(); their Write()s return false
}

}  // namespace switchyard::http
