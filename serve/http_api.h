// HttpApi: the HTTP/JSON surface of the service (routes, auth, limits, idempotency).
//
// Handle() maps one request to one response:
//   - routing of /v1/workflows..., /v1/cluster, /healthz, /metrics, /openapi.json, and the
//     OpenAI-compatible front (openai_front.h: /v1/chat/completions, /v1/completions,
//     /v1/models, /v1/sessions/{id}; its errors in OpenAI's shape);
//   - auth: every /v1 route needs "Authorization: Bearer TOKEN" (401 without, 404 for
//     another tenant's workflow), /v1/cluster detail needs the admin token;
//   - limits: 503 with Retry-After past max_inflight requests admitted and not yet
//     answered (those waiting for their group commit included), 429 with Retry-After past
//     the tenant's request rate (the 413 body limit is enforced by the server before a
//     request gets here);
//   - Idempotency-Key on POST/DELETE: the first answer is stored with the mutation in one
//     durable write and returned again for a repeat (once it is durable); a key reused for
//     a different request (method, path and query, or body) gets 409;
//   - errors as {"code","message","details"}: 400 naming the bad field, 401, 403, 404,
//     409, 413, 429, 503.
//   - request ids: every answer carries x-request-id (the client's when it is 1-128 of
//     [A-Za-z0-9._:-], else "req_" + 16 hex digits made here); each request is logged at
//     debug level with it, its route, status and latency.
// Request bodies and tokens are never logged.
//
// HandleAsync() answers reads inline and mutations once durable (from the store's
// committer thread); Handle() is the same, waiting for the answer. A handler that throws a
// std::exception is answered 500 (in the route's error shape) and its slot given back.
//
// Paths and queries: a workflow id may contain ':'; ":close" is the close verb only at the
// end of a POST's path, and the id is percent-decoded after the split (SplitWorkflowPath
// in http_api.cc). Query values are percent-decoded (HttpRequest::Query); one that is
// malformed, not UTF-8 or holds a control character is a 400 naming the parameter.
//
// Thread-safety: Handle()/HandleAsync() are called concurrently by the server threads.
// The HttpApi must outlive every answer it owes (Service::Flush() before destroying it).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>

#include "base/metrics.h"
#include "frontends/anthropic/anthropic_front.h"
#include "frontends/openai/openai_front.h"
#include "frontends/responses/responses_front.h"
#include "http/http.h"
#include "service/auth.h"
#include "service/rate_limiter.h"
#include "service/service.h"

namespace switchyard::serve {

struct HttpApiOptions {
  // Requests admitted and not yet answered, across all connections (each holds at most
  // its body, <= the body limit). Beyond it: 503 with Retry-After.
  int max_inflight = 256;
  double default_rate_per_s = 1000;
  frontends::FrontCore::Options fronts;  // the front doors: sessions, token budget, proxy mode
};

class HttpApi {
 public:
  // GET /v1/workflows pages: pageSize defaults to 100, at most 1000.
  static constexpr size_t kDefaultPageSize = 100, kMaxPageSize = 1000;
  HttpApi(service::Service* service, service::Auth auth, const Clock* clock,
          HttpApiOptions options = {});

  using Respond = std::function<void(http::HttpResponse)>;
  void HandleAsync(const http::HttpRequest& req, Respond respond);
  http::HttpResponse Handle(const http::HttpRequest& req);
  int inflight() const { return inflight_.load(std::memory_order_relaxed); }
  Metrics& metrics() { return metrics_; }
  const service::Auth& auth() const { return auth_; }

 private:
  // One admitted request: where its answer goes, and what to record when it is given.
  struct Call {
    std::chrono::steady_clock::time_point start;
    const char* route = "other";
    Respond respond;
    // The client's x-request-id when it is a safe token, else one made here; returned in
    // the answer's x-request-id header and logged with the request (invariant 8).
    std::string request_id;
    std::string method;
    std::string workflow_id;            // the workflow a mutation names or creates (log lines)
    std::atomic<bool> finished{false};  // answered: a second Finish() is ignored
  };
  using CallPtr = std::shared_ptr<Call>;
  // Answers the call and gives its in-flight slot back; only the first answer counts.
  void Finish(const CallPtr& call, http::HttpResponse resp);
  void Route(const http::HttpRequest& req, const CallPtr& call);
  bool Front(const http::HttpRequest& req, const service::Principal& who, const CallPtr& call);
  void Workflows(const http::HttpRequest& req, const service::Principal& who, const CallPtr& call);
  void Mutation(const http::HttpRequest& req, const service::Principal& who, const std::string& id,
                const std::string& action, const CallPtr& call);
  http::HttpResponse Cluster(const service::Principal& who) const;
  void BumpEpoch(const http::HttpRequest& req, const service::Principal& who, const CallPtr& call);
  void Drain(const http::HttpRequest& req, const service::Principal& who, const CallPtr& call);
  // An error in the shape of the route's API (OpenAI's for the OpenAI front).
  http::HttpResponse ErrorFor(std::string_view path, int status, std::string_view code,
                              const std::string& message) const;

  service::Service* service_;
  service::Auth auth_;
  const Clock* clock_;
  HttpApiOptions options_;
  Metrics metrics_;
  service::RateLimiter limiter_;
  std::unique_ptr<frontends::FrontCore> core_;  // what the front doors share
  std::unique_ptr<frontends::OpenAiFront>
      front_;  // /v1/chat/completions, /v1/completions, /v1/models
  std::unique_ptr<frontends::AnthropicFront> anthropic_;  // /v1/messages
  std::unique_ptr<frontends::ResponsesFront> responses_;  // /v1/responses
  std::atomic<int> inflight_{0};
  std::array<Mutex, 64> idem_locks_;  // serialise requests sharing an Idempotency-Key
};

// The OpenAPI 3 document of every endpoint, with a valid example for every POST body.
const std::string& OpenApiDocument();

}  // namespace switchyard::serve
