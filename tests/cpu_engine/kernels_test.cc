#include "cpu_engine/kernels.h"
#include "cpu_engine/thread_pool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/cpu_engine/cpu_test_util.h"

namespace switchyard::cpu_engine {
namespace {

using testing::Randn;

// A row's outputs are the same bits in every slot of every batch size, whatever the other
// rows hold, and on any number of threads: the property batch invariance rests on.
TEST(Linear, EverySlotBatchSizeAndThreadCountGivesTheSameBits) {
  const std::pair<int64_t, int64_t> shapes[] = {{64, 128},    {64, 176 * 2}, {176, 64},
                                                {256, 512},   {256, 1376},   {688, 256},
                                                {1024, 1000}, {40, 33}};
  ThreadPool one(1), two(2), three(3);
  for (auto [in, out] : shapes) {
    auto wf = Randn(static_cast<size_t>(in * out), 1);
    const PackedMatrix w(wf.data(), out, in);
    auto row = Randn(static_cast<size_t>(in), 2);
    std::vector<float> first(out);
    Linear(row.data(), 1, w, first.data(), out, nullptr);
    for (int64_t rows : {1, 2, 7, 11, 12, 13, 16, 25, 40}) {
      for (ThreadPool* pool : {&one, &two, &three}) {
        for (int64_t slot : {int64_t{0}, rows / 2, rows - 1}) {
          auto x = Randn(static_cast<size_t>(rows * in), 10 + static_cast<uint32_t>(rows + slot));
          std::memcpy(&x[slot * in], row.data(), in * sizeof(float));
          std::vector<float> y(rows * (out + 3), -1.0f);  // a wider row stride
          Linear(x.data(), rows, w, y.data(), out + 3, pool);
          EXPECT_EQ(0, std::memcmp(&y[slot * (out + 3)], first.data(), out * sizeof(float)))
              << "in " << in << " out " << out << " rows " << rows << " slot " << slot
              << " threads " << pool->threads();
          EXPECT_EQ(y[slot * (out + 3) + out], -1.0f);  // nothing past `out` written
        }
      }
    }
    // And it is the product: against a double dot product.
    for (int64_t o = 0; o < out; o += 37) {
      double ref = 0;
      for (int64_t i = 0; i < in; ++i) ref += static_cast<double>(row[i]) * wf[o * in + i];
      EXPECT_NEAR(first[o], ref, 1e-4 * std::sqrt(static_cast<double>(in)));
      EXPECT_EQ(w.At(o, in / 2), wf[o * in + in / 2]);
    }
  }
  std::printf("Linear path: %s\n", LinearPath());
}

// The AVX-512, AVX2 and scalar paths (those this CPU has) compute the same bits.
TEST(Linear, EveryPathGivesTheSameBits) {
  const std::string chosen = LinearPath();
  const int64_t in = 300, out = 70, rows = 13;
  auto wf = Randn(static_cast<size_t>(in * out), 3);
  auto x = Randn(static_cast<size_t>(rows * in), 4);
  const PackedMatrix w(wf.data(), out, in);
  std::vector<float> first(rows * out), y(rows * out);
  Linear(x.data(), rows, w, first.data(), out, nullptr);
  int ran = 0;
  for (const char* path : {"avx512", "avx2", "scalar"}) {
    if (!SetLinearPathForTesting(path)) continue;
    ++ran;
    Linear(x.data(), rows, w, y.data(), out, nullptr);
    EXPECT_EQ(0, std::memcmp(y.data(), first.data(), y.size() * sizeof(float))) << path;
  }
  ASSERT_TRUE(SetLinearPathForTesting(chosen));
  EXPECT_GE(ran, 2);  // scalar and the chosen one at least
}

// The pool runs every index once, also with several callers at once.
TEST(ThreadPool, RunsEveryIndexOnceWithConcurrentCallers) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::vector<std::vector<int>> hits(4, std::vector<int>(1000, 0));
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int rep = 0; rep < 50; ++rep)
        pool.ParallelFor(1000, [&](int64_t i) { ++hits[c][static_cast<size_t>(i)]; });
    });
  for (auto& t : callers) t.join();
  for (const auto& h : hits)
    for (int v : h) EXPECT_EQ(v, 50);
}

TEST(Kernels, DotAndRmsNorm) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, b(11, 2.0f);
  EXPECT_FLOAT_EQ(Dot(a.data(), b.data(), 11), 132.0f);
  EXPECT_FLOAT_EQ(Dot(a.data(), b.data(), 3), 12.0f);
  std::vector<float> x = {3, 4}, w = {1, 2}, out(2);
  RmsNorm(x.data(), w.data(), 2, 0.0f, out.data());  // rms = sqrt(12.5)
  EXPECT_NEAR(out[0], 3 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(out[1], 8 / std::sqrt(12.5), 1e-6);
}

TEST(Kernels, RopeRotatesHalvesByPositionTimesInvFreq) {
  RopeParams p;
  p.head_dim = 4;
  p.theta = 100.0;
  float c[2], s[2];
  RopeAngles(p, 3, c, s);  // inv_freq = {1, 0.1}
  EXPECT_NEAR(c[0], std::cos(3.0), 1e-7);
  EXPECT_NEAR(s[1], std::sin(0.3), 1e-7);
  float x[4] = {1, 2, 3, 4};
  ApplyRope(x, 4, c, s);
  EXPECT_NEAR(x[0], 1 * std::cos(3.0) - 3 * std::sin(3.0), 1e-6);
  EXPECT_NEAR(x[2], 3 * std::cos(3.0) + 1 * std::sin(3.0), 1e-6);
  EXPECT_NEAR(x[1], 2 * std::cos(0.3) - 4 * std::sin(0.3), 1e-6);
  RopeAngles(p, 0, c, s);
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_EQ(s[1], 0.0f);
}

TEST(Kernels, Llama3RopeScalingKeepsHighFrequenciesAndDividesLowOnes) {
  RopeParams p;
  p.head_dim = 128;
  p.theta = 500000.0;
  p.scaling_factor = 8;
  p.original_max_positions = 8192;
  float c[64], s[64], c0[64], s0[64];
  RopeAngles(p, 1000, c, s);
  p.scaling_factor = 0;
  RopeAngles(p, 1000, c0, s0);
  EXPECT_EQ(c[0], c0[0]);                                   // wavelength 2π < 8192/4: unchanged
  const double low = std::pow(500000.0, -126.0 / 128) / 8;  // wavelength > 8192: divided
  EXPECT_NEAR(c[63], std::cos(1000 * low), 1e-6);
}

TEST(Kernels, SiluMul) {
  float g[2] = {0, 2}, u[2] = {5, 3}, out[2];
  SiluMul(g, u, 2, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 2 / (1 + std::exp(-2.0)) * 3, 1e-6);
}

// Each element through the vector exponential: within 2e-7 relative of double-precision
// silu·up, and the same bits whatever the length of the call and the element's index
// (a tail is padded, never computed by other code).
TEST(Kernels, SiluMulIsAccurateAndTheSameForEveryLengthAndIndex) {
  auto g = Randn(37, 3), u = Randn(37, 4);
  for (size_t i = 0; i < g.size(); ++i) g[i] *= 12;  // e^-g from ~e^-40 to ~e^40
  g.push_back(-100.0f);                              // e^100 overflows: silu → -0
  g.push_back(95.0f);
  u.push_back(2.0f);
  u.push_back(2.0f);
  const int64_t n = static_cast<int64_t>(g.size());
  std::vector<float> all(g.size());
  SiluMul(g.data(), u.data(), n, all.data());
  for (int64_t i = 0; i < n; ++i) {
    const double want = g[i] / (1 + std::exp(-static_cast<double>(g[i]))) * u[i];
    EXPECT_NEAR(all[i], want, 2e-7 * std::abs(want) + 1e-30) << i;
    float one;
    SiluMul(&g[i], &u[i], 1, &one);
    EXPECT_EQ(std::memcmp(&one, &all[i], sizeof(float)), 0) << i;
  }
  std::vector<float> part(11);
  SiluMul(g.data() + 3, u.data() + 3, 11, part.data());
  EXPECT_EQ(std::memcmp(part.data(), all.data() + 3, 11 * sizeof(float)), 0);
}

// The vector path (head_dim a multiple of 8) against a double-precision softmax attention,
// at positions that end a group of eight and positions that do not, over several blocks.
TEST(Kernels, AttendMatchesADoubleReferenceAtEveryPosition) {
  const int64_t hd = 32, heads = 4, kv_heads = 2, kvd = kv_heads * hd, bt = 16, n = 70;
  const int64_t nblocks = (n + bt - 1) / bt;
  std::vector<std::vector<float>> blocks;
  std::vector<float*> ptrs;
  for (int64_t b = 0; b < nblocks; ++b) {
    blocks.push_back(Randn(static_cast<size_t>(2 * bt * kvd), 10 + static_cast<uint32_t>(b)));
    ptrs.push_back(blocks.back().data());
  }
  const KvLayerView kv{ptrs.data(), bt, kvd, 0};
  const auto q = Randn(static_cast<size_t>(heads * hd), 99);
  for (int64_t pos : {0, 1, 7, 8, 9, 15, 16, 31, 47, 63, 69}) {
    std::vector<float> scores(static_cast<size_t>(2 * AttendScoresFloats(pos)));
    std::vector<float> out(static_cast<size_t>(heads * hd));
    Attend(q.data(), kv, pos, heads, kv_heads, hd, scores.data(), out.data());
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t k = h / (heads / kv_heads);
      std::vector<double> p(static_cast<size_t>(pos + 1));
      double max = -1e300, sum = 0;
      for (int64_t j = 0; j <= pos; ++j) {
        double d = 0;
        for (int64_t i = 0; i < hd; ++i) d += double(q[h * hd + i]) * kv.K(j)[k * hd + i];
        p[j] = d / std::sqrt(double(hd));
        max = std::max(max, p[j]);
      }
      for (auto& x : p) sum += (x = std::exp(x - max));
      for (int64_t i = 0; i < hd; ++i) {
        double want = 0;
        for (int64_t j = 0; j <= pos; ++j) want += p[j] / sum * kv.V(j)[k * hd + i];
        EXPECT_NEAR(out[h * hd + i], want, 1e-5) << "pos " << pos << " head " << h << " d " << i;
      }
    }
  }
}

TEST(Kernels, AttendAtPositionZeroReturnsV) {
  // One block of 2 tokens, 1 layer, 1 KV head of dim 2, 2 query heads sharing it.
  std::vector<float> block(2 * 2 * 2, 0.0f);
  float* blocks[1] = {block.data()};
  KvLayerView kv{blocks, 2, 2, 0};
  kv.K(0)[0] = 1;
  kv.V(0)[0] = 7;
  kv.V(0)[1] = -3;
  kv.K(1)[0] = 100;  // position 1 is in the future for position 0
  kv.V(1)[0] = 1000;
  float q[4] = {1, 0, 0, 1}, scores[2], out[4];
  Attend(q, kv, 0, 2, 1, 2, scores, out);
  EXPECT_EQ(out[0], 7.0f);
  EXPECT_EQ(out[1], -3.0f);
  EXPECT_EQ(out[2], 7.0f);
  // At position 1 the first head attends almost only to token 1 (score 100/sqrt(2)).
  Attend(q, kv, 1, 2, 1, 2, scores, out);
  EXPECT_NEAR(out[0], 1000.0f, 1e-3);
  EXPECT_NEAR(out[2], (7 + 1000) / 2.0f, 1e-3);  // second head: equal scores
}

}  // namespace
}  // namespace switchyard::cpu_engine
