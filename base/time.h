// Time and Duration: one representation of time for the whole project.
//
// Time is nanoseconds on the runtime's clock. With a RealClock that is the Unix epoch
// (so API deadlines in epoch milliseconds compare directly); with a ManualClock or the
// virtual event loop it starts wherever the test or replay sets it (usually 0).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace switchyard {

using Duration = std::chrono::nanoseconds;

// A point on the runtime clock. A thin strong type so that a Duration cannot be passed
// where a Time is meant.
struct Time {
  int64_t ns = 0;

  static constexpr Time FromNanos(int64_t v) { return Time{v}; }
  static constexpr Time FromMillis(int64_t v) { return Time{v * 1'000'000}; }
  static constexpr Time FromSeconds(double s) { return Time{static_cast<int64_t>(s * 1e9)}; }
  static constexpr Time Max() { return Time{INT64_MAX}; }

  constexpr int64_t millis() const { return ns / 1'000'000; }
  constexpr double seconds() const { return static_cast<double>(ns) / 1e9; }

  friend constexpr auto operator<=>(Time, Time) = default;
  friend constexpr Time operator+(Time t, Duration d) { return Time{t.ns + d.count()}; }
  friend constexpr Time operator-(Time t, Duration d) { return Time{t.ns - d.count()}; }
  friend constexpr Duration operator-(Time a, Time b) { return Duration(a.ns - b.ns); }
  Time& operator+=(Duration d) {
    ns += d.count();
    return *this;
  }
};

constexpr Duration Millis(int64_t v) { return std::chrono::milliseconds(v); }
constexpr Duration Micros(int64_t v) { return std::chrono::microseconds(v); }
constexpr Duration Seconds(double s) { return Duration(static_cast<int64_t>(s * 1e9)); }
inline double ToSeconds(Duration d) { return static_cast<double>(d.count()) / 1e9; }

// "12.345s" style rendering for logs and errors.
std::string FormatDuration(Duration d);

}  // namespace switchyard
