// UTF-8 and Unicode helpers of the tokenizer: validation of input text, the decoder's
// replacement of ill-formed bytes, and the character properties the added-token flags use.
//
// Replacement follows the WHATWG Encoding Standard's UTF-8 decoder (what the reference
// tokenizer's TextDecoder does): each maximal subpart of an ill-formed sequence becomes one
// U+FFFD. The properties come from ICU (its Unicode version, not PCRE2's).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace switchyard::tokenizer::internal {

// Offset of the first byte of `text` that is not well-formed UTF-8, or -1.
int64_t FirstInvalidUtf8(std::string_view text);

// True when every byte of `text` is below 0x80.
bool IsAscii(std::string_view text);

// Appends `bytes` to `out`, each maximal ill-formed subpart replaced by U+FFFD.
void AppendSanitizedUtf8(std::string_view bytes, std::string* out);

// Decodes the code point at text[*i] of well-formed UTF-8 and advances *i past it.
char32_t NextCodePoint(std::string_view text, size_t* i);
// Decodes the code point that ends at text[end - 1] (well-formed UTF-8) and returns its
// first byte's offset in *start.
char32_t PreviousCodePoint(std::string_view text, size_t end, size_t* start);

void AppendUtf8(char32_t cp, std::string* out);

// Unicode White_Space (what `\s` of HF's Rust regexes matches).
bool IsWhiteSpace(char32_t cp);
// A word character as `\w` of HF's Rust regexes: Alphabetic, Mark, Decimal_Number,
// Connector_Punctuation or Join_Control.
bool IsWordCharacter(char32_t cp);

// The byte length of the run of White_Space characters that starts `text` / ends `text`.
size_t LeadingWhiteSpace(std::string_view text);
size_t TrailingWhiteSpace(std::string_view text);

}  // namespace switchyard::tokenizer::internal
