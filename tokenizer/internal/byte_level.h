// The byte-level alphabet of GPT-2 style BPE: each of the 256 byte values is written as one
// printable character (printable Latin-1 bytes as themselves, the others as U+0100 + n), so
// that a vocabulary of byte sequences can be stored as JSON strings.
//
// Thread-safety: immutable tables built on first use; safe from any thread.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace switchyard::tokenizer::internal {

// The UTF-8 of the character that stands for byte `b`.
std::string_view ByteLevelChar(unsigned char b);

// The bytes a byte-level token text stands for, or nullopt when the text holds a character
// outside the alphabet (such a token can never come out of byte-level BPE).
std::optional<std::string> ByteLevelToBytes(std::string_view token_text);

// The byte-level text of `bytes` (the inverse of ByteLevelToBytes).
std::string BytesToByteLevel(std::string_view bytes);

}  // namespace switchyard::tokenizer::internal
