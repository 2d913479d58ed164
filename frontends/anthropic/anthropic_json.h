// The JSON helpers the Anthropic protocol's files share (internal to frontends/anthropic/):
// the fronts' shared ones (frontends/json_params.h: the body, typed readers whose errors name
// the parameter, "messages[3].content[1].tool_use_id: required", the compact writer) under
// the names these files use, and the pieces of responses the message and stream formats
// share.
//
// ordered_json keeps the client's key order (tool schemas and tool inputs render as written)
// and writes responses in Anthropic's field order. No exception leaves these functions.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/status.h"
#include "frontends/anthropic/anthropic_response.h"
#include "frontends/conversation_names.h"
#include "frontends/json_params.h"

namespace switchyard::frontends::anthropic::detail {

using json::Bad;
using json::Dump;
using json::Get;
using json::Indexed;
using json::Json;
using json::NullIfEmpty;
using json::ParseBody;
using json::Path;
using json::Quoted;
using json::ReadBool;
using json::ReadInt;
using json::ReadNumber;
using json::ReadObject;
using json::ReadString;
using json::RequireString;
using json::WrongType;

// Pieces of the answers, shared by anthropic_response.cc and anthropic_stream.cc.
// {"input_tokens","cache_creation_input_tokens","cache_read_input_tokens","output_tokens"}.
Json UsageJson(const Usage& u);
// A tool_use block's input: the call's arguments when they are a JSON object (nesting at
// most 64 levels), else {}.
Json ToolInput(const ToolCall& call);
// {"type":"error","error":{"type","message"}}.
Json ErrorBody(const Error& e);

}  // namespace switchyard::frontends::anthropic::detail
