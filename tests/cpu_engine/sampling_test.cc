#include "cpu_engine/sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

namespace switchyard::cpu_engine {
namespace {

TEST(Argmax, LowestIndexAmongEqualMaxima) {
  std::vector<float> l = {1, 3, 2, 3};
  EXPECT_EQ(Argmax(l), 1);
  l = {NAN, -1, -2};
  EXPECT_EQ(Argmax(l), 1);
  EXPECT_EQ(Argmax({}), -1);
}

TEST(Sample, DeterministicGivenSeedAndFollowsTheDistribution) {
  std::vector<float> l = {0.0f, std::log(3.0f), -100.0f};  // p ~ 1/4, 3/4, 0
  std::map<int32_t, int> counts;
  for (uint64_t step = 0; step < 4000; ++step) {
    const int32_t t = Sample(l, 1.0, 1.0, MixSeed(42, step));
    EXPECT_EQ(t, Sample(l, 1.0, 1.0, MixSeed(42, step)));
    ++counts[t];
  }
  EXPECT_EQ(counts[2], 0);
  EXPECT_NEAR(counts[1] / 4000.0, 0.75, 0.03);
  EXPECT_NE(MixSeed(42, 1), MixSeed(42, 2));
  EXPECT_NE(MixSeed(42, 1), MixSeed(43, 1));
}

TEST(Sample, TopPKeepsTheMostProbableAndZeroTemperatureIsGreedy) {
  std::vector<float> l = {0.0f, std::log(3.0f), std::log(6.0f)};  // 0.1, 0.3, 0.6
  for (uint64_t step = 0; step < 500; ++step) {
    EXPECT_EQ(Sample(l, 1.0, 0.5, MixSeed(1, step)), 2);  // 0.6 alone reaches 0.5
    EXPECT_NE(Sample(l, 1.0, 0.8, MixSeed(1, step)), 0);  // {2, 1} reach 0.8
  }
  EXPECT_EQ(Sample(l, 0.0, 1.0, 7), 2);
  // A very low temperature concentrates on the maximum.
  for (uint64_t step = 0; step < 100; ++step) EXPECT_EQ(Sample(l, 1e-3, 1.0, step), 2);
}

}  // namespace
}  // namespace switchyard::cpu_engine
