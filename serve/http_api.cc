#include "serve/http_api.h"

#include <xxhash.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <random>

#include "base/ids.h"
#include "base/logging.h"
#include "base/utf8.h"
#include "driver/scheduler_driver_metrics.h"
#include "http/dashboard.h"
#include "http/fast_json.h"
#include "proto/json.h"
#include "serve/upstream_state.h"
#include "service/service_metrics.h"

namespace switchyard::serve {
namespace {

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kAborted:
      return 409;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return 503;
    case StatusCode::kNotSupported:
      return 501;
    default:
      return 500;
  }
}

http::HttpResponse ErrorOf(const Status& s) {
  std::string code(StatusCodeName(s.code()));
  http::HttpResponse r = http::JsonError(HttpStatusOf(s), code, s.message());
  if (r.status == 429 || r.status == 503) r.headers["retry-after"] = "1";
  return r;
}

http::HttpResponse Json(int status, const google::protobuf::Message& m) {
  http::HttpResponse r;
  r.status = status;
  auto j = proto::ToJson(m);
  r.body = j.ok() ? *j : "{}";
  return r;
}

template <typename T>
Result<T> ParseBody(const http::HttpRequest& req) {
  T msg;
  if (http::TryParseJson(req.body, &msg))
    return msg;  // the common subset, without protobuf's
                 // JSON machinery (see fast_json.h)
  proto::JsonParseOptions opts;
  opts.source = "request body";
  SY_RETURN_IF_ERROR(proto::ParseJson(req.body.empty() ? "{}" : req.body, &msg, opts));
  return msg;
}

// Splits "/v1/workflows/{id}[/nodes|/events|/timeline|:close]" into id and action. Ids
// may contain ':' (program_graph/validation.h), never '/': a sub-resource starts at the
// first '/', and the one verb, ":close", is an action only at the end of a POST's path (a
// POST on a bare id is no route). Otherwise every ':' belongs to the id, so each id is
// reachable: GET/DELETE /v1/workflows/a:close is workflow "a:close", which closes with
// POST /v1/workflows/a:close:close. The id is percent-decoded after the split (the
// dashboard sends encodeURIComponent(id)): an escaped ':' or '/' is never a separator.
// NotFound when the path is no workflow's, InvalidArgument for a malformed escape.
Status SplitWorkflowPath(std::string_view method, std::string_view path, std::string* id,
                         std::string* action) {
  static constexpr std::string_view kPrefix = "/v1/workflows/", kClose = ":close";
  if (path.substr(0, kPrefix.size()) != kPrefix) return Status::NotFound("no such endpoint");
  std::string_view rest = path.substr(kPrefix.size());
  size_t cut = rest.find('/');
  if (cut == std::string_view::npos && method == "POST" && rest.size() > kClose.size() &&
      rest.substr(rest.size() - kClose.size()) == kClose)
    cut = rest.size() - kClose.size();
  std::optional<std::string> decoded = http::PercentDecode(rest.substr(0, cut));
  if (!decoded) return Status::InvalidArgument("workflow id: malformed %-escape in the path");
  if (decoded->empty()) return Status::NotFound("no such endpoint");
  if (std::string problem = TextProblem(*decoded); !problem.empty())
    return Status::InvalidArgument("workflow id in the path: " + problem);
  *id = std::move(*decoded);
  *action = cut == std::string_view::npos ? "" : std::string(rest.substr(cut));
  return Status::OK();
}

// The metrics label of /v1/workflows/{id}... routes (a fixed set: labels stay bounded).
const char* RouteName(const std::string& action) {
  if (action.empty()) return "/v1/workflows/{id}";
  if (action == "/nodes") return "/v1/workflows/{id}/nodes";
  if (action == "/events") return "/v1/workflows/{id}/events";
  if (action == ":close") return "/v1/workflows/{id}:close";
  if (action == "/timeline") return "/v1/workflows/{id}/timeline";
  return "/v1/workflows/{id}/other";
}

// The request's id: the client's x-request-id when it is a safe token, else a new one.
std::string RequestIdOf(const http::HttpRequest& req) {
  std::string id = req.Header("x-request-id");
  bool safe = !id.empty() && id.size() <= 128 &&
              id.find_first_not_of(
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                  "0123456789._:-") == std::string::npos;
  if (safe) return id;
  static const uint64_t base = std::random_device{}() * 0x9E3779B97F4A7C15ULL;
  static std::atomic<uint64_t> next{0};
  return "req_" + HexId(base + next.fetch_add(1, std::memory_order_relaxed));
}

}  // namespace

HttpApi::HttpApi(service::Service* service, service::Auth auth, const Clock* clock,
                 HttpApiOptions options)
    : service_(service),
      auth_(std::move(auth)),
      clock_(clock),
      options_(options),
      limiter_(clock),
      core_(std::make_unique<frontends::FrontCore>(service, clock, options.fronts)),
      front_(std::make_unique<frontends::OpenAiFront>(core_.get())),
      anthropic_(std::make_unique<frontends::AnthropicFront>(core_.get())),
      responses_(std::make_unique<frontends::ResponsesFront>(core_.get(), service)) {
  // /metrics: the HTTP families here; the service's and the scheduler's read their figures
  // at scrape time (service_metrics.h, scheduler_driver_metrics.h).
  Status st =
      metrics_.Counter("switchyard_http_requests_total", "HTTP requests by route and status");
  if (st.ok())
    st = metrics_.Histogram("switchyard_http_request_seconds", "HTTP request latency by route",
                            {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1});
  if (st.ok())
    st = metrics_.Gauge("switchyard_http_inflight", "requests admitted, not yet answered", [this] {
      return Metrics::Samples{{"", double(inflight_.load())}};
    });
  if (st.ok()) st = service::RegisterServiceMetrics(&metrics_, service_);
  if (st.ok() && service_->scheduler())
    st = driver::RegisterSchedulerMetrics(&metrics_, service_->scheduler());
  if (st.ok() && core_->proxy()) st = RegisterUpstreamMetrics(&metrics_, core_.get());
  if (!st.ok())
    Log(LogLevel::kError, "metrics families not registered",
        LogKeys().With("error", st.ToString()));
}

http::HttpResponse HttpApi::ErrorFor(std::string_view path, int status, std::string_view code,
                                     const std::string& message) const {
  if (frontends::AnthropicFront::Serves(path))
    return frontends::AnthropicFront::Error(status, message);
  if (!frontends::OpenAiFront::Serves(path) && !frontends::ResponsesFront::Serves(path))
    return http::JsonError(status, code, message);
  const char* type = status == 401   ? "authentication_error"
                     : status == 403 ? "permission_error"
                     : status == 429 ? "rate_limit_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  return frontends::OpenAiFront::Error(status, message, type, std::string(code));
}

http::HttpResponse HttpApi::Handle(const http::HttpRequest& req) {
  std::promise<http::HttpResponse> p;
  auto f = p.get_future();
  HandleAsync(req, [&p](http::HttpResponse r) { p.set_value(std::move(r)); });
  return f.get();
}

void HttpApi::HandleAsync(const http::HttpRequest& req, Respond respond) {
  auto call = std::make_shared<Call>();
  call->start = std::chrono::steady_clock::now();
  call->respond = std::move(respond);
  call->request_id = RequestIdOf(req);
  call->method = req.method;
  // Counted until answered: requests waiting for their group commit hold a slot.
  if (inflight_.fetch_add(1, std::memory_order_relaxed) >= options_.max_inflight) {
    http::HttpResponse r =
        ErrorFor(req.path(), 503, "Unavailable", "server overloaded; retry later");
    r.headers["retry-after"] = "1";
    call->route = "overload";
    return Finish(call, std::move(r));
  }
  try {
    Route(req, call);
  } catch (const std::exception& e) {
    // A handler bug: answered here (through Finish, so the slot is given back), unless
    // it answered before throwing.
    Log(LogLevel::kError, "handler threw",
        LogKeys().With("what", e.what()).With("route", call->route));
    Finish(call,
           ErrorFor(req.path(), 500, StatusCodeName(StatusCode::kInternal), "internal error"));
  }
}

void HttpApi::Finish(const CallPtr& call, http::HttpResponse resp) {
  if (call->finished.exchange(true, std::memory_order_acq_rel)) return;  // answered already
  inflight_.fetch_sub(1, std::memory_order_relaxed);
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - call->start).count();
  std::string route_label = std::string("route=\"") + call->route + "\"";
  metrics_.Inc("switchyard_http_requests_total",
               route_label + ",code=\"" + std::to_string(resp.status) + "\"");
  metrics_.Observe("switchyard_http_request_seconds", route_label, secs);
  resp.headers["x-request-id"] = call->request_id;
  if (LogEnabled(LogLevel::kDebug)) {
    LogKeys keys;
    keys.request_id = call->request_id;
    // The workflow the request made or changed (a front's: its answer's header), so that
    // the request's log line leads to the workflow's records (invariant 8).
    auto wf = resp.headers.find("x-switchyard-workflow-id");
    keys.workflow_id = !call->workflow_id.empty() ? call->workflow_id
                       : wf != resp.headers.end() ? wf->second
                                                  : std::string();
    keys.With("method", call->method)
        .With("route", call->route)
        .With("status", std::to_string(resp.status))
        .With("latency_us", std::to_string(static_cast<int64_t>(secs * 1e6)));
    Log(LogLevel::kDebug, "http request", keys);
  }
  Respond respond = std::move(call->respond);
  respond(std::move(resp));
}

void HttpApi::Route(const http::HttpRequest& req, const CallPtr& call) {
  std::string_view path = req.path();
  if (path == "/" || path == "/index.html") {  // the dashboard page: no data, no auth
    call->route = "/";
    return Finish(call, http::DashboardResponse(req));
  }
  if (path == "/healthz") {
    call->route = "/healthz";
    return Finish(call, http::HttpResponse{200, "application/json", {}, "{\"status\":\"ok\"}"});
  }
  if (path == "/metrics") {
    call->route = "/metrics";
    return Finish(call,
                  http::HttpResponse{200, "text/plain; version=0.0.4", {}, metrics_.Render()});
  }
  if (path == "/openapi.json") {
    call->route = "/openapi.json";
    return Finish(call, http::HttpResponse{200, "application/json", {}, OpenApiDocument()});
  }
  if (path.substr(0, 4) != "/v1/")
    return Finish(call, http::JsonError(404, "NotFound", "no such endpoint"));
  // The Messages API's clients authenticate with x-api-key: it is taken as a bearer token.
  std::string authorization = req.Header("authorization");
  if (authorization.empty() && !req.Header("x-api-key").empty())
    authorization = "Bearer " + req.Header("x-api-key");
  auto who = auth_.Authenticate(authorization);
  if (!who) {
    call->route = "unauthenticated";
    return Finish(call, ErrorFor(path, 401, "Unauthenticated", "missing or unknown bearer token"));
  }
  if (!who->admin) {
    const v1::TenantConfig* t = auth_.Tenant(who->tenant);
    double rate =
        t && t->rate_limit_per_s() > 0 ? t->rate_limit_per_s() : options_.default_rate_per_s;
    // Twice the rate by default; Admit() raises a depth under one token to one.
    double burst = t && t->rate_burst() > 0 ? t->rate_burst() : 2 * rate;
    Duration wait = limiter_.Admit(who->tenant, rate, burst);
    if (wait.count() > 0) {
      call->route = "rate_limited";
      http::HttpResponse r = ErrorFor(path, 429, "ResourceExhausted",
                                      "tenant '" + who->tenant + "' is over its request rate");
      r.headers["retry-after"] = std::to_string(std::max<int64_t>(1, std::ceil(ToSeconds(wait))));
      return Finish(call, std::move(r));
    }
  }
  // /v1/models/{model}:bump-epoch is the admin's (BumpEpoch answers a wrong method), any
  // other /v1/models/... the front's (GET /v1/models/{id}).
  if (path.substr(0, 11) == "/v1/models/" &&
      (req.method != "GET" || path.find(":bump-epoch") != std::string_view::npos))
    return BumpEpoch(req, *who, call);
  if (path.substr(0, 12) == "/v1/workers/") return Drain(req, *who, call);
  if (Front(req, *who, call)) return;
  if (path == "/v1/cluster") {
    call->route = "/v1/cluster";
    if (req.method != "GET")
      return Finish(call, http::JsonError(405, "MethodNotAllowed", "use GET"));
    return Finish(call, Cluster(*who));
  }
  Workflows(req, *who, call);
}

// The front doors' paths: OpenAI, Responses, Anthropic (tenants only); false for others.
bool HttpApi::Front(const http::HttpRequest& req, const service::Principal& who,
                    const CallPtr& call) {
  std::string_view path = req.path();
  std::function<void(const http::HttpRequest&, const std::string&, Respond)> handle;
  if (frontends::OpenAiFront::Serves(path)) {
    call->route = path.substr(0, 13) == "/v1/sessions/" ? "/v1/sessions" : "openai";
    handle = [this](const http::HttpRequest& r, const std::string& t, Respond d) {
      front_->Handle(r, t, std::move(d));
    };
  } else if (frontends::ResponsesFront::Serves(path)) {
    call->route = "responses";
    handle = [this](const http::HttpRequest& r, const std::string& t, Respond d) {
      responses_->Handle(r, t, std::move(d));
    };
  } else if (frontends::AnthropicFront::Serves(path)) {
    call->route = "anthropic";
    handle = [this](const http::HttpRequest& r, const std::string& t, Respond d) {
      anthropic_->Handle(r, t, std::move(d));
    };
  } else {
    return false;
  }
  if (who.admin) {
    Finish(call, ErrorFor(path, 403, "PermissionDenied",
                          "the admin token reads /v1/cluster; the front doors need a tenant "
                          "token"));
    return true;
  }
  handle(req, who.tenant, [this, call](http::HttpResponse r) { Finish(call, std::move(r)); });
  return true;
}

namespace {

// GET /v1/workflows?state=S&pageSize=N&pageToken=T&order=asc|desc
Result<service::Service::ListQuery> ListQueryOf(const http::HttpRequest& req) {
  service::Service::ListQuery q;
  SY_ASSIGN_OR_RETURN(std::string state, req.Query("state"));
  if (!state.empty()) {
    v1::WorkflowState s;
    if (!v1::WorkflowState_Parse(state, &s) && !v1::WorkflowState_Parse("WORKFLOW_" + state, &s)) {
      return Status::InvalidArgument("state: unknown state '" + state +
                                     "' (RUNNING, COMPLETED, FAILED, CANCELLED)");
    }
    q.state = s;
  }
  q.page_size = HttpApi::kDefaultPageSize;
  SY_ASSIGN_OR_RETURN(std::string size, req.Query("pageSize"));
  if (!size.empty()) {
    size_t n = 0;
    auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), n);
    if (ec != std::errc() || end != size.data() + size.size() || n < 1 ||
        n > HttpApi::kMaxPageSize) {
      return Status::InvalidArgument("pageSize: '" + size + "' is not a number from 1 to " +
                                     std::to_string(HttpApi::kMaxPageSize));
    }
    q.page_size = n;
  }
  SY_ASSIGN_OR_RETURN(std::string order, req.Query("order"));
  if (!order.empty() && order != "asc" && order != "desc") {
    return Status::InvalidArgument("order: '" + order + "' is not asc or desc");
  }
  q.newest_first = order == "desc";
  SY_ASSIGN_OR_RETURN(q.page_token, req.Query("pageToken"));
  return q;
}

}  // namespace

void HttpApi::Workflows(const http::HttpRequest& req, const service::Principal& who,
                        const CallPtr& call) {
  if (who.admin) {
    return Finish(call,
                  http::JsonError(403, "PermissionDenied",
                                  "the admin token reads /v1/cluster; workflows need a tenant "
                                  "token"));
  }
  std::string_view path = req.path();
  if (path == "/v1/workflows") {
    call->route = "/v1/workflows";
    if (req.method == "GET") {
      auto query = ListQueryOf(req);
      if (!query.ok()) return Finish(call, ErrorOf(query.status()));
      auto page = service_->List(who.tenant, *query);
      if (!page.ok()) return Finish(call, ErrorOf(page.status()));
      return Finish(call, Json(200, *page));
    }
    if (req.method == "POST") return Mutation(req, who, "", "create", call);
    return Finish(call, http::JsonError(405, "MethodNotAllowed", "use GET or POST"));
  }
  std::string id, action;
  if (Status st = SplitWorkflowPath(req.method, path, &id, &action); !st.ok())
    return Finish(call, ErrorOf(st));
  call->route = RouteName(action);
  if (action.empty() && req.method == "GET") {
    // Inline unless the workflow has records not yet durable (then after its commit).
    return service_->GetAsync(who.tenant, id, [this, call](Result<v1::WorkflowStatus> st) {
      Finish(call, st.ok() ? Json(200, *st) : ErrorOf(st.status()));
    });
  }
  if (action == "/timeline" && req.method == "GET") {
    auto t = service_->Timeline(who.tenant, id);
    return Finish(call, t.ok() ? Json(200, *t) : ErrorOf(t.status()));
  }
  if (action.empty() && req.method == "DELETE") return Mutation(req, who, id, "cancel", call);
  if (req.method == "POST" && (action == "/nodes" || action == "/events" || action == ":close")) {
    return Mutation(req, who, id, action, call);
  }
  Finish(call, http::JsonError(action.empty() || action == "/nodes" || action == "/events" ||
                                       action == ":close" || action == "/timeline"
                                   ? 405
                                   : 404,
                               action.empty() ? "MethodNotAllowed" : "NotFound",
                               "no " + req.method + " on " + std::string(path)));
}

void HttpApi::Mutation(const http::HttpRequest& req, const service::Principal& who,
                       const std::string& id, const std::string& action, const CallPtr& call) {
  call->workflow_id = id;  // empty for a create: set below once the id is known
  std::string key = req.Header("idempotency-key");
  // Held from the lookup until the mutation is queued: a repeat with the same key sees
  // the first one (durable, or pending in the store's queue).
  std::unique_lock<Mutex> idem_lock;  // unchecked: the stripes guard no data
  service::IdempotentAnswer answer;
  if (!key.empty()) {
    if (key.size() > 256)
      return Finish(call, http::JsonError(400, "InvalidArgument", "Idempotency-Key too long"));
    // The whole target: a repeat with another query (DELETE ?reason=) is another request.
    std::string fp_input = req.method + " " + req.target + "\n" + req.body;
    answer.key = key;
    answer.fingerprint = XXH64(fp_input.data(), fp_input.size(), 0);
    size_t stripe = XXH64(key.data(), key.size(), 1) % idem_locks_.size();
    idem_lock = std::unique_lock<Mutex>(idem_locks_[stripe]);
    auto prior = service_->PeekIdempotent(who.tenant, key);
    if (!prior.ok()) return Finish(call, ErrorOf(prior.status()));
    if (*prior) {
      const v1::IdempotencyEntry& e = (*prior)->entry;
      if (e.fingerprint() != answer.fingerprint) {
        return Finish(call, http::JsonError(409, "Conflict",
                                            "Idempotency-Key was already used for a different "
                                            "request"));
      }
      http::HttpResponse r{
          e.status(), "application/json", {{"idempotent-replay", "true"}}, e.body()};
      if (!(*prior)->pending) return Finish(call, std::move(r));
      // The first answer is not durable yet: replay it once it is.
      idem_lock.unlock();
      return service_->AfterDurable([this, call, r = std::move(r)](const Status& st) {
        Finish(call, st.ok() ? r : ErrorOf(st));
      });
    }
  }
  const service::IdempotentAnswer* idem = key.empty() ? nullptr : &answer;
  auto reply = [this, call](int status, std::string body) {
    return [this, call, status, body = std::move(body)](const Status& st) {
      Finish(call,
             st.ok() ? http::HttpResponse{status, "application/json", {}, body} : ErrorOf(st));
    };
  };
  if (action == "create") {
    auto wf = ParseBody<v1::Workflow>(req);
    if (!wf.ok()) return Finish(call, ErrorOf(wf.status()));
    if (wf->id().empty()) wf->set_id(service_->NewWorkflowId());
    call->workflow_id = wf->id();
    answer.status = 201;
    answer.body = "{\"workflowId\":\"" + JsonEscape(wf->id()) + "\"}";
    return service_->SubmitAsync(who.tenant, std::move(*wf), idem, reply(201, answer.body));
  }
  answer.status = 200;
  answer.body = "{\"workflowId\":\"" + JsonEscape(id) + "\",\"accepted\":true}";
  if (action == "/nodes") {
    auto body = ParseBody<v1::AppendNodesRequest>(req);
    if (!body.ok()) return Finish(call, ErrorOf(body.status()));
    std::vector<v1::ProgramNode> nodes;
    nodes.reserve(static_cast<size_t>(body->nodes_size()));
    for (auto& n : *body->mutable_nodes()) nodes.push_back(std::move(n));
    return service_->AppendAsync(who.tenant, id, std::move(nodes), idem, reply(200, answer.body));
  }
  if (action == "/events") {
    auto ev = ParseBody<v1::NodeEvent>(req);
    if (!ev.ok()) return Finish(call, ErrorOf(ev.status()));
    if (!ev->workflow_id().empty() && ev->workflow_id() != id) {
      return Finish(call, http::JsonError(400, "InvalidArgument",
                                          "workflowId in the body does not match the path"));
    }
    return service_->ReportEventAsync(who.tenant, id, std::move(*ev), idem,
                                      reply(200, answer.body));
  }
  if (action == ":close")
    return service_->CloseAsync(who.tenant, id, idem, reply(200, answer.body));
  auto reason = req.Query("reason");
  if (!reason.ok()) return Finish(call, ErrorOf(reason.status()));
  service_->CancelAsync(who.tenant, id, std::move(*reason), idem, reply(200, answer.body));
}

// POST /v1/models/{model}:bump-epoch (admin token): the failure sequence's model-epoch
// path (Service::BumpModelEpoch).
void HttpApi::BumpEpoch(const http::HttpRequest& req, const service::Principal& who,
                        const CallPtr& call) {
  call->route = "/v1/models:bump-epoch";
  std::string_view rest = req.path().substr(11);
  constexpr std::string_view kVerb = ":bump-epoch";
  if (rest.size() <= kVerb.size() || rest.substr(rest.size() - kVerb.size()) != kVerb)
    return Finish(call, http::JsonError(404, "NotFound",
                                        "no such endpoint (POST /v1/models/{model}:bump-epoch)"));
  if (req.method != "POST")
    return Finish(call, http::JsonError(405, "MethodNotAllowed", "use POST"));
  if (!who.admin)
    return Finish(
        call, http::JsonError(403, "PermissionDenied",
                              "bump-epoch changes every tenant's KV: it needs the admin token"));
  std::string model(rest.substr(0, rest.size() - kVerb.size()));
  auto bumped = service_->BumpModelEpoch(model);
  if (!bumped.ok()) return Finish(call, ErrorOf(bumped.status()));
  v1::ModelEpoch out;
  out.set_model(bumped->first);
  out.set_model_epoch(bumped->second);
  Finish(call, Json(200, out));
}

// POST /v1/workers/{worker}:drain | :undrain (admin token): takes a worker out of service
// (nothing new placed on it, its idle contexts moved off) or puts it back
// (SchedulerDriver::DrainWorker). {worker} is the scheduler's worker number.
void HttpApi::Drain(const http::HttpRequest& req, const service::Principal& who,
                    const CallPtr& call) {
  call->route = "/v1/workers:drain";
  std::string_view rest = req.path().substr(12);
  size_t colon = rest.rfind(':');
  std::string_view verb = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
  if (colon == 0 || (verb != "drain" && verb != "undrain"))
    return Finish(
        call, http::JsonError(404, "NotFound",
                              "no such endpoint (POST /v1/workers/{worker}:drain or :undrain)"));
  if (req.method != "POST")
    return Finish(call, http::JsonError(405, "MethodNotAllowed", "use POST"));
  if (!who.admin)
    return Finish(call,
                  http::JsonError(403, "PermissionDenied",
                                  "draining a worker changes every tenant's placement: it needs "
                                  "the admin token"));
  std::string index(rest.substr(0, colon));
  char* end = nullptr;
  long worker = std::strtol(index.c_str(), &end, 10);
  if (index.empty() || *end != '\0' || worker < 0 || worker > 1'000'000)
    return Finish(call,
                  http::JsonError(400, "InvalidArgument",
                                  "worker '" + index + "': want the worker's number (0, 1, ...)"));
  driver::SchedulerDriver* d = service_->scheduler();
  if (!d)
    return Finish(call,
                  http::JsonError(409, "FailedPrecondition",
                                  "this service runs no scheduler: there are no workers to drain"));
  auto st = d->DrainWorker(static_cast<int>(worker), verb == "drain");
  if (!st.ok()) return Finish(call, ErrorOf(st.status()));
  v1::WorkerDrain out;
  out.set_worker(st->worker);
  out.set_state(st->state);
  out.set_drained(st->drained);
  Finish(call, Json(200, out));
}

http::HttpResponse HttpApi::Cluster(const service::Principal& who) const {
  v1::ClusterState c = service_->Cluster();
  if (service_->scheduler()) c.set_openai_front(core_->Describe());
  AddUpstreamStates(*core_, &c);
  c.set_openai_sessions(core_->sessions());
  if (who.admin) {
    for (const auto& t : auth_.tenants()) {
      auto* s = c.add_tenants();
      s->set_name(t.name());
      s->set_weight(t.weight() > 0 ? t.weight() : 1.0);
    }
  }
  return Json(200, c);
}

}  // namespace switchyard::serve
