// Lexical pieces shared by the pattern translation (regex_translate.cc) and its character
// classes (regex_class.cc): escapes with code points or property names, brace quantifiers,
// and the PCRE2 spellings of the classes the JS port substitutes.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace switchyard::tokenizer::internal {

// `\p{body}`, `\P{body}`, `\x{body}`, `\u{body}` at s[i].
struct BracedEscape {
  char kind = 0;  // p, P, x, u
  std::string body;
  size_t length = 0;
};
std::optional<BracedEscape> ParseBracedEscape(std::string_view s, size_t i);

// `\xHH`, `\uHHHH`, `\cX` at s[i].
struct FixedEscape {
  char kind = 0;  // x, u, c
  char32_t code_point = 0;
  size_t length = 0;
};
std::optional<FixedEscape> ParseFixedEscape(std::string_view s, size_t i);

// `{n}`, `{n,}`, `{n,m}`, `{,m}` at s[i], spelled for PCRE2 ({,m} is {0,m}).
struct BraceQuantifier {
  std::string pcre2;
  size_t length = 0;
};
std::optional<BraceQuantifier> ParseBraceQuantifier(std::string_view s, size_t i);

// NotSupported: `what` (a construct of the pattern) "at offset <offset>".
Status Refuse(std::string_view what, size_t offset);

// The code point of hex digits `body` (an escape at `offset`); NotSupported when not one.
Result<char32_t> HexCodePoint(std::string_view body, size_t offset);
// A property name PCRE2 may be handed (letters, digits, `_`, `=`, `:`, `&`, `-`, space).
Status CheckPropertyName(std::string_view body, size_t offset);

// "[aA]" for an ASCII letter, "" otherwise (the ASCII folding of `(?i:...)`).
std::string FoldedLetter(char32_t cp);
// Upper-case hex digits of `cp`.
std::string Hex(char32_t cp);

// The JS port's word characters inside a class (\w there) and outside (\w, \p{Word}).
std::string WordCharsInClass();
std::string WordCharsOutsideClass();
// `\b` (true) or `\B` (false) over those word characters.
std::string WordBoundary(bool boundary);

}  // namespace switchyard::tokenizer::internal
