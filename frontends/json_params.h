// The JSON helpers the fronts' protocol layers share (frontends/openai, anthropic,
// responses; not for other code): the request body parsed with a nesting limit and a syntax
// error that says where, typed readers of members whose errors name the offending parameter
// ("messages[2].role: ..."), and the compact writer.
//
// ordered_json keeps the client's key order (tool schemas render as written) and writes the
// answers in each API's field order. No exception leaves these functions.
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

namespace switchyard::frontends::json {

using Json = nlohmann::ordered_json;

inline constexpr int kMaxDepth = 64;
// The deepest nesting of [ and { outside strings; stops counting past kMaxDepth.
int NestingDepth(std::string_view text);
// The body as a JSON object. InvalidArgument (naming no parameter) when it is not JSON (with
// the byte where the parser stopped and why), not an object, or nests deeper than kMaxDepth
// levels (checked before parsing, without recursion, so a hostile body cannot exhaust the
// stack).
Result<Json> ParseBody(std::string_view body);

// InvalidArgument "<param>: <what>" (each protocol's ParamOf recovers the parameter).
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
Json NullIfEmpty(const std::string& s);

}  // namespace switchyard::frontends::json
