// The answers of the Anthropic front in Anthropic's shapes (see anthropic_response.h).
#include "frontends/anthropic/anthropic_response.h"

#include <algorithm>

#include "frontends/anthropic/anthropic_json.h"

namespace switchyard::frontends::anthropic {
namespace {

using detail::Dump;
using detail::Json;

Json NullIfEmpty(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

}  // namespace

Usage UsageOf(const Answer& a) {
  Usage u;
  const int64_t prompt = std::max<int64_t>(a.prompt_tokens, 0);
  u.cache_read_input_tokens = std::clamp<int64_t>(a.cached_tokens, 0, prompt);
  u.input_tokens = prompt - u.cache_read_input_tokens;
  u.output_tokens = std::max<int64_t>(a.completion_tokens, 0);
  return u;
}

std::string StopReasonOf(Answer::End end, bool has_tool_calls) {
  switch (end) {
    case Answer::End::kLength:
      return "max_tokens";
    case Answer::End::kStopSequence:
      return "stop_sequence";
    case Answer::End::kToolCalls:
      return "tool_use";
    case Answer::End::kStop:
      break;
  }
  return has_tool_calls ? "tool_use" : "end_turn";
}

std::string MessageJson(const Answer& a, const MessageHead& head, const Usage& usage) {
  Json content = Json::array();
  if (head.thinking && !a.reasoning.empty()) {
    content.push_back({{"type", "thinking"}, {"thinking", a.reasoning}, {"signature", ""}});
  }
  if (!a.text.empty()) {
    content.push_back({{"type", "text"}, {"text", a.text}});
  }
  for (const ToolCall& call : a.tool_calls) {
    content.push_back({{"type", "tool_use"},
                       {"id", call.id},
                       {"name", call.name},
                       {"input", detail::ToolInput(call)}});
  }
  const bool stop_sequence = a.end == Answer::End::kStopSequence;
  Json j = {{"id", head.id},
            {"type", "message"},
            {"role", "assistant"},
            {"model", head.model},
            {"content", std::move(content)},
            {"stop_reason", StopReasonOf(a.end, !a.tool_calls.empty())},
            {"stop_sequence", stop_sequence ? NullIfEmpty(a.stop_sequence) : Json(nullptr)},
            {"usage", detail::UsageJson(usage)}};
  return Dump(j);
}

std::string CountTokensJson(int64_t input_tokens) {
  return Dump(Json{{"input_tokens", input_tokens}});
}

// ---------------------------------------------------------------------------------------------
// Errors.

std::string_view ErrorTypeOf(int http_status) {
  switch (http_status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    case 504:
      return "timeout_error";
    default:
      return http_status >= 400 && http_status < 500 ? "invalid_request_error" : "api_error";
  }
}

std::string ErrorJson(int http_status, std::string_view message) {
  return ErrorJson(Error{http_status, std::string(ErrorTypeOf(http_status)), std::string(message)});
}

std::string ErrorJson(const Error& e) { return Dump(detail::ErrorBody(e)); }

Error ErrorFromStatus(const Status& s) {
  int http = 500;
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kNotSupported:
      http = 400;
      break;
    case StatusCode::kUnauthenticated:
      http = 401;
      break;
    case StatusCode::kPermissionDenied:
      http = 403;
      break;
    case StatusCode::kNotFound:
      http = 404;
      break;
    case StatusCode::kResourceExhausted:
      http = 429;
      break;
    case StatusCode::kUnavailable:
      http = 529;
      break;
    case StatusCode::kDeadlineExceeded:
      http = 504;
      break;
    default:
      break;
  }
  return {http, std::string(ErrorTypeOf(http)), s.message()};
}

}  // namespace switchyard::frontends::anthropic
