#include "api/http_api.h"

#include <xxhash.h>

#include <chrono>
#include <cmath>

#include "api/dashboard.h"
#include "base/logging.h"
#include "proto/json.h"

namespace switchyard::api {
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

HttpResponse ErrorOf(const Status& s) {
  std::string code(StatusCodeName(s.code()));
  HttpResponse r = JsonError(HttpStatusOf(s), code, s.message());
  if (r.status == 429 || r.status == 503) r.headers["retry-after"] = "1";
  return r;
}

HttpResponse Json(int status, const google::protobuf::Message& m) {
  HttpResponse r;
  r.status = status;
  auto j = proto::ToJson(m);
  r.body = j.ok() ? *j : "{}";
  return r;
}

template <typename T>
Result<T> ParseBody(const HttpRequest& req) {
  T msg;
  proto::JsonParseOptions opts;
  opts.source = "request body";
  SY_RETURN_IF_ERROR(proto::ParseJson(req.body.empty() ? "{}" : req.body, &msg, opts));
  return msg;
}

// Splits "/v1/workflows/{id}[/nodes|/events|:close]" into id and action.
bool SplitWorkflowPath(std::string_view path, std::string* id, std::string* action) {
  static constexpr std::string_view kPrefix = "/v1/workflows/";
  if (path.substr(0, kPrefix.size()) != kPrefix) return false;
  std::string_view rest = path.substr(kPrefix.size());
  size_t slash = rest.find('/');
  size_t colon = rest.find(':');
  size_t cut = std::min(slash, colon);
  *id = std::string(rest.substr(0, cut));
  *action = cut == std::string_view::npos ? "" : std::string(rest.substr(cut));
  return !id->empty();
}

}  // namespace

HttpApi::HttpApi(Service* service, Auth auth, const Clock* clock, HttpApiOptions options)
    : service_(service), auth_(std::move(auth)), clock_(clock), options_(options), limiter_(clock) {
  metrics_.Counter("switchyard_http_requests_total", "HTTP requests by route and status");
  metrics_.Histogram("switchyard_http_request_seconds", "HTTP request latency by route",
                     {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1});
  metrics_.Gauge("switchyard_workflows", "workflows by state", [this] {
    auto c = service_->counts();
    return std::vector<std::pair<std::string, double>>{
        {"state=\"running\"", double(c.running)},
        {"state=\"completed\"", double(c.completed)},
        {"state=\"failed\"", double(c.failed)},
        {"state=\"cancelled\"", double(c.cancelled)}};
  });
  metrics_.Gauge("switchyard_node_events_total", "node events applied (durable)", [this] {
    return std::vector<std::pair<std::string, double>>{
        {"", double(service_->counts().events_applied)}};
  });
  metrics_.Gauge("switchyard_http_inflight", "requests being handled", [this] {
    return std::vector<std::pair<std::string, double>>{{"", double(inflight_.load())}};
  });
}

HttpResponse HttpApi::Handle(const HttpRequest& req) {
  auto start = std::chrono::steady_clock::now();
  std::string route = "other";
  HttpResponse resp;
  if (inflight_.fetch_add(1) >= options_.max_inflight) {
    resp = JsonError(503, "Unavailable", "server overloaded; retry later");
    resp.headers["retry-after"] = "1";
    route = "overload";
  } else {
    resp = Route(req, &route);
  }
  inflight_.fetch_sub(1);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  metrics_.Inc("switchyard_http_requests_total",
               "route=\"" + route + "\",code=\"" + std::to_string(resp.status) + "\"");
  metrics_.Observe("switchyard_http_request_seconds", "route=\"" + route + "\"", secs);
  return resp;
}

HttpResponse HttpApi::Route(const HttpRequest& req, std::string* route) {
  std::string_view path = req.path();
  if (path == "/" || path == "/index.html") {  // the dashboard page: no data, no auth
    *route = "/";
    return DashboardResponse(req);
  }
  if (path == "/healthz") {
    *route = "/healthz";
    return HttpResponse{200, "application/json", {}, "{\"status\":\"ok\"}"};
  }
  if (path == "/metrics") {
    *route = "/metrics";
    return HttpResponse{200, "text/plain; version=0.0.4", {}, metrics_.Render()};
  }
  if (path == "/openapi.json") {
    *route = "/openapi.json";
    return HttpResponse{200, "application/json", {}, OpenApiDocument()};
  }
  if (path.substr(0, 4) != "/v1/") return JsonError(404, "NotFound", "no such endpoint");
  auto who = auth_.Authenticate(req.Header("authorization"));
  if (!who) {
    *route = "unauthenticated";
    return JsonError(401, "Unauthenticated", "missing or unknown bearer token");
  }
  if (!who->admin) {
    const v1::TenantConfig* t = auth_.Tenant(who->tenant);
    double rate =
        t && t->rate_limit_per_s() > 0 ? t->rate_limit_per_s() : options_.default_rate_per_s;
    double burst = t && t->rate_burst() > 0 ? t->rate_burst() : 2 * rate;
    Duration wait = limiter_.Admit(who->tenant, rate, burst);
    if (wait.count() > 0) {
      *route = "rate_limited";
      HttpResponse r = JsonError(429, "ResourceExhausted",
                                 "tenant '" + who->tenant + "' is over its request rate");
      r.headers["retry-after"] = std::to_string(std::max<int64_t>(1, std::ceil(ToSeconds(wait))));
      return r;
    }
  }
  if (path == "/v1/cluster") {
    *route = "/v1/cluster";
    if (req.method != "GET") return JsonError(405, "MethodNotAllowed", "use GET");
    return Cluster(*who);
  }
  return Workflows(req, *who, route);
}

HttpResponse HttpApi::Workflows(const HttpRequest& req, const Principal& who, std::string* route) {
  if (who.admin) {
    return JsonError(403, "PermissionDenied",
                     "the admin token reads /v1/cluster; workflows need a tenant token");
  }
  std::string_view path = req.path();
  if (path == "/v1/workflows") {
    *route = "/v1/workflows";
    if (req.method == "GET") {
      std::string state = req.Query("state");
      std::optional<v1::WorkflowState> filter;
      if (!state.empty()) {
        v1::WorkflowState s;
        if (!v1::WorkflowState_Parse(state, &s) &&
            !v1::WorkflowState_Parse("WORKFLOW_" + state, &s)) {
          return JsonError(400, "InvalidArgument",
                           "unknown state '" + state + "' (RUNNING, COMPLETED, FAILED, CANCELLED)");
        }
        filter = s;
      }
      return Json(200, service_->List(who.tenant, filter));
    }
    if (req.method == "POST") return Mutation(req, who, "", "create");
    return JsonError(405, "MethodNotAllowed", "use GET or POST");
  }
  std::string id, action;
  if (!SplitWorkflowPath(path, &id, &action)) return JsonError(404, "NotFound", "no such endpoint");
  *route = "/v1/workflows/{id}" + action;
  if (action.empty() && req.method == "GET") {
    auto st = service_->Get(who.tenant, id);
    return st.ok() ? Json(200, *st) : ErrorOf(st.status());
  }
  if (action.empty() && req.method == "DELETE") return Mutation(req, who, id, "cancel");
  if (req.method == "POST" && (action == "/nodes" || action == "/events" || action == ":close")) {
    return Mutation(req, who, id, action);
  }
  return JsonError(
      action.empty() || action == "/nodes" || action == "/events" || action == ":close" ? 405 : 404,
      action.empty() ? "MethodNotAllowed" : "NotFound",
      "no " + req.method + " on " + std::string(path));
}

HttpResponse HttpApi::Mutation(const HttpRequest& req, const Principal& who, const std::string& id,
                               const std::string& action) {
  std::string key = req.Header("idempotency-key");
  std::unique_lock<std::mutex> idem_lock;
  IdempotentAnswer answer;
  if (!key.empty()) {
    if (key.size() > 256) return JsonError(400, "InvalidArgument", "Idempotency-Key too long");
    std::string fp_input = req.method + " " + std::string(req.path()) + "\n" + req.body;
    answer.key = key;
    answer.fingerprint = XXH64(fp_input.data(), fp_input.size(), 0);
    size_t stripe = XXH64(key.data(), key.size(), 1) % idem_locks_.size();
    idem_lock = std::unique_lock<std::mutex>(idem_locks_[stripe]);
    auto prior = service_->LookupIdempotent(who.tenant, key);
    if (!prior.ok()) return ErrorOf(prior.status());
    if (*prior) {
      if ((*prior)->fingerprint() != answer.fingerprint) {
        return JsonError(409, "Conflict",
                         "Idempotency-Key was already used for a different request");
      }
      HttpResponse r{(*prior)->status(),
                     "application/json",
                     {{"idempotent-replay", "true"}},
                     (*prior)->body()};
      return r;
    }
  }
  const IdempotentAnswer* idem = key.empty() ? nullptr : &answer;
  Status st;
  if (action == "create") {
    auto wf = ParseBody<v1::Workflow>(req);
    if (!wf.ok()) return ErrorOf(wf.status());
    if (wf->id().empty()) wf->set_id(service_->NewWorkflowId());
    v1::SubmitResponse resp;
    resp.set_workflow_id(wf->id());
    answer.status = 201;
    answer.body = *proto::ToJson(resp);
    auto r = service_->Submit(who.tenant, std::move(*wf), idem);
    if (!r.ok()) return ErrorOf(r.status());
    return HttpResponse{201, "application/json", {}, answer.body};
  }
  answer.status = 200;
  answer.body = "{\"workflowId\":\"" + JsonEscape(id) + "\",\"accepted\":true}";
  if (action == "/nodes") {
    auto body = ParseBody<v1::AppendNodesRequest>(req);
    if (!body.ok()) return ErrorOf(body.status());
    std::vector<v1::ProgramNode> nodes(body->nodes().begin(), body->nodes().end());
    st = service_->Append(who.tenant, id, std::move(nodes), idem);
  } else if (action == "/events") {
    auto ev = ParseBody<v1::NodeEvent>(req);
    if (!ev.ok()) return ErrorOf(ev.status());
    if (!ev->workflow_id().empty() && ev->workflow_id() != id) {
      return JsonError(400, "InvalidArgument", "workflowId in the body does not match the path");
    }
    st = service_->ReportEvent(who.tenant, id, std::move(*ev), idem);
  } else if (action == ":close") {
    st = service_->Close(who.tenant, id, idem);
  } else {  // cancel
    st = service_->Cancel(who.tenant, id, req.Query("reason"), idem);
  }
  if (!st.ok()) return ErrorOf(st);
  return HttpResponse{200, "application/json", {}, answer.body};
}

HttpResponse HttpApi::Cluster(const Principal& who) const {
  v1::ClusterState c = service_->Cluster();
  if (who.admin) {
    for (const auto& t : auth_.tenants()) {
      auto* s = c.add_tenants();
      s->set_name(t.name());
      s->set_weight(t.weight() > 0 ? t.weight() : 1.0);
    }
  }
  return Json(200, c);
}

}  // namespace switchyard::api
