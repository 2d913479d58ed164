// ResponsesFront's requests (see responses_front.h).
#include "frontends/responses/responses_front.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <random>

#include "base/ids.h"
#include "base/logging.h"
#include "frontends/openai/openai_headers.h"
#include "frontends/responses/responses_headers.h"
#include "frontends/responses/responses_reply.h"
#include "frontends/responses/responses_request.h"

namespace switchyard::frontends {

namespace rs = responses;

namespace {

constexpr std::string_view kPath = "/v1/responses", kPrefix = "/v1/responses/";
constexpr size_t kMaxChain = 1000;  // stored responses a previous_response_id chain may hold

http::HttpResponse ResponsesErrorResponse(const Status& st) {
  rs::HttpError e = rs::ErrorFromStatus(st);
  return http::JsonResponse(e.http_status, e.body);
}

std::string NewResponseId() {
  static std::atomic<uint64_t> next{std::random_device{}() | 1};
  return "resp_" + HexId(next.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed));
}

// A stored response of `tenant`; NotFound naming `param` when there is none.
Result<rs::StoredResponse> Load(service::Service* service, const std::string& tenant,
                                const std::string& id, const std::string& param) {
  SY_ASSIGN_OR_RETURN(auto doc, service->GetDocument(tenant, rs::kDocumentKind, id));
  if (!doc) return Status::NotFound(param + ": no response '" + id + "' is stored here");
  return rs::StoredResponse::FromJson(*doc);
}

// The stored chain a previous_response_id continues, oldest first.
Result<std::vector<rs::StoredResponse>> Chain(service::Service* service, const std::string& tenant,
                                              std::string id) {
  std::vector<rs::StoredResponse> chain;
  while (!id.empty()) {
    if (chain.size() >= kMaxChain)
      return Status::InvalidArgument("previous_response_id: the chain is longer than " +
                                     std::to_string(kMaxChain) + " responses");
    SY_ASSIGN_OR_RETURN(rs::StoredResponse r, Load(service, tenant, id, "previous_response_id"));
    id = r.previous_response_id;
    chain.push_back(std::move(r));
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

}  // namespace

bool ResponsesFront::Serves(std::string_view path) {
  return path == kPath || path.substr(0, kPrefix.size()) == kPrefix;
}

void ResponsesFront::Handle(const http::HttpRequest& req, const std::string& tenant,
                            Respond respond) {
  std::string_view path = req.path();
  if (path == kPath) {
    if (req.method != "POST")
      return respond(http::JsonResponse(405, rs::ErrorJson(405, "use POST")));
    return Create(req, tenant, std::move(respond));
  }
  std::string rest(path.substr(kPrefix.size()));
  std::string id = rest.substr(0, rest.find('/'));
  std::string action = rest.size() > id.size() ? rest.substr(id.size() + 1) : "";
  if (core_->proxy() && !core_->translates()) return core_->ForwardAsIs(req, std::move(respond));
  Stored(req, tenant, id, action, std::move(respond));
}

void ResponsesFront::Create(const http::HttpRequest& req, const std::string& tenant,
                            Respond respond) {
  auto parsed = rs::ParseCreate(req.body);
  if (!parsed.ok()) return respond(ResponsesErrorResponse(parsed.status()));
  rs::CreateRequest& r = *parsed;
  auto headers = rs::ParseHeaders(req.headers);
  if (!headers.ok()) return respond(ResponsesErrorResponse(headers.status()));
  FrontRequest f;
  f.front = "responses";
  f.tenant = tenant;
  f.stream = r.stream;
  f.session_id = rs::SessionIdOf(*headers, r);
  f.session_is_user = !r.user.empty() && f.session_id == r.user;
  f.retain_ms = r.retain_ms;
  // A thread of a session that is not the session's own (a Codex sub-agent's thread): it
  // branches from the session's thread.
  if (!headers->thread_id.empty() && !headers->session_id.empty() &&
      headers->thread_id != headers->session_id && f.session_id == headers->thread_id)
    f.parent_session = headers->session_id;
  if (std::string v = req.Header("x-switchyard-deadline"); !v.empty()) {
    auto d = openai::ParseDeadline(v, core_->clock()->Now().millis());
    if (!d.ok()) return respond(ResponsesErrorResponse(d.status()));
    f.deadline_ms = *d;
  }
  // Proxy mode, forwarded unchanged: the upstream stores the responses and reads the
  // chain; the prompt (an estimate) is the new input.
  const bool forwarded = core_->proxy() && !core_->translates();
  if (!r.previous_response_id.empty() && !forwarded) {
    auto chain = Chain(service_, tenant, r.previous_response_id);
    if (!chain.ok()) return respond(ResponsesErrorResponse(chain.status()));
    f.conv = rs::ChainConversation(*chain, r);
  } else {
    f.conv = rs::ToConversation(r);
  }
  f.max_tokens = r.max_output_tokens;
  if (!r.ignored.empty()) {
    std::string names;
    for (const std::string& n : r.ignored) names += (names.empty() ? "" : ", ") + n;
    Log(LogLevel::kDebug, "responses front: fields accepted and not honoured",
        LogKeys().With("ignored", names));
  }
  rs::StoredResponse head =
      rs::NewResponse(r, NewResponseId(), core_->clock()->Now().millis() / 1000);
  if (forwarded) f.original = req;
  auto reply = std::make_unique<rs::ResponsesReply>(std::move(head), r.routes, service_, tenant);
  core_->Serve(std::move(f), std::move(reply), std::move(respond));
}

void ResponsesFront::Stored(const http::HttpRequest& req, const std::string& tenant,
                            const std::string& id, const std::string& action, Respond respond) {
  if (action == "cancel") {
    if (req.method != "POST")
      return respond(http::JsonResponse(405, rs::ErrorJson(405, "use POST")));
    auto r = Load(service_, tenant, id, "response_id");
    if (!r.ok()) return respond(ResponsesErrorResponse(r.status()));
    return respond(
        http::JsonResponse(400, rs::ErrorJson(400,
                                              "Only responses created with background=true can be "
                                              "cancelled; '" +
                                                  id + "' was not",
                                              "response_id")));
  }
  if (action == "input_items") {
    if (req.method != "GET") return respond(http::JsonResponse(405, rs::ErrorJson(405, "use GET")));
    std::map<std::string, std::string> query;
    for (const char* key : {"order", "after", "limit"}) {
      auto v = req.Query(key);
      if (!v.ok()) return respond(ResponsesErrorResponse(v.status()));
      if (!v->empty()) query[key] = *v;
    }
    auto params = rs::ParseListParams(query);
    if (!params.ok()) return respond(ResponsesErrorResponse(params.status()));
    auto r = Load(service_, tenant, id, "response_id");
    if (!r.ok()) return respond(ResponsesErrorResponse(r.status()));
    auto items = rs::InputItemsJson(*r, *params);
    if (!items.ok()) return respond(ResponsesErrorResponse(items.status()));
    return respond(http::JsonResponse(200, std::move(*items)));
  }
  if (!action.empty())
    return respond(http::JsonResponse(404, rs::ErrorJson(404, "no such endpoint")));
  if (req.method == "GET") {
    auto r = Load(service_, tenant, id, "response_id");
    if (!r.ok()) return respond(ResponsesErrorResponse(r.status()));
    return respond(http::JsonResponse(200, rs::ResponseJson(*r)));
  }
  if (req.method != "DELETE")
    return respond(http::JsonResponse(405, rs::ErrorJson(405, "use GET or DELETE")));
  auto r = Load(service_, tenant, id, "response_id");
  if (!r.ok()) return respond(ResponsesErrorResponse(r.status()));
  service_->DeleteDocumentAsync(tenant, rs::kDocumentKind, id,
                                [id, respond = std::move(respond)](const Status& st) {
                                  if (!st.ok()) return respond(ResponsesErrorResponse(st));
                                  respond(http::JsonResponse(200, rs::DeletedJson(id)));
                                });
}

}  // namespace switchyard::frontends
