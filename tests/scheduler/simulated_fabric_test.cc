#include "scheduler/simulated_fabric.h"

#include <gtest/gtest.h>

namespace switchyard::scheduler {
namespace {

TEST(SimulatedFabric, EstimatesAlphaPlusBytesOverNarrowestShare) {
  SimulatedFabric::Options o;
  o.workers = 2;
  SimulatedFabric f(o);
  // hbm@0 -> host@0: PCIe, 10 us + 1e9 / 50e9.
  auto e = f.Estimate({Tier::kHbm, 0}, {Tier::kHost, 0}, 1'000'000'000, TrafficClass::kBackground);
  ASSERT_TRUE(e.reachable);
  EXPECT_NEAR(ToSeconds(e.duration), 10e-6 + 0.02, 1e-9);
  // hbm@0 -> disk@0: PCIe then disk (6 GB/s narrowest), both alphas.
  e = f.Estimate({Tier::kHbm, 0}, {Tier::kDisk, 0}, 6'000'000'000, TrafficClass::kBackground);
  EXPECT_NEAR(ToSeconds(e.duration), 110e-6 + 1.0, 1e-9);
  // Congested PCIe: background keeps its floor share (10%).
  f.SetPcieLoad(0, 0.95);
  e = f.Estimate({Tier::kHbm, 0}, {Tier::kHost, 0}, 1'000'000'000, TrafficClass::kBackground);
  EXPECT_NEAR(ToSeconds(e.duration), 10e-6 + 0.2, 1e-9);
  EXPECT_DOUBLE_EQ(e.path_load, 0.95);
  // Peer link with NVLink bandwidth.
  f.SetPeerBandwidth(0, 1, 900e9);
  e = f.Estimate({Tier::kHbm, 0}, {Tier::kPeer, 1}, 900'000'000, TrafficClass::kLatency);
  EXPECT_NEAR(ToSeconds(e.duration), 20e-6 + 0.001, 1e-9);
  EXPECT_FALSE(f.Estimate({Tier::kHbm, 0}, {Tier::kHost, 5}, 1, TrafficClass::kLatency).reachable);
}

TEST(SimulatedFabric, GrantsAreCappedPerClassOnEveryLinkOfThePath) {
  SimulatedFabric::Options o;
  o.workers = 1;
  o.max_grants[2] = 2;
  SimulatedFabric f(o);
  auto a = f.Acquire({Tier::kHbm, 0}, {Tier::kHost, 0}, 10, TrafficClass::kBackground, Time{});
  auto b = f.Acquire({Tier::kHbm, 0}, {Tier::kDisk, 0}, 10, TrafficClass::kBackground, Time{});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->id, b->id);
  auto c = f.Acquire({Tier::kHbm, 0}, {Tier::kHost, 0}, 10, TrafficClass::kBackground, Time{});
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().IsResourceExhausted());
  EXPECT_NE(c.status().message().find("pcie@0"), std::string::npos);
  // Another class is budgeted separately.
  EXPECT_TRUE(
      f.Acquire({Tier::kHbm, 0}, {Tier::kHost, 0}, 10, TrafficClass::kLatency, Time{}).ok());
  f.Release(a->id);
  EXPECT_TRUE(
      f.Acquire({Tier::kHbm, 0}, {Tier::kHost, 0}, 10, TrafficClass::kBackground, Time{}).ok());
  EXPECT_FALSE(
      f.Acquire({Tier::kHbm, 0}, {Tier::kHost, 3}, 10, TrafficClass::kBackground, Time{}).ok());
}

}  // namespace
}  // namespace switchyard::scheduler
