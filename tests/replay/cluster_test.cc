// Cluster files: the committed ones load and have the documented shapes; the built-in
// default equals replay/clusters/h200x8-llama8b.json; bad files name the field; a relative
// stepTable is the cluster file's folder's whatever the working folder (the path
// `switchyard replay` / `sweep` take: ClusterFromArg, then RunReplay with default options).
#include "replay/cluster.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "proto/json.h"
#include "replay/convert.h"
#include "replay/replay.h"

namespace switchyard::replay {
namespace {

std::string Dir() { return std::string(SY_SOURCE_DIR) + "/replay/clusters"; }

TEST(Cluster, CommittedClustersHaveTheDocumentedShapes) {
  auto c8 = LoadCluster("h200x8-llama8b", Dir());
  ASSERT_TRUE(c8.ok()) << c8.status();
  auto s8 = DeriveShape(*c8);
  ASSERT_TRUE(s8.ok());
  EXPECT_EQ(s8->workers, 8);
  EXPECT_EQ(s8->tensor_parallel, 1);
  // 141 GB x 0.9 - 2 x 8.03e9 parameters.
  EXPECT_NEAR(static_cast<double>(s8->kv_bytes_per_worker), 126.9e9 - 16.06e9, 0.01e9);

  auto c70 = LoadCluster(Dir() + "/h200x8-llama70b-tp8.json");
  ASSERT_TRUE(c70.ok()) << c70.status();
  auto s70 = DeriveShape(*c70);
  ASSERT_TRUE(s70.ok());
  EXPECT_EQ(s70->workers, 1);
  EXPECT_EQ(s70->tensor_parallel, 8);
  EXPECT_NEAR(static_cast<double>(s70->kv_bytes_per_worker), 8 * 126.9e9 - 141.1e9, 0.1e9);

  auto c4 = LoadCluster("cluster4-h200x8-llama8b", Dir());
  ASSERT_TRUE(c4.ok()) << c4.status();
  auto s4 = DeriveShape(*c4);
  ASSERT_TRUE(s4.ok());
  EXPECT_EQ(s4->workers, 32);
  scheduler::ClusterShape net = ToClusterShape(*c4, *s4);
  EXPECT_EQ(net.nodes, 4);
  EXPECT_DOUBLE_EQ(net.nic_bytes_per_s, 50e9);  // 400 Gb/s
  EXPECT_TRUE(scheduler::BuildClusterTopology(net).ok());
}

// Every committed file loads and derives a shape; the DGX-class ones say where their figures
// come from, carry the machine's host DRAM and striped NVMe, and their FP8 twins differ
// only in the KV precision.
TEST(Cluster, EveryCommittedClusterLoadsAndTheDgxOnesNameTheirSources) {
  namespace fs = std::filesystem;
  int dgx = 0;
  for (const auto& e : fs::directory_iterator(Dir())) {
    if (e.path().extension() != ".json") continue;
    auto c = LoadCluster(e.path().string());
    ASSERT_TRUE(c.ok()) << e.path() << ": " << c.status();
    ASSERT_TRUE(DeriveShape(*c).ok()) << e.path();
    EXPECT_EQ(c->name(), e.path().stem().string());
    if (c->name().rfind("dgx-", 0) != 0) continue;
    ++dgx;
    for (const char* field : {"gpu", "hostBytesPerNode", "diskBytesPerS", "model.kvDtype"})
      EXPECT_TRUE(c->sources().contains(field)) << c->name() << " has no source for " << field;
    EXPECT_EQ(c->host_bytes_per_node(), 3ull << 39);  // 1.5 TiB
    EXPECT_DOUBLE_EQ(c->disk_bytes_per_s(), 25e9);
    const bool fp8 = c->name().ends_with("-fp8");
    EXPECT_EQ(c->model().kv_dtype(), fp8 ? v1::FP8 : v1::BF16) << c->name();
    if (!fp8) continue;
    auto twin = LoadCluster(c->name().substr(0, c->name().size() - 4), Dir());
    ASSERT_TRUE(twin.ok()) << twin.status();
    v1::ReplayCluster same = *c;
    same.set_name(twin->name());
    same.set_description(twin->description());
    same.mutable_model()->set_kv_dtype(v1::BF16);
    (*same.mutable_sources())["model.kvDtype"] = twin->sources().at("model.kvDtype");
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(same, *twin)) << c->name();
  }
  EXPECT_EQ(dgx, 6);
}

// A DGX node's GPUs share PCIe switches two by two, and its copies pay a piece overhead:
// Llama-3.1-8B in BF16 copies a 16-token block (2 MiB) as 64 pieces of 2.3 us each.
TEST(Cluster, DgxNodesSharePcieUplinksAndPayForTheirCopiesPieces) {
  auto c = LoadCluster("dgx-h100-llama8b", Dir());
  ASSERT_TRUE(c.ok()) << c.status();
  auto shape = DeriveShape(*c);
  ASSERT_TRUE(shape.ok());
  scheduler::ClusterShape net = ToClusterShape(*c, *shape);
  EXPECT_EQ(net.gpus_per_pcie_switch, 2);
  EXPECT_DOUBLE_EQ(net.pcie_uplink_bytes_per_s, 50e9);
  EXPECT_NEAR(net.pcie_gather_s_per_byte, 64 * 2.3e-6 / (16 * 131072.0), 1e-15);
  auto topo = scheduler::BuildClusterTopology(net);
  ASSERT_TRUE(topo.ok()) << topo.status();
  int switches = 0;
  for (const auto& d : topo->devices()) switches += d.id().find("/pcisw") != std::string::npos;
  EXPECT_EQ(switches, 4);
  // FP8 halves each piece, not their number: the overhead per byte doubles.
  auto fp8 = LoadCluster("dgx-h100-llama8b-fp8", Dir());
  ASSERT_TRUE(fp8.ok());
  EXPECT_NEAR(GatherSecondsPerByte(*fp8), 2 * net.pcie_gather_s_per_byte, 1e-15);
  // TP4 workers span two switches each: no switch device, the uplinks bound the link.
  auto tp4 = LoadCluster("dgx-h100-llama70b-tp4", Dir());
  ASSERT_TRUE(tp4.ok());
  auto tp4_shape = DeriveShape(*tp4);
  ASSERT_TRUE(tp4_shape.ok());
  auto tp4_topo = scheduler::BuildClusterTopology(ToClusterShape(*tp4, *tp4_shape));
  ASSERT_TRUE(tp4_topo.ok()) << tp4_topo.status();
  EXPECT_EQ(tp4_topo->devices_size(), 3 + 2);  // cpu, nvme, nvswitch and two workers
  EXPECT_EQ(GatherSecondsPerByte(DefaultCluster()), 0.0);
}

TEST(Cluster, DefaultEqualsTheCommittedFile) {
  auto file = LoadCluster(Dir() + "/h200x8-llama8b.json");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*file, DefaultCluster()))
      << file->DebugString() << "\nvs\n"
      << DefaultCluster().DebugString();
  auto d = ClusterFromArg("");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->name(), "h200x8-llama8b");
}

TEST(Cluster, BadFilesAndShapesNameTheProblem) {
  auto missing = ClusterFromArg("no-such-cluster");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no-such-cluster"), std::string::npos);

  std::string path = ::testing::TempDir() + "/bad_cluster.json";
  std::ofstream(path) << "{\"name\":\"x\",\"nodez\":1}";
  auto bad = LoadCluster(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("nodez"), std::string::npos);

  // The default cluster with one field changed: DeriveShape must refuse it naming `what`.
  auto refused = [](const std::function<void(v1::ReplayCluster*)>& edit, const std::string& what) {
    v1::ReplayCluster c = DefaultCluster();
    edit(&c);
    auto s = DeriveShape(c);
    ASSERT_FALSE(s.ok()) << what;
    EXPECT_NE(s.status().message().find(what), std::string::npos) << s.status();
  };
  refused([](v1::ReplayCluster* c) { c->mutable_model()->set_tensor_parallel(3); },
          "tensorParallel");
  refused([](v1::ReplayCluster* c) { c->set_prefill_workers(8); },  // of 8: none would decode
          "prefillWorkers must leave a decode worker: 8 of 8");
  refused([](v1::ReplayCluster* c) { c->set_gpus_per_pcie_switch(3); },  // 8 GPUs
          "gpusPerPcieSwitch must divide gpusPerNode");
  refused([](v1::ReplayCluster* c) { c->set_kv_copy_piece_overhead_s(-1e-6); },
          "kvCopyPieceOverheadS");
  refused([](v1::ReplayCluster* c) { c->mutable_gpu()->set_hbm_bytes(10'000'000'000ULL); },
          "weights");  // 8B weights do not fit
  std::remove(path.c_str());
}

// Restores the working folder on scope exit.
struct Cwd {
  std::filesystem::path old = std::filesystem::current_path();
  ~Cwd() { std::filesystem::current_path(old); }
};

TEST(Cluster, RelativeStepTableIsTheClusterFilesFolders) {
  namespace fs = std::filesystem;
  const fs::path base =
      fs::path(::testing::TempDir()) / ("sy_cluster_rel_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "clusters");
  fs::create_directories(base / "tables");
  fs::create_directories(base / "a" / "b" / "elsewhere");
  fs::copy_file(std::string(SY_SOURCE_DIR) + "/configs/step_tables/cpu-tiny-llama-4l.csv",
                base / "tables" / "t.csv");
  auto committed = LoadCluster(Dir() + "/cpu-tiny-llama-4l.json");
  ASSERT_TRUE(committed.ok()) << committed.status();
  // The committed cluster's "../../configs/step_tables/..." resolved against its folder.
  EXPECT_EQ(fs::path(committed->step_table()),
            fs::path(std::string(SY_SOURCE_DIR) + "/configs/step_tables/cpu-tiny-llama-4l.csv")
                .lexically_normal());
  v1::ReplayCluster c = *committed;
  c.set_step_table("../tables/t.csv");
  auto json = proto::ToJson(c);
  ASSERT_TRUE(json.ok());
  std::ofstream((base / "clusters" / "c.json").string()) << *json;
  const std::string want = (base / "tables" / "t.csv").lexically_normal().string();
  {
    Cwd restore;
    // From a folder where "../tables/t.csv" does not exist.
    fs::current_path(base / "a" / "b" / "elsewhere");
    auto loaded = LoadCluster((base / "clusters" / "c.json").string());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->step_table(), want);
    auto arg = ClusterFromArg("../../../clusters/c.json");  // relative to the working folder
    ASSERT_TRUE(arg.ok()) << arg.status();
    EXPECT_EQ(arg->step_table(), want);
    // What `switchyard replay --cluster ../../../clusters/c.json` runs.
    ConvertOptions co;
    co.rate_per_s = 0.5;
    co.token_scale = 0.02;
    auto text =
        proto::ReadFile(std::string(SY_SOURCE_DIR) + "/tests/fixtures/agent_sessions_sample.jsonl");
    ASSERT_TRUE(text.ok());
    auto trace = ConvertAgentSessions(*text, co);
    ASSERT_TRUE(trace.ok()) << trace.status();
    auto r = RunReplay(*trace, *arg, "switchyard", ReplayOptions{});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->completed, r->workflows);
    // An absolute stepTable is kept as it is.
    c.set_step_table(want);
    json = proto::ToJson(c);
    ASSERT_TRUE(json.ok());
    std::ofstream((base / "clusters" / "abs.json").string()) << *json;
    auto abs = LoadCluster((base / "clusters" / "abs.json").string());
    ASSERT_TRUE(abs.ok()) << abs.status();
    EXPECT_EQ(abs->step_table(), want);
  }
  fs::remove_all(base);
}

TEST(Cluster, CallOverheadMustBeANonNegativeNumberOfSeconds) {
  v1::ReplayCluster c = DefaultCluster();
  c.set_call_overhead_s(0.02);
  EXPECT_TRUE(DeriveShape(c).ok());
  c.set_call_overhead_s(-0.01);
  auto s = DeriveShape(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("callOverheadS"), std::string::npos) << s.status();
  c.set_call_overhead_s(0);
  c.set_tool_overhead_s(0.01);
  EXPECT_TRUE(DeriveShape(c).ok());
  c.set_tool_overhead_s(-1);
  s = DeriveShape(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("toolOverheadS"), std::string::npos) << s.status();
}

}  // namespace
}  // namespace switchyard::replay
