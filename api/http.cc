#include "api/http.h"

#include "base/logging.h"

namespace switchyard::api {

std::string_view HttpRequest::path() const {
  std::string_view t = target;
  size_t q = t.find('?');
  return q == std::string_view::npos ? t : t.substr(0, q);
}

std::string HttpRequest::Query(std::string_view key) const {
  std::string_view t = target;
  size_t q = t.find('?');
  if (q == std::string_view::npos) return "";
  std::string_view rest = t.substr(q + 1);
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view kv = rest.substr(0, amp);
    size_t eq = kv.find('=');
    if (kv.substr(0, eq) == key) {
      return eq == std::string_view::npos ? "" : std::string(kv.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return "";
}

std::string HttpRequest::Header(std::string_view lower_name) const {
  auto it = headers.find(std::string(lower_name));
  return it == headers.end() ? "" : it->second;
}

HttpResponse JsonError(int status, std::string_view code, std::string_view message,
                       std::string_view details_json) {
  HttpResponse r;
  r.status = status;
  r.body = "{\"code\":\"" + JsonEscape(code) + "\",\"message\":\"" + JsonEscape(message) +
           "\",\"details\":" + std::string(details_json) + "}";
  return r;
}

}  // namespace switchyard::api
