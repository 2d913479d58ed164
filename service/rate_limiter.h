// RateLimiter: per-key token buckets (requests per second with a burst), for per-tenant
// request rate limits. Admit() says whether a request may proceed now and, if not, how
// long until it could (the Retry-After of a 429).
//
// Thread-safety: thread-safe (one mutex; the critical section is a few arithmetic ops).
#pragma once

#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "base/mutex.h"

namespace switchyard::service {

class RateLimiter {
 public:
  explicit RateLimiter(const Clock* clock) : clock_(clock) {}

  // Takes one token from `key`'s bucket (rate per second, depth burst; a depth under one
  // token counts as one, else no request would ever pass). Returns 0 when admitted, else
  // the wait before a token is available.
  Duration Admit(const std::string& key, double rate_per_s, double burst);

 private:
  struct Bucket {
    double tokens;
    Time last;
  };
  const Clock* clock_;
  Mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_ GUARDED_BY(mu_);
};

}  // namespace switchyard::service
