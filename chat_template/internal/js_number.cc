// Numbers written and read the way JavaScript does: see js_number.h.
#include "chat_template/internal/js_number.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {

std::string JsNumberToString(double v) {
  if (std::isnan(v)) return "NaN";
  if (v == 0) return "0";
  if (std::isinf(v)) return v < 0 ? "-Infinity" : "Infinity";
  char buf[64];
  // Shortest round-trip digits, as "d.ddde+XX".
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
  std::string sign;
  std::string digits;
  size_t i = 0;
  if (sci[0] == '-') sign = "-", i = 1;
  for (; i < sci.size() && sci[i] != 'e'; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exp10 = std::atoi(std::string(sci.substr(i + 1)).c_str());
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;  // the decimal point sits after n digits
  if (k <= n && n <= 21) return sign + digits + std::string(static_cast<size_t>(n - k), '0');
  if (0 < n && n <= 21) return sign + digits.substr(0, n) + "." + digits.substr(n);
  if (-6 < n && n <= 0) return sign + "0." + std::string(static_cast<size_t>(-n), '0') + digits;
  std::string mantissa = digits.substr(0, 1);
  if (k > 1) mantissa += "." + digits.substr(1);
  const int e = n - 1;
  return sign + mantissa + "e" + (e < 0 ? "-" : "+") + std::to_string(std::abs(e));
}

std::string JsFloatToString(double v) {
  if (v == 0 && std::signbit(v)) return "-0.0";
  if (std::isfinite(v) && std::fmod(v, 1.0) == 0 && std::fabs(v) < 1e21) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
  }
  return JsNumberToString(v);
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return JsNumberToString(v);
}

namespace {

double FromChars(std::string_view digits) {
  double out = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  if (r.ec == std::errc::result_out_of_range) {
    // Too large overflows to infinity, too small underflows to zero, as in JavaScript.
    size_t e = digits.find_first_of("eE");
    const bool neg_exp =
        e != std::string_view::npos && e + 1 < digits.size() && digits[e + 1] == '-';
    return neg_exp ? 0.0 : std::numeric_limits<double>::infinity();
  }
  if (r.ec != std::errc()) return std::nan("");
  return out;
}

// The length of the longest StrUnsignedDecimalLiteral that starts s (without "Infinity").
size_t DecimalPrefix(std::string_view s) {
  size_t i = 0;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && IsAsciiDigit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && IsAsciiDigit(s[j])) ++j, ++frac_digits;
    if (int_digits + frac_digits == 0) return 0;
    i = j;
  }
  if (int_digits + frac_digits == 0) return 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    const size_t start = j;
    while (j < s.size() && IsAsciiDigit(s[j])) ++j;
    if (j > start) i = j;
  }
  return i;
}

// Parses a decimal literal prefix of s (sign included); *used gets its length, 0 if none.
double SignedDecimal(std::string_view s, size_t* used) {
  *used = 0;
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i] == '-', ++i;
  if (s.substr(i).starts_with("Infinity")) {
    *used = i + 8;
    return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  const size_t len = DecimalPrefix(s.substr(i));
  if (len == 0) return std::nan("");
  *used = i + len;
  std::string text(s.substr(i, len));
  if (text[0] == '.') text.insert(text.begin(), '0');
  const double v = FromChars(text);
  return neg ? -v : v;
}

}  // namespace

double JsParseInt(std::string_view s) {
  s = TrimStart(s);
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i] == '-', ++i;
  const size_t start = i;
  while (i < s.size() && IsAsciiDigit(s[i])) ++i;
  if (i == start) return std::nan("");
  const double v = FromChars(s.substr(start, i - start));
  return neg ? -v : v;
}

double JsParseFloat(std::string_view s) {
  size_t used = 0;
  return SignedDecimal(TrimStart(s), &used);
}

double JsStringToNumber(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return 0;
  if (s.size() > 2 && s[0] == '0') {
    const char p = s[1];
    const int base = (p == 'x' || p == 'X')   ? 16
                     : (p == 'o' || p == 'O') ? 8
                     : (p == 'b' || p == 'B') ? 2
                                              : 0;
    if (base != 0) {
      double v = 0;
      for (char c : s.substr(2)) {
        int d = IsAsciiDigit(c)          ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : 99;
        if (d >= base) return std::nan("");
        v = v * base + d;
      }
      return v;
    }
  }
  size_t used = 0;
  const double v = SignedDecimal(s, &used);
  return used == s.size() ? v : std::nan("");
}

}  // namespace switchyard::chat_template::internal
