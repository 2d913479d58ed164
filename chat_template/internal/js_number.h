// Numbers written and read the way JavaScript does (internal to chat_template).
//
// The reference engine keeps every number as a JavaScript double, so its output follows
// Number.prototype.toString, JSON.stringify, parseInt, parseFloat and the loose equality
// of strings and numbers. These functions reproduce those conversions. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace switchyard::chat_template::internal {

// Number.prototype.toString(): shortest round-trip digits, exponent form outside
// [1e-7, 1e21), "NaN", "Infinity", "-Infinity"; -0 gives "0".
std::string JsNumberToString(double v);
// How the reference prints a float: "-0.0" for -0, "<n>.0" for integral values below 1e21,
// otherwise as JsNumberToString.
std::string JsFloatToString(double v);
// JSON.stringify(number): as JsNumberToString, "null" for NaN and infinities.
std::string JsonNumber(double v);
// parseInt(s, 10) and parseFloat(s); NaN when no number starts the string.
double JsParseInt(std::string_view s);
double JsParseFloat(std::string_view s);
// ToNumber(string), as used by ==: trimmed, empty is 0, whole-string decimal, Infinity or
// 0x/0o/0b literal, NaN otherwise.
double JsStringToNumber(std::string_view s);

}  // namespace switchyard::chat_template::internal
