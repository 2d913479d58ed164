#include "base/utf8.h"

namespace switchyard {

size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;  // a continuation byte, 0xC0/0xC1, 0xF5..0xFF
}

namespace {

std::string HexByte(unsigned char c) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return {kHex[c >> 4], kHex[c & 15]};
}

}  // namespace

namespace {

// The first problem of `text` (see Utf8Problem); control characters count when `controls`.
std::string TextProblemOf(std::string_view text, bool controls) {
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t n = Utf8SequenceLength(text, i);
    if (n == 0) return "byte 0x" + HexByte(c) + " at offset " + std::to_string(i) + " is not UTF-8";
    // C0 controls and DEL are one byte; C1 controls (U+0080-U+009F) are 0xC2 0x80-0x9F.
    auto next = n == 2 ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (controls && (c < 0x20 || c == 0x7F || (c == 0xC2 && next <= 0x9F))) {
      return "control character U+00" + HexByte(n == 1 ? c : next) + " at offset " +
             std::to_string(i) + " is not allowed";
    }
    i += n;
  }
  return "";
}

}  // namespace

std::string Utf8Problem(std::string_view text) { return TextProblemOf(text, false); }

std::string TextProblem(std::string_view text) { return TextProblemOf(text, true); }

}  // namespace switchyard
