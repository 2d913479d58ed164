#include "cluster/internal/etcd_wire.h"

#include <boost/asio/connect.hpp>
#include <boost/beast/http.hpp>
#include <charconv>

namespace switchyard::cluster::internal {
namespace {

// gRPC status codes (as etcd reports them in "code") to ours.
Status FromGrpcCode(int code, std::string msg) {
  switch (code) {
    case 1:
      return Status::Cancelled(std::move(msg));
    case 3:
      return Status::InvalidArgument(std::move(msg));
    case 4:
      return Status(StatusCode::kDeadlineExceeded, std::move(msg), /*retryable=*/true,
                    ErrorScope::kRemote);
    case 5:
      return Status::NotFound(std::move(msg));
    case 6:
      return Status::AlreadyExists(std::move(msg));
    case 7:
      return Status::PermissionDenied(std::move(msg));
    case 8:
      return Status::ResourceExhausted(std::move(msg));
    case 9:
      return Status::FailedPrecondition(std::move(msg));
    case 10:
      return Status::Aborted(std::move(msg));
    case 11:
      return Status::OutOfRange(std::move(msg));
    case 14:
      return Status::Unavailable(std::move(msg), ErrorScope::kRemote);
    case 16:
      return Status::Unauthenticated(std::move(msg));
    default:
      return Status::Internal(std::move(msg));
  }
}

}  // namespace

Result<int64_t> Int64Field(const nlohmann::json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return int64_t{0};
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size()) return v;
  }
  return Status::DataLoss(std::string("etcd answer: field '") + name + "' is not an int64");
}

Result<EtcdKeyValue> ParseKeyValue(const nlohmann::json& kv) {
  if (!kv.is_object()) return Status::DataLoss("etcd answer: a key-value is not an object");
  EtcdKeyValue out;
  for (const char* field : {"key", "value"}) {
    auto it = kv.find(field);
    if (it == kv.end()) continue;
    if (!it->is_string()) {
      return Status::DataLoss(std::string("etcd answer: '") + field + "' is not a string");
    }
    Result<std::string> bytes = Base64Decode(it->get_ref<const std::string&>());
    if (!bytes.ok()) return bytes.status();
    (field[0] == 'k' ? out.key : out.value) = std::move(*bytes);
  }
  struct {
    const char* name;
    int64_t* dst;
  } ints[] = {{"create_revision", &out.create_revision},
              {"mod_revision", &out.mod_revision},
              {"version", &out.version},
              {"lease", &out.lease}};
  for (const auto& f : ints) {
    Result<int64_t> v = Int64Field(kv, f.name);
    if (!v.ok()) return v.status();
    *f.dst = *v;
  }
  return out;
}

Status EtcdError(const std::string& where, int http_status, std::string_view body) {
  std::string message;
  int code = -1;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    // Unary answers: {"error","message","code"}; streamed ones: {"error":{...}}.
    const nlohmann::json* e = &j;
    if (auto it = j.find("error"); it != j.end() && it->is_object()) e = &*it;
    if (auto it = e->find("message"); it != e->end() && it->is_string()) {
      message = it->get<std::string>();
    }
    for (const char* name : {"code", "grpc_code"}) {
      if (auto it = e->find(name); it != e->end() && it->is_number_integer()) {
        code = it->get<int>();
      }
    }
  }
  if (message.empty()) message = std::string(body.substr(0, 200));
  std::string text = where + ": HTTP " + std::to_string(http_status) + ": " + message;
  if (code >= 0) return FromGrpcCode(code, std::move(text));
  if (http_status >= 500) return Status::Unavailable(std::move(text), ErrorScope::kRemote);
  return Status::Internal(std::move(text));
}

Status TransportError(const std::string& where, std::string_view step,
                      const boost::beast::error_code& ec, bool timed_out) {
  std::string what = timed_out ? "timed out" : ec.message();
  return Status::Unavailable(where + ": " + std::string(step) + " failed: " + what,
                             ErrorScope::kRemote);
}

Status ConnectAndPost(boost::asio::io_context& ioc, boost::asio::ip::tcp::socket& socket,
                      const EtcdEndpoint& ep, std::string_view path, const std::string& body,
                      Deadline deadline, const std::string& where) {
  namespace asio = boost::asio;
  namespace beast = boost::beast;
  namespace http = beast::http;
  using tcp = asio::ip::tcp;
  tcp::resolver resolver(ioc);
  bool timed_out = false;
  auto close = [&] {
    resolver.cancel();
    beast::error_code ignored;
    socket.close(ignored);
  };
  tcp::resolver::results_type addrs;
  beast::error_code ec = RunStep(
      ioc, deadline,
      [&](auto h) {
        resolver.async_resolve(ep.host, ep.port,
                               [&addrs, h](beast::error_code e, tcp::resolver::results_type r) {
                                 addrs = std::move(r);
                                 h(e);
                               });
      },
      close, &timed_out);
  if (ec || timed_out) return TransportError(where, "resolve", ec, timed_out);
  ec = RunStep(
      ioc, deadline,
      [&](auto h) { asio::async_connect(socket, addrs, [h](auto e, auto&&) { h(e); }); }, close,
      &timed_out);
  if (ec || timed_out) return TransportError(where, "connect", ec, timed_out);
  http::request<http::string_body> req{http::verb::post, std::string(path), 11};
  req.set(http::field::host, ep.authority);
  req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  ec = RunStep(
      ioc, deadline, [&](auto h) { http::async_write(socket, req, h); }, close, &timed_out);
  if (ec || timed_out) return TransportError(where, "write", ec, timed_out);
  return Status::OK();
}

}  // namespace switchyard::cluster::internal
