#include "net_budget/link_model.h"

#include <gtest/gtest.h>

#include <random>

namespace switchyard::net_budget {
namespace {

TEST(PercentileTest, InterpolatesBetweenOrderStatistics) {
  EXPECT_DOUBLE_EQ(*Percentile({3, 1, 2, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(*Percentile({1, 2, 3, 4, 5}, 0.0), 1);
  EXPECT_DOUBLE_EQ(*Percentile({1, 2, 3, 4, 5}, 1.0), 5);
  EXPECT_DOUBLE_EQ(*Percentile({1, 2, 3, 4, 5}, 0.95), 4.8);
  EXPECT_DOUBLE_EQ(*Percentile({7}, 0.99), 7);
  EXPECT_TRUE(Percentile({}, 0.5).status().IsInvalidArgument());
  EXPECT_TRUE(Percentile({1}, 1.5).status().IsInvalidArgument());
}

TEST(PercentilesBySizeTest, GroupsAndSorts) {
  std::vector<Sample> s;
  for (int i = 1; i <= 100; ++i) s.push_back({4096, i * 1e-6});
  for (int i = 1; i <= 10; ++i) s.push_back({1024, i * 1e-6});
  auto r = PercentilesBySize(s);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].bytes, 1024u);
  EXPECT_EQ((*r)[0].samples, 10u);
  EXPECT_EQ((*r)[1].bytes, 4096u);
  EXPECT_NEAR((*r)[1].p50_s, 50.5e-6, 1e-12);
  EXPECT_NEAR((*r)[1].p95_s, 95.05e-6, 1e-12);
  EXPECT_NEAR((*r)[1].p99_s, 99.01e-6, 1e-12);
}

TEST(PercentilesBySizeTest, RejectsBadTimes) {
  std::vector<Sample> s = {{10, 1e-6}, {10, -1}};
  auto r = PercentilesBySize(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "sample 1 (bytes 10): time must be finite and >= 0, got -1.000000");
}

TEST(FitAlphaBetaTest, RecoversSyntheticModelWithNoiseAndOutliers) {
  const double alpha = 25e-6, beta = 1.0 / 12.5e9;  // 25 us, 12.5 GB/s
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.02);  // 2% jitter
  std::vector<Sample> s;
  for (uint64_t bytes = 4096; bytes <= (1ull << 30); bytes *= 4) {
    for (int i = 0; i < 50; ++i) {
      double t = (alpha + bytes * beta) * (1 + noise(rng));
      if (i % 10 == 0) t *= 20;  // 10% stragglers: medians ignore them
      s.push_back({bytes, t});
    }
  }
  auto fit = FitAlphaBeta(s);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->model.beta_s_per_byte, beta, beta * 0.02);
  EXPECT_NEAR(fit->model.bandwidth(), 12.5e9, 12.5e9 * 0.02);
  EXPECT_EQ(fit->samples, s.size());
  EXPECT_GT(fit->r_squared, 0.999);
  EXPECT_EQ(fit->per_size.size(), 10u);  // 4 KiB .. 1 GiB, x4
  // P99 sees the stragglers, P50 does not.
  EXPECT_GT(fit->per_size.back().p99_s, 5 * fit->per_size.back().p50_s);
}

TEST(FitAlphaBetaTest, RecoversAlphaExactlyWithoutNoise) {
  std::vector<Sample> s;
  for (uint64_t b : {1000ull, 2000ull, 4000ull, 100000ull}) s.push_back({b, 1e-3 + b * 1e-9});
  auto fit = FitAlphaBeta(s);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->model.alpha_s, 1e-3, 1e-12);
  EXPECT_NEAR(fit->model.beta_s_per_byte, 1e-9, 1e-18);
  EXPECT_NEAR(ToSeconds(fit->model.Time(1000000)), 2e-3, 1e-9);
}

TEST(FitAlphaBetaTest, ClampsNegativeAlpha) {
  // Times below the line through the origin at small sizes: alpha would be negative.
  std::vector<Sample> s = {{1000, 0.5e-6}, {1000000, 1.2e-3}, {2000000, 2.4e-3}};
  auto fit = FitAlphaBeta(s);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->model.alpha_s, 0);
  EXPECT_GT(fit->model.beta_s_per_byte, 0);
}

TEST(FitAlphaBetaTest, RejectsDegenerateInput) {
  std::vector<Sample> one = {{10, 1}, {10, 2}};
  EXPECT_EQ(FitAlphaBeta(one).status().message(),
            "alpha-beta fit needs samples of at least two distinct sizes, got 1");
  std::vector<Sample> flat = {{10, 2}, {20, 1}};
  EXPECT_TRUE(FitAlphaBeta(flat).status().IsInvalidArgument());
}

TEST(LinkFitProtoTest, RoundTrips) {
  std::vector<Sample> s = {{1000, 2e-6}, {2000, 3e-6}, {3000, 4e-6}};
  auto fit = FitAlphaBeta(s);
  ASSERT_TRUE(fit.ok());
  auto back = FromProto(ToProto(*fit));
  ASSERT_TRUE(back.ok());
  EXPECT_DOUBLE_EQ(back->model.alpha_s, fit->model.alpha_s);
  EXPECT_DOUBLE_EQ(back->model.beta_s_per_byte, fit->model.beta_s_per_byte);
  EXPECT_EQ(back->per_size.size(), 3u);
  v1::LinkCalibration bad;
  EXPECT_EQ(FromProto(bad).status().message(),
            "calibration.beta_s_per_byte must be > 0, got 0.000000");
}

}  // namespace
}  // namespace switchyard::net_budget
