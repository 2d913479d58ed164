#include "tokenizer/internal/unicode.h"

#include <unicode/uchar.h>

#include <cstring>

#include "base/utf8.h"

namespace switchyard::tokenizer::internal {

bool IsAscii(std::string_view text) {
  const char* p = text.data();
  size_t n = text.size();
  uint64_t acc = 0;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    acc |= w;
  }
  for (; n > 0; ++p, --n) acc |= static_cast<unsigned char>(*p);
  return (acc & 0x8080808080808080ULL) == 0;
}

int64_t FirstInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) return static_cast<int64_t>(i);
    i += n;
  }
  return -1;
}

namespace {

// The range the second byte of a sequence led by `lead` must fall in, and how many
// continuation bytes follow the lead; 0 when `lead` cannot start a sequence.
int SequenceShape(unsigned char lead, unsigned char* lo, unsigned char* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) return 1;
  if (lead == 0xE0) *lo = 0xA0;
  if (lead == 0xED) *hi = 0x9F;
  if (lead >= 0xE0 && lead <= 0xEF) return 2;
  if (lead == 0xF0) *lo = 0x90;
  if (lead == 0xF4) *hi = 0x8F;
  if (lead >= 0xF0 && lead <= 0xF4) return 3;
  return 0;
}

}  // namespace

void AppendSanitizedUtf8(std::string_view bytes, std::string* out) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  size_t i = 0;
  while (i < bytes.size()) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    if (lead < 0x80) {
      out->push_back(static_cast<char>(lead));
      ++i;
      continue;
    }
    unsigned char lo, hi;
    const int need = SequenceShape(lead, &lo, &hi);
    size_t j = i + 1;
    int got = 0;
    while (got < need && j < bytes.size()) {
      const auto c = static_cast<unsigned char>(bytes[j]);
      if (c < lo || c > hi) break;
      lo = 0x80;
      hi = 0xBF;
      ++j;
      ++got;
    }
    if (need > 0 && got == need) {
      out->append(bytes.substr(i, j - i));
    } else {
      out->append(kReplacement);  // the maximal subpart bytes[i, j)
    }
    i = j;
  }
}

char32_t NextCodePoint(std::string_view text, size_t* i) {
  const auto c = static_cast<unsigned char>(text[*i]);
  auto cont = [&](size_t k) { return static_cast<unsigned char>(text[*i + k]) & 0x3F; };
  char32_t cp;
  size_t n;
  if (c < 0x80) {
    cp = c, n = 1;
  } else if (c < 0xE0) {
    cp = ((c & 0x1F) << 6) | cont(1), n = 2;
  } else if (c < 0xF0) {
    cp = ((c & 0x0F) << 12) | (cont(1) << 6) | cont(2), n = 3;
  } else {
    cp = ((c & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3), n = 4;
  }
  *i += n;
  return cp;
}

char32_t PreviousCodePoint(std::string_view text, size_t end, size_t* start) {
  size_t s = end - 1;
  while (s > 0 && (static_cast<unsigned char>(text[s]) & 0xC0) == 0x80) --s;
  *start = s;
  size_t i = s;
  return NextCodePoint(text, &i);
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsWhiteSpace(char32_t cp) { return u_isUWhiteSpace(static_cast<UChar32>(cp)); }

bool IsWordCharacter(char32_t cp) {
  const auto c = static_cast<UChar32>(cp);
  if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL)) {
    return true;
  }
  const uint32_t mask = U_GET_GC_MASK(c);
  return (mask & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

size_t LeadingWhiteSpace(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    size_t next = i;
    if (!IsWhiteSpace(NextCodePoint(text, &next))) break;
    i = next;
  }
  return i;
}

size_t TrailingWhiteSpace(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start;
    if (!IsWhiteSpace(PreviousCodePoint(text, end, &start))) break;
    end = start;
  }
  return text.size() - end;
}

}  // namespace switchyard::tokenizer::internal
