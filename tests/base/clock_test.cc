#include "base/clock.h"

#include <gtest/gtest.h>

namespace switchyard {
namespace {

TEST(ClockTest, ManualClockMovesOnlyWhenTold) {
  ManualClock c(Time::FromMillis(5));
  EXPECT_EQ(c.Now(), Time::FromMillis(5));
  c.Advance(Millis(10));
  EXPECT_EQ(c.Now(), Time::FromMillis(15));
  c.Set(Time::FromSeconds(2));
  EXPECT_EQ(c.Now().millis(), 2000);
}

TEST(ClockTest, RealClockIsUnixEpochAndMonotoneEnough) {
  Time a = RealClock::Default()->Now();
  Time b = RealClock::Default()->Now();
  EXPECT_GT(a.seconds(), 1.7e9);  // after 2023
  EXPECT_LE(a, b);
}

TEST(TimeTest, Arithmetic) {
  Time t = Time::FromMillis(100);
  EXPECT_EQ((t + Millis(50)).millis(), 150);
  EXPECT_EQ((t - Millis(50)).millis(), 50);
  EXPECT_EQ(Time::FromMillis(300) - t, Millis(200));
  EXPECT_DOUBLE_EQ(ToSeconds(Millis(1500)), 1.5);
  EXPECT_EQ(FormatDuration(Millis(1500)), "1.5s");
}

}  // namespace
}  // namespace switchyard
