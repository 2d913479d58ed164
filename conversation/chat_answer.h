// A Chat Completions upstream's answer read into the front-neutral Answer
// (conversation/conversation.h), so that the call's own Reply writes it in the Messages or
// Responses shape, and an upstream's error read into a Status that Reply::Error writes in the
// front's error shape. An upstream's answer is not trusted to have the types it should: what is not
// there is left out.
//
//   Chat Completions (choices[0])      | Answer
//   -----------------------------------+----------------------------------------------------
//   message.content                    | text
//   message.reasoning_content or       | reasoning
//   message.reasoning                  |
//   message.tool_calls[]               | tool_calls (id, function.name, function.arguments)
//   finish_reason                      | end: "length" kLength, "tool_calls" or any call
//                                      | kToolCalls, "stop" with vLLM's stop_reason string
//                                      | kStopSequence (stop_sequence), else kStop
//   usage.prompt_tokens,               | prompt_tokens, completion_tokens
//   usage.completion_tokens            |
//   usage.prompt_tokens_details.       | cached_tokens
//   cached_tokens                      |
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "base/result.h"
#include "base/status.h"
#include "conversation/conversation.h"

namespace switchyard::conversation::translate {

// A whole answer (a chat.completion object). Internal naming what is missing when the body
// is not one (no choices[0]).
Result<Answer> ReadChatAnswer(std::string_view body);

// An upstream's error answer (HTTP `http_status`, an OpenAI error body
// {"error":{"message",...}}, or any text) as a Status carrying its message:
// 400/413/422 InvalidArgument, 401 Unauthenticated, 403 PermissionDenied, 404 NotFound,
// 429 ResourceExhausted, 502/503 Unavailable, 408/504 DeadlineExceeded, other 4xx
// FailedPrecondition, other 5xx Internal. `http_status` 0 (an error event inside a stream):
// from the error's integer `code`, or the upstream client's "upstream_timeout" (else
// Internal).
Status ChatErrorStatus(int http_status, std::string_view body);

}  // namespace switchyard::conversation::translate
