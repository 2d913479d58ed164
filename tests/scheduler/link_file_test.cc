// scheduler/link_file.h: the serve topology's link names and figure sources, and link
// files (v1::LinkFile) written, checked and applied by name.
#include "scheduler/link_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "proto/json.h"

namespace switchyard::scheduler {
namespace {

std::map<std::string, const v1::TopologyLink*> ByName(const v1::Topology& t) {
  std::map<std::string, const v1::TopologyLink*> m;
  for (const auto& l : t.links()) m[l.attributes().at(kLinkNameAttribute)] = &l;
  return m;
}

v1::Topology Labelled(const ClusterShape& shape, const ShapeFigureOrigins& o = {}) {
  auto t = BuildClusterTopology(shape);
  EXPECT_TRUE(t.ok()) << t.status();
  Status st = LabelClusterLinks(shape, o, &*t);
  EXPECT_TRUE(st.ok()) << st;
  return *t;
}

v1::MeasuredLink Measured(const std::string& link, double alpha_s, double beta) {
  v1::MeasuredLink m;
  m.set_link(link);
  m.set_label("ucx/tcp loopback");
  m.set_transport("ucx");
  m.set_peer("127.0.0.1:9000");
  m.set_min_bytes(4096);
  m.set_max_bytes(65536);
  m.set_iters(3);
  m.mutable_calibration()->set_alpha_s(alpha_s);
  m.mutable_calibration()->set_beta_s_per_byte(beta);
  m.mutable_calibration()->set_transport("ucx/tcp");
  m.mutable_calibration()->set_calibrated_at_ms(1700000000123);  // 2023-11-14T22:13:20Z
  return m;
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/sy_link_file_" + std::to_string(::getpid()) + "_" + name;
}

TEST(LinkFileTest, ClusterLinksAreNamedWithTheSourceOfTheirFigures) {
  ClusterShape shape;
  shape.workers_per_node = 2;
  ShapeFigureOrigins o;
  o.pcie_bandwidth = "links.pcieBytesPerS";
  o.pcie_latency = "links.pcieLatencyUs";
  o.disk_latency = "links.diskLatencyUs";
  v1::Topology t = Labelled(shape, o);
  auto links = ByName(t);
  ASSERT_EQ(links.size(), 5u);
  for (const char* n : {"pcie0", "pcie1", "nvlink0", "nvlink1", "disk0"})
    ASSERT_TRUE(links.count(n)) << n;
  EXPECT_EQ(links["pcie1"]->src(), "node0/w1");
  EXPECT_EQ(links["disk0"]->dst(), "node0/nvme");
  auto source = [&](const char* n) { return links[n]->attributes().at(kFigureSourceAttribute); };
  EXPECT_EQ(source("pcie0"), "configured (links.pcieBytesPerS, links.pcieLatencyUs)");
  EXPECT_EQ(source("nvlink1"), "default (ClusterShape, documented)");
  EXPECT_EQ(source("disk0"),
            "configured (links.diskLatencyUs); bandwidth default (ClusterShape, documented)");
}

// A GPU spec's bandwidths replace the defaults (NVLink halved: the spec gives both
// directions; the NIC in bits), a figure of 0 keeps the default, and the links say so.
TEST(LinkFileTest, GpuSpecBandwidthsAreUsedAndNamedAsTheSource) {
  ClusterShape shape;
  shape.workers_per_node = 2;
  shape.nodes = 2;
  v1::GpuSpec gpu;
  gpu.set_name("H200");
  gpu.set_pcie_bandwidth_bytes_per_s(4e10);
  gpu.set_nvlink_bandwidth_bytes_per_s(9e11);
  ShapeFigureOrigins o;
  o.pcie_latency = "links.pcieLatencyUs";
  ApplyGpuSpecLinks(gpu, &shape, &o);
  EXPECT_DOUBLE_EQ(shape.pcie_bytes_per_s, 4e10);
  EXPECT_DOUBLE_EQ(shape.nvlink_bytes_per_s, 4.5e11);
  EXPECT_DOUBLE_EQ(shape.nic_bytes_per_s, ClusterShape{}.nic_bytes_per_s);  // 0 in the spec
  EXPECT_EQ(o.gpu_spec, "H200");
  v1::Topology t = Labelled(shape, o);
  auto links = ByName(t);
  auto source = [&](const char* n) { return links[n]->attributes().at(kFigureSourceAttribute); };
  EXPECT_EQ(source("pcie0"), "configured (links.pcieLatencyUs); bandwidth GPU spec (H200)");
  EXPECT_EQ(source("nvlink1"),
            "bandwidth GPU spec (H200); latency default (ClusterShape, documented)");
  EXPECT_EQ(source("disk1"), "default (ClusterShape, documented)");
  // A configured bandwidth still names its field.
  o.nvlink_bandwidth = "links.nvlinkBytesPerS";
  t = Labelled(shape, o);
  links = ByName(t);
  EXPECT_EQ(source("nvlink0"),
            "configured (links.nvlinkBytesPerS); latency default (ClusterShape, documented)");
  // A spec without link figures changes nothing and names nothing.
  ClusterShape plain;
  ShapeFigureOrigins none;
  ApplyGpuSpecLinks(v1::GpuSpec{}, &plain, &none);
  EXPECT_DOUBLE_EQ(plain.pcie_bytes_per_s, ClusterShape{}.pcie_bytes_per_s);
  EXPECT_TRUE(none.gpu_spec.empty());
}

TEST(LinkFileTest, SeveralNodesNameNicAndGpuDirectLinksPerNode) {
  ClusterShape shape;
  shape.nodes = 2;
  v1::Topology t = Labelled(shape);
  auto links = ByName(t);
  for (const char* n : {"pcie0", "pcie1", "gdr0", "gdr1", "disk0", "disk1", "nic0", "nic1"})
    EXPECT_TRUE(links.count(n)) << n;
  EXPECT_EQ(links["nic1"]->src(), "node1/nic");
  EXPECT_EQ(links["gdr1"]->src(), "node1/w0");
}

TEST(LinkFileTest, APcieSwitchsUplinkIsNamedAndWorkersKeepTheirPcieNames) {
  ClusterShape shape;
  shape.workers_per_node = 4;
  shape.gpus_per_pcie_switch = 2;
  v1::Topology t = Labelled(shape);
  auto links = ByName(t);
  for (const char* n : {"pcie0", "pcie1", "pcie2", "pcie3", "pcieup0", "pcieup1"})
    EXPECT_TRUE(links.count(n)) << n;
  EXPECT_EQ(links["pcie3"]->dst(), "node0/pcisw1");
  EXPECT_EQ(links["pcieup1"]->src(), "node0/pcisw1");
  EXPECT_EQ(links["pcieup1"]->dst(), "node0/cpu");
}

TEST(LinkFileTest, MeasuredFiguresReplaceTheNamedLinksOnly) {
  ClusterShape shape;
  v1::Topology t = Labelled(shape);
  v1::LinkFile file;
  *file.add_links() = Measured("pcie0", 40e-6, 1.0 / 3e9);
  ASSERT_TRUE(ApplyLinkFile(file, "links.json", &t).ok());
  auto links = ByName(t);
  const v1::TopologyLink& p = *links["pcie0"];
  EXPECT_DOUBLE_EQ(p.bandwidth_bytes_per_s(), 3e9);
  EXPECT_NEAR(p.latency_us(), 40.0, 1e-9);
  EXPECT_EQ(p.source(), v1::SOURCE_CALIBRATED);
  EXPECT_DOUBLE_EQ(p.calibration().alpha_s(), 40e-6);
  EXPECT_EQ(p.attributes().at(kFigureSourceAttribute),
            "calibrated (ucx/tcp loopback, 2023-11-14T22:13:20Z)");
  EXPECT_EQ(links["disk0"]->attributes().at(kFigureSourceAttribute),
            "default (ClusterShape, documented)");
  EXPECT_DOUBLE_EQ(links["disk0"]->bandwidth_bytes_per_s(), shape.disk_bytes_per_s);
  // The topology id names a link too.
  v1::LinkFile by_id;
  *by_id.add_links() = Measured("node0/cpu<->node0/nvme", 1e-4, 1.0 / 1e9);
  ASSERT_TRUE(ApplyLinkFile(by_id, "links.json", &t).ok());
  EXPECT_DOUBLE_EQ(ByName(t)["disk0"]->bandwidth_bytes_per_s(), 1e9);
}

TEST(LinkFileTest, ALinkTheTopologyDoesNotHaveIsRefusedByName) {
  v1::Topology t = Labelled(ClusterShape{});
  v1::LinkFile file;
  *file.add_links() = Measured("nic0", 5e-6, 1e-10);
  Status st = ApplyLinkFile(file, "measured.json", &t);
  ASSERT_TRUE(st.IsNotFound()) << st;
  EXPECT_NE(st.message().find("'nic0'"), std::string::npos) << st;
  EXPECT_NE(st.message().find("measured.json"), std::string::npos) << st;
  EXPECT_NE(st.message().find("(its links: disk0, pcie0)"), std::string::npos) << st;
}

TEST(LinkFileTest, BadEntriesAreRefusedNamingTheFileAndTheField) {
  struct Case {
    v1::LinkFile file;
    std::string field;
  };
  std::vector<Case> cases(5);
  cases[0].field = "links is empty";
  *cases[1].file.add_links() = Measured("", 1e-6, 1e-9);
  cases[1].field = "links[0].link is empty";
  *cases[2].file.add_links() = Measured("pcie0", 1e-6, 0);
  cases[2].field = "links[0].calibration.betaSPerByte must be > 0";
  *cases[3].file.add_links() = Measured("pcie0", 1e-6, 1e-9);
  *cases[3].file.add_links() = Measured("disk0", -1, 1e-9);
  cases[3].field = "links[1].calibration.alphaS must be >= 0";
  *cases[4].file.add_links() = Measured("pcie0", 1e-6, 1e-9);
  cases[4].file.add_links()->set_link("disk0");
  cases[4].field = "links[1].calibration is missing";
  for (const Case& c : cases) {
    Status st = CheckLinkFile(c.file, "f.json");
    ASSERT_FALSE(st.ok()) << c.field;
    EXPECT_NE(st.message().find("link file f.json: " + c.field), std::string::npos) << st;
  }
  v1::LinkFile twice;
  *twice.add_links() = Measured("pcie0", 1e-6, 1e-9);
  *twice.add_links() = Measured("pcie0", 1e-6, 1e-9);
  EXPECT_NE(CheckLinkFile(twice, "f.json").message().find("'pcie0' is named twice"),
            std::string::npos);
}

TEST(LinkFileTest, AMalformedFileIsRefusedNamingItAndTheField) {
  std::string path = TempPath("malformed.json");
  std::ofstream(path) << R"({"links": [{"link": "pcie0", "calibration": {"alphaS": "x"}}]})";
  auto r = LoadLinkFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("alpha"), std::string::npos) << r.status();
  std::ofstream(path) << R"({"links": [{"lnk": "pcie0"}]})";
  r = LoadLinkFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("lnk"), std::string::npos) << r.status();
  auto missing = LoadLinkFile(TempPath("absent.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent.json"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(LinkFileTest, TheWriterCollectsOneEntryPerLinkAndTheLoaderReadsThemBack) {
  std::string path = TempPath("collect.json");
  std::filesystem::remove(path);
  ASSERT_TRUE(AddToLinkFile(path, Measured("pcie0", 40e-6, 1.0 / 3e9)).ok());
  ASSERT_TRUE(AddToLinkFile(path, Measured("disk0", 90e-6, 1.0 / 2e9)).ok());
  ASSERT_TRUE(AddToLinkFile(path, Measured("pcie0", 20e-6, 1.0 / 4e9)).ok());  // re-measured
  auto file = LoadLinkFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(file->links_size(), 2);
  EXPECT_EQ(file->links(0).link(), "pcie0");
  EXPECT_DOUBLE_EQ(file->links(0).calibration().alpha_s(), 20e-6);
  EXPECT_EQ(file->links(1).link(), "disk0");
  EXPECT_EQ(file->links(1).peer(), "127.0.0.1:9000");
  EXPECT_EQ(file->links(1).max_bytes(), 65536u);
  // A malformed existing file is not overwritten.
  std::ofstream(path) << "{not json";
  Status st = AddToLinkFile(path, Measured("pcie0", 1e-6, 1e-9));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(path), std::string::npos) << st;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace switchyard::scheduler
