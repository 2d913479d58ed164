// HttpApi: the HTTP/JSON surface of the service (routes, auth, limits, idempotency).
//
// Handle() maps one request to one response:
//   - routing of /v1/workflows..., /v1/cluster, /healthz, /metrics, /openapi.json;
//   - auth: every /v1 route needs "Authorization: Bearer TOKEN" (401 without, 404 for
//     another tenant's workflow), /v1/cluster detail needs the admin token;
//   - limits: 503 with Retry-After past max_inflight concurrent requests, 429 with
//     Retry-After past the tenant's request rate (the 413 body limit is enforced by the
//     server before a request gets here);
//   - Idempotency-Key on POST/DELETE: the first answer is stored with the mutation in one
//     durable write and returned again for a repeat; a key reused for a different request
//     gets 409;
//   - errors as {"code","message","details"}: 400 naming the bad field, 401, 403, 404,
//     409, 413, 429, 503.
// Request bodies and tokens are never logged.
//
// Thread-safety: Handle() is called concurrently by the server threads.
#pragma once

#include <array>
#include <atomic>
#include <mutex>

#include "api/auth.h"
#include "api/http.h"
#include "api/metrics.h"
#include "api/rate_limiter.h"
#include "api/service.h"

namespace switchyard::api {

struct HttpApiOptions {
  int max_inflight = 4096;
  double default_rate_per_s = 1000;
};

class HttpApi {
 public:
  HttpApi(Service* service, Auth auth, const Clock* clock, HttpApiOptions options = {});

  HttpResponse Handle(const HttpRequest& req);
  Metrics& metrics() { return metrics_; }
  const Auth& auth() const { return auth_; }

 private:
  HttpResponse Route(const HttpRequest& req, std::string* route);
  HttpResponse Workflows(const HttpRequest& req, const Principal& who, std::string* route);
  HttpResponse Mutation(const HttpRequest& req, const Principal& who, const std::string& id,
                        const std::string& action);
  HttpResponse Cluster(const Principal& who) const;

  Service* service_;
  Auth auth_;
  const Clock* clock_;
  HttpApiOptions options_;
  Metrics metrics_;
  RateLimiter limiter_;
  std::atomic<int> inflight_{0};
  std::array<std::mutex, 64> idem_locks_;  // serialise requests sharing an Idempotency-Key
};

// The OpenAPI 3 document of every endpoint, with a valid example for every POST body.
const std::string& OpenApiDocument();

}  // namespace switchyard::api
