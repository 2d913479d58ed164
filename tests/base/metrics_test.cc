// The Prometheus writer (base/metrics.h): TYPE lines, naming rules, label escaping,
// cumulative histogram buckets with _sum/_count, counter and histogram callbacks.
#include "base/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace switchyard {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(MetricsTest, CountersAndGaugesAreTypedAndRendered) {
  Metrics m;
  ASSERT_TRUE(m.Counter("x_requests_total", "requests").ok());
  ASSERT_TRUE(m.Gauge("x_inflight", "in flight", [] { return Metrics::Samples{{"", 3}}; }).ok());
  m.Inc("x_requests_total", "code=\"200\"");
  m.Inc("x_requests_total", "code=\"200\"", 2);
  std::string out = m.Render();
  EXPECT_TRUE(Has(out, "# HELP x_requests_total requests")) << out;
  EXPECT_TRUE(Has(out, "# TYPE x_requests_total counter")) << out;
  EXPECT_TRUE(Has(out, "x_requests_total{code=\"200\"} 3")) << out;
  EXPECT_TRUE(Has(out, "# TYPE x_inflight gauge")) << out;
  EXPECT_TRUE(Has(out, "x_inflight 3")) << out;
}

TEST(MetricsTest, CounterCallbackIsReadAtEveryRender) {
  Metrics m;
  double n = 1;
  ASSERT_TRUE(m.CounterCallback("x_events_total", "events", [&n] {
                 return Metrics::Samples{{Metrics::Label("via", "a"), n}};
               }).ok());
  EXPECT_TRUE(Has(m.Render(), "# TYPE x_events_total counter"));
  EXPECT_TRUE(Has(m.Render(), "x_events_total{via=\"a\"} 1"));
  n = 42;
  EXPECT_TRUE(Has(m.Render(), "x_events_total{via=\"a\"} 42"));
}

TEST(MetricsTest, HistogramBucketsAreCumulativeWithSumAndCount) {
  Metrics m;
  ASSERT_TRUE(m.Histogram("x_latency_seconds", "latency", {0.1, 1, 10}).ok());
  for (double v : {0.05, 0.1, 0.5, 5.0, 50.0}) m.Observe("x_latency_seconds", "r=\"a\"", v);
  std::string out = m.Render();
  EXPECT_TRUE(Has(out, "# TYPE x_latency_seconds histogram")) << out;
  EXPECT_TRUE(Has(out, "x_latency_seconds_bucket{r=\"a\",le=\"0.1\"} 2")) << out;  // le is <=
  EXPECT_TRUE(Has(out, "x_latency_seconds_bucket{r=\"a\",le=\"1\"} 3")) << out;
  EXPECT_TRUE(Has(out, "x_latency_seconds_bucket{r=\"a\",le=\"10\"} 4")) << out;
  EXPECT_TRUE(Has(out, "x_latency_seconds_bucket{r=\"a\",le=\"+Inf\"} 5")) << out;
  EXPECT_TRUE(Has(out, "x_latency_seconds_sum{r=\"a\"} 55.65")) << out;
  EXPECT_TRUE(Has(out, "x_latency_seconds_count{r=\"a\"} 5")) << out;
}

TEST(MetricsTest, HistogramCallbackRendersBucketsSumAndCount) {
  Metrics m;
  HistogramSeries s({0.001, 0.01});
  s.Observe("", 0.0005);
  s.Observe("", 0.005);
  s.Observe("", 0.5);
  ASSERT_TRUE(m.HistogramCallback("x_commit_seconds", "commits", s.bounds(), [&s] {
                 return s.Snapshot();
               }).ok());
  std::string out = m.Render();
  EXPECT_TRUE(Has(out, "# TYPE x_commit_seconds histogram")) << out;
  EXPECT_TRUE(Has(out, "x_commit_seconds_bucket{le=\"0.001\"} 1")) << out;
  EXPECT_TRUE(Has(out, "x_commit_seconds_bucket{le=\"0.01\"} 2")) << out;
  EXPECT_TRUE(Has(out, "x_commit_seconds_bucket{le=\"+Inf\"} 3")) << out;
  EXPECT_TRUE(Has(out, "x_commit_seconds_sum 0.5055")) << out;
  EXPECT_TRUE(Has(out, "x_commit_seconds_count 3")) << out;
}

TEST(MetricsTest, MalformedCallbackHistogramIsNotWrittenHalf) {
  Metrics m;
  ASSERT_TRUE(m.HistogramCallback("x_bad_seconds", "bad", {1, 2}, [] {
                 HistogramValue h;
                 h.counts = {1};  // needs 3 (two bounds and +Inf)
                 h.count = 1;
                 return std::vector<std::pair<std::string, HistogramValue>>{{"", h}};
               }).ok());
  EXPECT_EQ(m.Render().find("x_bad_seconds_bucket"), std::string::npos);
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  EXPECT_EQ(Metrics::Label("tenant", "a\\b\"c\nd"), "tenant=\"a\\\\b\\\"c\\nd\"");
  EXPECT_EQ(Metrics::Labels({{"a", "1"}, {"b", "x\"y"}}), "a=\"1\",b=\"x\\\"y\"");
  Metrics m;
  ASSERT_TRUE(m.Counter("x_total", "help with \\ and\nnewline").ok());
  m.Inc("x_total", Metrics::Label("t", "q\""));
  std::string out = m.Render();
  EXPECT_TRUE(Has(out, "# HELP x_total help with \\\\ and\\nnewline")) << out;
  EXPECT_TRUE(Has(out, "x_total{t=\"q\\\"\"} 1")) << out;
}

TEST(MetricsTest, NumbersInPrometheusForm) {
  EXPECT_EQ(Metrics::Number(0.0005), "0.0005");
  EXPECT_EQ(Metrics::Number(1e12), "1e+12");
  EXPECT_EQ(Metrics::Number(1.0 / 0.0), "+Inf");
  EXPECT_EQ(Metrics::Number(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(Metrics::Number(std::nan("")), "NaN");
}

TEST(MetricsTest, RegistrationEnforcesConventions) {
  Metrics m;
  auto bad = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
  };
  bad(m.Counter("x_requests", "no suffix"), "'x_requests': a counter's name must end in _total");
  bad(m.Gauge("x_total", "gauge", [] { return Metrics::Samples{}; }),
      "only counters end in _total");
  bad(m.Histogram("x_total", "h", {1}), "only counters end in _total");
  bad(m.Histogram("x_seconds", "h", {1, 1}), "bucket bound 1");
  bad(m.Histogram("x_seconds", "h", {}), "at least one bound");
  bad(m.Counter("9x_total", "digit first"), "not a Prometheus name");
  bad(m.Counter("x-y_total", "dash"), "not a Prometheus name");
  ASSERT_TRUE(m.Counter("x_total", "ok").ok());
  bad(m.CounterCallback("x_total", "again", [] { return Metrics::Samples{}; }), "registered twice");
  m.Inc("unknown_total");  // ignored, no crash
  EXPECT_EQ(m.Render().find("unknown_total"), std::string::npos);
}

TEST(MetricsTest, BeforeRenderRunsBeforeTheCallbacks) {
  Metrics m;
  double snapshot = 0;
  int renders = 0;
  m.BeforeRender([&] { snapshot = ++renders * 10; });
  ASSERT_TRUE(m.Gauge("x_snap", "s", [&] { return Metrics::Samples{{"", snapshot}}; }).ok());
  EXPECT_TRUE(Has(m.Render(), "x_snap 10"));
  EXPECT_TRUE(Has(m.Render(), "x_snap 20"));
}

}  // namespace
}  // namespace switchyard
