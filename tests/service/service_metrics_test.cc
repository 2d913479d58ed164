// ServiceMetrics (service/service_metrics.h): TTFT to the engine's first token or to the end,
// tool waits, JCT by final state, spans of disagreeing clocks dropped, tenants bounded.
#include "service/service_metrics.h"

#include <gtest/gtest.h>

#include "driver/scheduler_driver_metrics.h"
#include "executors/engine.h"

namespace switchyard::service {
namespace {

v1::WorkflowLogRecord EventRecord(const std::string& node, v1::NodeEventType type, int64_t ms,
                                  int64_t reporter_ms = 0) {
  v1::WorkflowLogRecord r;
  r.set_time_ms(ms);
  r.mutable_event()->set_node_id(node);
  r.mutable_event()->set_type(type);
  r.mutable_event()->set_time_ms(reporter_ms);
  return r;
}

const HistogramValue* Series(const HistogramSeries& h, const std::string& labels,
                             std::vector<std::pair<std::string, HistogramValue>>* keep) {
  *keep = h.Snapshot();
  for (const auto& [l, v] : *keep)
    if (l == labels) return &v;
  return nullptr;
}

constexpr auto kRunning = v1::WORKFLOW_RUNNING;

TEST(ServiceMetricsTest, TtftIsStartToFinishWithoutTokens) {
  ServiceMetrics m;
  m.OnDurable("t", "wf", EventRecord("llm", v1::LLM_STARTED, 1000), false, kRunning, 0, nullptr);
  m.OnDurable("t", "wf", EventRecord("llm", v1::LLM_FINISHED, 1500), false, kRunning, 0, nullptr);
  std::vector<std::pair<std::string, HistogramValue>> keep;
  const HistogramValue* h = Series(m.ttft_seconds(), "tenant=\"t\"", &keep);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->count, 1u);
  EXPECT_NEAR(h->sum, 0.5, 1e-9);
}

TEST(ServiceMetricsTest, TtftUsesTheEnginesFirstToken) {
  ServiceMetrics m;
  driver::DriverMetrics d;
  executors::StepReport r;
  r.worker = 0;
  r.start = Time::FromMillis(1100);
  r.end = Time::FromMillis(1200);
  executors::SeqProgress p;
  p.key = "wf/llm";
  p.output_done = 1;
  r.seqs = {p};
  d.OnStep(r);
  m.OnDurable("t", "wf", EventRecord("llm", v1::LLM_STARTED, 1000), false, kRunning, 0, &d);
  m.OnDurable("t", "wf", EventRecord("llm", v1::LLM_FINISHED, 3000), false, kRunning, 0, &d);
  std::vector<std::pair<std::string, HistogramValue>> keep;
  const HistogramValue* h = Series(m.ttft_seconds(), "tenant=\"t\"", &keep);
  ASSERT_NE(h, nullptr);
  EXPECT_NEAR(h->sum, 0.2, 1e-9);
}

TEST(ServiceMetricsTest, FailedLlmAttemptHasNoTtft) {
  ServiceMetrics m;
  m.OnDurable("t", "wf", EventRecord("llm", v1::LLM_STARTED, 1000), false, kRunning, 0, nullptr);
  m.OnDurable("t", "wf", EventRecord("llm", v1::LLM_FAILED, 1500), false, kRunning, 0, nullptr);
  EXPECT_TRUE(m.ttft_seconds().Snapshot().empty());
}

TEST(ServiceMetricsTest, ToolWaitUsesTheReportersTimes) {
  ServiceMetrics m;
  m.OnDurable("t", "wf", EventRecord("bash", v1::TOOL_STARTED, 9000, 1000), false, kRunning, 0,
              nullptr);
  m.OnDurable("t", "wf", EventRecord("bash", v1::TOOL_FINISHED, 9001, 4000), false, kRunning, 0,
              nullptr);
  std::vector<std::pair<std::string, HistogramValue>> keep;
  const HistogramValue* h = Series(m.tool_wait_seconds(), "tenant=\"t\"", &keep);
  ASSERT_NE(h, nullptr);
  EXPECT_NEAR(h->sum, 3.0, 1e-9);
}

TEST(ServiceMetricsTest, NegativeSpansAreDropped) {
  ServiceMetrics m;
  m.OnDurable("t", "wf", EventRecord("bash", v1::TOOL_STARTED, 0, 5000), false, kRunning, 0,
              nullptr);
  m.OnDurable("t", "wf", EventRecord("bash", v1::TOOL_FAILED, 0, 4000), false, kRunning, 0,
              nullptr);
  EXPECT_TRUE(m.tool_wait_seconds().Snapshot().empty());
}

TEST(ServiceMetricsTest, JctByFinalState) {
  ServiceMetrics m;
  v1::WorkflowLogRecord closed;
  closed.set_time_ms(61000);
  closed.set_closed(true);
  m.OnDurable("t", "wf", closed, /*ended=*/true, v1::WORKFLOW_COMPLETED, 1000, nullptr);
  v1::WorkflowLogRecord cancelled;
  cancelled.set_time_ms(2000);
  cancelled.set_cancelled("client");
  m.OnDurable("t", "wf2", cancelled, true, v1::WORKFLOW_CANCELLED, 1500, nullptr);
  std::vector<std::pair<std::string, HistogramValue>> keep;
  const HistogramValue* c = Series(m.workflow_seconds(), "tenant=\"t\",state=\"completed\"", &keep);
  ASSERT_NE(c, nullptr);
  EXPECT_NEAR(c->sum, 60.0, 1e-9);
  const HistogramValue* x = Series(m.workflow_seconds(), "tenant=\"t\",state=\"cancelled\"", &keep);
  ASSERT_NE(x, nullptr);
  EXPECT_NEAR(x->sum, 0.5, 1e-9);
}

TEST(ServiceMetricsTest, TenantsAreBoundedAndEscaped) {
  ServiceMetrics m;
  v1::WorkflowLogRecord end;
  end.set_time_ms(2000);
  end.set_closed(true);
  for (size_t i = 0; i < ServiceMetrics::kMaxTenants + 5; ++i)
    m.OnDurable("tenant-" + std::to_string(i), "wf", end, true, v1::WORKFLOW_COMPLETED, 1000,
                nullptr);
  auto series = m.workflow_seconds().Snapshot();
  EXPECT_EQ(series.size(), ServiceMetrics::kMaxTenants + 1);  // the first 64, then "other"
  std::vector<std::pair<std::string, HistogramValue>> keep;
  const HistogramValue* other =
      Series(m.workflow_seconds(), "tenant=\"other\",state=\"completed\"", &keep);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->count, 5u);
  ServiceMetrics fresh;
  fresh.OnDurable("a\"b", "wf", end, true, v1::WORKFLOW_COMPLETED, 1000, nullptr);
  ASSERT_EQ(fresh.workflow_seconds().Snapshot().size(), 1u);
  EXPECT_EQ(fresh.workflow_seconds().Snapshot()[0].first, "tenant=\"a\\\"b\",state=\"completed\"");
}

}  // namespace
}  // namespace switchyard::service
