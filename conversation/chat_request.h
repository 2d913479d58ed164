// A call of the Messages or Responses front as a Chat Completions request, for an upstream
// that speaks only Chat Completions (upstream_api.h). Built from the call's Conversation
// (conversation/conversation.h), which each front already parsed its request into — so Messages'
// system blocks, tool_use and tool_result blocks, and Responses' instructions, items, namespace
// tools (flattened by the front) and previous_response_id chain arrive here in one shape:
//
//   Conversation                     | Chat Completions body
//   ---------------------------------+-----------------------------------------------------
//   model                            | model
//   messages: system, developer      | {"role":"system"} (developer too: chat templates of
//                                    | open models know only system)
//   messages: user                   | {"role":"user","content"}
//   messages: assistant              | {"role":"assistant","content" (null when it only
//                                    | calls), "tool_calls":[{id,type:function,function:
//                                    | {name,arguments}}]}; its reasoning is dropped
//   messages: tool                   | {"role":"tool","tool_call_id","content"} (a
//                                    | Messages tool_result's is_error has no field there)
//   Message::name                    | name (user, system, assistant)
//   tools                            | [{"type":"function","function":{name,description,
//                                    | parameters}}] (parameters {"type":"object"} if none)
//   tool_choice (with tools only)    | "auto", "none", "required", or
//                                    | {"type":"function","function":{"name"}}
//   parallel_tool_calls              | parallel_tool_calls (with tools, when false)
//   sampling.temperature, top_p      | temperature, top_p (when not the default 1)
//   sampling.seed, stop              | seed, stop
//   max_tokens (the request's)       | max_tokens (when given)
//   stream                           | stream, stream_options.include_usage
//
// A Messages prefill (the last turn the assistant's) goes as that turn: whether the
// upstream continues it or answers after it is the upstream's (Chat Completions has no
// standard way to ask). Messages' thinking and top_k, and Responses' reasoning, store and
// text options, are not sent.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "conversation/conversation.h"
#include "http/http.h"

namespace switchyard::conversation::translate {

// The body (JSON) of the Chat Completions request. `max_tokens`: the request's cap, 0 when
// it gave none.
std::string ChatRequestBody(const Conversation& conv, int64_t max_tokens, bool stream);

// The request sent upstream: POST /v1/chat/completions with that body and only its own
// headers (the client's credentials and protocol headers are not passed on; the upstream
// client sets the upstream's Authorization).
http::HttpRequest ChatRequest(const Conversation& conv, int64_t max_tokens, bool stream);

}  // namespace switchyard::conversation::translate
