#include "tokenizer/internal/regex_syntax.h"

#include <cctype>

namespace switchyard::tokenizer::internal {
namespace {

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::optional<BracedEscape> ParseBracedEscape(std::string_view s, size_t i) {
  if (i + 3 >= s.size() || s[i] != '\\' || s[i + 2] != '{') return std::nullopt;
  const char kind = s[i + 1];
  if (kind != 'p' && kind != 'P' && kind != 'x' && kind != 'u') return std::nullopt;
  const size_t close = s.find('}', i + 3);
  if (close == std::string_view::npos) return std::nullopt;
  return BracedEscape{kind, std::string(s.substr(i + 3, close - i - 3)), close + 1 - i};
}

std::optional<FixedEscape> ParseFixedEscape(std::string_view s, size_t i) {
  if (i + 1 >= s.size() || s[i] != '\\') return std::nullopt;
  const char kind = s[i + 1];
  if (kind == 'c' && i + 2 < s.size() && std::isalpha(static_cast<unsigned char>(s[i + 2]))) {
    return FixedEscape{'c', static_cast<char32_t>(s[i + 2] & 0x1F), 3};
  }
  const size_t digits = kind == 'x' ? 2 : kind == 'u' ? 4 : 0;
  if (digits == 0 || i + 2 + digits > s.size()) return std::nullopt;
  char32_t cp = 0;
  for (size_t k = 0; k < digits; ++k) {
    const char c = s[i + 2 + k];
    if (!IsHex(c)) return std::nullopt;
    cp = cp * 16 +
         static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(c))
                                   ? c - '0'
                                   : (std::tolower(static_cast<unsigned char>(c)) - 'a' + 10));
  }
  return FixedEscape{kind, cp, 2 + digits};
}

std::optional<BraceQuantifier> ParseBraceQuantifier(std::string_view s, size_t i) {
  if (i >= s.size() || s[i] != '{') return std::nullopt;
  size_t j = i + 1;
  std::string lo, hi;
  bool comma = false;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) lo += s[j++];
  if (j < s.size() && s[j] == ',') {
    comma = true;
    ++j;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) hi += s[j++];
  }
  if (j >= s.size() || s[j] != '}') return std::nullopt;
  if (lo.empty() && (!comma || hi.empty())) return std::nullopt;  // `{}`, `{,}`
  if (lo.empty()) lo = "0";
  return BraceQuantifier{"{" + lo + (comma ? "," + hi : "") + "}", j + 1 - i};
}

Status Refuse(std::string_view what, size_t offset) {
  return Status::NotSupported(std::string(what) + " at offset " + std::to_string(offset));
}

Result<char32_t> HexCodePoint(std::string_view body, size_t offset) {
  if (body.empty() || body.size() > 8) {
    return Status::NotSupported("the code point escape {" + std::string(body) + "} at offset " +
                                std::to_string(offset));
  }
  char32_t cp = 0;
  for (char c : body) {
    if (!IsHex(c)) {
      return Status::NotSupported("the code point escape {" + std::string(body) + "} at offset " +
                                  std::to_string(offset));
    }
    const int v = std::isdigit(static_cast<unsigned char>(c))
                      ? c - '0'
                      : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    cp = cp * 16 + static_cast<char32_t>(v);
  }
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return Status::NotSupported("the code point U+" + Hex(cp) + " at offset " +
                                std::to_string(offset));
  }
  return cp;
}

Status CheckPropertyName(std::string_view body, size_t offset) {
  for (char c : body) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '=' && c != ':' &&
        c != '&' && c != '-' && c != ' ') {
      return Status::NotSupported("the property name {" + std::string(body) + "} at offset " +
                                  std::to_string(offset));
    }
  }
  if (body.empty()) {
    return Status::NotSupported("an empty property name at offset " + std::to_string(offset));
  }
  return Status::OK();
}

std::string FoldedLetter(char32_t cp) {
  if (cp >= 0x80 || !std::isalpha(static_cast<int>(cp))) return "";
  const char c = static_cast<char>(cp);
  return {'[', static_cast<char>(std::tolower(c)), static_cast<char>(std::toupper(c)), ']'};
}

std::string Hex(char32_t cp) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[cp & 15]);
    cp >>= 4;
  } while (cp != 0);
  if (out.size() < 2) out.insert(out.begin(), '0');
  return out;
}

std::string WordCharsInClass() { return "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}"; }

std::string WordCharsOutsideClass() {
  return WordCharsInClass() + "\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}";
}

std::string WordBoundary(bool boundary) {
  const std::string w = "[" + WordCharsOutsideClass() + "]";
  if (boundary) return "(?:(?<!" + w + ")(?=" + w + ")|(?<=" + w + ")(?!" + w + "))";
  return "(?:(?<!" + w + ")(?!" + w + ")|(?<=" + w + ")(?=" + w + "))";
}

}  // namespace switchyard::tokenizer::internal
