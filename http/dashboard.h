// The dashboard: a static, self-contained HTML page (inline CSS and JS, no external
// resources) served at `/` and `/index.html`. The page polls the JSON endpoints
// (/v1/workflows, /v1/workflows/{id}, /v1/cluster) with a bearer token the user pastes
// or passes as `#token=...`; the page itself carries no data, so serving it needs no auth.
//
// The HTML source is http/dashboard.html, embedded into the binary at build time
// (http/dashboard.cmake generates a .cc holding it), so the binary needs no files at run
// time.
//
// Thread-safety: both functions are pure (the page is an immutable static string).
#pragma once

#include <string_view>

#include "http/http.h"

namespace switchyard::http {

// The page's HTML, as embedded at build time.
std::string_view DashboardHtml();

// The response for a request to `/` or `/index.html`: 200 text/html with a
// Content-Security-Policy that forbids any resource not from this server (and any
// inline content other than the page's own), 405 for methods other than GET and HEAD.
HttpResponse DashboardResponse(const HttpRequest& req);

}  // namespace switchyard::http
