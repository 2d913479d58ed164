#include "http/dashboard.h"

namespace switchyard::http {

// Defined in the .cc that http/dashboard.cmake generates from http/dashboard.html.
extern const char kDashboardHtml[];
extern const unsigned long kDashboardHtmlSize;

std::string_view DashboardHtml() { return std::string_view(kDashboardHtml, kDashboardHtmlSize); }

HttpResponse DashboardResponse(const HttpRequest& req) {
  if (req.method != "GET" && req.method != "HEAD") {
    HttpResponse r = JsonError(405, "MethodNotAllowed", "the dashboard is read with GET");
    r.headers["allow"] = "GET, HEAD";
    return r;
  }
  HttpResponse r;
  r.status = 200;
  r.content_type = "text/html; charset=utf-8";
  r.headers["cache-control"] = "no-cache";
  r.headers["x-content-type-options"] = "nosniff";
  r.headers["referrer-policy"] = "no-referrer";
  // Data only from this server; no external scripts, styles, fonts or frames.
  r.headers["content-security-policy"] =
      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
      "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
      "frame-ancestors 'none'";
  if (req.method == "GET") r.body = std::string(DashboardHtml());
  return r;
}

}  // namespace switchyard::http
