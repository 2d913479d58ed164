#include <gtest/gtest.h>

#include "net_budget/topology.h"
#include "proto/json.h"

namespace switchyard::net_budget {
namespace {

// a -> b -> d is two hops of 1 us and 10 GB/s; a -> c -> e -> d is three hops of 0.1 us
// and 100 GB/s; a -> f is directed.
Topology Diamond() {
  v1::Topology p;
  Status st = proto::ParseJson(R"({
    "devices": [{"id": "a", "kind": "DEVICE_GPU"}, {"id": "b", "kind": "DEVICE_SWITCH"},
                {"id": "c", "kind": "DEVICE_SWITCH"}, {"id": "d", "kind": "DEVICE_GPU"},
                {"id": "e", "kind": "DEVICE_SWITCH"}, {"id": "f", "kind": "DEVICE_NIC"}],
    "links": [
      {"id": "ab", "src": "a", "dst": "b", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1e10, "latencyUs": 1, "duplex": true},
      {"id": "bd", "src": "b", "dst": "d", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1e10, "latencyUs": 1, "duplex": true},
      {"id": "ac", "src": "a", "dst": "c", "kind": "LINK_NVLINK", "bandwidthBytesPerS": 1e11, "latencyUs": 0.1, "duplex": true},
      {"id": "ce", "src": "c", "dst": "e", "kind": "LINK_NVLINK", "bandwidthBytesPerS": 1e11, "latencyUs": 0.1, "duplex": true},
      {"id": "ed", "src": "e", "dst": "d", "kind": "LINK_NVLINK", "bandwidthBytesPerS": 1e11, "latencyUs": 0.1, "duplex": true},
      {"id": "af", "src": "a", "dst": "f", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1e9, "latencyUs": 1}]})",
                               &p);
  EXPECT_TRUE(st.ok()) << st;
  return std::move(Topology::FromProto(p)).value();
}

TEST(PathFindingTest, MetricsChooseDifferentRoutes) {
  Topology t = Diamond();
  auto hops = t.FindPath("a", "d", PathMetric::kFewestHops);
  ASSERT_TRUE(hops.ok());
  EXPECT_EQ(t.Describe(*hops), "a -[ab]-> b -[bd]-> d");
  auto lat = t.FindPath("a", "d", PathMetric::kMinLatency);
  ASSERT_TRUE(lat.ok());
  EXPECT_EQ(t.Describe(*lat), "a -[ac]-> c -[ce]-> e -[ed]-> d");
  auto wide = t.FindPath("a", "d", PathMetric::kWidest);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->hops.size(), 3u);
}

TEST(PathFindingTest, DuplexLinksAreCrossedInReverseDirectedOnesAreNot) {
  Topology t = Diamond();
  auto back = t.FindPath("d", "a");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(t.Describe(*back), "d -[bd]-> b -[ab]-> a");
  EXPECT_TRUE(back->hops[0].reverse);
  EXPECT_EQ(back->hops[0].channel(), t.FindLink("bd").value() * 2 + 1);
  auto none = t.FindPath("f", "a");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "no path from 'f' to 'a'");
  EXPECT_TRUE(t.FindPath("a", "zz").status().IsNotFound());
  auto self = t.FindPath("a", "a");
  ASSERT_TRUE(self.ok());
  EXPECT_TRUE(self->hops.empty());
}

TEST(PathFindingTest, UnknownFiguresAreSkippedByMetricsThatNeedThem) {
  v1::Topology p;
  ASSERT_TRUE(proto::ParseJson(R"({
    "devices": [{"id": "a", "kind": "DEVICE_GPU"}, {"id": "b", "kind": "DEVICE_GPU"}],
    "links": [{"id": "ab", "src": "a", "dst": "b", "kind": "LINK_VETH", "unknownBandwidth": true, "unknownLatency": true}]})",
                               &p)
                  .ok());
  auto t = Topology::FromProto(p);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->FindPath("a", "b", PathMetric::kFewestHops).ok());
  EXPECT_EQ(t->FindPath("a", "b", PathMetric::kMinLatency).status().message(),
            "no path from 'a' to 'b' over links of known latency");
  EXPECT_EQ(t->FindPath("a", "b", PathMetric::kWidest).status().message(),
            "no path from 'a' to 'b' over links of known bandwidth");
}

}  // namespace
}  // namespace switchyard::net_budget
