#include "tokenizer/internal/byte_level.h"

#include "tokenizer/internal/unicode.h"

namespace switchyard::tokenizer::internal {
namespace {

bool PrintsAsItself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<std::string, 256> char_of_byte;
  std::array<int, 0x144> byte_of_char;  // code point → byte, -1 when not in the alphabet
  Tables() {
    byte_of_char.fill(-1);
    int next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const char32_t cp = PrintsAsItself(b) ? static_cast<char32_t>(b) : next++;
      AppendUtf8(cp, &char_of_byte[b]);
      byte_of_char[cp] = b;
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

}  // namespace

std::string_view ByteLevelChar(unsigned char b) { return GetTables().char_of_byte[b]; }

std::optional<std::string> ByteLevelToBytes(std::string_view token_text) {
  const Tables& t = GetTables();
  std::string bytes;
  bytes.reserve(token_text.size());
  for (size_t i = 0; i < token_text.size();) {
    const char32_t cp = NextCodePoint(token_text, &i);
    if (cp >= t.byte_of_char.size() || t.byte_of_char[cp] < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(t.byte_of_char[cp]));
  }
  return bytes;
}

std::string BytesToByteLevel(std::string_view bytes) {
  std::string text;
  for (unsigned char b : bytes) text.append(ByteLevelChar(b));
  return text;
}

}  // namespace switchyard::tokenizer::internal
