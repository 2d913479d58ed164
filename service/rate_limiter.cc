#include "service/rate_limiter.h"

#include <algorithm>

#include "base/mutex.h"

namespace switchyard::service {

Duration RateLimiter::Admit(const std::string& key, double rate_per_s, double burst) {
  // A bucket shallower than one token never holds one: every request would wait forever.
  burst = std::max(burst, 1.0);
  Time now = clock_->Now();
  MutexLock lock(&mu_);
  auto [it, inserted] = buckets_.try_emplace(key, Bucket{burst, now});
  Bucket& b = it->second;
  if (!inserted) {
    b.tokens = std::min(burst, b.tokens + ToSeconds(now - b.last) * rate_per_s);
    b.last = now;
  }
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return Duration(0);
  }
  return Seconds((1.0 - b.tokens) / rate_per_s);
}

}  // namespace switchyard::service
