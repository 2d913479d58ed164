// bf16 storage: weights stored as bf16 give the bits fp32 storage of the same (bf16)
// values gives, on every Linear path and in whole forward passes of several batch shapes;
// bf16 KV is rounded when written and read widened, still batch and chunk invariant.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu_engine/dtype.h"
#include "cpu_engine/kernels.h"
#include "cpu_engine/model.h"
#include "tests/cpu_engine/cpu_test_util.h"

namespace switchyard::cpu_engine {
namespace {

using testing::Context;
using testing::Randn;
using testing::Rows;
using testing::TinyShape;
using testing::Tokens;

TEST(Bf16, RoundsToNearestEvenAndWidensExactly) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(-2.5f)), -2.5f);
  uint32_t bits = 0x3f808000;  // halfway between 0x3f80 and 0x3f81: to even
  float f;
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(FloatToBf16(f), 0x3f80);
  bits = 0x3f818000;  // halfway between 0x3f81 and 0x3f82: to even
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(FloatToBf16(f), 0x3f82);
  bits = 0x3f808001;  // just above halfway: up
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(FloatToBf16(f), 0x3f81);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::nanf("")))));
  EXPECT_EQ(ParseDType("BF16"), DType::kBf16);
  EXPECT_EQ(ParseDType("fp32"), DType::kF32);
  EXPECT_FALSE(ParseDType("fp16").has_value());
}

// Packed bf16 and fp32 panels of the same bf16 values: the same bits from every path, for
// row counts across the 12-row blocks and widths that end in a partial panel.
TEST(Bf16, PanelsGiveTheFp32PanelsBitsOnEveryPath) {
  const std::string chosen = LinearPath();
  const std::pair<int64_t, int64_t> shapes[] = {{300, 70}, {64, 128}, {17, 33}, {896, 200}};
  for (auto [in, out] : shapes) {
    const auto wf = Randn(static_cast<size_t>(in * out), 1, true);
    const PackedMatrix f32(wf.data(), out, in, DType::kF32), bf16(wf.data(), out, in, DType::kBf16);
    EXPECT_EQ(bf16.bytes() * 2, f32.bytes());
    EXPECT_EQ(bf16.At(out - 1, in - 1), wf.back());
    int ran = 0;
    for (const char* path : {"avx512", "avx2", "scalar"}) {
      if (!SetLinearPathForTesting(path)) continue;
      ++ran;
      for (int64_t rows : {1, 3, 12, 13, 25}) {
        const auto x =
            Randn(static_cast<size_t>(rows * in), 7 + static_cast<uint32_t>(rows), false);
        std::vector<float> a(rows * out), b(rows * out);
        Linear(x.data(), rows, f32, a.data(), out, nullptr);
        Linear(x.data(), rows, bf16, b.data(), out, nullptr);
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
            << path << " in " << in << " out " << out << " rows " << rows;
      }
    }
    EXPECT_GE(ran, 2);
  }
  ASSERT_TRUE(SetLinearPathForTesting(chosen));
}

// Attend over bf16 KV gives the bits of Attend over fp32 KV holding the widened values,
// for the vectorised head sizes and the generic one.
TEST(Bf16, AttendOverBf16KvEqualsAttendOverItsWidenedValues) {
  for (int64_t hd : {16, 64, 128, 24}) {
    const int64_t heads = 4, kv_heads = 2, kvd = kv_heads * hd, bt = 16, n = 40;
    std::vector<std::vector<float>> f(3);
    std::vector<std::vector<uint16_t>> h(3);
    std::vector<float*> fp, hp;
    for (int b = 0; b < 3; ++b) {
      f[b] = Randn(static_cast<size_t>(2 * bt * kvd), 20 + b, true);
      for (float v : f[b]) h[b].push_back(FloatToBf16(v));
      fp.push_back(f[b].data());
      hp.push_back(reinterpret_cast<float*>(h[b].data()));
    }
    const KvLayerView kf{fp.data(), bt, kvd, 0, DType::kF32};
    const KvLayerView kh{hp.data(), bt, kvd, 0, DType::kBf16};
    const auto q = Randn(static_cast<size_t>(heads * hd), 5, false);
    for (int64_t pos : {int64_t{0}, int64_t{7}, int64_t{8}, int64_t{21}, n - 1}) {
      std::vector<float> scores(static_cast<size_t>(2 * AttendScoresFloats(pos)));
      std::vector<float> a(heads * hd), b(heads * hd);
      Attend(q.data(), kf, pos, heads, kv_heads, hd, scores.data(), a.data());
      Attend(q.data(), kh, pos, heads, kv_heads, hd, scores.data(), b.data());
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
          << "head_dim " << hd << " position " << pos;
    }
  }
}

// Logits of `m` for a mixed batch: a 29-row prefill chunk of one context (logits for
// every row), one decode row of another, then single rows; `shape` picks the batch.
std::vector<float> BatchLogits(const Model& m, int shape) {
  const ModelShape& s = m.shape();
  Context a(s, 64), b(s, 64);
  const auto ta = Tokens(64, 11, s.vocab_size), tb = Tokens(64, 12, s.vocab_size);
  std::vector<float> all, lg;
  auto run = [&](std::vector<Row> rows) {
    EXPECT_TRUE(m.Forward(rows, &lg).ok());
    all.insert(all.end(), lg.begin(), lg.end());
  };
  if (shape == 0) {  // one token at a time
    for (int64_t p = 0; p < 40; ++p) run(Rows(a, ta, p, p + 1));
  } else if (shape == 1) {  // one prefill with logits everywhere
    run(Rows(a, ta, 0, 40, true));
  } else {  // chunks of 13 of one context beside another context's rows
    for (int64_t p = 0, pb = 0; p < 40; p += 13, pb += 5) {
      auto rows = Rows(a, ta, p, std::min<int64_t>(40, p + 13), true);
      auto other = Rows(b, tb, pb, pb + 5);
      rows.insert(rows.begin() + std::min<size_t>(2, rows.size()), other.begin(), other.end());
      run(rows);
    }
  }
  return all;
}

class Bf16Model : public ::testing::TestWithParam<const char*> {};

// The same bf16 weights stored as fp32 and as bf16: bit-identical logits for every batch
// shape; the bf16 model stores about half the bytes.
TEST_P(Bf16Model, StorageGivesTheFp32StoragesBits) {
  ModelShape s = TinyShape(GetParam());
  s.weight_dtype = DType::kBf16;
  const Weights w = RandomWeights(s);  // rounded to bf16
  ModelShape sf = s;
  sf.weight_dtype = DType::kF32;
  auto f32 = Model::FromWeights(sf, w);
  auto bf16 = Model::FromWeights(s, w);
  ASSERT_TRUE(f32.ok() && bf16.ok());
  EXPECT_LT((*bf16)->weight_bytes(), (*f32)->weight_bytes() * 53 / 100);
  EXPECT_GT((*bf16)->weight_bytes(), (*f32)->weight_bytes() * 47 / 100);
  for (int shape : {0, 1, 2}) {
    const auto a = BatchLogits(**f32, shape), b = BatchLogits(**bf16, shape);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "shape " << shape;
  }
}

INSTANTIATE_TEST_SUITE_P(TinyShapes, Bf16Model,
                         ::testing::Values("tiny-llama-2l", "tiny-llama-4l"));

// Random weights: weightDtype fp32 keeps the unrounded values; bf16 rounds them.
TEST(Bf16Model, RandomWeightsFollowWeightDtype) {
  ModelShape s = TinyShape();
  s.weight_dtype = DType::kF32;
  const Weights f = RandomWeights(s);
  s.weight_dtype = DType::kBf16;
  const Weights b = RandomWeights(s);
  int differ = 0;
  for (size_t i = 0; i < f.embed.size(); ++i) {
    EXPECT_EQ(b.embed[i], RoundToBf16(f.embed[i]));
    differ += b.embed[i] != f.embed[i];
  }
  EXPECT_GT(differ, 0);
}

// bf16 KV: layer 0's K and V are fp32 KV's rounded to nearest (the layer's input does not
// depend on KV); a row's logits and KV are the same bits alone and in a mixed batch,
// whatever the chunking.
TEST(Bf16Kv, RoundsWhenWrittenAndStaysInvariant) {
  ModelShape s = TinyShape("tiny-llama-4l");
  auto f32 = Model::Random(s);
  s.kv_dtype = DType::kBf16;
  auto bf = Model::Random(s);
  ASSERT_TRUE(f32.ok() && bf.ok());
  EXPECT_EQ(s.kv_bytes_per_token() * 2, (*f32)->shape().kv_bytes_per_token());
  const auto toks = Tokens(50, 3, s.vocab_size);
  Context cf((*f32)->shape(), 50), cb(s, 50);
  std::vector<float> lf, lb;
  ASSERT_TRUE((*f32)->Forward(Rows(cf, toks, 0, 50), &lf).ok());
  ASSERT_TRUE((*bf)->Forward(Rows(cb, toks, 0, 50), &lb).ok());
  for (int64_t p = 0; p < 50; p += 7)
    for (int kv = 0; kv < 2; ++kv) {
      const auto want = cf.Values((*f32)->shape(), 0, kv, p), got = cb.Values(s, 0, kv, p);
      for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], RoundToBf16(want[i])) << p;
    }
  for (size_t i = 0; i < lf.size(); ++i) EXPECT_NEAR(lb[i], lf[i], 2e-3) << i;
  // Invariance: chunks of 16 and 1 beside another context give the same KV and logits.
  for (int64_t chunk : {16, 1}) {
    Context c(s, 50), other(s, 50);
    const auto to = Tokens(50, 4, s.vocab_size);
    std::vector<float> lg;
    int64_t po = 0;  // the other context decodes one row per call
    for (int64_t p = 0; p < 50; p += chunk, ++po) {
      auto rows = Rows(other, to, po, po + 1);
      auto mine = Rows(c, toks, p, std::min<int64_t>(50, p + chunk));
      rows.insert(rows.end(), mine.begin(), mine.end());
      ASSERT_TRUE((*bf)->Forward(rows, &lg).ok());
    }
    EXPECT_TRUE(c.SameKv(s, cb, 50)) << "chunk " << chunk;
    ASSERT_EQ(lg.size(), 2 * lb.size());
    EXPECT_EQ(0, std::memcmp(lg.data() + lb.size(), lb.data(), lb.size() * sizeof(float)))
        << "chunk " << chunk;
  }
}

}  // namespace
}  // namespace switchyard::cpu_engine
