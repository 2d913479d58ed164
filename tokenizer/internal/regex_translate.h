// Split patterns of tokenizer.json, translated for PCRE2.
//
// tokenizer.json patterns are written for Oniguruma (the regex engine of Hugging Face's
// Rust library). The reference this module is checked against, @huggingface/tokenizers
// (the JS port), rewrites them into JavaScript regexes with Oniguruma's meanings; this
// translation gives PCRE2 the same meanings as that rewrite:
//   - `\s` / `\S` are Unicode White_Space (not PCRE2's ASCII set), `\d` is \p{Nd}, `\w` is
//     Alphabetic, Mark, Nd, Pc (plus ²³¹¼½¾ outside classes), `\h` a hex digit;
//   - `.` is any character but `\n`; `^` / `$` are line anchors on `\n` only;
//   - `(?i:...)` folds ASCII letters only (`'S` matches `'s`, not `'ſ`);
//   - possessive `X++` and atomic `(?>...)` are plain (the JS port drops them), `X{n}+` is
//     `(?:X{n})+`, `{,n}` is `{0,n}`.
// Constructs neither side can honour exactly are refused with NotSupported naming the
// construct and its offset: `\G`, back-references and other escapes, inline flags other
// than `(?i:`, POSIX brackets, class intersections `&&`, negated nested classes.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace switchyard::tokenizer::internal {

// The PCRE2 (UTF mode) pattern for an Oniguruma `pattern`.
Result<std::string> TranslatePattern(std::string_view pattern);

// A PCRE2 pattern matching `literal` exactly (Split's {"String": ...} patterns).
std::string QuoteLiteral(std::string_view literal);

// The ByteLevel pre-tokenizer's own GPT-2 pattern (use_regex: true), as the JS port runs
// it: `\s` there is JavaScript's white space (U+FEFF is space, U+0085 is not).
std::string Gpt2Pattern();

// What the translation of one character class produced (regex_class.cc).
struct ClassTranslation {
  std::string atom;  // a PCRE2 class, "[...]" or "[^...]"
  size_t end = 0;    // offset in the source just past the closing ']'
};
// Translates the class that starts at source[start] == '['; `fold` inside `(?i:...)`.
Result<ClassTranslation> TranslateClass(std::string_view source, size_t start, bool fold);

// Appends the PCRE2 spelling of the literal code point `cp` (escaped when it is syntax).
void AppendLiteral(char32_t cp, std::string* out);

}  // namespace switchyard::tokenizer::internal
