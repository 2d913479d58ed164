// UTF-8 text handled the way a JavaScript string is: see utf.h.
#include "chat_template/internal/utf.h"

#include <locale.h>
#include <wctype.h>

#include <cmath>

namespace switchyard::chat_template::internal {

size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t len = 0;
  uint32_t v = 0;
  uint32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, v = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, v = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, v = b0 & 0x07, min = 0x10000;
  } else {
    *cp = 0xFFFD;
    return 1;
  }
  if (i + len > s.size()) {
    *cp = 0xFFFD;
    return 1;
  }
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      *cp = 0xFFFD;
      return 1;
    }
    v = (v << 6) | (b & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
    *cp = 0xFFFD;
    return 1;
  }
  *cp = v;
  return len;
}

size_t PrevCodePointStart(std::string_view s, size_t i) {
  // Step back over at most three continuation bytes, then check that the sequence found
  // really ends at i; otherwise the previous byte stands alone (invalid UTF-8).
  size_t j = i - 1;
  int back = 0;
  while (j > 0 && back < 3 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j, ++back;
  uint32_t cp = 0;
  if (j + DecodeUtf8(s, j, &cp) == i) return j;
  return i - 1;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool IsJsSpace(uint32_t cp) {
  if (cp <= 32) return cp == 32 || (cp >= 9 && cp <= 13);
  return cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000 || cp == 0xFEFF;
}

std::string_view TrimStart(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(s, i, &cp);
    if (!IsJsSpace(cp)) break;
    i += n;
  }
  return s.substr(i);
}

std::string_view TrimEnd(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    const size_t start = PrevCodePointStart(s, end);
    uint32_t cp = 0;
    DecodeUtf8(s, start, &cp);
    if (!IsJsSpace(cp)) break;
    end = start;
  }
  return s.substr(0, end);
}

std::string_view Trim(std::string_view s) { return TrimEnd(TrimStart(s)); }

size_t Utf16Length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    i += DecodeUtf8(s, i, &cp);
    n += cp >= 0x10000 ? 2 : 1;
  }
  return n;
}

std::optional<std::string> Utf16At(std::string_view s, double index) {
  if (std::isnan(index)) index = 0;
  const double len = static_cast<double>(Utf16Length(s));
  double k = std::trunc(index);
  if (k < 0) k += len;
  if (k < 0 || k >= len) return std::nullopt;
  const auto target = static_cast<size_t>(k);
  size_t unit = 0;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(s, i, &cp);
    const size_t width = cp >= 0x10000 ? 2 : 1;
    if (target < unit + width) {
      if (width == 2) return std::string("\xEF\xBF\xBD");  // a lone surrogate
      return std::string(s.substr(i, n));
    }
    unit += width;
    i += n;
  }
  return std::nullopt;
}

std::vector<std::string_view> CodePoints(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(s, i, &cp);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

namespace {

// The first UTF-16 code unit of a code point, and the second (0 for the BMP).
uint32_t Unit(uint32_t cp, int k) {
  if (cp < 0x10000) return k == 0 ? cp : 0;
  const uint32_t v = cp - 0x10000;
  return k == 0 ? 0xD800 + (v >> 10) : 0xDC00 + (v & 0x3FF);
}

}  // namespace

int CompareUtf16(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    uint32_t ca = 0, cb = 0;
    const size_t na = DecodeUtf8(a, i, &ca);
    const size_t nb = DecodeUtf8(b, j, &cb);
    if (ca != cb) {
      for (int k = 0; k < 2; ++k) {
        const uint32_t ua = Unit(ca, k), ub = Unit(cb, k);
        if (ua != ub) return ua < ub ? -1 : 1;
      }
    }
    i += na;
    j += nb;
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return 0;
}

namespace {

locale_t Utf8Locale() {
  static const locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    return l;
  }();
  return loc;
}

// One-to-many upper-case mappings that simple case mapping does not have.
const char* SpecialUpper(uint32_t cp) {
  switch (cp) {
    case 0xDF:
      return "SS";
    case 0x149:
      return "\xCA\xBCN";
    case 0xFB00:
      return "FF";
    case 0xFB01:
      return "FI";
    case 0xFB02:
      return "FL";
    case 0xFB03:
      return "FFI";
    case 0xFB04:
      return "FFL";
    case 0xFB05:
    case 0xFB06:
      return "ST";
    default:
      return nullptr;
  }
}

std::string MapCase(std::string_view s, bool upper) {
  std::string out;
  out.reserve(s.size());
  const locale_t loc = Utf8Locale();
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(s, i, &cp);
    if (cp == 0xFFFD && n == 1 && static_cast<unsigned char>(s[i]) >= 0x80) {
      out += s[i];  // an invalid byte: copied through
    } else if (cp < 0x80) {
      const char c = static_cast<char>(cp);
      if (upper) out += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
      if (!upper) out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    } else if (loc == static_cast<locale_t>(nullptr)) {
      out.append(s.substr(i, n));
    } else if (const char* special = upper ? SpecialUpper(cp) : nullptr) {
      out += special;
    } else if (!upper && cp == 0x130) {
      out += "i\xCC\x87";
    } else {
      const wint_t m = upper ? towupper_l(static_cast<wint_t>(cp), loc)
                             : towlower_l(static_cast<wint_t>(cp), loc);
      AppendUtf8(out, static_cast<uint32_t>(m));
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string ToUpper(std::string_view s) { return MapCase(s, true); }
std::string ToLower(std::string_view s) { return MapCase(s, false); }

}  // namespace switchyard::chat_template::internal
