// String operations with the reference's exact results: see strings.h.
#include "chat_template/internal/strings.h"

#include "chat_template/internal/error.h"
#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {
namespace {

bool IsAsciiWord(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::string TitleCase(std::string_view s) {
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    const bool boundary = i == 0 || !IsAsciiWord(out[i - 1]);
    if (boundary && out[i] >= 'a' && out[i] <= 'z') out[i] = static_cast<char>(out[i] - 32);
  }
  return out;
}

std::string Capitalize(std::string_view s) {
  if (s.empty()) return "";
  uint32_t cp = 0;
  const size_t n = DecodeUtf8(s, 0, &cp);
  if (cp >= 0x10000) return std::string(s);  // charAt(0) is half a surrogate pair
  return ToUpper(s.substr(0, n)) + std::string(s.substr(n));
}

std::string IndentLines(std::string_view s, std::string_view indent, bool first, bool blank,
                        size_t max_bytes) {
  std::string out;
  size_t start = 0;
  for (size_t line = 0;; ++line) {
    const size_t end = s.find('\n', start);
    const std::string_view text =
        s.substr(start, end == std::string_view::npos ? s.npos : end - start);
    const bool skip = (!first && line == 0) || (!blank && text.empty());
    if (!skip) out.append(indent);
    out.append(text);
    if (out.size() > max_bytes) FailStringTooLong();
    if (end == std::string_view::npos) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

std::vector<std::string> SplitString(std::string_view s, const std::optional<std::string>& sep,
                                     double maxsplit) {
  std::vector<std::string> out;
  if (!sep) {
    const std::string_view text = TrimStart(s);
    size_t i = 0;
    while (i < text.size()) {
      uint32_t cp = 0;
      size_t n = DecodeUtf8(text, i, &cp);
      if (IsJsSpace(cp)) {
        i += n;
        continue;
      }
      const size_t start = i;
      while (i < text.size()) {
        n = DecodeUtf8(text, i, &cp);
        if (IsJsSpace(cp)) break;
        i += n;
      }
      if (maxsplit >= 0 && static_cast<double>(out.size()) >= maxsplit) {
        out.emplace_back(text.substr(start));
        break;
      }
      out.emplace_back(text.substr(start, i - start));
    }
    return out;
  }
  size_t start = 0;
  while (true) {
    const size_t at = s.find(*sep, start);
    if (at == std::string_view::npos) break;
    out.emplace_back(s.substr(start, at - start));
    start = at + sep->size();
  }
  out.emplace_back(s.substr(start));
  if (maxsplit >= 0 && static_cast<double>(out.size()) > maxsplit) {
    const auto keep = static_cast<size_t>(maxsplit);
    std::string rest = out[keep];
    for (size_t i = keep + 1; i < out.size(); ++i) rest += *sep + out[i];
    out.resize(keep);
    out.push_back(std::move(rest));
  }
  return out;
}

std::string ReplaceString(std::string_view s, std::string_view from, std::string_view to,
                          std::optional<double> count, size_t max_bytes) {
  double remaining = (!count || *count < 0) ? -1 : *count;
  if (remaining == 0) return std::string(s);
  std::string out;
  auto take = [&]() {
    if (remaining < 0) return true;
    if (remaining == 0) return false;
    remaining -= 1;
    return true;
  };
  if (from.empty()) {
    for (size_t i = 0; i <= s.size();) {
      if (take()) out.append(to);
      if (out.size() > max_bytes) FailStringTooLong();
      if (i == s.size()) break;
      uint32_t cp = 0;
      const size_t n = DecodeUtf8(s, i, &cp);
      out.append(s.substr(i, n));
      i += n;
    }
    return out;
  }
  size_t start = 0;
  while (true) {
    const size_t at = s.find(from, start);
    if (at == std::string_view::npos) break;
    out.append(s.substr(start, at - start));
    out.append(take() ? to : from);
    if (out.size() > max_bytes) FailStringTooLong();
    start = at + from.size();
  }
  out.append(s.substr(start));
  return out;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace switchyard::chat_template::internal
