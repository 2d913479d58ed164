#include "cpu_engine/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/cpu_engine/cpu_test_util.h"
#include "tests/cpu_engine/reference_model.h"

namespace switchyard::cpu_engine {
namespace {

using testing::Context;
using testing::Reference;
using testing::RelErr;
using testing::Rows;
using testing::RunReference;
using testing::TinyShape;
using testing::Tokens;

struct RefCase {
  const char* shape;
  bool tie;
  double theta;
};

class ModelVsReference : public ::testing::TestWithParam<RefCase> {};

TEST_P(ModelVsReference, LogitsAndKvMatchWithin1e5) {
  ModelShape s = TinyShape(GetParam().shape);
  s.tie_embeddings = GetParam().tie;
  s.rope_theta = GetParam().theta;
  auto model = Model::Random(s);
  ASSERT_TRUE(model.ok()) << model.status();
  const int64_t n = 40;  // 3 blocks of 16
  auto toks = Tokens(n, 7, s.vocab_size);
  Reference ref = RunReference(s, RandomWeights(s), toks);
  Context ctx(s, n);
  // A 34-token prefill with logits for every row, then decode steps one by one.
  std::vector<float> logits, all;
  ASSERT_TRUE((*model)->Forward(Rows(ctx, toks, 0, 34, true), &logits).ok());
  all = logits;
  for (int64_t p = 34; p < n; ++p) {
    ASSERT_TRUE((*model)->Forward(Rows(ctx, toks, p, p + 1), &logits).ok());
    all.insert(all.end(), logits.begin(), logits.end());
  }
  ASSERT_EQ(all.size(), static_cast<size_t>(n * s.vocab_size));
  double worst = 0;
  for (int64_t p = 0; p < n; ++p) {
    worst = std::max(worst, RelErr(&all[p * s.vocab_size], ref.logits[p]));
    for (int64_t l = 0; l < s.layers; ++l)
      for (int kv = 0; kv < 2; ++kv) {
        const double e = RelErr(ctx.At(s, l, kv, p), (kv ? ref.v : ref.k)[l][p]);
        EXPECT_LT(e, 1e-5) << "layer " << l << (kv ? " V" : " K") << " position " << p;
      }
  }
  EXPECT_LT(worst, 1e-5);
  // The logits are not trivially small: a wrong model would differ by far more.
  double spread = 0;
  for (double v : ref.logits.back()) spread = std::max(spread, std::abs(v));
  EXPECT_GT(spread, 1e-2);
}

INSTANTIATE_TEST_SUITE_P(TinyShapes, ModelVsReference,
                         ::testing::Values(RefCase{"tiny-llama-2l", false, 10000.0},
                                           RefCase{"tiny-llama-2l", true, 500000.0},
                                           RefCase{"tiny-llama-4l", false, 10000.0}));

// --- Invariance -------------------------------------------------------------------------

const Model& Tiny4l() {
  static auto m = std::move(Model::Random(TinyShape("tiny-llama-4l")).value());
  return *m;
}

// One sequence alone vs the same sequence among 7 others of mixed lengths, prefill chunks
// and decode rows mixed in each call, at different row offsets.
TEST(ModelInvariance, BatchCompositionDoesNotChangeBits) {
  const Model& m = Tiny4l();
  const ModelShape& s = m.shape();
  const int64_t len = 60;
  auto toks = Tokens(len, 1, s.vocab_size);
  // Alone: prefill 40, then 20 decode steps.
  Context alone(s, len);
  std::vector<std::vector<float>> alone_logits;
  std::vector<float> lg;
  ASSERT_TRUE(m.Forward(Rows(alone, toks, 0, 40), &lg).ok());
  alone_logits.push_back(lg);
  for (int64_t p = 40; p < len; ++p) {
    ASSERT_TRUE(m.Forward(Rows(alone, toks, p, p + 1), &lg).ok());
    alone_logits.push_back(lg);
  }
  // Together with 7 others: lengths 5..150, some prefilling in chunks, some decoding.
  Context mine(s, len);
  const int64_t other_len[7] = {5, 17, 150, 33, 64, 90, 1};
  std::vector<std::unique_ptr<Context>> others;
  std::vector<std::vector<int32_t>> other_toks;
  std::vector<int64_t> done(7, 0);
  for (int i = 0; i < 7; ++i) {
    others.push_back(std::make_unique<Context>(s, other_len[i] + 25));
    other_toks.push_back(Tokens(other_len[i] + 25, 100 + i, s.vocab_size));
  }
  auto add_others = [&](std::vector<Row>* rows, int first, int last, int64_t chunk) {
    for (int i = first; i < last; ++i) {
      const int64_t n = done[i] < other_len[i] ? std::min(chunk, other_len[i] - done[i]) : 1;
      if (done[i] + n > other_len[i] + 25) continue;
      auto r = Rows(*others[i], other_toks[i], done[i], done[i] + n);
      rows->insert(rows->end(), r.begin(), r.end());
      done[i] += n;
    }
  };
  int64_t step = 0;
  for (int64_t p = 0; p < len; ++step) {
    const int64_t n = p == 0 ? 40 : 1;
    std::vector<Row> rows;
    add_others(&rows, 0, 3 + step % 4, 11 + 7 * step);  // a varying number before mine
    auto r = Rows(mine, toks, p, p + n);
    const size_t first_mine = rows.size();
    rows.insert(rows.end(), r.begin(), r.end());
    add_others(&rows, 3 + step % 4, 7, 23);
    for (Row& row : rows) row.want_logits = row.want_logits || (row.position % 3 == 0);
    ASSERT_TRUE(m.Forward(rows, &lg).ok());
    // Find my last row's logits: count logit rows before it.
    size_t before = 0;
    for (size_t i = 0; i < first_mine + n - 1; ++i) before += rows[i].want_logits ? 1 : 0;
    const size_t v = static_cast<size_t>(s.vocab_size);
    ASSERT_EQ(0, std::memcmp(&lg[before * v], alone_logits[step].data(), v * sizeof(float)))
        << "logits differ at step " << step;
    p += n;
  }
  EXPECT_TRUE(mine.SameKv(s, alone, len));
}

// A 300-token prefill in one call (two row chunks inside Forward) vs chunks of 16, 64 and
// 1; with and without moving the blocks to other memory between calls.
TEST(ModelInvariance, ChunkingAndBlockAddressesDoNotChangeBits) {
  const Model& m = Tiny4l();
  const ModelShape& s = m.shape();
  const int64_t n = 300;
  auto toks = Tokens(n, 2, s.vocab_size);
  Context whole(s, n);
  std::vector<float> whole_logits, lg;
  ASSERT_TRUE(m.Forward(Rows(whole, toks, 0, n), &whole_logits).ok());
  ASSERT_EQ(whole_logits.size(), static_cast<size_t>(s.vocab_size));
  for (int64_t chunk : {16, 64, 1}) {
    for (bool relocate : {false, true}) {
      Context c(s, n);
      for (int64_t p = 0; p < n; p += chunk) {
        ASSERT_TRUE(m.Forward(Rows(c, toks, p, std::min(n, p + chunk)), &lg).ok());
        if (relocate) c.Relocate();
      }
      EXPECT_TRUE(c.SameKv(s, whole, n)) << "chunk " << chunk << " relocate " << relocate;
      ASSERT_EQ(lg.size(), whole_logits.size());
      EXPECT_EQ(0, std::memcmp(lg.data(), whole_logits.data(), lg.size() * sizeof(float)))
          << "chunk " << chunk << " relocate " << relocate;
    }
  }
}

// The same mixed batch (a prefill chunk, decode rows, logits for several) on 1, 2 and 3
// threads, then the prefill's continuation: the same logits and KV bits.
TEST(ModelInvariance, ThreadCountDoesNotChangeBits) {
  const ModelShape s = TinyShape("tiny-llama-4l");
  std::vector<std::vector<float>> logits;
  std::vector<std::unique_ptr<Context>> a, b;
  for (int threads : {1, 2, 3}) {
    auto m = Model::Random(s);
    ASSERT_TRUE(m.ok()) << m.status();
    (*m)->SetThreads(threads);
    ASSERT_EQ((*m)->threads(), threads);
    auto ta = Tokens(70, 11, s.vocab_size), tb = Tokens(30, 12, s.vocab_size);
    a.push_back(std::make_unique<Context>(s, 70));
    b.push_back(std::make_unique<Context>(s, 30));
    std::vector<float> lg;
    ASSERT_TRUE((*m)->Forward(Rows(*b.back(), tb, 0, 29), &lg).ok());
    auto rows = Rows(*a.back(), ta, 0, 69, true);
    auto rb = Rows(*b.back(), tb, 29, 30);
    rows.insert(rows.begin() + 5, rb.begin(), rb.end());
    ASSERT_TRUE((*m)->Forward(rows, &lg).ok());
    std::vector<float> all = lg;
    ASSERT_TRUE((*m)->Forward(Rows(*a.back(), ta, 69, 70), &lg).ok());
    all.insert(all.end(), lg.begin(), lg.end());
    logits.push_back(all);
  }
  for (size_t i = 1; i < logits.size(); ++i) {
    ASSERT_EQ(logits[i].size(), logits[0].size());
    EXPECT_EQ(0, std::memcmp(logits[i].data(), logits[0].data(), logits[0].size() * sizeof(float)))
        << "threads " << i + 1;
    EXPECT_TRUE(a[i]->SameKv(s, *a[0], 70)) << "threads " << i + 1;
    EXPECT_TRUE(b[i]->SameKv(s, *b[0], 30)) << "threads " << i + 1;
  }
}

std::vector<int32_t> Greedy(const Model& m, const std::vector<int32_t>& prompt, int64_t chunk,
                            int steps) {
  const ModelShape& s = m.shape();
  Context c(s, static_cast<int64_t>(prompt.size()) + steps);
  std::vector<int32_t> toks = prompt;
  std::vector<float> lg;
  const int64_t n = static_cast<int64_t>(prompt.size());
  for (int64_t p = 0; p < n; p += chunk)
    if (!m.Forward(Rows(c, toks, p, std::min(n, p + chunk)), &lg).ok()) return {};
  std::vector<int32_t> out;
  for (int i = 0; i < steps; ++i) {
    out.push_back(Argmax(lg));
    toks.push_back(out.back());
    const int64_t p = static_cast<int64_t>(toks.size()) - 1;
    if (!m.Forward(Rows(c, toks, p, p + 1), &lg).ok()) return {};
  }
  return out;
}

TEST(ModelInvariance, GreedyContinuationIndependentOfPrefillChunks) {
  const Model& m = Tiny4l();
  auto prompt = Tokens(45, 3, m.shape().vocab_size);
  auto one = Greedy(m, prompt, 45, 20);
  ASSERT_EQ(one.size(), 20u);
  EXPECT_EQ(one, Greedy(m, prompt, 7, 20));
  EXPECT_EQ(one, Greedy(m, prompt, 16, 20));
  EXPECT_EQ(one, Greedy(m, prompt, 1, 20));
}

// --- Arguments --------------------------------------------------------------------------

TEST(ModelForward, RejectsBadRowsNamingTheRow) {
  const Model& m = Tiny4l();
  const ModelShape& s = m.shape();
  Context c(s, 32);
  std::vector<float> lg;
  std::vector<Row> rows = {{1, 0, c.kv(), false}, {static_cast<int32_t>(s.vocab_size), 1, c.kv()}};
  Status st = m.Forward(rows, &lg);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("row 1"), std::string::npos) << st;
  rows = {{1, 32, c.kv(), true}};  // two blocks cover 0..31
  st = m.Forward(rows, &lg);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("row 0"), std::string::npos) << st;
  EXPECT_NE(st.message().find("not covered"), std::string::npos) << st;
  rows = {{1, 0, c.kv()}, {2, 2, c.kv()}};  // a gap in one context
  st = m.Forward(rows, &lg);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("row 1"), std::string::npos) << st;
  rows = {{-1, 0, c.kv()}};
  EXPECT_TRUE(m.Forward(rows, &lg).IsInvalidArgument());
  EXPECT_TRUE(lg.empty());
}

TEST(ModelForward, EmptyCallAndLogitsOnlyForRowsThatAsk) {
  const Model& m = Tiny4l();
  const ModelShape& s = m.shape();
  std::vector<float> lg = {1, 2, 3};
  ASSERT_TRUE(m.Forward({}, &lg).ok());
  EXPECT_TRUE(lg.empty());
  Context c(s, 20);
  auto rows = Rows(c, Tokens(20, 4, s.vocab_size), 0, 20);
  rows[3].want_logits = true;  // and the last
  ASSERT_TRUE(m.Forward(rows, &lg).ok());
  EXPECT_EQ(lg.size(), 2u * s.vocab_size);
}

TEST(ModelLoad, ShapeFileGivesRandomWeightsDescribedAsSuch) {
  auto m = Model::Load(testing::ShapePath("tiny-llama-2l"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE((*m)->shape().random_weights);
  EXPECT_NE((*m)->shape().Describe().find("random weights"), std::string::npos);
  EXPECT_EQ(KvBlockFloats((*m)->shape(), 16), 16u * 2 * 2 * 2 * 16);
  EXPECT_EQ((*m)->shape().kv_bytes_per_token(), 2u * 2 * 2 * 16 * 4);
  EXPECT_FALSE(Model::Load(testing::ShapePath("nope")).ok());
}

TEST(ModelLoad, SameSeedSameModelOtherSeedOtherModel) {
  ModelShape s = TinyShape();
  auto a = Model::Random(s), b = Model::Random(s);
  s.seed += 1;
  auto c = Model::Random(s);
  Context ca(s, 4), cb(s, 4), cc(s, 4);
  auto toks = Tokens(4, 5, s.vocab_size);
  std::vector<float> la, lb, lc;
  ASSERT_TRUE((*a)->Forward(Rows(ca, toks, 0, 4), &la).ok());
  ASSERT_TRUE((*b)->Forward(Rows(cb, toks, 0, 4), &lb).ok());
  ASSERT_TRUE((*c)->Forward(Rows(cc, toks, 0, 4), &lc).ok());
  EXPECT_EQ(la, lb);
  EXPECT_NE(la, lc);
}

}  // namespace
}  // namespace switchyard::cpu_engine
