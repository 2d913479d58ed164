// The answers of the OpenAI front in OpenAI's shapes (see openai_response.h): errors, the
// settled part of a streamed text, responses, SSE chunks and model lists.
#include "frontends/openai/openai_response.h"

#include <algorithm>

#include "frontends/openai/openai_json.h"

namespace switchyard::frontends::openai {
namespace {

using detail::Dump;
using detail::Json;
using detail::NullIfEmpty;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Errors.

std::string ErrorJson(const Error& e) {
  Json err = {{"message", e.message},
              {"type", e.type},
              {"param", NullIfEmpty(e.param)},
              {"code", NullIfEmpty(e.code)}};
  return Dump(Json{{"error", std::move(err)}});
}

Error ErrorFromStatus(const Status& s) {
  Error e;
  e.message = s.message();
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      e.param = ParamOf(s);
      return e;
    case StatusCode::kNotSupported:
      e.code = "unsupported";
      return e;
    case StatusCode::kUnauthenticated:
      return {401, e.message, "authentication_error", "", "invalid_api_key"};
    case StatusCode::kPermissionDenied:
      return {403, e.message, "permission_error", "", ""};
    case StatusCode::kNotFound:
      return {404, e.message, "invalid_request_error", "", "not_found"};
    case StatusCode::kAlreadyExists:
    case StatusCode::kAborted:
      return {409, e.message, "invalid_request_error", "", "conflict"};
    case StatusCode::kResourceExhausted:
      return {429, e.message, "rate_limit_error", "", "rate_limit_exceeded"};
    case StatusCode::kUnavailable:
      return {503, e.message, "server_error", "", "unavailable"};
    case StatusCode::kDeadlineExceeded:
      return {504, e.message, "server_error", "", "deadline_exceeded"};
    default:
      return {500, e.message, "server_error", "", ""};
  }
}

// ---------------------------------------------------------------------------------------------
// Streamed text.

// ---------------------------------------------------------------------------------------------
// Responses.

namespace {

Json UsageJson(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

Json ToolCallsJson(const std::vector<ToolCall>& calls, bool with_index) {
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json c = Json::object();
    if (with_index) c["index"] = i;
    c["id"] = calls[i].id;
    c["type"] = "function";
    c["function"] = {{"name", calls[i].name}, {"arguments", calls[i].arguments}};
    out.push_back(std::move(c));
  }
  return out;
}

Json Envelope(const Response& r, const char* object) {
  return {{"id", r.id},
          {"object", object},
          {"created", r.created},
          {"model", r.model},
          {"system_fingerprint", NullIfEmpty(r.system_fingerprint)}};
}

Json ChatMessageJson(const Choice& c) {
  Json m = {{"role", "assistant"},
            {"content", c.text.empty() && !c.tool_calls.empty() ? Json(nullptr) : Json(c.text)},
            {"refusal", nullptr}};
  if (!c.tool_calls.empty()) m["tool_calls"] = ToolCallsJson(c.tool_calls, /*with_index=*/false);
  return m;
}

std::string Event(const Json& j) { return "data: " + Dump(j) + "\n\n"; }

}  // namespace

std::string ResponseJson(const Response& r) {
  Json j = Envelope(r, r.chat ? "chat.completion" : "text_completion");
  Json choice = {{"index", 0}};
  if (r.chat) {
    choice["message"] = ChatMessageJson(r.choice);
  } else {
    choice["text"] = r.choice.text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = NullIfEmpty(r.choice.finish_reason);
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = UsageJson(r.usage);
  return Dump(j);
}

std::string ChunkEvent(const Response& head, const std::string& delta_text, bool first,
                       const std::string& finish_reason, const std::vector<ToolCall>* tool_calls) {
  Json j = Envelope(head, head.chat ? "chat.completion.chunk" : "text_completion");
  Json choice = {{"index", 0}};
  if (head.chat) {
    Json delta = Json::object();
    if (first) delta["role"] = "assistant";
    if (first || !delta_text.empty()) delta["content"] = delta_text;
    if (tool_calls != nullptr && !tool_calls->empty()) {
      delta["tool_calls"] = ToolCallsJson(*tool_calls, /*with_index=*/true);
    }
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = delta_text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = NullIfEmpty(finish_reason);
  j["choices"] = Json::array({std::move(choice)});
  return Event(j);
}

std::string UsageEvent(const Response& head) {
  Json j = Envelope(head, head.chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = Json::array();
  j["usage"] = UsageJson(head.usage);
  return Event(j);
}

namespace {
Json ModelObject(const std::string& id, int64_t created, const std::string& owned_by) {
  return {{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", owned_by}};
}
}  // namespace

std::string ModelsJson(const std::vector<std::string>& ids, int64_t created,
                       const std::string& owned_by) {
  Json data = Json::array();
  for (const std::string& id : ids) data.push_back(ModelObject(id, created, owned_by));
  return Dump(Json{{"object", "list"}, {"data", std::move(data)}});
}

std::string ModelJson(const std::string& id, int64_t created, const std::string& owned_by) {
  return Dump(ModelObject(id, created, owned_by));
}

}  // namespace switchyard::frontends::openai
