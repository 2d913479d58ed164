#include "scheduler/duration_sketch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace switchyard::scheduler {
namespace {

// Every quantile is within the sketch's relative accuracy of the exact order statistic.
TEST(DurationSketch, QuantilesWithinRelativeAccuracyOfExact) {
  for (double alpha : {0.01, 0.02, 0.05}) {
    for (int dist = 0; dist < 3; ++dist) {
      std::mt19937_64 rng(42 + dist);
      std::lognormal_distribution<double> logn(0.0, 1.5);
      std::exponential_distribution<double> expo(0.2);
      std::uniform_real_distribution<double> uni(0.01, 100.0);
      DurationSketch s(alpha);
      std::vector<double> v;
      for (int i = 0; i < 50000; ++i) {
        double x = dist == 0 ? logn(rng) : dist == 1 ? expo(rng) : uni(rng);
        x = std::max(x, 1e-3);
        v.push_back(x);
        s.Add(x);
      }
      std::sort(v.begin(), v.end());
      for (double q : {0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0}) {
        double exact = v[static_cast<size_t>(std::floor(q * (v.size() - 1)))];
        double got = *s.Quantile(q);
        EXPECT_LE(std::abs(got - exact), alpha * exact * (1 + 1e-9))
            << "alpha=" << alpha << " dist=" << dist << " q=" << q;
      }
    }
  }
}

TEST(DurationSketch, EmptyWeightedAndTinyValues) {
  DurationSketch s;
  EXPECT_FALSE(s.Quantile(0.5).has_value());
  s.Add(0.0);        // below min_value: counted as zero
  s.Add(10.0, 3.0);  // weighted
  EXPECT_DOUBLE_EQ(s.count(), 4.0);
  EXPECT_EQ(*s.Quantile(0.0), 0.0);
  EXPECT_NEAR(*s.Quantile(0.5), 10.0, 0.1);
  EXPECT_NEAR(*s.Quantile(1.0), 10.0, 0.1);
  s.Add(1.0, -1);  // ignored
  EXPECT_DOUBLE_EQ(s.count(), 4.0);
}

TEST(DurationModel, HintSeedsThenSamplesTakeOver) {
  DurationModel m;
  // No data: the hint alone.
  EXPECT_NEAR(ToSeconds(m.Predict("a", "build", 0.5, Seconds(30))), 30.0, 0.3);
  // No hint, no data: the default.
  EXPECT_EQ(m.Predict("a", "build", 0.5, Duration(0)), Seconds(1.0));
  // Two real 2 s samples next to a 30 s hint weighted 3: the median is still the hint.
  m.Observe("a", "build", Seconds(2));
  m.Observe("a", "build", Seconds(2));
  EXPECT_NEAR(ToSeconds(m.Predict("a", "build", 0.5, Seconds(30))), 30.0, 0.3);
  // After min_samples the key's own sketch wins.
  for (int i = 0; i < 5; ++i) m.Observe("a", "build", Seconds(2));
  EXPECT_NEAR(ToSeconds(m.Predict("a", "build", 0.5, Seconds(30))), 2.0, 0.02);
  // Another tenant falls back to the tool's sketch across tenants.
  EXPECT_NEAR(ToSeconds(m.Predict("b", "build", 0.5, Duration(0))), 2.0, 0.02);
  EXPECT_EQ(m.keys(), 1u);
}

// Export and Restore carry everything learned: the restored model predicts exactly what the
// original does, for every key and for the across-tenant fallback, and through a byte round
// trip (what the service stores).
TEST(DurationModel, ExportRestoreRoundTripsEveryPrediction) {
  DurationModel m;
  for (int i = 0; i < 40; ++i) {
    m.Observe("a", "build", Seconds(1.0 + 0.25 * i));
    m.Observe("b", "grep", Seconds(0.02 * (i % 7)));
  }
  m.Observe("b", "build", Seconds(90));
  v1::LearnedDurations saved;
  ASSERT_TRUE(saved.ParseFromString(m.Export().SerializeAsString()));
  DurationModel r;
  ASSERT_TRUE(r.Restore(saved).ok());
  EXPECT_EQ(r.keys(), m.keys());
  EXPECT_DOUBLE_EQ(r.samples(), m.samples());
  for (const char* tenant : {"a", "b", "c"})
    for (const char* tool : {"build", "grep", "none"})
      for (double q : {0.1, 0.5, 0.9, 0.99})
        EXPECT_EQ(r.Predict(tenant, tool, q, Seconds(5)), m.Predict(tenant, tool, q, Seconds(5)))
            << tenant << " " << tool << " q" << q;
  EXPECT_DOUBLE_EQ(r.ToolSamples("build"), 41.0);
}

TEST(DurationModel, RestoreRefusesAStateNoSketchCouldHaveAndKeepsWhatItHad) {
  DurationModel m;
  for (int i = 0; i < 6; ++i) m.Observe("a", "build", Seconds(3));
  v1::LearnedDurations bad = m.Export();
  bad.mutable_entries(0)->mutable_sketch()->set_count(1e9);  // not the sum of its buckets
  Status st = m.Restore(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("entry 0 (tenant 'a', tool 'build')"), std::string::npos) << st;
  bad = m.Export();
  bad.mutable_entries(1)->mutable_sketch()->set_relative_accuracy(2);
  EXPECT_NE(m.Restore(bad).message().find("relative_accuracy"), std::string::npos);
  EXPECT_NEAR(ToSeconds(m.Predict("a", "build", 0.5, Duration(0))), 3.0, 0.05) << "unchanged";
}

}  // namespace
}  // namespace switchyard::scheduler
