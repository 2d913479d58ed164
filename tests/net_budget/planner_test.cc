#include "net_budget/planner.h"

#include <gtest/gtest.h>

#include "base/virtual_event_loop.h"
#include "proto/json.h"

namespace switchyard::net_budget {
namespace {

// a -ab(1 GB/s, 10 us)-> b -bc(0.5 GB/s, 5 us)-> c; c -cd(unknown)-> d.
Topology Chain() {
  v1::Topology p;
  Status st = proto::ParseJson(R"({
    "devices": [{"id": "a", "kind": "DEVICE_GPU"}, {"id": "b", "kind": "DEVICE_SWITCH"},
                {"id": "c", "kind": "DEVICE_CPU"}, {"id": "d", "kind": "DEVICE_NIC"}],
    "links": [
      {"id": "ab", "src": "a", "dst": "b", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1e9, "latencyUs": 10, "duplex": true},
      {"id": "bc", "src": "b", "dst": "c", "kind": "LINK_PCIE", "bandwidthBytesPerS": 5e8, "latencyUs": 5, "duplex": true},
      {"id": "cd", "src": "c", "dst": "d", "kind": "LINK_NIC_PORT", "unknownBandwidth": true, "latencyUs": 5}]})",
                               &p);
  EXPECT_TRUE(st.ok()) << st;
  return std::move(Topology::FromProto(p)).value();
}

TEST(PlannerTest, IdleEstimateIsAlphaBetaArithmetic) {
  Topology t = Chain();
  Planner planner(t);
  auto e = planner.EstimateTransfer("a", "c", 1'000'000, TrafficClass::kLatency);
  ASSERT_TRUE(e.ok()) << e.status();
  // 10 us + 5 us + 1e6 B / 5e8 B/s = 2.015 ms, bottleneck bc.
  EXPECT_EQ(e->duration, Duration(2'015'000));
  EXPECT_EQ(e->fixed_cost, Micros(15));
  EXPECT_EQ(t.link(e->bottleneck_link).id, "bc");
  EXPECT_NEAR(e->rate_bytes_per_s, 5e8, 1e-3);
  EXPECT_EQ(e->hops, 2u);
  auto self = planner.EstimateTransfer("a", "a", 100, TrafficClass::kLatency);
  ASSERT_TRUE(self.ok());
  EXPECT_EQ(self->duration, Duration(0));
}

TEST(PlannerTest, RefusesUnknownLinksAndDevices) {
  Topology t = Chain();
  Planner planner(t);
  auto e = planner.EstimateTransfer("a", "d", 100, TrafficClass::kLatency);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(e.status().IsFailedPrecondition());
  EXPECT_EQ(e.status().message(),
            "link 'cd': bandwidth unknown (not discovered, configured or calibrated); refusing to "
            "estimate over it");
  EXPECT_EQ(planner.EstimateTransfer("a", "zz", 1, TrafficClass::kLatency).status().message(),
            "no device 'zz' in the topology");
  EXPECT_EQ(planner.EstimateTransfer("d", "a", 1, TrafficClass::kLatency).status().message(),
            "no path from 'd' to 'a'");
}

TEST(PlannerTest, CalibratedLinkIsUsedOnceInvalidated) {
  Topology t = Chain();
  Planner planner(t);
  LinkFit fit;
  fit.model = {1e-6, 1.0 / 2e9};  // cd measured: 1 us, 2 GB/s
  ASSERT_TRUE(t.SetCalibration("cd", fit).ok());
  planner.Invalidate();
  auto e = planner.EstimateTransfer("c", "d", 2'000'000, TrafficClass::kThroughput);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->duration, Micros(1001));
}

TEST(PlannerTest, EstimateReflectsClassShareAndBacklogUnderLoad) {
  Topology t = Chain();
  VirtualEventLoop loop;
  LinkBudgets budgets(t, &loop);
  Planner planner(t, &budgets);
  auto bc = std::move(t.FindPath("b", "c")).value();
  // Throughput owes 50 MB on bc: it is active there.
  auto g = budgets.TryAcquire(bc, TrafficClass::kThroughput, 50'000'000);
  ASSERT_TRUE(g.ok());
  // Latency would get 4/7 of bc (weights 4:3): 1e6 / (5e8 * 4/7) = 3.5 ms.
  auto lat = planner.EstimateTransfer("a", "c", 1'000'000, TrafficClass::kLatency);
  ASSERT_TRUE(lat.ok());
  EXPECT_NEAR(ToSeconds(lat->duration), 15e-6 + 1e6 / (5e8 * 4 / 7), 1e-8);
  EXPECT_EQ(t.link(lat->bottleneck_link).id, "bc");
  // Throughput has the link alone and its 50 MB backlog first: (50e6 + 1e6) / 5e8.
  auto thr = planner.EstimateTransfer("a", "c", 1'000'000, TrafficClass::kThroughput);
  ASSERT_TRUE(thr.ok());
  EXPECT_NEAR(ToSeconds(thr->duration), 15e-6 + 51e6 / 5e8, 1e-8);
  // Half-way through paying it off, half the backlog remains.
  loop.RunUntil(Time::FromSeconds(0.05));
  auto later = planner.EstimateTransfer("a", "c", 1'000'000, TrafficClass::kThroughput);
  ASSERT_TRUE(later.ok());
  EXPECT_NEAR(ToSeconds(later->duration), 15e-6 + 26e6 / 5e8, 1e-6);
}

}  // namespace
}  // namespace switchyard::net_budget
