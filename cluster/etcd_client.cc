// EtcdClient: URL parsing, base64, and the unary gateway calls (one connection each, on a
// private io_context, bounded by the call's deadline).
#include "cluster/etcd_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

#include "cluster/internal/etcd_wire.h"

namespace switchyard::cluster {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using json = nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

bool ValidPort(const std::string& port) {
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != port.npos) {
    return false;
  }
  int v = std::stoi(port);
  return v >= 1 && v <= 65535;
}

Result<json> ParseAnswer(const std::string& where, const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return Status::DataLoss(where + ": the answer is not a JSON object: " + body.substr(0, 200));
  }
  return j;
}

}  // namespace

Result<EtcdEndpoint> ParseEtcdUrl(std::string_view url) {
  std::string raw(url);
  auto bad = [&raw](std::string_view why) {
    return Status::InvalidArgument("etcd endpoint '" + raw + "': " + std::string(why) +
                                   " (expected http://host:port)");
  };
  std::string lower = raw;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.rfind("https://", 0) == 0) {
    return bad(
        "https is not supported (no TLS in this client); use http:// or a local "
        "TLS-terminating proxy");
  }
  if (lower.rfind("http://", 0) != 0) return bad("not an http:// URL");
  std::string rest = raw.substr(7);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty()) return bad("no host");
  if (rest.find_first_of("/?#@ ") != std::string::npos) {
    return bad("only scheme, host and port are allowed");
  }
  EtcdEndpoint ep;
  if (rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos) return bad("unterminated IPv6 address");
    ep.host = rest.substr(1, close - 1);
    std::string tail = rest.substr(close + 1);
    if (tail.empty() || tail.front() != ':') return bad("no port");
    ep.port = tail.substr(1);
  } else {
    size_t colon = rest.rfind(':');
    if (colon == std::string::npos) return bad("no port");
    ep.host = rest.substr(0, colon);
    ep.port = rest.substr(colon + 1);
  }
  if (ep.host.empty()) return bad("no host");
  if (!ValidPort(ep.port)) return bad("bad port '" + ep.port + "'");
  ep.url = "http://" + rest;
  ep.authority = rest;
  return ep;
}

std::string PrefixRangeEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (static_cast<unsigned char>(bytes[i]) << 16) |
                 (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                 static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(v >> shift) & 63];
  }
  size_t left = bytes.size() - i;
  if (left > 0) {
    uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (left == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += left == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] != '='; ++i) {
    int v = Base64Value(text[i]);
    if (v < 0) return Status::DataLoss("etcd answer: bad base64 text");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  for (; i < text.size(); ++i) {
    if (text[i] != '=') return Status::DataLoss("etcd answer: bad base64 padding");
  }
  return out;
}

Result<std::shared_ptr<EtcdClient>> EtcdClient::Create(std::string_view url, EtcdOptions options) {
  Result<EtcdEndpoint> ep = ParseEtcdUrl(url);
  if (!ep.ok()) return ep.status();
  return std::shared_ptr<EtcdClient>(new EtcdClient(std::move(*ep), options));
}

Result<std::string> EtcdClient::Post(std::string_view path, const std::string& body) const {
  const std::string where = "etcd " + endpoint_.url + " " + std::string(path);
  internal::Deadline deadline = std::chrono::steady_clock::now() + options_.timeout;
  asio::io_context ioc;
  tcp::socket socket(ioc);
  SY_RETURN_IF_ERROR(internal::ConnectAndPost(ioc, socket, endpoint_, path, body, deadline, where));
  bool timed_out = false;
  auto close = [&] {
    beast::error_code ignored;
    socket.close(ignored);
  };
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  beast::error_code ec = internal::RunStep(
      ioc, deadline, [&](auto h) { http::async_read(socket, buffer, res, h); }, close, &timed_out);
  if (ec || timed_out) return internal::TransportError(where, "read", ec, timed_out);
  beast::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  int status = static_cast<int>(res.result_int());
  if (status != 200) return internal::EtcdError(where, status, res.body());
  // A 200 can still carry an error object (a stream's first message, some gateways).
  if (res.body().find("\"error\"") != std::string::npos) {
    json j = json::parse(res.body(), nullptr, false);
    if (j.is_object() && j.contains("error") && !j.contains("header")) {
      return internal::EtcdError(where, status, res.body());
    }
  }
  return std::move(res.body());
}

Result<EtcdLease> EtcdClient::LeaseGrant(int64_t ttl_seconds) const {
  const std::string path = "/v3/lease/grant";
  Result<std::string> body = Post(path, json{{"TTL", std::to_string(ttl_seconds)}}.dump());
  if (!body.ok()) return body.status();
  Result<json> j = ParseAnswer("etcd " + endpoint_.url + " " + path, *body);
  if (!j.ok()) return j.status();
  EtcdLease lease;
  Result<int64_t> id = internal::Int64Field(*j, "ID");
  Result<int64_t> ttl = internal::Int64Field(*j, "TTL");
  if (!id.ok()) return id.status();
  if (!ttl.ok()) return ttl.status();
  if (*id == 0) return Status::DataLoss("etcd " + endpoint_.url + " " + path + ": no lease ID");
  lease.id = *id;
  lease.ttl_seconds = *ttl;
  return lease;
}

Result<int64_t> EtcdClient::LeaseKeepAlive(int64_t lease) const {
  const std::string path = "/v3/lease/keepalive";
  const std::string where = "etcd " + endpoint_.url + " " + path;
  Result<std::string> body = Post(path, json{{"ID", std::to_string(lease)}}.dump());
  if (!body.ok()) return body.status();
  // A streamed RPC: the answer is {"result":{...}} (one message; the request body ends).
  Result<json> j = ParseAnswer(where, *body);
  if (!j.ok()) return j.status();
  auto it = j->find("result");
  if (it == j->end() || !it->is_object()) {
    return internal::EtcdError(where, 200, *body);
  }
  Result<int64_t> ttl = internal::Int64Field(*it, "TTL");
  if (!ttl.ok()) return ttl.status();
  if (*ttl <= 0) {
    return Status::NotFound(where + ": lease " + std::to_string(lease) +
                            " not found (expired or revoked)");
  }
  return *ttl;
}

Status EtcdClient::LeaseRevoke(int64_t lease) const {
  Result<std::string> body = Post("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}.dump());
  if (!body.ok()) return body.status();
  return Status::OK();
}

Result<int64_t> EtcdClient::Put(std::string_view key, std::string_view value, int64_t lease) const {
  const std::string path = "/v3/kv/put";
  json req{{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) req["lease"] = std::to_string(lease);
  Result<std::string> body = Post(path, req.dump());
  if (!body.ok()) return body.status();
  Result<json> j = ParseAnswer("etcd " + endpoint_.url + " " + path, *body);
  if (!j.ok()) return j.status();
  return internal::Int64Field(j->value("header", json::object()), "revision");
}

Result<EtcdRange> EtcdClient::Range(std::string_view prefix) const {
  const std::string path = "/v3/kv/range";
  json req{{"key", Base64Encode(prefix.empty() ? std::string_view("\0", 1) : prefix)},
           {"range_end", Base64Encode(PrefixRangeEnd(prefix))}};
  Result<std::string> body = Post(path, req.dump());
  if (!body.ok()) return body.status();
  Result<json> j = ParseAnswer("etcd " + endpoint_.url + " " + path, *body);
  if (!j.ok()) return j.status();
  EtcdRange out;
  Result<int64_t> rev = internal::Int64Field(j->value("header", json::object()), "revision");
  if (!rev.ok()) return rev.status();
  out.revision = *rev;
  if (auto it = j->find("kvs"); it != j->end() && it->is_array()) {
    for (const json& kv : *it) {
      Result<EtcdKeyValue> parsed = internal::ParseKeyValue(kv);
      if (!parsed.ok()) return parsed.status();
      out.kvs.push_back(std::move(*parsed));
    }
  }
  return out;
}

Result<int64_t> EtcdClient::Delete(std::string_view key) const {
  const std::string path = "/v3/kv/deleterange";
  Result<std::string> body = Post(path, json{{"key", Base64Encode(key)}}.dump());
  if (!body.ok()) return body.status();
  Result<json> j = ParseAnswer("etcd " + endpoint_.url + " " + path, *body);
  if (!j.ok()) return j.status();
  return internal::Int64Field(*j, "deleted");
}

}  // namespace switchyard::cluster
