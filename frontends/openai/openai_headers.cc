// The request headers the OpenAI front reads (see openai_headers.h): the session id,
// x-switchyard-deadline (seconds or an RFC 3339 time) and x-switchyard-priority.
#include "frontends/openai/openai_headers.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "frontends/openai/openai_json.h"

namespace switchyard::frontends::openai {
namespace {

using detail::Bad;
using detail::Quoted;

constexpr char kDeadlineHeader[] = "x-switchyard-deadline";
constexpr char kPriorityHeader[] = "x-switchyard-priority";
constexpr const char* kSessionHeaders[] = {"x-session-id", "x-claude-code-session-id", "session_id",
                                           "session-id"};

}  // namespace

std::string SessionIdOf(const std::map<std::string, std::string>& headers, const Request& r) {
  for (const char* h : kSessionHeaders) {
    auto it = headers.find(h);
    if (it != headers.end() && !it->second.empty()) return it->second;
  }
  return !r.metadata_session_id.empty() ? r.metadata_session_id : r.user;
}

bool SessionIdIsUser(const std::map<std::string, std::string>& headers, const Request& r) {
  for (const char* h : kSessionHeaders) {
    auto it = headers.find(h);
    if (it != headers.end() && !it->second.empty()) return false;
  }
  return r.metadata_session_id.empty() && !r.user.empty();
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int64_t Digits(std::string_view s) {  // AllDigits(s), at most 18 digits
  int64_t v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

// "12" or "12.345": milliseconds, rounded; nullopt if not a plain decimal of at most 1e9 s.
std::optional<int64_t> DecimalSecondsMs(std::string_view s) {
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? "" : s.substr(dot + 1);
  if (!AllDigits(whole) || (dot != std::string_view::npos && !AllDigits(frac))) return {};
  while (whole.size() > 1 && whole.front() == '0') whole.remove_prefix(1);
  if (whole.size() > 10 || Digits(whole) > 1000000000) return {};
  std::string ms(frac.substr(0, 4));
  ms.resize(4, '0');
  int64_t frac_ms = (Digits(ms) + 5) / 10;  // round half up on the fourth digit
  return Digits(whole) * 1000 + frac_ms;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int64_t y, int64_t m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// A fixed-width field of digits at s[pos, pos + n), or -1.
int64_t Field(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size() || !AllDigits(s.substr(pos, n))) return -1;
  return Digits(s.substr(pos, n));
}

// The offset suffix "Z" or "+hh:mm" / "-hh:mm" in minutes east of UTC, or nullopt.
std::optional<int64_t> OffsetMinutes(std::string_view s) {
  if (s == "Z" || s == "z") return 0;
  if (s.size() != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':') return {};
  int64_t h = Field(s, 1, 2), m = Field(s, 4, 2);
  if (h < 0 || h > 23 || m < 0 || m > 59) return {};
  return (s[0] == '-' ? -1 : 1) * (h * 60 + m);
}

// RFC 3339 date-time ("2025-06-01T12:00:00.5Z") in ms since the epoch, or nullopt.
std::optional<int64_t> Rfc3339Ms(std::string_view s) {
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':') return {};
  if (s[10] != 'T' && s[10] != 't' && s[10] != ' ') return {};
  int64_t y = Field(s, 0, 4), mo = Field(s, 5, 2), d = Field(s, 8, 2);
  int64_t h = Field(s, 11, 2), mi = Field(s, 14, 2), sec = Field(s, 17, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo)) return {};
  if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60) return {};
  size_t pos = 19;
  int64_t frac_ms = 0;
  if (s[pos] == '.') {
    size_t end = pos + 1;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    if (end == pos + 1) return {};
    std::string ms(s.substr(pos + 1, std::min<size_t>(3, end - pos - 1)));
    ms.resize(3, '0');
    frac_ms = Digits(ms);
    pos = end;
  }
  std::optional<int64_t> offset = OffsetMinutes(s.substr(pos));
  if (!offset) return {};
  int64_t secs = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - *offset * 60;
  return secs * 1000 + frac_ms;
}

}  // namespace

Result<int64_t> ParseDeadline(std::string_view value, int64_t now_ms) {
  std::string_view v = Trim(value);
  if (std::optional<int64_t> ms = DecimalSecondsMs(v)) {
    int64_t out = 0;
    if (__builtin_add_overflow(now_ms, *ms, &out)) return Bad(kDeadlineHeader, "too far ahead");
    return out;
  }
  if (std::optional<int64_t> at = Rfc3339Ms(v)) return *at;
  return Bad(kDeadlineHeader,
             "expected seconds from now (\"30\", \"2.5\", at most 1e9) or an RFC 3339 time, got " +
                 Quoted(v));
}

Result<int> ParsePriority(std::string_view value) {
  std::string v(Trim(value));
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "interactive" || v == "0") return 1;
  if (v == "standard" || v == "1") return 2;
  if (v == "batch" || v == "2") return 3;
  return Bad(kPriorityHeader,
             "expected interactive, standard, batch or 0..2, got " + Quoted(Trim(value)));
}

}  // namespace switchyard::frontends::openai
