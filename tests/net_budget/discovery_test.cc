#include "net_budget/discovery.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "net_budget/planner.h"
#include "net_budget/topology.h"
#include "proto/json.h"

namespace switchyard::net_budget {
namespace {
namespace fs = std::filesystem;

// A fake /sys built in a temporary directory.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("sy_sysfs_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    Write("devices/system/node/node0/cpulist", "0-3\n");
    Write("devices/system/node/node1/cpulist", "4-7\n");
    Write("devices/system/node/possible", "0-1\n");  // not a node directory
    // lo: loopback, speed unreadable.
    Write("class/net/lo/type", "772\n");
    Write("class/net/lo/operstate", "unknown\n");
    // eth0: physical 25 Gb/s on NUMA node 1.
    Write("class/net/eth0/type", "1\n");
    Write("class/net/eth0/speed", "25000\n");
    Write("class/net/eth0/operstate", "up\n");
    Write("class/net/eth0/device/numa_node", "1\n");
    // veth0: virtual, speed -1 (unknown), peer ifindex differs.
    Write("class/net/veth0/type", "1\n");
    Write("class/net/veth0/speed", "-1\n");
    Write("class/net/veth0/ifindex", "5\n");
    Write("class/net/veth0/iflink", "6\n");
    // dummy0: virtual, not a veth (its iflink is itself).
    Write("class/net/dummy0/type", "1\n");
    Write("class/net/dummy0/ifindex", "7\n");
    Write("class/net/dummy0/iflink", "7\n");
    // An ibverbs device with one 400 Gb/s InfiniBand port on NUMA node 0.
    Write("class/infiniband/mlx5_0/device/numa_node", "0\n");
    Write("class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n");
    Write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
    Write("class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  DiscoveryOptions Options() {
    DiscoveryOptions o;
    o.sysfs_root = root_.string();
    o.host_id = "h";
    o.run_nvidia_smi = false;
    return o;
  }
  fs::path root_;
};

const v1::TopologyDevice* Dev(const v1::Topology& t, const std::string& id) {
  for (const auto& d : t.devices()) {
    if (d.id() == id) return &d;
  }
  return nullptr;
}
const v1::TopologyLink* Lnk(const v1::Topology& t, const std::string& id) {
  for (const auto& l : t.links()) {
    if (l.id() == id) return &l;
  }
  return nullptr;
}

TEST_F(FakeSysfs, DiscoversNumaNetAndInfiniband) {
  auto r = Discover(Options());
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::Topology& t = *r;
  ASSERT_NE(Dev(t, "h/numa0"), nullptr);
  EXPECT_EQ(Dev(t, "h/numa1")->attributes().at("cpulist"), "4-7");
  EXPECT_EQ(Dev(t, "h/numa1")->attributes().at("cpus"), "4");
  EXPECT_EQ(Dev(t, "h/eth0")->numa_node(), 1);
  EXPECT_EQ(Dev(t, "h/eth0")->attributes().at("speed_mbps"), "25000");
  EXPECT_EQ(Dev(t, "h/veth0")->attributes().at("speed_mbps"), "unknown");
  EXPECT_EQ(Dev(t, "h/veth0")->attributes().at("class"), "veth");
  EXPECT_EQ(Dev(t, "h/lo")->attributes().at("class"), "loopback");
  EXPECT_FALSE(Dev(t, "h/veth0")->has_numa_node());
  // eth0 hangs off NUMA node 1; its port speed is 25 Gb/s = 3.125 GB/s.
  EXPECT_EQ(Lnk(t, "h/eth0/pcie")->src(), "h/numa1");
  EXPECT_FALSE(Lnk(t, "h/eth0/pcie")->has_bandwidth_bytes_per_s());
  EXPECT_EQ(Lnk(t, "h/eth0/port")->bandwidth_bytes_per_s(), 3.125e9);
  EXPECT_EQ(Lnk(t, "h/eth0/port")->kind(), v1::LINK_NIC_PORT);
  EXPECT_FALSE(Lnk(t, "h/veth0/port")->has_bandwidth_bytes_per_s());  // never assumed
  EXPECT_EQ(Lnk(t, "h/veth0/port")->kind(), v1::LINK_VETH);
  EXPECT_EQ(Lnk(t, "h/lo/loopback")->kind(), v1::LINK_LOOPBACK);
  EXPECT_EQ(Dev(t, "h/dummy0")->attributes().at("class"), "virtual");
  EXPECT_EQ(Lnk(t, "h/dummy0/port")->kind(), v1::LINK_ETHERNET);
  EXPECT_EQ(Lnk(t, "h/ib:mlx5_0/port1")->bandwidth_bytes_per_s(), 50e9);
  EXPECT_EQ(Lnk(t, "h/ib:mlx5_0/port1")->kind(), v1::LINK_INFINIBAND);
  EXPECT_EQ(Lnk(t, "h/ib:mlx5_0/pcie")->src(), "h/numa0");
  for (const auto& l : t.links()) EXPECT_EQ(l.source(), v1::SOURCE_DISCOVERED) << l.id();

  // It builds, and the planner refuses to estimate over what was not discovered.
  auto topo = Topology::FromProto(t);
  ASSERT_TRUE(topo.ok()) << topo.status();
  Planner planner(*topo);
  auto e = planner.EstimateTransfer("h/veth0", "h/net", 4096, TrafficClass::kBackground);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "link 'h/veth0/port': bandwidth unknown (not discovered, configured or calibrated); "
            "refusing to estimate over it");
}

TEST_F(FakeSysfs, AddsGpusFromNvidiaSmi) {
  DiscoveryOptions o = Options();
  o.nvidia_smi_topo_text =
      std::move(proto::ReadFile(std::string(SY_SOURCE_DIR) +
                                "/tests/net_budget/nvidia_smi_topo_sample.txt"))
          .value();
  auto r = Discover(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Dev(*r, "h/gpu2")->kind(), v1::DEVICE_GPU);
  EXPECT_EQ(Dev(*r, "h/gpu2")->numa_node(), 1);
  EXPECT_EQ(Lnk(*r, "h/gpu2/pcie")->src(), "h/numa1");
  const auto* nv = Lnk(*r, "h/gpu0~h/gpu1/nvlink");
  ASSERT_NE(nv, nullptr);
  EXPECT_EQ(nv->attributes().at("nvlinks"), "18");
  EXPECT_FALSE(nv->has_bandwidth_bytes_per_s());
  // NIC0 is mlx5_0, already found through ibverbs; PIX to GPU0 becomes a PCIe link.
  EXPECT_NE(Lnk(*r, "h/gpu0~h/ib:mlx5_0/pcie"), nullptr);
  EXPECT_NE(Dev(*r, "h/ib:mlx5_1"), nullptr);              // only in nvidia-smi
  EXPECT_EQ(Lnk(*r, "h/gpu0~h/ib:mlx5_1/pcie"), nullptr);  // SYS: no direct link
  EXPECT_TRUE(Topology::FromProto(*r).ok());
}

TEST_F(FakeSysfs, EmptyRootGivesJustTheHost) {
  DiscoveryOptions o = Options();
  o.sysfs_root = (root_ / "nothing").string();
  auto r = Discover(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->devices_size(), 1);
  EXPECT_EQ(r->links_size(), 0);
}

TEST_F(FakeSysfs, BadNvidiaSmiTextIsAnError) {
  DiscoveryOptions o = Options();
  o.nvidia_smi_topo_text = "\tGPU0\nGPU0\tWHAT\n";
  auto r = Discover(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "discovery from nvidia-smi topo -m: nvidia-smi topo line 2: unknown relation 'WHAT' "
            "between GPU0 and GPU0");
}

}  // namespace
}  // namespace switchyard::net_budget
