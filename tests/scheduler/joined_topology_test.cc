// scheduler/joined_topology.h: serve's topology with joined workers placed on the hosts
// they reported, their ports at the speeds discovery found there, and link file figures
// that contradict a report listed as conflicts.
#include "scheduler/joined_topology.h"

#include <gtest/gtest.h>

#include <map>

#include "net_budget/topology.h"
#include "scheduler/link_file.h"

namespace switchyard::scheduler {
namespace {

// A host's discovery: interface `ifname` with a port at `bytes_per_s` (0: no speed).
v1::Topology HostWithPort(const std::string& host, const std::string& ifname, double bytes_per_s) {
  v1::Topology t;
  v1::TopologyLink* l = t.add_links();
  l->set_id(host + "/" + ifname + "/port");
  if (bytes_per_s > 0) l->set_bandwidth_bytes_per_s(bytes_per_s);
  return t;
}

std::map<std::string, const v1::TopologyLink*> LinksByName(const v1::Topology& t) {
  std::map<std::string, const v1::TopologyLink*> m;
  for (const auto& l : t.links()) m[l.attributes().at(kLinkNameAttribute)] = &l;
  return m;
}

struct Placed {
  v1::Topology topology;
  LocationMap device_of;
};

// Serve on "s" with three workers: 0 on serve's host, 1 on "b" (eth0 at 12.5 GB/s), 2 on
// "c" (ib0, no speed reported); serve's eth1 faces both at 25 GB/s.
Placed ThreeWorkers() {
  ClusterShape shape;
  shape.name = "loopback";
  shape.workers_per_node = 3;
  Placed p;
  p.topology = *BuildClusterTopology(shape);
  EXPECT_TRUE(LabelClusterLinks(shape, {}, &p.topology).ok());
  JoinedHosts hosts;
  hosts.serve_host = "s";
  hosts.serve_discovered = HostWithPort("s", "eth1", 25e9);
  hosts.workers[0] = {"w-a", "s", {}, "lo", "lo"};
  hosts.workers[1] = {"w-b", "b", HostWithPort("b", "eth0", 12.5e9), "eth0", "eth1"};
  hosts.workers[2] = {"w-c", "c", HostWithPort("c", "ib0", 0), "ib0", "eth1"};
  Result<LocationMap> map = ApplyJoinedHosts(hosts, shape, &p.topology);
  EXPECT_TRUE(map.ok()) << map.status();
  if (map.ok()) p.device_of = *map;
  return p;
}

TEST(JoinedTopology, WorkersOnOtherHostsReachServeThroughTheirReportedPorts) {
  Placed p = ThreeWorkers();
  ASSERT_TRUE(p.device_of);
  EXPECT_EQ(*p.device_of({Tier::kHbm, 0}), "node0/w0");  // on serve's host: unchanged
  EXPECT_EQ(*p.device_of({Tier::kHbm, 1}), "b/w1");
  EXPECT_EQ(*p.device_of({Tier::kPeer, 2}), "c/w2");
  EXPECT_EQ(*p.device_of({Tier::kHost, 1}), "node0/cpu");  // serve's tiers stay in serve
  auto links = LinksByName(p.topology);
  ASSERT_TRUE(links.count("pcie1"));
  EXPECT_EQ(links["pcie1"]->src(), "b/w1");
  EXPECT_EQ(links["pcie1"]->dst(), "b/mem");
  EXPECT_FALSE(links.count("nvlink1")) << "no NVLink between hosts";
  EXPECT_TRUE(links.count("nvlink0"));
  ASSERT_TRUE(links.count("nic:b/eth0"));
  EXPECT_DOUBLE_EQ(links["nic:b/eth0"]->bandwidth_bytes_per_s(), 12.5e9);
  EXPECT_EQ(links["nic:b/eth0"]->source(), v1::SOURCE_DISCOVERED);
  ASSERT_TRUE(links.count("nic:c/ib0"));  // no speed reported: the shape's NIC default
  EXPECT_DOUBLE_EQ(links["nic:c/ib0"]->bandwidth_bytes_per_s(), ClusterShape{}.nic_bytes_per_s);
  EXPECT_NE(links["nic:c/ib0"]->attributes().at(kFigureSourceAttribute).find("reports no speed"),
            std::string::npos);
  ASSERT_TRUE(links.count("nic:s/eth1"));  // serve's one port toward both
  EXPECT_DOUBLE_EQ(links["nic:s/eth1"]->bandwidth_bytes_per_s(), 25e9);
  EXPECT_NE(p.topology.name().find("3 hosts"), std::string::npos) << p.topology.name();
  // The result is a valid topology, and a move from b's worker to serve's host memory
  // crosses b's port and serve's.
  auto topo = net_budget::Topology::FromProto(p.topology);
  ASSERT_TRUE(topo.ok()) << topo.status();
  auto path = topo->FindPath("b/w1", "node0/cpu");
  ASSERT_TRUE(path.ok()) << path.status();
  std::string route;
  for (const auto& h : path->hops) route += topo->link(h.link).id + " ";
  EXPECT_NE(route.find("b/eth0<->fabric"), std::string::npos) << route;
  EXPECT_NE(route.find("node0/eth1<->fabric"), std::string::npos) << route;
}

TEST(JoinedTopology, ALinkFileFigureFarFromTheReportIsAConflictWithThatWorker) {
  Placed p = ThreeWorkers();
  EXPECT_TRUE(FindTopologyConflicts(p.topology).empty()) << "no link file, no conflict";
  v1::LinkFile file;
  for (auto [name, beta] : {std::pair{"nic:b/eth0", 1 / 50e9}, {"nic:s/eth1", 1 / 24e9}}) {
    v1::MeasuredLink* m = file.add_links();
    m->set_link(name);
    m->mutable_calibration()->set_alpha_s(1e-5);
    m->mutable_calibration()->set_beta_s_per_byte(beta);
  }
  ASSERT_TRUE(ApplyLinkFile(file, "links.json", &p.topology).ok());
  std::vector<TopologyConflict> c = FindTopologyConflicts(p.topology);
  ASSERT_EQ(c.size(), 1u);  // 24 GB/s against a reported 25: within 25 %
  EXPECT_EQ(c[0].worker, 1);
  EXPECT_EQ(c[0].link, "nic:b/eth0");
  EXPECT_NE(c[0].detail.find("reported 12.5"), std::string::npos) << c[0].detail;
}

TEST(JoinedTopology, AllOnServesHostLeavesTheLoopbackAsItIs) {
  ClusterShape shape;
  shape.workers_per_node = 2;
  v1::Topology t = *BuildClusterTopology(shape);
  const std::string before = t.SerializeAsString();
  JoinedHosts hosts;
  hosts.serve_host = "s";
  hosts.workers[0] = {"a", "s", {}, "", ""};
  hosts.workers[1] = {"b", "", {}, "", ""};  // reported nothing
  ASSERT_TRUE(ApplyJoinedHosts(hosts, shape, &t).ok());
  EXPECT_EQ(t.SerializeAsString(), before);
  hosts.workers[5] = {"x", "z", {}, "", ""};
  Result<LocationMap> bad = ApplyJoinedHosts(hosts, shape, &t);
  EXPECT_TRUE(bad.status().IsInvalidArgument());
  EXPECT_NE(bad.status().message().find("joined worker x"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::scheduler
