// The scheduler's prices from an engine's measured step times (StepTableCostModel): a
// prefill is one step of its tokens, a decode is its steps at their middle context, and a
// batch step pays for every sequence it carries — what a CPU engine does and a GPU
// roofline (weights read once) does not.
#include "executors/table_cost_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "executors/model_cost.h"

namespace switchyard::executors {
namespace {

// t = 2 ms + 3 us a prefill token + 40 us a decoding sequence + 20 ns a KV token read.
double LinearStep(int64_t p, int64_t d, int64_t kv) {
  return 0.002 + 3e-6 * double(p) + 4e-5 * double(d) + 2e-8 * double(kv);
}

std::shared_ptr<const StepCostModel> LinearTable() {
  std::string text = "prefill_tokens,decode_seqs,kv_tokens,step_time_s\n";
  for (int64_t p : {0, 256, 2048})
    for (int64_t d : {0, 1, 16})
      for (int64_t kv : {500, 40000}) {
        if (p == 0 && d == 0) continue;
        char line[128];
        std::snprintf(line, sizeof line, "%lld,%lld,%lld,%.17g\n", static_cast<long long>(p),
                      static_cast<long long>(d), static_cast<long long>(kv), LinearStep(p, d, kv));
        text += line;
      }
  auto t = TableStepCost::FromText(text, "linear.csv");
  EXPECT_TRUE(t.ok()) << t.status();
  return std::make_shared<TableStepCost>(std::move(*t));
}

TEST(StepTableCostModel, PricesPrefillDecodeAndBatchStepsFromTheTable) {
  StepTableCostModel m(LinearTable(), 4096);
  EXPECT_EQ(m.KvBytesPerToken(), 4096u);
  EXPECT_NEAR(ToSeconds(m.PrefillTime(1000, 3000)), LinearStep(1000, 0, 3000), 2e-8);
  EXPECT_EQ(m.PrefillTime(0, 3000), Duration(0));
  // 9 steps of one sequence from 1,000 cached tokens: priced at the middle one (1,004).
  EXPECT_NEAR(ToSeconds(m.DecodeTime(9, 1000)), 9 * LinearStep(0, 1, 1004), 2e-8);
  EXPECT_EQ(m.DecodeTime(0, 1000), Duration(0));
  // A batch of 8 costs 7 more sequences than a batch of 1 reading as much KV.
  const double one = ToSeconds(m.BatchStepTime(1, 20000));
  const double eight = ToSeconds(m.BatchStepTime(8, 20000));
  EXPECT_NEAR(eight - one, 7 * 4e-5, 2e-8);
}

TEST(StepTableCostModel, ARooflineBatchStepReadsTheWeightsOnce) {
  v1::ModelConfig model;
  model.set_name("m");
  model.set_num_layers(32);
  model.set_num_kv_heads(8);
  model.set_head_dim(128);
  model.set_hidden_size(4096);
  model.set_num_attention_heads(32);
  model.set_num_parameters(8'000'000'000);
  model.set_kv_dtype(v1::BF16);
  v1::GpuSpec gpu;
  gpu.set_name("g");
  gpu.set_hbm_bytes(80'000'000'000);
  gpu.set_hbm_bandwidth_bytes_per_s(3.35e12);
  gpu.set_bf16_flops(9.89e14);
  gpu.set_compute_efficiency(0.6);
  gpu.set_memory_efficiency(0.8);
  auto roofline = RooflineCostModel::Create(model, gpu);
  ASSERT_TRUE(roofline.ok()) << roofline.status();
  const scheduler::ComputeCostModel& c = *roofline;
  // The default: the sequence count does not change a GPU's memory-bound step.
  EXPECT_EQ(c.BatchStepTime(1, 20000), c.DecodeTime(1, 20000));
  EXPECT_EQ(c.BatchStepTime(64, 20000), c.DecodeTime(1, 20000));
}

}  // namespace
}  // namespace switchyard::executors
