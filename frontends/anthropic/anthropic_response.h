// The answers of the Anthropic front in Anthropic's shapes: the message object of
// POST /v1/messages, the count of POST /v1/messages/count_tokens, and errors
// ({"type":"error","error":{"type","message"}}) with Anthropic's error types. The SSE events
// of a streamed answer are anthropic_stream.h's.
//
// Usage, from a frontends::Answer (Anthropic counts cached prompt tokens apart: input_tokens
// excludes them, and the three add up to the whole prompt):
//   cache_read_input_tokens      = min(cached_tokens, prompt_tokens): the prompt tokens the
//                                  session's context already held
//   input_tokens                 = prompt_tokens - cache_read_input_tokens
//   cache_creation_input_tokens  = 0: Switchyard keeps a session's context without a write
//                                  step to report (a front that wants to report the tokens a
//                                  cache_control breakpoint wrote moves them out of
//                                  input_tokens into it)
//   output_tokens                = completion_tokens
//
// Text that is not valid UTF-8 (a byte-level tokenizer's output) is written with U+FFFD in
// place of the bad bytes; no exception leaves these functions.
//
// Thread-safety: pure functions; call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "frontends/conversation_names.h"

namespace switchyard::frontends::anthropic {

struct Usage {
  int64_t input_tokens = 0;  // prompt tokens not read from a cache
  int64_t cache_creation_input_tokens = 0, cache_read_input_tokens = 0;
  int64_t output_tokens = 0;
};
// As the table above says.
Usage UsageOf(const Answer& a);

// What a message says besides the answer.
struct MessageHead {
  std::string id;         // "msg_..." (the front allocates it)
  std::string model;      // as the request named it
  bool thinking = false;  // the request enabled thinking: Answer::reasoning becomes a thinking
                          // block (with an empty signature) before the text
};

// stop_reason: kStop -> "end_turn" ("tool_use" when the answer holds calls), kToolCalls ->
// "tool_use", kLength -> "max_tokens", kStopSequence -> "stop_sequence".
std::string StopReasonOf(Answer::End end, bool has_tool_calls);

// {"id","type":"message","role":"assistant","model","content":[thinking?, text?, tool_use...],
//  "stop_reason","stop_sequence","usage":{input_tokens, cache_creation_input_tokens,
//  cache_read_input_tokens, output_tokens}}. An empty text (or reasoning) has no block, so an
// empty answer has content []; a tool_use's input is its arguments' JSON object ({} when they
// are not one).
std::string MessageJson(const Answer& a, const MessageHead& head, const Usage& usage);
// {"input_tokens": n}.
std::string CountTokensJson(int64_t input_tokens);

struct Error {
  int http_status = 500;
  std::string type = "api_error", message;
};
// Anthropic's error type for an HTTP status: 400 invalid_request_error, 401
// authentication_error, 402 billing_error, 403 permission_error, 404 not_found_error, 413
// request_too_large, 429 rate_limit_error, 500 api_error, 503 and 529 overloaded_error, 504
// timeout_error; any other 4xx invalid_request_error, anything else api_error.
std::string_view ErrorTypeOf(int http_status);
// {"type":"error","error":{"type":ErrorTypeOf(http_status),"message"}}.
std::string ErrorJson(int http_status, std::string_view message);
std::string ErrorJson(const Error& e);
// The error for a Status: InvalidArgument, OutOfRange, FailedPrecondition and NotSupported
// 400; Unauthenticated 401; PermissionDenied 403; NotFound 404; ResourceExhausted 429;
// Unavailable 529 overloaded_error (Anthropic's clients retry it, as they do 503);
// DeadlineExceeded 504; anything else 500. The message is the Status's.
Error ErrorFromStatus(const Status& s);

}  // namespace switchyard::frontends::anthropic
