// CPU engine calibration (cpu_engine/calibrate/calibrate.h): a tiny grid measured on a
// real CpuEngine gives a five-column step table that TableStepCost accepts, with the shapes
// the steps really had (a prefill on its cached context: kv_tokens and prefill_attention),
// positive fitted times that grow with the prefill tokens, and a header that names the
// engine, the model's random weights and the machine.
#include "cpu_engine/calibrate/calibrate.h"

#include <gtest/gtest.h>

#include "executors/step_cost.h"

namespace switchyard::cpu_engine {
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
  o.grid.prefill_cached = {0, 200};
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
  // P = 0: K over the 2 decoder counts (6), D = 0 has no token (skipped); P > 0 (2 sizes):
  // D = 0 takes K = 0 only, times 2 C (4), D > 0: 2 x 3 K x 2 C (24).
  EXPECT_EQ(cal->points.size(), 34u);
  EXPECT_EQ(cal->skipped.size(), 1u);
  EXPECT_EQ(progress, 34);
  int on_cache = 0;
  for (const CalibrationPoint& p : cal->points) {
    EXPECT_EQ(p.samples_s.size(), 3u);
    EXPECT_GT(p.step_time_s, 0);
    // The shape the step really had: decoders hold K spread over them (at least 1 each);
    // the prefill sits on C cached tokens, read by the step too.
    if (p.decode_seqs == 3 && p.prefill_tokens == 0) {
      EXPECT_TRUE(p.kv_tokens == 3 || p.kv_tokens == 96 || p.kv_tokens == 600) << p.kv_tokens;
    }
    if (p.prefill_tokens == 0) {
      EXPECT_EQ(p.prefill_cached, 0);
      EXPECT_EQ(p.prefill_attention, 0);
    }
    if (p.decode_seqs == 0 && p.prefill_tokens > 0) {
      EXPECT_EQ(p.kv_tokens, p.prefill_cached);
    }
    if (p.prefill_tokens > 0) {
      EXPECT_DOUBLE_EQ(p.prefill_attention,
                       p.prefill_tokens * (p.prefill_cached + (p.prefill_tokens + 1) / 2.0));
      on_cache += p.prefill_cached == 200;
    }
  }
  EXPECT_EQ(on_cache, 14);  // 2 prefill sizes x (1 + 2 x 3) decoder shapes
  std::string csv = StepTableCsv(*cal, CalibrationHeader(*model, "tiny.json", o, *cal));
  EXPECT_NE(csv.find("# Step times of the reference CPU engine"), std::string::npos);
  EXPECT_NE(csv.find("random weights"), std::string::npos) << csv.substr(0, 600);
  EXPECT_NE(csv.find("# Machine: "), std::string::npos);
  EXPECT_NE(csv.find("\nprefill_tokens,decode_seqs,kv_tokens,prefill_attention,step_time_s\n"),
            std::string::npos);
  EXPECT_NE(csv.find("32,0,200,6928,"), std::string::npos) << csv;  // 32 x (200 + 16.5)
  auto table = executors::TableStepCost::FromText(csv, "calibrated.csv");
  ASSERT_TRUE(table.ok()) << table.status() << "\n" << csv;
  EXPECT_TRUE(table->has_prefill_attention());
  EXPECT_EQ(table->rows(), 34u);
  executors::StepShape small, big, decode;
  // As the batching engine builds them: a chunk's attention comes with its tokens (the
  // fit may price a prefill through either).
  small.prefill_tokens = 32;
  small.prefill_attention = PrefillAttention(32, 0);
  big.prefill_tokens = 256;
  big.prefill_attention = PrefillAttention(256, 0);
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
  o.grid.prefill_cached = {0, 1'000'000};
  o.grid.repetitions = 1;
  auto cal = CalibrateCpuEngine(*model, o);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->points.size(), 2u);  // K = C = 0 with and without a decoder
  // C = 10^6 without a decoder; with one: K = 0 and C = 10^6, K = 10^6 with either C.
  ASSERT_EQ(cal->skipped.size(), 4u);
  for (const std::string& why : cal->skipped)
    EXPECT_NE(why.find("max_positions"), std::string::npos) << why;
  EXPECT_NE(cal->skipped[0].find("a prefill of 16 on 1000000 cached"), std::string::npos)
      << cal->skipped[0];

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
  bad.grid.prefill_cached = {-3};
  EXPECT_NE(CalibrateCpuEngine(*model, bad).status().message().find("prefill_cached has -3"),
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
}  // namespace switchyard::cpu_engine
