// One forwarded request of the upstream client (see upstream_client.h, "Forwarding"): an
// Exchange walks connection (pooled or new) -> write -> head -> body reads -> done /
// stream, everything on its connection's strand, with asynchronous Boost.Beast I/O.
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <limits>
#include <utility>

#include "base/logging.h"
#include "upstream/internal/upstream_pool.h"

namespace switchyard::upstream::internal {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace beast_http = beast::http;
using tcp = asio::ip::tcp;

constexpr size_t kReadChunk = 16 * 1024;
constexpr size_t kPauseQueuedBytes = size_t{1} << 20;  // stream backpressure
constexpr auto kPausePoll = std::chrono::milliseconds(5);
constexpr size_t kMaxWholeBody = size_t{256} << 20;  // a non-streamed answer

std::string Str(beast::string_view s) { return std::string(s.data(), s.size()); }

http::HttpResponse UpstreamError(int status, std::string_view code, std::string_view message) {
  http::HttpResponse r;
  r.status = status;
  r.body = ErrorJson(code, message);
  return r;
}

// Hop-by-hop headers (RFC 9110 7.6.1) and those the two sides recompute.
bool IsHopByHop(const std::string& lower) {
  return lower == "connection" || lower == "keep-alive" || lower == "proxy-connection" ||
         lower == "proxy-authenticate" || lower == "proxy-authorization" || lower == "te" ||
         lower == "trailer" || lower == "transfer-encoding" || lower == "upgrade";
}

// The header names listed in a Connection header value (lower-case).
std::vector<std::string> ConnectionTokens(std::string_view value) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    if (comma == std::string_view::npos) comma = value.size();
    std::string_view tok = value.substr(pos, comma - pos);
    while (!tok.empty() && (tok.front() == ' ' || tok.front() == '\t')) tok.remove_prefix(1);
    while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\t')) tok.remove_suffix(1);
    if (!tok.empty()) out.push_back(Lower(tok));
    pos = comma + 1;
  }
  return out;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v) {
    if (x == s) return true;
  }
  return false;
}

beast_http::request<beast_http::string_body> BuildRequest(const http::HttpRequest& req,
                                                          const Upstream& up,
                                                          const std::string& auth) {
  beast_http::request<beast_http::string_body> out;
  beast_http::verb verb = beast_http::string_to_verb(req.method);
  if (verb == beast_http::verb::unknown) {
    out.method_string(req.method);
  } else {
    out.method(verb);
  }
  out.target(req.target);
  out.version(11);
  std::vector<std::string> named = ConnectionTokens(req.Header("connection"));
  for (const auto& [name, value] : req.headers) {
    std::string lower = Lower(name);
    if (IsHopByHop(lower) || Contains(named, lower) || lower == "host" ||
        lower == "content-length" || lower == "authorization" || lower == "expect") {
      continue;
    }
    out.set(name, value);
  }
  out.set(beast_http::field::host, up.authority);
  if (!auth.empty()) out.set(beast_http::field::authorization, auth);
  out.body() = req.body;
  if (!req.body.empty() || verb == beast_http::verb::post || verb == beast_http::verb::put ||
      verb == beast_http::verb::patch) {
    out.content_length(req.body.size());
  }
  out.keep_alive(true);
  return out;
}

bool IsEventStream(std::string_view content_type) {
  return Lower(content_type.substr(0, 17)) == "text/event-stream";
}

// One forwarded request. Owned by its pending handlers (shared_from_this); runs on its
// connection's strand.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  // `pooled`: an idle connection to reuse, or nullptr for a new one.
  Exchange(UpstreamClient::Impl* core, Upstream* up,
           beast_http::request<beast_http::string_body> req, bool head,
           std::unique_ptr<Conn> pooled, std::function<void(http::HttpResponse)> done,
           UpstreamClient::Hooks hooks)
      : core_(core),
        up_(up),
        req_(std::move(req)),
        head_request_(head),
        done_(std::move(done)),
        hooks_(std::move(hooks)),
        strand_(pooled ? pooled->strand : asio::make_strand(core->io)),
        timer_(strand_),
        conn_(std::move(pooled)),
        reused_(conn_ != nullptr) {}

  ~Exchange() {
    // Destroyed with the io_context (client stopped) before finishing.
    if (done_) Reply(UpstreamError(502, "upstream_broken", "upstream client stopped"));
    EndStream("upstream client stopped");
  }

  // On any thread: starts on the strand.
  void Start() {
    asio::dispatch(strand_, [self = shared_from_this()] {
      if (self->conn_) {
        self->Send();
      } else {
        self->Connect();
      }
    });
  }

  // The cancel callback of a streamed answer (any thread): closes the connection.
  void Abort() {
    asio::post(strand_, [self = shared_from_this()] {
      self->cancelled_ = true;
      self->timer_.cancel();
      if (self->conn_) {
        beast::error_code ignored;
        self->conn_->stream.socket().close(ignored);
      }
    });
  }

 private:
  void Connect() {
    reused_ = false;
    conn_ = std::make_unique<Conn>(strand_);
    up_->connections.fetch_add(1, std::memory_order_relaxed);
    resolver_.emplace(strand_);
    resolver_->async_resolve(
        up_->host, up_->port,
        [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type results) {
          self->OnResolve(ec, std::move(results));
        });
  }

  void OnResolve(beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) return Fail(502, "upstream_unreachable", "cannot resolve: " + ec.message());
    conn_->stream.expires_after(std::chrono::milliseconds(core_->options.connect_timeout_ms));
    conn_->stream.async_connect(
        results, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
          self->OnConnect(ec);
        });
  }

  void OnConnect(beast::error_code ec) {
    if (ec == beast::error::timeout) {
      return Fail(
          504, "upstream_timeout",
          "no connection within " + std::to_string(core_->options.connect_timeout_ms) + " ms");
    }
    if (ec) return Fail(502, "upstream_unreachable", "cannot connect: " + ec.message());
    Send();
  }

  void Send() {
    conn_->stream.expires_after(std::chrono::milliseconds(core_->options.response_timeout_ms));
    beast_http::async_write(
        conn_->stream, req_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnWrite(ec); });
  }

  void OnWrite(beast::error_code ec) {
    if (ec && reused_) {  // a stale pooled connection: the upstream got nothing; once
      reused_ = false;
      return Connect();
    }
    if (ec == beast::error::timeout)
      return Fail(504, "upstream_timeout", "request write timed out");
    if (ec) return Fail(502, "upstream_broken", "request write failed: " + ec.message());
    parser_.emplace();
    // Unlimited (a huge number: Beast 1.74 compares a Content-Length with boost::none as
    // exceeding it); a whole answer is capped in OnBody.
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    parser_->header_limit(64 * 1024);
    if (head_request_) parser_->skip(true);
    conn_->stream.expires_after(std::chrono::milliseconds(core_->options.response_timeout_ms));
    beast_http::async_read_header(
        conn_->stream, conn_->buffer, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHead(ec); });
  }

  void OnHead(beast::error_code ec) {
    if (ec) return ReadFailed(ec, "answer head");
    const auto& head = parser_->get();
    response_.status = static_cast<int>(head.result_int());
    response_.content_type = Str(head[beast_http::field::content_type]);
    if (response_.content_type.empty()) response_.content_type = "application/octet-stream";
    std::vector<std::string> named = ConnectionTokens(Str(head[beast_http::field::connection]));
    for (const auto& field : head) {
      std::string lower = Lower(Str(field.name_string()));
      if (IsHopByHop(lower) || Contains(named, lower) || lower == "content-length" ||
          lower == "content-type" || lower == "server") {
        continue;
      }
      response_.headers[lower] = Str(field.value());
    }
    streaming_ = parser_->chunked() || IsEventStream(response_.content_type);
    if (streaming_ && !parser_->is_done()) {
      stream_ = std::make_shared<http::ResponseStream>();
      std::weak_ptr<Exchange> weak = weak_from_this();
      std::weak_ptr<UpstreamClient::Impl> core = core_->weak_from_this();
      stream_->SetOnCancel([weak, core] {
        auto alive = core.lock();
        if (auto self = weak.lock(); alive && self) self->Abort();
      });
      http::HttpResponse r = response_;
      r.stream = stream_;
      Reply(std::move(r));
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) return Complete();
    if (cancelled_ || (stream_ && stream_->cancelled())) return OnCancelled();
    if (stream_ && stream_->queued_bytes() > kPauseQueuedBytes) {
      timer_.expires_after(kPausePoll);
      timer_.async_wait([self = shared_from_this()](beast::error_code) { self->ReadBody(); });
      return;
    }
    auto& body = parser_->get().body();
    body.data = chunk_;
    body.size = sizeof(chunk_);
    conn_->stream.expires_after(std::chrono::milliseconds(core_->options.response_timeout_ms));
    beast_http::async_read_some(
        conn_->stream, conn_->buffer, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    if (ec == beast_http::error::need_buffer) ec = {};
    size_t got = sizeof(chunk_) - parser_->get().body().size;
    if (got > 0) {
      up_->bytes_in.fetch_add(got, std::memory_order_relaxed);
      if (stream_) {
        if (hooks_.on_bytes) hooks_.on_bytes(std::string_view(chunk_, got));
        Emit(std::string_view(chunk_, got));
      } else {
        response_.body.append(chunk_, got);
      }
    }
    if (cancelled_ || (stream_ && stream_->cancelled())) return OnCancelled();
    if (ec) return ReadFailed(ec, "answer body");
    if (response_.body.size() > kMaxWholeBody) {
      return Fail(502, "upstream_broken",
                  "answer larger than " + std::to_string(kMaxWholeBody >> 20) + " MiB");
    }
    ReadBody();
  }

  // The answer was read completely.
  // The connection goes back to the pool first, so that a request sent as soon as this
  // answer is seen finds it.
  void Complete() {
    if (parser_->keep_alive()) {
      core_->PutIdle(*up_, std::move(conn_));
    } else {
      Drop();
    }
    if (stream_) {
      stream_->SetOnCancel([] {});
      StreamEnded(true);
    } else {
      Reply(std::move(response_));
    }
  }

  // Hands the stream's Close() to on_end's hold (closed at once without a hook).
  void StreamEnded(bool complete) {
    struct Closer {
      std::shared_ptr<http::ResponseStream> stream;
      ~Closer() {
        if (stream) stream->Close();
      }
    };
    auto closer = std::make_shared<Closer>();
    closer->stream = std::move(stream_);
    UpstreamClient::CloseHold hold = std::move(closer);
    auto on_end = std::move(hooks_.on_end);
    hooks_.on_end = nullptr;
    if (on_end) on_end(complete, std::move(hold));
  }

  void ReadFailed(beast::error_code ec, const std::string& what) {
    if (ec == beast::error::timeout) {
      return Fail(
          504, "upstream_timeout",
          "no " + what + " within " + std::to_string(core_->options.response_timeout_ms) + " ms");
    }
    Fail(502, "upstream_broken", what + " failed: " + ec.message());
  }

  // Answers 502/504 (or, once a stream was handed out, ends it) and drops the connection.
  void Fail(int status, std::string_view code, const std::string& message) {
    up_->failures.fetch_add(1, std::memory_order_relaxed);
    std::string full = "upstream " + up_->url + ": " + message;
    if (done_) {
      Reply(UpstreamError(status, code, full));
    } else {
      EndStream(full, code);
    }
    Drop();
  }

  // Ends a stream handed out before its body was complete.
  void EndStream(const std::string& message, std::string_view code = "upstream_broken") {
    if (!stream_) return;
    stream_->SetOnCancel([] {});
    if (IsEventStream(response_.content_type)) Emit("data: " + ErrorJson(code, message) + "\n\n");
    StreamEnded(false);
  }

  // Writes body bytes to the stream, through the transform hook when there is one.
  void Emit(std::string_view bytes) {
    stream_->Write(hooks_.transform ? hooks_.transform(bytes) : std::string(bytes));
  }

  // The downstream client went away: the stream is dead, the connection too.
  void OnCancelled() {
    stream_.reset();
    Drop();
    StreamEnded(false);
  }

  void Drop() {
    if (conn_) {
      beast::error_code ignored;
      conn_->stream.socket().close(ignored);
      conn_.reset();
    }
  }

  void Reply(http::HttpResponse r) {
    auto done = std::move(done_);
    done_ = nullptr;
    done(std::move(r));
  }

  UpstreamClient::Impl* core_;
  Upstream* up_;
  beast_http::request<beast_http::string_body> req_;
  bool head_request_;
  std::function<void(http::HttpResponse)> done_;  // empty once called
  UpstreamClient::Hooks hooks_;                   // on_end empty once called
  Strand strand_;
  asio::steady_timer timer_;
  std::unique_ptr<Conn> conn_;
  bool reused_;  // conn_ came from the pool
  std::optional<tcp::resolver> resolver_;
  bool cancelled_ = false;
  bool streaming_ = false;
  std::optional<beast_http::response_parser<beast_http::buffer_body>> parser_;
  http::HttpResponse response_;
  std::shared_ptr<http::ResponseStream> stream_;
  char chunk_[kReadChunk];
};

}  // namespace

std::string ErrorJson(std::string_view code, std::string_view message) {
  return R"({"error":{"message":")" + JsonEscape(message) +
         R"(","type":"upstream_error","param":null,"code":")" + std::string(code) + R"("}})";
}

void StartExchange(UpstreamClient::Impl* core, Upstream* up, const http::HttpRequest& req,
                   const std::string& auth, std::unique_ptr<Conn> pooled,
                   std::function<void(http::HttpResponse)> done, UpstreamClient::Hooks hooks) {
  auto ex = std::make_shared<Exchange>(core, up, BuildRequest(req, *up, auth), req.method == "HEAD",
                                       std::move(pooled), std::move(done), std::move(hooks));
  ex->Start();
}

}  // namespace switchyard::upstream::internal
