#include "bench/common/machine_probe.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace switchyard::bench {
namespace {

TEST(MachineProbe, RoundTripsOnOneCpu) {
  PingPong p;
  ASSERT_TRUE(LoopbackPingPong(0, 0, 200, &p));
  EXPECT_GT(p.round_trip_us, 0);
  EXPECT_GT(p.cpu_us, 0);
  // Two threads on one CPU cannot use more CPU than the time that passed.
  EXPECT_LE(p.cpu_us, p.round_trip_us * 1.05);
}

TEST(MachineProbe, RoundTripsAcrossCpus) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: nothing to cross";
  PingPong p;
  ASSERT_TRUE(LoopbackPingPong(0, 1, 200, &p));
  EXPECT_GT(p.round_trip_us, 0);
  EXPECT_GT(p.cpu_us, 0);
}

TEST(MachineProbe, FailsWithoutHangingOnACpuTheMachineLacks) {
  PingPong p{-1, -1};
  EXPECT_FALSE(LoopbackPingPong(0, CPU_SETSIZE - 1, 100, &p));
  EXPECT_FALSE(LoopbackPingPong(CPU_SETSIZE - 1, 0, 100, &p));
  EXPECT_FALSE(LoopbackPingPong(0, -1, 100, &p));
  EXPECT_FALSE(LoopbackPingPong(0, CPU_SETSIZE, 100, &p));
  EXPECT_EQ(p.round_trip_us, -1);  // left alone
  EXPECT_EQ(p.cpu_us, -1);
}

TEST(MachineProbe, RejectsZeroRoundTrips) {
  PingPong p;
  EXPECT_FALSE(LoopbackPingPong(0, 0, 0, &p));
}

}  // namespace
}  // namespace switchyard::bench
