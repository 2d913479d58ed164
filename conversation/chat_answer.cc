// A Chat Completions answer or error read back (see chat_answer.h).
#include "conversation/chat_answer.h"

#include <nlohmann/json.hpp>

#include <string>

#include "conversation/chat_json.h"

namespace switchyard::conversation::translate {
namespace {

using Json = nlohmann::json;

StatusCode CodeOf(int http_status) {
  switch (http_status) {
    case 400:
    case 413:
    case 422:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 429:
      return StatusCode::kResourceExhausted;
    case 502:
    case 503:
      return StatusCode::kUnavailable;
    case 408:
    case 504:
      return StatusCode::kDeadlineExceeded;
    default:
      return http_status >= 400 && http_status < 500 ? StatusCode::kFailedPrecondition
                                                     : StatusCode::kInternal;
  }
}

// The error's message: error.message, message, detail (FastAPI), or the body itself.
std::string ErrorMessageOf(const Json& j, std::string_view body) {
  if (j.is_object()) {
    const Json* error = detail::Field(j, "error");
    if (error && error->is_object()) {
      if (std::string m = detail::String(*error, "message"); !m.empty()) return m;
    }
    if (error && error->is_string()) return error->get<std::string>();
    if (std::string m = detail::String(j, "message"); !m.empty()) return m;
    if (std::string m = detail::String(j, "detail"); !m.empty()) return m;
  }
  constexpr size_t kMax = 512;
  std::string text(body.substr(0, kMax));
  return text.empty() ? "no message" : text;
}

// An error event's status: its integer code, or the upstream client's string codes.
int StatusOfEvent(const Json& j) {
  const Json* error = j.is_object() ? detail::Field(j, "error") : nullptr;
  const Json* code = error && error->is_object() ? detail::Field(*error, "code") : nullptr;
  if (code && code->is_number_integer()) return code->get<int>();
  if (code && code->is_string()) {
    const std::string c = code->get<std::string>();
    if (c == "upstream_timeout") return 504;
    if (c == "upstream_unreachable" || c == "upstream_broken") return 502;
  }
  return 500;
}

}  // namespace

Result<Answer> ReadChatAnswer(std::string_view body) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  const Json* choices = j.is_object() ? detail::Field(j, "choices") : nullptr;
  if (!choices || !choices->is_array() || choices->empty() || !(*choices)[0].is_object())
    return Status::Internal("the upstream's answer is not a chat completion (no choices[0])");
  const Json& choice = (*choices)[0];
  Answer a;
  if (const Json* m = detail::Field(choice, "message"); m && m->is_object()) {
    a.text = detail::String(*m, "content");
    a.reasoning = detail::String(*m, "reasoning_content");
    if (a.reasoning.empty()) a.reasoning = detail::String(*m, "reasoning");
    if (const Json* calls = detail::Field(*m, "tool_calls"); calls && calls->is_array()) {
      for (const Json& call : *calls) {
        if (!call.is_object()) continue;
        ToolCall out;
        detail::ReadCallDelta(call, &out);
        a.tool_calls.push_back(std::move(out));
      }
    }
  }
  detail::ReadEnd(choice, &a);
  detail::ReadUsage(j, &a);
  return a;
}

Status ChatErrorStatus(int http_status, std::string_view body) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  const int status = http_status > 0 ? http_status : StatusOfEvent(j);
  return Status(CodeOf(status),
                "the upstream answered " + std::to_string(status) + ": " + ErrorMessageOf(j, body));
}

}  // namespace switchyard::conversation::translate
