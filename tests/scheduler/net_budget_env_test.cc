#include "scheduler/net_budget_env.h"

#include <gtest/gtest.h>

#include "base/virtual_event_loop.h"

namespace switchyard::scheduler {
namespace {

std::unique_ptr<NetBudgetEnvironment> MakeEnv(const ClusterShape& s, EventLoop* loop) {
  auto proto = BuildClusterTopology(s);
  EXPECT_TRUE(proto.ok()) << proto.status().ToString();
  auto topo = net_budget::Topology::FromProto(*proto);
  EXPECT_TRUE(topo.ok()) << topo.status().ToString();
  auto env = NetBudgetEnvironment::Create(std::move(*topo), ClusterLocationMap(s), loop);
  EXPECT_TRUE(env.ok()) << env.status().ToString();
  return std::move(*env);
}

TEST(BuildClusterTopology, RejectsNonPositiveFiguresNamingTheField) {
  ClusterShape s;
  s.nic_bytes_per_s = 0;
  auto t = BuildClusterTopology(s);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("nic_bytes_per_s"), std::string::npos);
}

TEST(BuildClusterTopology, MultiNodeShapeHasEveryDeviceAndValidates) {
  ClusterShape s{.nodes = 4, .workers_per_node = 8};
  auto t = BuildClusterTopology(s);
  ASSERT_TRUE(t.ok());
  // Per node: cpu, nvme, nvswitch, nic, 8 workers; plus the switch.
  EXPECT_EQ(t->devices_size(), 4 * 12 + 1);
  EXPECT_TRUE(net_budget::Topology::FromProto(*t).ok());
}

TEST(NetBudgetEnvironment, EstimatesFollowTheConfiguredLinks) {
  VirtualEventLoop loop;
  ClusterShape s{.nodes = 2, .workers_per_node = 2};
  auto env = MakeEnv(s, &loop);
  const uint64_t gb = 1'000'000'000;
  // hbm@0 -> host@0: one PCIe hop.
  auto e = env->Estimate({Tier::kHbm, 0}, {Tier::kHost, 0}, gb, TrafficClass::kBackground);
  ASSERT_TRUE(e.reachable);
  EXPECT_NEAR(ToSeconds(e.duration), 10e-6 + 1e9 / 55e9, 1e-6);
  EXPECT_DOUBLE_EQ(e.path_load, 0.0);
  // hbm@0 -> disk@0: PCIe then NVMe (the narrowest, 6 GB/s).
  e = env->Estimate({Tier::kHbm, 0}, {Tier::kDisk, 0}, gb, TrafficClass::kBackground);
  EXPECT_NEAR(ToSeconds(e.duration), 110e-6 + 1e9 / 6e9, 1e-6);
  // Same node peer: NVLink through the NVSwitch.
  e = env->Estimate({Tier::kHbm, 0}, {Tier::kPeer, 1}, gb, TrafficClass::kLatency);
  EXPECT_NEAR(ToSeconds(e.duration), 6e-6 + 1e9 / 450e9, 1e-6);
  // Other node: GPUDirect to the NIC, the switch, and back; the NIC port (50 GB/s) binds.
  e = env->Estimate({Tier::kHbm, 0}, {Tier::kPeer, 2}, gb, TrafficClass::kLatency);
  EXPECT_NEAR(ToSeconds(e.duration), 30e-6 + 1e9 / 50e9, 1e-6);
  // Outside the cluster: unreachable, never guessed.
  EXPECT_FALSE(
      env->Estimate({Tier::kHbm, 0}, {Tier::kHost, 9}, gb, TrafficClass::kLatency).reachable);
}

TEST(NetBudgetEnvironment, TensorParallelWorkersMoveTheirSharesInParallel) {
  VirtualEventLoop loop;
  auto env = MakeEnv(ClusterShape{.tp = 8}, &loop);
  auto e = env->Estimate({Tier::kHbm, 0}, {Tier::kHost, 0}, 8 * 55'000'000'000ULL,
                         TrafficClass::kThroughput);
  EXPECT_NEAR(ToSeconds(e.duration), 1.0 + 10e-6, 1e-6);
}

// Two GPUs per PCIe switch: a worker's copy to the host crosses its own link and then the
// switch's uplink, which its neighbour shares and a worker behind another switch does not.
TEST(NetBudgetEnvironment, WorkersBehindOnePcieSwitchShareItsUplink) {
  VirtualEventLoop loop;
  ClusterShape s{.workers_per_node = 4, .gpus_per_pcie_switch = 2, .pcie_uplink_bytes_per_s = 40e9};
  auto t = BuildClusterTopology(s);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->devices_size(), 3 + 4 + 2);  // cpu, nvme, nvswitch, workers, two switches
  auto env = MakeEnv(s, &loop);
  Location host{Tier::kHost, 0};
  const uint64_t gb = 1'000'000'000;
  // Two PCIe hops; the 40 GB/s uplink binds.
  auto e = env->Estimate({Tier::kHbm, 0}, host, gb, TrafficClass::kThroughput);
  EXPECT_NEAR(ToSeconds(e.duration), 20e-6 + 1e9 / 40e9, 1e-6);
  // Worker 0 takes 0.1 s of the uplink in the background class.
  ASSERT_TRUE(
      env->Acquire({Tier::kHbm, 0}, host, 4 * gb, TrafficClass::kBackground, loop.Now()).ok());
  // Its neighbour behind the same switch now sees the uplink's backlog; worker 2 does not.
  double neighbour =
      ToSeconds(env->Estimate({Tier::kHbm, 1}, host, 1000, TrafficClass::kBackground).duration);
  double other =
      ToSeconds(env->Estimate({Tier::kHbm, 2}, host, 1000, TrafficClass::kBackground).duration);
  EXPECT_GT(neighbour, 0.09);
  EXPECT_LT(other, 1e-3);
}

// A worker spanning whole switches (tp 4, two GPUs per switch) gets at most their uplinks;
// the gather cost slows its GPUs' side: time per byte 1/bandwidth + gather.
TEST(NetBudgetEnvironment, UplinksBoundAWideWorkerAndTheGatherCostSlowsItsCopies) {
  VirtualEventLoop loop;
  ClusterShape wide{.tp = 4, .gpus_per_pcie_switch = 2};
  auto env = MakeEnv(wide, &loop);
  auto e = env->Estimate({Tier::kHbm, 0}, {Tier::kHost, 0}, 110'000'000'000ULL,
                         TrafficClass::kThroughput);
  EXPECT_NEAR(ToSeconds(e.duration), 1.0 + 10e-6, 1e-6);  // 2 uplinks x 55 GB/s, not 4 x 55
  ClusterShape gathered{.pcie_gather_s_per_byte = 1.0 / 55e9};
  env = MakeEnv(gathered, &loop);
  e = env->Estimate({Tier::kHbm, 0}, {Tier::kHost, 0}, 55'000'000'000ULL,
                    TrafficClass::kThroughput);
  EXPECT_NEAR(ToSeconds(e.duration), 2.0 + 10e-6, 1e-6);  // half the link's speed
  ClusterShape odd{.tp = 2, .gpus_per_pcie_switch = 3};
  auto bad = BuildClusterTopology(odd);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gpus_per_pcie_switch"), std::string::npos);
}

TEST(NetBudgetEnvironment, GrantsDebitTheClassAndBackpressureUntilRepaid) {
  VirtualEventLoop loop;
  auto env = MakeEnv(ClusterShape{}, &loop);
  Location hbm{Tier::kHbm, 0}, host{Tier::kHost, 0};
  const uint64_t bytes = 5'500'000'000;  // 0.1 s of the PCIe link
  auto a = env->Acquire(hbm, host, bytes, TrafficClass::kBackground, loop.Now());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(a->valid());
  EXPECT_EQ(a->traffic_class, TrafficClass::kBackground);
  EXPECT_NEAR(ToSeconds(env->PlannedDuration(a->id)), 0.1 + 10e-6, 1e-6);
  // The class is in debt on the channel: a second request is refused (retryable), and the
  // planner now sees the backlog.
  auto b = env->Acquire(hbm, host, 1000, TrafficClass::kBackground, loop.Now());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_GT(ToSeconds(env->Estimate(hbm, host, 1000, TrafficClass::kBackground).duration), 0.09);
  // Another class is not blocked by background's debt.
  EXPECT_TRUE(env->Acquire(hbm, host, 1000, TrafficClass::kLatency, loop.Now()).ok());
  // Once the debt is repaid in (virtual) time, background is granted again.
  loop.RunFor(Millis(150));
  auto c = env->Acquire(hbm, host, 1000, TrafficClass::kBackground, loop.Now());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(env->outstanding_grants(), 3u);
  env->Release(a->id);
  EXPECT_EQ(env->outstanding_grants(), 2u);
  EXPECT_EQ(env->PlannedDuration(a->id), Duration{0});
}

TEST(NetBudgetEnvironment, TrafficCountsGrantedBytesPerLinkAndClass) {
  VirtualEventLoop loop;
  auto env = MakeEnv(ClusterShape{}, &loop);
  ASSERT_TRUE(
      env->Acquire({Tier::kHbm, 0}, {Tier::kDisk, 0}, 4096, TrafficClass::kThroughput, loop.Now())
          .ok());
  uint64_t total = 0;
  int links = 0;
  for (const auto& t : env->Traffic()) {
    uint64_t thr = t.bytes[net_budget::ClassIndex(TrafficClass::kThroughput)];
    total += thr;
    links += thr > 0;
    EXPECT_EQ(t.bytes[net_budget::ClassIndex(TrafficClass::kLatency)], 0u);
  }
  EXPECT_EQ(links, 2);  // PCIe and NVMe
  EXPECT_EQ(total, 2 * 4096u);
}

TEST(NetBudgetEnvironment, AcquireOutsideTheClusterIsNotFound) {
  VirtualEventLoop loop;
  auto env = MakeEnv(ClusterShape{}, &loop);
  auto g = env->Acquire({Tier::kHbm, 0}, {Tier::kPeer, 3}, 10, TrafficClass::kLatency, loop.Now());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kNotFound);
  EXPECT_NE(g.status().message().find("peer@3"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::scheduler
