#include "executors/model_cost.h"

#include <gtest/gtest.h>

#include "tests/executors/test_util.h"

namespace switchyard::executors {
namespace {

using testing::ConfigPath;

TEST(RooflineCostModel, Llama8bOnH200MatchesHandComputedValues) {
  auto m = RooflineCostModel::FromFiles(ConfigPath("models/llama-3.1-8b.json"),
                                        ConfigPath("gpus/h200.json"));
  ASSERT_TRUE(m.ok()) << m.status();
  // 32 layers x 8 KV heads x 128 x 2 (K,V) x 2 bytes.
  EXPECT_EQ(m->KvBytesPerToken(), 131072u);
  // Prefill 1000 new tokens on an empty context:
  //   2 x 8030261248 x 1000 + 4 x 32 x 4096 x 1000 x 500.5 = 1.632292864e13 FLOPs
  //   / (989e12 x 0.6) = 27.507463 ms.
  EXPECT_DOUBLE_EQ(m->PrefillFlops(1000, 0), 16322928640000.0);
  EXPECT_NEAR(ToSeconds(m->PrefillTime(1000, 0)), 0.027507463, 1e-8);
  // Decode 100 steps from 1000 cached tokens:
  //   100 x 2 x 8030261248 + 131072 x (100 x 1000 + 4950) = 1.619808256e12 bytes
  //   / (4.8e12 x 0.8) = 421.825067 ms.
  EXPECT_DOUBLE_EQ(m->DecodeBytes(100, 1000), 1619808256000.0);
  EXPECT_NEAR(ToSeconds(m->DecodeTime(100, 1000)), 0.4218250667, 1e-8);
  EXPECT_EQ(m->PrefillTime(0, 5000).count(), 0);
  EXPECT_EQ(m->DecodeTime(0, 5000).count(), 0);
}

TEST(RooflineCostModel, TensorParallelDividesTheWork) {
  auto m = RooflineCostModel::FromFiles(ConfigPath("models/llama-3.1-70b.json"),
                                        ConfigPath("gpus/h100.json"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->KvBytesPerToken(), 327680u);  // 80 x 8 x 128 x 2 x 2
  // One decode step, empty context: 2 x 70553706496 bytes / (3.35e12 x 0.8 x 8 GPUs).
  EXPECT_NEAR(ToSeconds(m->DecodeTime(1, 0)), 0.0065815025, 1e-9);
  // Prefill 4096 tokens on 8000 cached: (2 x 70553706496 x 4096
  //   + 4 x 80 x 8192 x 4096 x (8000 + 2048.5)) / (989e12 x 0.6 x 8) = 0.144479 s.
  EXPECT_NEAR(ToSeconds(m->PrefillTime(4096, 8000)), 0.14447904, 1e-7);
}

TEST(RooflineCostModel, RejectsIncompleteSpecsNamingTheField) {
  v1::ModelConfig model;
  model.set_name("x");
  v1::GpuSpec gpu;
  auto r = RooflineCostModel::Create(model, gpu);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_NE(r.status().message().find("model.num_layers"), std::string::npos);
  auto missing =
      RooflineCostModel::FromFiles(ConfigPath("models/nope.json"), ConfigPath("gpus/h200.json"));
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace switchyard::executors
