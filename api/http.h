// Plain HTTP request/response values shared by the server, the router and the handlers.
//
// Only http_server.cc includes Boost.Beast (heavy to compile); everything else in api/
// works on these small structs. Header names are stored lower-case.
//
// Thread-safety: values.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace switchyard::api {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // path and query, e.g. "/v1/workflows?state=RUNNING"
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string peer;  // remote address, for logs and rate limits

  std::string_view path() const;                  // target without the query
  std::string Query(std::string_view key) const;  // "" when absent (no %-decoding needed)
  std::string Header(std::string_view lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;  // extra headers (e.g. retry-after)
  std::string body;
};

// {"code":..,"message":..,"details":..} with the given HTTP status.
HttpResponse JsonError(int status, std::string_view code, std::string_view message,
                       std::string_view details_json = "{}");

}  // namespace switchyard::api
