// The answers of the OpenAI front in OpenAI's shapes: chat.completion and text_completion
// responses, the SSE chunk events of a streamed answer (with its usage chunk and [DONE]),
// model lists and errors (which bytes of a streamed answer are settled: stream_text.h). Text that
// is not valid UTF-8 (a byte-level tokenizer's output) is written with U+FFFD in place of the bad
// bytes; no exception leaves these functions.
//
// Thread-safety: pure functions; call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "frontends/openai/openai_request.h"

namespace switchyard::frontends::openai {

struct Error {
  int http_status = 400;
  std::string message, type = "invalid_request_error", param, code;
};
// {"error":{"message","type","param","code"}} (param/code null when empty).
std::string ErrorJson(const Error& e);
// The OpenAI error for a Status: InvalidArgument -> 400 with ParamOf as param,
// Unauthenticated 401, PermissionDenied 403, NotFound 404, ResourceExhausted 429,
// DeadlineExceeded 504, Unavailable 503, anything else 500.
Error ErrorFromStatus(const Status& s);

struct Choice {
  std::string text;
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;  // stop, length, tool_calls ("" -> null)
};
struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};
struct Response {
  std::string id;
  int64_t created = 0;                    // seconds since the Unix epoch
  std::string model, system_fingerprint;  // fingerprint null when empty
  bool chat = true;
  Choice choice;
  Usage usage;
};
// chat.completion / text_completion, usage with prompt_tokens_details.cached_tokens.
std::string ResponseJson(const Response& r);
// One SSE event "data: {...}\n\n" of a chat.completion.chunk / text_completion chunk. Chat: the
// first chunk carries role "assistant" (and content, "" if none), later ones the content delta
// (omitted when empty) and tool_calls deltas (index, id, type, function name + arguments);
// finish_reason non-empty marks the final chunk. head's choice and usage are not read.
std::string ChunkEvent(const Response& head, const std::string& delta_text, bool first,
                       const std::string& finish_reason,
                       const std::vector<ToolCall>* tool_calls = nullptr);
// The usage chunk (choices []) sent before [DONE] when stream_options.include_usage.
std::string UsageEvent(const Response& head);
inline constexpr char kDoneEvent[] = "data: [DONE]\n\n";
// GET /v1/models: {"object":"list","data":[{"id","object":"model","created","owned_by"}]}.
std::string ModelsJson(const std::vector<std::string>& ids, int64_t created,
                       const std::string& owned_by);
// GET /v1/models/{id}: {"id","object":"model","created","owned_by"}.
std::string ModelJson(const std::string& id, int64_t created, const std::string& owned_by);

}  // namespace switchyard::frontends::openai
