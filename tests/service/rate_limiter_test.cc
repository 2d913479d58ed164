// Per-key token buckets (service/rate_limiter.h).
#include "service/rate_limiter.h"

#include <gtest/gtest.h>

namespace switchyard::service {
namespace {

TEST(RateLimiterTest, AdmitsTheBurstThenOneRequestPerInterval) {
  ManualClock clock(Time::FromSeconds(100));
  RateLimiter limiter(&clock);
  EXPECT_EQ(limiter.Admit("t", 2, 3).count(), 0);
  EXPECT_EQ(limiter.Admit("t", 2, 3).count(), 0);
  EXPECT_EQ(limiter.Admit("t", 2, 3).count(), 0);
  Duration wait = limiter.Admit("t", 2, 3);
  EXPECT_NEAR(ToSeconds(wait), 0.5, 1e-9);
  EXPECT_EQ(limiter.Admit("u", 2, 3).count(), 0) << "buckets are per key";
  clock.Advance(Seconds(0.5));
  EXPECT_EQ(limiter.Admit("t", 2, 3).count(), 0);
}

// A bucket shallower than one token (rateLimitPerS 0.25 with the default depth, twice the
// rate) used to never hold a whole token: the tenant got 429 forever.
TEST(RateLimiterTest, ABurstUnderOneIsOneRequest) {
  ManualClock clock(Time::FromSeconds(100));
  RateLimiter limiter(&clock);
  EXPECT_EQ(limiter.Admit("slow", 0.25, 0.5).count(), 0) << "the first request passes";
  Duration wait = limiter.Admit("slow", 0.25, 0.5);
  EXPECT_NEAR(ToSeconds(wait), 4.0, 1e-9);
  clock.Advance(wait);
  EXPECT_EQ(limiter.Admit("slow", 0.25, 0.5).count(), 0) << "and one every 4 s after it";
  clock.Advance(Seconds(60));
  EXPECT_EQ(limiter.Admit("slow", 0.25, 0.5).count(), 0);
  EXPECT_GT(limiter.Admit("slow", 0.25, 0.5).count(), 0) << "the bucket holds one token";
}

}  // namespace
}  // namespace switchyard::service
