#include "executors/step_cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "executors/model_cost.h"
#include "proto/json.h"
#include "tests/executors/test_util.h"

namespace switchyard::executors {
namespace {

using testing::ConfigPath;

RooflineStepCost Llama8bH200(Duration overhead = kDefaultStepOverhead) {
  auto r = RooflineStepCost::FromFiles(ConfigPath("models/llama-3.1-8b.json"),
                                       ConfigPath("gpus/h200.json"), overhead);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

StepShape Decode(int seqs, int64_t kv) {
  StepShape s;
  s.decode_seqs = seqs;
  s.kv_tokens_read = kv;
  return s;
}

StepShape Prefill(int64_t n, int64_t cached) {
  StepShape s;
  s.prefill_tokens = n;
  s.prefill_attention = static_cast<double>(n) * (cached + (n + 1) / 2.0);
  s.kv_tokens_read = cached;
  return s;
}

TEST(StepCostRoofline, DecodeStepMatchesHandComputedValue) {
  RooflineStepCost m = Llama8bH200();
  EXPECT_EQ(m.kv_bytes_per_token(), 131072u);
  // One sequence on 1000 cached tokens: weights 2 x 8030261248 + KV 131072 x (1000 read + 1
  // written) = 16191725568 bytes / (4.8e12 x 0.8) = 4.216595 ms, memory-bound, + 1 ms.
  StepShape s = Decode(1, 1000);
  EXPECT_DOUBLE_EQ(m.Bytes(s), 16191725568.0);
  EXPECT_LT(m.Flops(s) / (989e12 * 0.6), m.Bytes(s) / (4.8e12 * 0.8));
  EXPECT_NEAR(ToSeconds(m.StepTime(s)), 0.0042165952 + 0.001, 1e-9);
  EXPECT_EQ(m.StepTime(StepShape{}).count(), 0);
}

TEST(StepCostRoofline, StepTimeGrowsWithBatchAndContext) {
  RooflineStepCost m = Llama8bH200();
  Duration prev{0};
  for (int seqs : {1, 2, 8, 32, 128, 256}) {
    Duration t = m.StepTime(Decode(seqs, seqs * 2000));
    EXPECT_GT(t, prev) << seqs;
    prev = t;
  }
  // Batching amortises the weights: 64 sequences cost far less than 64 single steps.
  EXPECT_LT(m.StepTime(Decode(64, 64 * 2000)), 8 * m.StepTime(Decode(1, 2000)));
  prev = Duration{0};
  for (int64_t kv : {0, 10'000, 100'000, 1'000'000}) {
    Duration t = m.StepTime(Decode(16, kv));
    EXPECT_GT(t, prev) << kv;
    prev = t;
  }
}

TEST(StepCostRoofline, PrefillHeavyStepIsComputeBound) {
  RooflineStepCost m = Llama8bH200();
  StepShape s = Prefill(4096, 0);
  double compute = m.Flops(s) / (989e12 * 0.6);
  double memory = m.Bytes(s) / (4.8e12 * 0.8);
  EXPECT_GT(compute, 5 * memory);
  // The same FLOPs as the per-call roofline's prefill of 4096 tokens on none cached.
  auto call = RooflineCostModel::FromFiles(ConfigPath("models/llama-3.1-8b.json"),
                                           ConfigPath("gpus/h200.json"));
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_DOUBLE_EQ(m.Flops(s), call->PrefillFlops(4096, 0));
  EXPECT_NEAR(ToSeconds(m.StepTime(s)), ToSeconds(call->PrefillTime(4096, 0)) + 0.001, 2e-9);
  // A decode riding along a big chunk barely changes the step.
  StepShape mixed = s;
  mixed.decode_seqs = 1;
  mixed.kv_tokens_read = 1000;
  EXPECT_LT(ToSeconds(m.StepTime(mixed) - m.StepTime(s)), 0.01 * ToSeconds(m.StepTime(s)));
}

TEST(StepCostRoofline, TensorParallelHalvesTheTime) {
  v1::ModelConfig model;
  v1::GpuSpec gpu;
  ASSERT_TRUE(proto::ParseJsonFile(ConfigPath("models/llama-3.1-8b.json"), &model).ok());
  ASSERT_TRUE(proto::ParseJsonFile(ConfigPath("gpus/h200.json"), &gpu).ok());
  model.set_tensor_parallel(1);
  auto one = RooflineStepCost::Create(model, gpu, Duration(0));
  model.set_tensor_parallel(2);
  auto two = RooflineStepCost::Create(model, gpu, Duration(0));
  ASSERT_TRUE(one.ok() && two.ok());
  for (const StepShape& s : {Decode(32, 64'000), Prefill(2048, 1000)}) {
    EXPECT_NEAR(static_cast<double>(two->StepTime(s).count()),
                static_cast<double>(one->StepTime(s).count()) / 2, 1.0);
  }
  EXPECT_EQ(Llama8bH200(Millis(3)).step_overhead(), Millis(3));
}

TEST(StepCostRoofline, BadConfigErrorsNameTheField) {
  v1::ModelConfig model;
  v1::GpuSpec gpu;
  auto r = RooflineStepCost::Create(model, gpu);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_NE(r.status().message().find("model.num_layers"), std::string::npos) << r.status();
  ASSERT_TRUE(proto::ParseJsonFile(ConfigPath("models/llama-3.1-8b.json"), &model).ok());
  r = RooflineStepCost::Create(model, gpu);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gpu.bf16_flops"), std::string::npos) << r.status();
  ASSERT_TRUE(proto::ParseJsonFile(ConfigPath("gpus/h200.json"), &gpu).ok());
  r = RooflineStepCost::Create(model, gpu, Millis(-1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("step_overhead"), std::string::npos) << r.status();
  EXPECT_FALSE(
      RooflineStepCost::FromFiles(ConfigPath("models/nope.json"), ConfigPath("gpus/h200.json"))
          .ok());
}

// ---- TableStepCost -------------------------------------------------------------------------

constexpr char kSmallTable[] =
    "# measured somewhere\n"
    "prefill_tokens,decode_seqs,kv_tokens,step_time_s\n"
    "\n"
    "0,1,1000,0.005\n"
    "  # an indented comment\n"
    "0, 16, 16000 ,0.007\r\n"
    "2048,0,0,0.030\n"
    "2048,16,90000,0.034\n"
    "512,4,4000,0.012\n";

TEST(StepCostTable, ParsesCommentsBlankLinesAndSpaces) {
  auto t = TableStepCost::FromText(kSmallTable, "small.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows(), 5u);
  EXPECT_DOUBLE_EQ(t->min_step_time_s(), 0.005);
  EXPECT_EQ(t->source(), "small.csv");
  for (const TableStepCost::Plane& f : t->planes())
    for (double c : {f.intercept_s, f.per_prefill_token_s, f.per_decode_seq_s, f.per_kv_token_s})
      EXPECT_GE(c, 0);
  // Clamped below by the smallest measured time; monotone in every input.
  EXPECT_GE(t->StepTime(Decode(1, 0)), Seconds(0.005));
  EXPECT_LE(t->StepTime(Decode(4, 1000)), t->StepTime(Decode(8, 1000)));
  EXPECT_LE(t->StepTime(Prefill(100, 0)), t->StepTime(Prefill(4000, 0)));
  EXPECT_EQ(t->StepTime(StepShape{}).count(), 0);
}

void ExpectRejected(const std::string& text, const std::string& needle) {
  auto t = TableStepCost::FromText(text, "bad.csv");
  ASSERT_FALSE(t.ok()) << "accepted: " << text;
  EXPECT_TRUE(t.status().IsInvalidArgument()) << t.status();
  EXPECT_NE(t.status().message().find("bad.csv"), std::string::npos) << t.status();
  EXPECT_NE(t.status().message().find(needle), std::string::npos)
      << t.status() << " lacks " << needle;
}

TEST(StepCostTable, RejectsBadTablesNamingLineAndColumn) {
  const std::string header = "prefill_tokens,decode_seqs,kv_tokens,step_time_s\n";
  const std::string rows = "0,1,100,0.005\n0,8,800,0.006\n1000,0,0,0.02\n1000,8,800,0.022\n";
  ExpectRejected("", "missing header");
  ExpectRejected("# only a comment\n" + rows, "bad.csv:2: missing header");
  ExpectRejected("prefill,decode_seqs,kv_tokens,step_time_s\n" + rows, "missing header");
  ExpectRejected(header + rows + "12,abc,0,0.1\n", "bad.csv:6: column 2 (decode_seqs): 'abc'");
  ExpectRejected(header + "# c\n" + rows + "-5,1,0,0.1\n",
                 "bad.csv:7: column 1 (prefill_tokens): '-5'");
  ExpectRejected(header + rows + "5,1,0,-0.1\n", "bad.csv:6: column 4 (step_time_s)");
  ExpectRejected(header + rows + "5,1,0,0\n", "column 4 (step_time_s): '0'");
  ExpectRejected(header + rows + "5,1,1.5,0.1\n", "column 3 (kv_tokens): '1.5'");
  ExpectRejected(header + "5,1,0\n" + rows, "bad.csv:2: expected 4 columns");
  ExpectRejected(header + "5,1,0,0.1,9\n", "found 5");
  ExpectRejected(header + "0,1,100,0.005\n0,8,800,0.006\n1000,0,0,0.02\n", "3 rows");
  // decode_seqs never varies: the fit cannot price it.
  ExpectRejected(header + "0,1,100,0.005\n0,1,800,0.006\n1000,1,0,0.02\n1000,1,800,0.022\n",
                 "do not determine the fit");
  auto missing = TableStepCost::FromFile(ConfigPath("step_tables/nope.csv"));
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status();
}

TEST(StepCostTable, FitReproducesALinearTable) {
  // t = 2 ms + 3 us per prefill token + 40 us per decoding sequence + 20 ns per KV token.
  auto truth = [](int64_t p, int64_t d, int64_t kv) {
    return 0.002 + 3e-6 * p + 4e-5 * d + 2e-8 * kv;
  };
  std::string text = "prefill_tokens,decode_seqs,kv_tokens,step_time_s\n";
  for (int64_t p : {0, 256, 2048, 8192})
    for (int64_t d : {0, 1, 16, 128})
      for (int64_t ctx : {500, 4000}) {
        if (p == 0 && d == 0) continue;
        char line[128];
        std::snprintf(line, sizeof line, "%lld,%lld,%lld,%.17g\n", static_cast<long long>(p),
                      static_cast<long long>(d), static_cast<long long>(d * ctx),
                      truth(p, d, d * ctx));
        text += line;
      }
  auto t = TableStepCost::FromText(text, "linear.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->planes().size(), 1u);  // linear data: one plane
  const TableStepCost::Plane& f = t->planes()[0];
  EXPECT_NEAR(f.intercept_s, 0.002, 1e-12);
  EXPECT_NEAR(f.per_prefill_token_s, 3e-6, 1e-15);
  EXPECT_NEAR(f.per_decode_seq_s, 4e-5, 1e-14);
  EXPECT_NEAR(f.per_kv_token_s, 2e-8, 1e-17);
  for (int64_t p : {0, 256, 8192})
    for (int d : {1, 16, 128}) {
      StepShape s = Decode(d, d * 4000);
      s.prefill_tokens = p;
      EXPECT_NEAR(ToSeconds(t->StepTime(s)), truth(p, d, d * 4000), 2e-9) << p << "," << d;
    }
}

TEST(StepCostTable, NegativeTrendsFitToZeroCoefficients) {
  // Time falls as kv_tokens grows (noise): the non-negative fit prices kv at zero.
  std::string text =
      "prefill_tokens,decode_seqs,kv_tokens,step_time_s\n"
      "0,1,100,0.0060\n0,8,100,0.0074\n0,1,90000,0.0059\n0,8,90000,0.0073\n"
      "1000,1,100,0.0200\n1000,1,90000,0.0199\n";
  auto t = TableStepCost::FromText(text, "noisy.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  for (const TableStepCost::Plane& f : t->planes()) EXPECT_GE(f.per_kv_token_s, 0);
  ASSERT_EQ(t->planes().size(), 1u);
  EXPECT_EQ(t->planes()[0].per_kv_token_s, 0);
  EXPECT_GT(t->planes()[0].per_decode_seq_s, 0);
  EXPECT_GT(t->planes()[0].per_prefill_token_s, 0);
}

// The example table is documented as derived from the roofline (8B on H200, default
// overhead, each row's prefill one chunk on nothing cached): check the claim row by row.
TEST(StepCostTable, ExampleTableMatchesTheRooflineItCameFrom) {
  const std::string path = ConfigPath("step_tables/llama-3.1-8b-h200-roofline.csv");
  auto table = TableStepCost::FromFile(path);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_GE(table->rows(), 20u);
  auto text = proto::ReadFile(path);
  ASSERT_TRUE(text.ok());
  RooflineStepCost roofline = Llama8bH200();
  size_t checked = 0, pos = 0;
  double worst = 0;
  while (pos < text->size()) {
    size_t nl = text->find('\n', pos);
    std::string line = text->substr(pos, nl - pos);
    pos = nl == std::string::npos ? text->size() : nl + 1;
    long long p, d, kv;
    double secs;
    if (line.empty() || line[0] == '#') continue;
    if (std::sscanf(line.c_str(), "%lld,%lld,%lld,%lf", &p, &d, &kv, &secs) != 4) continue;
    StepShape s = Prefill(p, 0);
    s.decode_seqs = static_cast<int>(d);
    s.kv_tokens_read = kv;
    EXPECT_NEAR(ToSeconds(roofline.StepTime(s)), secs, 1e-6) << line;
    worst = std::max(worst, std::fabs(ToSeconds(table->StepTime(s)) - secs) / secs);
    ++checked;
  }
  EXPECT_EQ(checked, table->rows());
  // The roofline is the max of a compute and a memory plane: the two-plane fit follows it.
  EXPECT_EQ(table->planes().size(), 2u);
  EXPECT_LT(worst, 0.10) << "worst relative error of the fit";
}

// A prefill chunk of n tokens on c cached ones: StepShape as the batching engine builds it.
StepShape Extend(int64_t n, int64_t c) {
  StepShape s;
  s.prefill_tokens = n;
  s.kv_tokens_read = c;
  s.prefill_attention = static_cast<double>(n) * (static_cast<double>(c) + (n + 1) / 2.0);
  return s;
}

// Rows of an attention-bound engine: t = 2 ms + 0.2 ms per prefill token + 50 us per
// decoding sequence + 1 us per KV token + 0.4 us per prefill query-key pair, written with
// or without the prefill_attention column.
std::string AttentionBoundTable(bool attention_column) {
  auto truth = [](const StepShape& s) {
    return 0.002 + 2e-4 * s.prefill_tokens + 5e-5 * s.decode_seqs + 1e-6 * s.kv_tokens_read +
           4e-7 * s.prefill_attention;
  };
  std::string text = attention_column
                         ? "prefill_tokens,decode_seqs,kv_tokens,prefill_attention,step_time_s\n"
                         : "prefill_tokens,decode_seqs,kv_tokens,step_time_s\n";
  for (int64_t n : {0, 16, 64, 256})
    for (int64_t d : {0, 1, 4, 16})
      for (int64_t c : {0, 512, 2048}) {
        if (n == 0 && d == 0) continue;
        if (n == 0 && c > 0) continue;
        StepShape s = Extend(n, c);
        s.decode_seqs = static_cast<int>(d);
        s.kv_tokens_read += d * 300;  // the decoders' contexts
        char line[160];
        if (attention_column)
          std::snprintf(line, sizeof line, "%lld,%lld,%lld,%.17g,%.17g\n",
                        static_cast<long long>(n), static_cast<long long>(d),
                        static_cast<long long>(s.kv_tokens_read), s.prefill_attention, truth(s));
        else
          std::snprintf(line, sizeof line, "%lld,%lld,%lld,%.17g\n", static_cast<long long>(n),
                        static_cast<long long>(d), static_cast<long long>(s.kv_tokens_read),
                        truth(s));
        text += line;
      }
  return text;
}

TEST(StepCostTable, PrefillAttentionColumnPricesAShortChunkOnALongContext) {
  auto t = TableStepCost::FromText(AttentionBoundTable(true), "attention.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->has_prefill_attention());
  ASSERT_EQ(t->planes().size(), 1u);  // exactly linear in the five inputs
  const TableStepCost::Plane& p = t->planes()[0];
  EXPECT_NEAR(p.intercept_s, 0.002, 1e-9);
  EXPECT_NEAR(p.per_prefill_token_s, 2e-4, 1e-10);
  EXPECT_NEAR(p.per_decode_seq_s, 5e-5, 1e-10);
  EXPECT_NEAR(p.per_kv_token_s, 1e-6, 1e-11);
  EXPECT_NEAR(p.per_prefill_attention_s, 4e-7, 1e-12);
  // 256 tokens on 2,048 cached: 2 + 51.2 + 2.048 + 0.4 us x 256 x 2,176.5 = ~278 ms.
  const double want = 0.002 + 2e-4 * 256 + 1e-6 * 2048 + 4e-7 * 256 * (2048 + 128.5);
  EXPECT_NEAR(ToSeconds(t->StepTime(Extend(256, 2048))), want, 1e-6);
  // The same chunk on an empty context costs far less.
  EXPECT_LT(ToSeconds(t->StepTime(Extend(256, 0))), 0.5 * want);
}

TEST(StepCostTable, FourColumnTablesStillLoadAndCannotSeeTheAttention) {
  auto t4 = TableStepCost::FromText(AttentionBoundTable(false), "four.csv");
  ASSERT_TRUE(t4.ok()) << t4.status();
  EXPECT_FALSE(t4->has_prefill_attention());
  for (const TableStepCost::Plane& p : t4->planes()) EXPECT_EQ(p.per_prefill_attention_s, 0);
  // The same rows without the column: the fit cannot tell a chunk's cached context apart,
  // so it misprices 256 on 2,048 by more than 20 % (what the five-column fit fixes).
  const double want = 0.002 + 2e-4 * 256 + 1e-6 * 2048 + 4e-7 * 256 * (2048 + 128.5);
  double got = ToSeconds(t4->StepTime(Extend(256, 2048)));
  EXPECT_GT(std::fabs(got - want) / want, 0.2) << got << " vs " << want;
  // The committed tables load whichever layout they have.
  auto roofline = TableStepCost::FromFile(ConfigPath("step_tables/llama-3.1-8b-h200-roofline.csv"));
  ASSERT_TRUE(roofline.ok()) << roofline.status();
  EXPECT_FALSE(roofline->has_prefill_attention());
  auto cpu = TableStepCost::FromFile(ConfigPath("step_tables/cpu-tiny-llama-4l.csv"));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
}

TEST(StepCostTable, FiveColumnTablesRejectBadAttentionCells) {
  const std::string header = "prefill_tokens,decode_seqs,kv_tokens,prefill_attention,step_time_s\n";
  const std::string rows =
      "0,1,100,0,0.005\n0,8,800,0,0.006\n1000,0,0,500500,0.02\n1000,8,800,500500,0.022\n"
      "100,0,2000,205050,0.03\n10,2,50,10055,0.007\n";
  auto ok = TableStepCost::FromText(header + rows, "five.csv");
  ASSERT_TRUE(ok.ok()) << ok.status();
  ExpectRejected(header + rows + "5,1,0,-1,0.1\n", "bad.csv:8: column 4 (prefill_attention): '-1'");
  ExpectRejected(header + rows + "5,1,0,x,0.1\n", "column 4 (prefill_attention): 'x'");
  ExpectRejected(header + rows + "5,1,0,15,0\n", "column 5 (step_time_s): '0'");
  ExpectRejected(header + rows + "5,1,0,0.1\n", "expected 5 columns");
  ExpectRejected(header +
                     "0,1,100,0,0.005\n0,8,800,0,0.006\n1000,0,0,500500,0.02\n"
                     "1000,8,800,500500,0.022\n",
                 "4 rows; the fit needs at least 5");
  // prefill_attention a multiple of prefill_tokens on every row: undetermined.
  ExpectRejected(header +
                     "0,1,100,0,0.005\n0,8,800,0,0.006\n10,0,0,100,0.02\n"
                     "20,8,800,200,0.022\n40,1,0,400,0.03\n",
                 "prefill_attention");
  ExpectRejected("prefill_tokens,decode_seqs,kv_tokens,attention,step_time_s\n" + rows,
                 "missing header");
}

}  // namespace
}  // namespace switchyard::executors
