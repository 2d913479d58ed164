// The JSON helpers the Anthropic protocol's files share (internal to frontends/anthropic/):
// the request body parsed with a nesting limit and a syntax error that says where, typed
// readers of members whose errors name the offending parameter
// ("messages[3].content[1].tool_use_id: required"), the compact writer, and the pieces of
// responses the message and stream formats share.
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
#include "frontends/conversation.h"

namespace switchyard::frontends::anthropic::detail {

using Json = nlohmann::ordered_json;

// The body as a JSON object. InvalidArgument (naming no parameter) when it is not JSON, not
// an object, or nests deeper than 64 levels (checked before parsing, without recursion).
Result<Json> ParseBody(std::string_view body);

// InvalidArgument "<param>: <what>" (ParamOf in anthropic_request.h recovers the parameter).
Status Bad(std::string_view param, std::string_view what);
// 'value' for an error message, cut to 64 bytes on a character boundary.
std::string Quoted(std::string_view s);
// "<param>: must be <expected>, got <type>".
Status WrongType(std::string_view param, const Json& v, std::string_view expected);
std::string Path(std::string_view prefix, std::string_view key);  // "prefix.key"
std::string Indexed(std::string_view prefix, size_t i);           // "prefix[i]"

// The member `key` of `obj`, or null when absent or JSON null.
const Json* Get(const Json& obj, const char* key);
// Typed readers: absent or null leaves *out unchanged; a wrong type names prefix.key.
Status ReadString(const Json& obj, std::string_view prefix, const char* key, std::string* out);
// As ReadString, but absent or null is "<prefix.key>: required".
Status RequireString(const Json& obj, std::string_view prefix, const char* key, std::string* out);
Status ReadBool(const Json& obj, std::string_view prefix, const char* key, bool* out);
Status ReadInt(const Json& obj, std::string_view prefix, const char* key,
               std::optional<int64_t>* out);
Status ReadNumber(const Json& obj, std::string_view prefix, const char* key,
                  std::optional<double>* out);
Status ReadObject(const Json& obj, std::string_view prefix, const char* key, const Json** out);

// Compact text; invalid UTF-8 is written with U+FFFD in place of the bad bytes.
std::string Dump(const Json& j);

// Pieces of the answers, shared by anthropic_response.cc and anthropic_stream.cc.
// {"input_tokens","cache_creation_input_tokens","cache_read_input_tokens","output_tokens"}.
Json UsageJson(const Usage& u);
// A tool_use block's input: the call's arguments when they are a JSON object (nesting at
// most 64 levels), else {}.
Json ToolInput(const ToolCall& call);
// {"type":"error","error":{"type","message"}}.
Json ErrorBody(const Error& e);

}  // namespace switchyard::frontends::anthropic::detail
