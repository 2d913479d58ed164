// Chat Completions' own request fields (internal to the request parser, openai_request.cc):
// messages, tools, tool_choice, and the chat-only parameters accepted at their neutral
// values and refused otherwise (response_format, modalities, logprobs, functions).
//
// Thread-safety: pure functions.
#pragma once

#include "base/status.h"
#include "frontends/openai/openai_json.h"
#include "frontends/openai/openai_request.h"

namespace switchyard::frontends::openai::detail {

// Reads them from body `j` into *r; errors name the parameter (see ParseChat).
Status ParseChatFields(const Json& j, Request* r);

}  // namespace switchyard::frontends::openai::detail
