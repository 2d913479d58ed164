// The only Boost.Beast translation unit of the service (Beast is heavy to compile).
#include "api/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <cctype>
#include <thread>
#include <vector>

#include "base/logging.h"

namespace switchyard::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

const char* ReasonCode(int status) {
  switch (status) {
    case 413:
      return "payload_too_large";
    case 400:
      return "bad_request";
    default:
      return "error";
  }
}

// One connection: read a request, call the handler, write the response, repeat.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpServerOptions& options,
          const HttpServer::AsyncHandler& handler, std::atomic<size_t>* live)
      : stream_(std::move(socket)), options_(options), handler_(handler), live_(live) {
    live_->fetch_add(1);
  }
  ~Session() { live_->fetch_sub(1); }

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
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, size_t) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset) {
      return Close();
    }
    if (ec == http::error::body_limit) {
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
    if (peer_.empty()) {  // once per connection (a syscall)
      beast::error_code ignored;
      auto ep = stream_.socket().remote_endpoint(ignored);
      peer_ = ignored ? "?" : ep.address().to_string();
    }
    req.peer = peer_;
    bool keep_alive = msg.keep_alive();
    unsigned version = msg.version();
    // Answered exactly once, on this connection's strand (inline when already there).
    auto answered = std::make_shared<std::atomic<bool>>(false);
    HttpServer::Respond respond = [self = shared_from_this(), answered, keep_alive,
                                   version](HttpResponse r) {
      if (answered->exchange(true)) return;
      asio::dispatch(self->stream_.get_executor(),
                     [self, r = std::move(r), keep_alive, version]() mutable {
                       self->Reply(std::move(r), keep_alive, version);
                     });
    };
    try {
      handler_(req, respond);
    } catch (const std::exception& e) {  // never let a handler bug take the server down
      Log(LogLevel::kError, "handler threw", LogKeys().With("what", e.what()));
      respond(JsonError(500, "internal", "internal error"));
    }
  }

  void Reply(HttpResponse r, bool keep_alive, unsigned version) {
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), version);
    res->set(http::field::server, "switchyard");
    res->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    res->keep_alive(keep_alive);
    res->body() = std::move(r.body);
    res->prepare_payload();
    stream_.expires_after(std::chrono::milliseconds(options_.read_timeout_ms));
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const HttpServerOptions& options_;
  const HttpServer::AsyncHandler& handler_;
  std::atomic<size_t>* live_;
  std::string peer_;
};

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  AsyncHandler handler;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::vector<std::thread> threads;
  std::atomic<size_t> live{0};
  bool started = false;

  void Accept() {
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket s) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        if (live.load() >= options.max_connections) {
          beast::error_code ignored;
          s.close(ignored);  // refuse: over the connection limit
        } else {
          std::make_shared<Session>(std::move(s), options, handler, &live)->Start();
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
}

HttpServer::~HttpServer() { Stop(); }

Result<uint16_t> HttpServer::Start() {
  beast::error_code ec;
  auto addr = asio::ip::make_address(impl_->options.host, ec);
  if (ec) return Status::InvalidArgument("bad listen host '" + impl_->options.host + "'");
  tcp::endpoint ep(addr, impl_->options.port);
  auto& acc = impl_->acceptor;
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
  for (int i = 0; i < std::max(1, impl_->options.threads); ++i) {
    impl_->threads.emplace_back([this] { impl_->io.run(); });
  }
  return port;
}

void HttpServer::Stop() {
  if (!impl_ || !impl_->started) return;
  impl_->started = false;
  asio::post(impl_->io, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
  impl_->io.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

}  // namespace switchyard::api
