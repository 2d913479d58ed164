// OpenAiFront's requests (see openai_front.h): routing, models, DELETE of a session, and a
// completion parsed into a FrontRequest for the core.
#include "frontends/openai/openai_front.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>

#include "frontends/openai/openai_protocol.h"
#include "frontends/openai/openai_reply.h"

namespace switchyard::frontends {

namespace oa = openai;

namespace {

constexpr char kSessionsPath[] = "/v1/sessions/";
constexpr char kModelsPath[] = "/v1/models/";  // GET /v1/models/{id}

bool HasPrefix(std::string_view path, std::string_view prefix) {
  return path.substr(0, prefix.size()) == prefix;
}

http::HttpResponse OpenAiErrorResponse(const Status& st) {
  oa::Error e = oa::ErrorFromStatus(st);
  return http::JsonResponse(e.http_status, oa::ErrorJson(e));
}

}  // namespace

bool OpenAiFront::Serves(std::string_view path) {
  return path == "/v1/chat/completions" || path == "/v1/completions" || path == "/v1/models" ||
         HasPrefix(path, kModelsPath) || HasPrefix(path, kSessionsPath);
}

http::HttpResponse OpenAiFront::Error(int status, const std::string& message,
                                      const std::string& type, const std::string& code,
                                      const std::string& param) {
  return oa::ErrorResponse(status, message, type, code, param);
}

void OpenAiFront::Handle(const http::HttpRequest& req, const std::string& tenant, Respond respond) {
  std::string_view path = req.path();
  if (path == "/v1/models" || HasPrefix(path, kModelsPath)) {
    if (req.method != "GET") return respond(Error(405, "use GET", "invalid_request_error"));
    if (core_->proxy()) return core_->ForwardAsIs(req, std::move(respond));
    if (path == "/v1/models") return respond(Models());
    return respond(Model(std::string(path.substr(sizeof(kModelsPath) - 1))));
  }
  if (HasPrefix(path, kSessionsPath)) {
    if (req.method != "DELETE") return respond(Error(405, "use DELETE", "invalid_request_error"));
    return DeleteSession(tenant, std::string(path.substr(sizeof(kSessionsPath) - 1)),
                         std::move(respond));
  }
  if (req.method != "POST") return respond(Error(405, "use POST", "invalid_request_error"));
  Complete(req, tenant, path == "/v1/chat/completions", std::move(respond));
}

http::HttpResponse OpenAiFront::Models() const {
  return http::JsonResponse(
      200, oa::ModelsJson(core_->model_ids(), core_->clock()->Now().millis() / 1000, "switchyard"));
}

http::HttpResponse OpenAiFront::Model(const std::string& id) const {
  if (!core_->ServesModel(id))
    return Error(404, "model '" + id + "' is not served here", "invalid_request_error",
                 "model_not_found", "model");
  return http::JsonResponse(200,
                            oa::ModelJson(id, core_->clock()->Now().millis() / 1000, "switchyard"));
}

void OpenAiFront::DeleteSession(const std::string& tenant, const std::string& id, Respond respond) {
  if (!core_->EndSession(tenant, id))
    return respond(
        Error(404, "no session '" + id + "'", "invalid_request_error", "session_not_found"));
  nlohmann::json j = {{"id", id}, {"object", "session.deleted"}, {"deleted", true}};
  respond(http::JsonResponse(200, j.dump()));
}

void OpenAiFront::Complete(const http::HttpRequest& req, const std::string& tenant, bool chat,
                           Respond respond) {
  auto parsed = chat ? oa::ParseChat(req.body) : oa::ParseCompletion(req.body);
  if (!parsed.ok()) return respond(OpenAiErrorResponse(parsed.status()));
  oa::Request& r = *parsed;
  FrontRequest f;
  f.front = "openai";
  f.tenant = tenant;
  f.chat = r.chat;
  f.prompt = r.prompt;
  f.stream = r.stream;
  f.session_id = oa::SessionIdOf(req.headers, r);
  f.session_is_user = oa::SessionIdIsUser(req.headers, r);
  const int64_t now_ms = core_->clock()->Now().millis();
  if (std::string v = req.Header("x-switchyard-deadline"); !v.empty()) {
    auto d = oa::ParseDeadline(v, now_ms);
    if (!d.ok()) return respond(OpenAiErrorResponse(d.status()));
    f.deadline_ms = *d;
  }
  Result<int> priority = 0;
  if (std::string v = req.Header("x-switchyard-priority"); !v.empty())
    priority = oa::ParsePriority(v);
  else if (r.hints.priority)
    priority = oa::ParsePriority(std::to_string(*r.hints.priority));
  if (!priority.ok()) return respond(OpenAiErrorResponse(priority.status()));
  f.priority = *priority;
  f.max_tokens = r.max_tokens > 0 ? r.max_tokens : r.hints.osl.value_or(0);
  f.conv.model = r.model;
  f.conv.messages = std::move(r.messages);
  f.conv.tools = std::move(r.tools);
  f.conv.tool_choice = r.tool_choice;
  f.conv.sampling = {r.max_tokens, r.temperature, r.top_p,    r.seed,       r.stop,
                     r.logit_bias, r.choices,     r.priority, r.kv_transfer};
  if (core_->proxy()) f.original = req;
  auto reply = std::make_unique<oa::OpenAiReply>(r.chat, r.model, r.include_usage);
  core_->Serve(std::move(f), std::move(reply), std::move(respond));
}

}  // namespace switchyard::frontends
