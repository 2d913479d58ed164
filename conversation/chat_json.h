// The pieces of a Chat Completions answer that a whole answer (chat_answer.cc) and a
// stream's chunks (chat_stream.cc) share, read leniently from nlohmann::json: a field of
// the wrong type counts as absent. Internal to conversation/.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "conversation/conversation.h"

namespace switchyard::conversation::translate::detail {

// The field `key` of object `j`, or nullptr (also when it is null).
const nlohmann::json* Field(const nlohmann::json& j, std::string_view key);
// The string field `key` of `j`, or "".
std::string String(const nlohmann::json& j, std::string_view key);

// A tool call or a stream's piece of one ({id, function: {name, arguments}}): the id and
// the name when `call` has none yet, the arguments appended (an object is written as text).
void ReadCallDelta(const nlohmann::json& call, ToolCall* out);
// The choice's finish_reason (and vLLM's stop_reason) into a->end; kToolCalls whenever
// a->tool_calls is not empty.
void ReadEnd(const nlohmann::json& choice, Answer* a);
// The answer's usage (a top-level `usage` object), when present.
void ReadUsage(const nlohmann::json& j, Answer* a);

}  // namespace switchyard::conversation::translate::detail
