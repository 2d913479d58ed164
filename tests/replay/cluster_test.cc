// Cluster files: the committed ones load and have the documented shapes; the built-in
// default equals bench/clusters/h200x8-llama8b.json; bad files name the field.
#include "bench/replay/cluster.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace switchyard::replay {
namespace {

std::string Dir() { return std::string(SY_SOURCE_DIR) + "/bench/clusters"; }

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

  v1::ReplayCluster c = DefaultCluster();
  c.mutable_model()->set_tensor_parallel(3);
  auto s = DeriveShape(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("tensorParallel"), std::string::npos);
  c = DefaultCluster();
  c.mutable_gpu()->set_hbm_bytes(10'000'000'000ULL);  // 8B weights do not fit
  s = DeriveShape(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("weights"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace switchyard::replay
