#include "base/clock.h"

#include <chrono>
#include <cstdio>

namespace switchyard {

Time RealClock::Now() const {
  auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return Time{std::chrono::duration_cast<Duration>(since_epoch).count()};
}

RealClock* RealClock::Default() {
  static RealClock clock;
  return &clock;
}

std::string FormatDuration(Duration d) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.6gs", ToSeconds(d));
  return buf;
}

}  // namespace switchyard
