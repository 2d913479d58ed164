// UTF-8 text handled the way a JavaScript string is (internal to chat_template).
//
// The reference engine (@huggingface/jinja) works on UTF-16 JavaScript strings; these
// helpers give the same answers on UTF-8 bytes: the whitespace set of String.trim and \s,
// lengths and indexes in UTF-16 code units, code-point slicing, UTF-16 code-unit order,
// and case mapping. Invalid UTF-8 bytes decode as U+FFFD one byte at a time and are copied
// through unchanged. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::chat_template::internal {

// Decodes the code point at s[i] (i < s.size()); returns its length in bytes (1 for an
// invalid byte, whose code point is U+FFFD).
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp);
// The start of the code point that ends just before s[i] (i > 0).
size_t PrevCodePointStart(std::string_view s, size_t i);
void AppendUtf8(std::string& out, uint32_t cp);

// JavaScript's WhiteSpace and LineTerminator code points (String.prototype.trim, /\s/).
bool IsJsSpace(uint32_t cp);
// '0'..'9' (the only digits of JavaScript's and the template language's numbers); c is a
// char or -1.
inline bool IsAsciiDigit(int c) { return c >= '0' && c <= '9'; }
std::string_view TrimStart(std::string_view s);
std::string_view TrimEnd(std::string_view s);
std::string_view Trim(std::string_view s);

// Length in UTF-16 code units (String.prototype.length).
size_t Utf16Length(std::string_view s);
// String.prototype.at(index): the UTF-16 code unit at index (negative counts from the
// end); half of a surrogate pair comes back as U+FFFD. nullopt when out of range.
std::optional<std::string> Utf16At(std::string_view s, double index);
// The code points of s, each as its own bytes (Array.from(string)).
std::vector<std::string_view> CodePoints(std::string_view s);
// <0, 0, >0 comparing in UTF-16 code-unit order (JavaScript's < on strings).
int CompareUtf16(std::string_view a, std::string_view b);

// String.prototype.toUpperCase / toLowerCase: simple Unicode case mapping (the C.UTF-8
// locale's tables, ASCII when that locale is missing) plus the one-to-many mappings of
// German sharp s and the Latin ligatures; the final-sigma rule is not applied.
std::string ToUpper(std::string_view s);
std::string ToLower(std::string_view s);

}  // namespace switchyard::chat_template::internal
