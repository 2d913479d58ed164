// CPU engine calibration (executors/cpu_calibrate/calibrate.h): a tiny grid measured on a
// real CpuEngine gives a step table that TableStepCost accepts, with the shapes the steps
// really had, positive fitted times that grow with the prefill tokens, and a header that
// names the engine, the model's random weights and the machine.
#include "executors/cpu_calibrate/calibrate.h"

#include <gtest/gtest.h>

#include "executors/step_cost.h"

namespace switchyard::executors::cpu {
namespace {

std::unique_ptr<Model> TinyModel() {
  auto m = Model::Load(std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json");
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

CalibrationOptions TinyGrid() {
  CalibrationOptions o;
  o.grid.prefill_tokens = {0, 32, 256};
  o.grid.decode_seqs = {0, 1, 3};
  o.grid.kv_tokens = {0, 96, 600};
  o.grid.repetitions = 3;
  return o;
}

TEST(CalibrateCpuEngineTest, TinyGridGivesATableTableStepCostFits) {
  auto model = TinyModel();
  ASSERT_NE(model, nullptr);
  CalibrationOptions o = TinyGrid();
  int progress = 0;
  o.on_point = [&](const CalibrationPoint&) { ++progress; };
  auto cal = CalibrateCpuEngine(*model, o);
  ASSERT_TRUE(cal.ok()) << cal.status();
  // 27 points less the 3 with no token (P = 0, D = 0).
  EXPECT_EQ(cal->points.size(), 24u);
  EXPECT_EQ(cal->skipped.size(), 3u);
  EXPECT_EQ(progress, 24);
  for (const CalibrationPoint& p : cal->points) {
    EXPECT_EQ(p.samples_s.size(), 3u);
    EXPECT_GT(p.step_time_s, 0);
    // The shape the step really had: decoders hold K spread over them (at least 1 each);
    // a prefill alone sits on the K cached tokens.
    if (p.decode_seqs == 3 && p.prefill_tokens == 0) {
      EXPECT_TRUE(p.kv_tokens == 3 || p.kv_tokens == 96 || p.kv_tokens == 600) << p.kv_tokens;
    }
  }
  std::string csv = StepTableCsv(*cal, CalibrationHeader(*model, "tiny.json", o, *cal));
  EXPECT_NE(csv.find("# Step times of the reference CPU engine"), std::string::npos);
  EXPECT_NE(csv.find("random weights"), std::string::npos) << csv.substr(0, 600);
  EXPECT_NE(csv.find("# Machine: "), std::string::npos);
  EXPECT_NE(csv.find("\nprefill_tokens,decode_seqs,kv_tokens,step_time_s\n"), std::string::npos);
  auto table = TableStepCost::FromText(csv, "calibrated.csv");
  ASSERT_TRUE(table.ok()) << table.status() << "\n" << csv;
  EXPECT_EQ(table->rows(), 24u);
  StepShape small, big, decode;
  small.prefill_tokens = 32;
  big.prefill_tokens = 256;
  decode.decode_seqs = 1;
  decode.kv_tokens_read = 96;
  double t_small = ToSeconds(table->StepTime(small));
  double t_big = ToSeconds(table->StepTime(big));
  EXPECT_GT(ToSeconds(table->StepTime(decode)), 0);
  EXPECT_GT(t_small, 0);
  EXPECT_GT(t_big, t_small) << "256 prefill tokens cost more than 32\n" << csv;
}

TEST(CalibrateCpuEngineTest, SkipsWhatTheModelCannotRunAndRejectsBadGrids) {
  auto model = TinyModel();
  ASSERT_NE(model, nullptr);
  CalibrationOptions o;
  o.grid.prefill_tokens = {16};
  o.grid.decode_seqs = {0, 1};
  o.grid.kv_tokens = {0, 1'000'000};
  o.grid.repetitions = 1;
  auto cal = CalibrateCpuEngine(*model, o);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->points.size(), 2u);  // K = 0 with and without a decoder
  ASSERT_EQ(cal->skipped.size(), 2u);
  EXPECT_NE(cal->skipped[0].find("max_positions"), std::string::npos) << cal->skipped[0];

  CalibrationOptions bad;
  bad.grid.decode_seqs.clear();
  auto r = CalibrateCpuEngine(*model, bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("decode_seqs is empty"), std::string::npos);
  bad = CalibrationOptions{};
  bad.grid.kv_tokens = {-1};
  EXPECT_NE(CalibrateCpuEngine(*model, bad).status().message().find("kv_tokens has -1"),
            std::string::npos);
  bad = CalibrationOptions{};
  bad.grid.repetitions = 0;
  EXPECT_NE(CalibrateCpuEngine(*model, bad).status().message().find("repetitions"),
            std::string::npos);
  bad = CalibrationOptions{};
  bad.block_tokens = 0;
  EXPECT_NE(CalibrateCpuEngine(*model, bad).status().message().find("block_tokens"),
            std::string::npos);
  bad = CalibrationOptions{};
  bad.grid.prefill_tokens = {0};
  bad.grid.decode_seqs = {0};
  EXPECT_NE(CalibrateCpuEngine(*model, bad).status().message().find("no point"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::executors::cpu
