// Work estimates, critical path, slack, steps-to-execution and KV context sharing.
#include <gtest/gtest.h>

#include "program_graph/workflow.h"
#include "tests/program_graph/test_util.h"

namespace switchyard::program_graph {
namespace {

using testing::Llm;
using testing::MustCreate;
using testing::Tool;
using testing::WithRef;

using Nodes = std::vector<NodeIndex>;

v1::ProgramNode ToolMs(const std::string& id, int64_t ms,
                       const std::vector<std::string>& deps = {}) {
  auto n = Tool(id, deps);
  n.mutable_hints()->set_expected_duration_ms(ms);
  return n;
}

TEST(AnalysisTest, DefaultEstimator) {
  auto t = ToolMs("t", 1500);
  EXPECT_EQ(DefaultWorkEstimate(t), Millis(1500));
  auto l = Llm("l");
  l.mutable_hints()->set_prompt_tokens(1000);
  l.mutable_hints()->set_max_output_tokens(10);
  EXPECT_EQ(DefaultWorkEstimate(l), Micros(50) * 1000 + Millis(20) * 10);
  l.mutable_hints()->set_extend_tokens(100);  // extend replaces prompt for prefill
  EXPECT_EQ(DefaultWorkEstimate(l), Micros(50) * 100 + Millis(20) * 10);
}

// a(1) -> b(10) -> d(1); a -> c(5) -> d; e(3) alone.
std::unique_ptr<Workflow> Weighted(int64_t deadline_ms = 0) {
  return MustCreate({ToolMs("a", 1), ToolMs("b", 10, {"a"}), ToolMs("c", 5, {"a"}),
                     ToolMs("d", 1, {"b", "c"}), ToolMs("e", 3)},
                    deadline_ms);
}

TEST(AnalysisTest, CriticalPath) {
  auto wf = Weighted();
  EXPECT_EQ(wf->RemainingCriticalWork(0), Millis(12));
  EXPECT_EQ(wf->RemainingCriticalWork(2), Millis(6));
  EXPECT_EQ(wf->RemainingCriticalWork(3), Millis(1));
  EXPECT_EQ(wf->RemainingCriticalWork(4), Millis(3));
  EXPECT_EQ(wf->CriticalPathLength(), Millis(12));
  EXPECT_EQ(wf->CriticalPath(), (Nodes{0, 1, 3}));
}

TEST(AnalysisTest, EstimatorIsInjectableAndInvalidates) {
  auto wf = Weighted();
  EXPECT_EQ(wf->CriticalPathLength(), Millis(12));
  wf->SetWorkEstimator(
      [](const v1::ProgramNode& n) { return n.id() == "c" ? Seconds(1) : Millis(1); });
  EXPECT_EQ(wf->CriticalPath(), (Nodes{0, 2, 3}));
  EXPECT_EQ(wf->CriticalPathLength(), Seconds(1) + Millis(2));
  EXPECT_EQ(wf->Work(2), Seconds(1));
  wf->SetWorkEstimator(nullptr);  // back to the default
  EXPECT_EQ(wf->CriticalPathLength(), Millis(12));
}

TEST(AnalysisTest, AppendInvalidatesCriticalPath) {
  auto wf = Weighted();
  EXPECT_EQ(wf->CriticalPathLength(), Millis(12));
  ASSERT_TRUE(wf->Append({ToolMs("f", 100, {"e"})}, Time{}).ok());
  EXPECT_EQ(wf->CriticalPathLength(), Millis(103));
  EXPECT_EQ(wf->CriticalPath(), (Nodes{4, 5}));
}

TEST(AnalysisTest, Slack) {
  auto wf = Weighted(1000);
  EXPECT_EQ(wf->Slack(0, Time::FromMillis(100)), Millis(1000 - 100 - 12));
  EXPECT_EQ(wf->Slack(3, Time::FromMillis(990)), Millis(10 - 1));
  EXPECT_EQ(wf->Slack(1, Time::FromMillis(995)), Millis(5 - 11));  // negative: late
  auto n = ToolMs("x", 4);
  n.set_deadline_ms(50);
  ASSERT_TRUE(wf->Append({n}, Time{}).ok());
  EXPECT_EQ(wf->Slack(5, Time::FromMillis(10)), Millis(50 - 10 - 4));
  EXPECT_EQ(Weighted()->Slack(0, Time{}), std::nullopt);
}

TEST(AnalysisTest, StepsToExecution) {
  // a -> b -> c -> d, and a -> x -> d (AND-join takes the longest).
  auto wf = MustCreate({Llm("a"), Llm("b", {"a"}), Llm("c", {"b"}), Llm("x", {"a"}),
                        Llm("d", {"c", "x"}), Llm("solo")});
  EXPECT_EQ(wf->StepsToExecution(0), 0u);
  EXPECT_EQ(wf->StepsToExecution(1), 1u);
  EXPECT_EQ(wf->StepsToExecution(2), 2u);
  EXPECT_EQ(wf->StepsToExecution(3), 1u);
  EXPECT_EQ(wf->StepsToExecution(4), 3u);
  EXPECT_EQ(wf->StepsToExecution(5), 0u);
  ASSERT_TRUE(wf->MarkRunning(0).ok());
  EXPECT_EQ(wf->StepsToExecution(0), 0u);
  ASSERT_TRUE(wf->MarkSucceeded(0).ok());
  EXPECT_EQ(wf->StepsToExecution(0), kNeverRuns);  // terminal
  EXPECT_EQ(wf->StepsToExecution(1), 0u);
  EXPECT_EQ(wf->StepsToExecution(2), 1u);
  EXPECT_EQ(wf->StepsToExecution(4), 2u);
  wf->Cancel("stop");
  EXPECT_EQ(wf->StepsToExecution(4), kNeverRuns);
}

TEST(AnalysisTest, ContextSharing) {
  auto a = WithRef(Llm("a"), "main", v1::CacheRef::CREATE);
  auto b = WithRef(WithRef(Llm("b", {"a"}), "main", v1::CacheRef::READ), "scratch",
                   v1::CacheRef::CREATE);
  auto c = WithRef(Llm("c", {"b"}), "scratch", v1::CacheRef::EXTEND);
  // d is listed before its creator-ancestor; the creator still comes first.
  auto wf = MustCreate({c, b, a, WithRef(Llm("d", {"c"}), "main", v1::CacheRef::EXTEND)});
  ASSERT_NE(wf, nullptr);
  EXPECT_EQ(wf->NodesUsingContext("main"), (Nodes{2, 1, 3}));
  EXPECT_EQ(wf->NodesUsingContext("scratch"), (Nodes{1, 0}));
  EXPECT_TRUE(wf->NodesUsingContext("none").empty());
  EXPECT_EQ(wf->ContextsOf(1), (std::vector<std::string>{"main", "scratch"}));
  EXPECT_EQ(wf->Contexts(), (std::vector<std::string>{"main", "scratch"}));
}

TEST(AnalysisTest, SaturatesHugeEstimates) {
  auto wf = MustCreate({Llm("a"), Llm("b", {"a"})});
  wf->SetWorkEstimator([](const v1::ProgramNode&) { return Duration::max(); });
  EXPECT_EQ(wf->CriticalPathLength(), Duration::max());
  EXPECT_EQ(wf->Slack(0, Time{}), std::nullopt);
  // Raised limits let hints through whose default estimate would overflow.
  auto big = Llm("big");
  big.mutable_hints()->set_max_output_tokens(INT64_MAX / 2);
  EXPECT_EQ(DefaultWorkEstimate(big), Duration::max());
  auto late = Llm("late");
  late.set_deadline_ms(kMaxDeadlineMs);
  auto wf2 = MustCreate({late});
  wf2->SetWorkEstimator([](const v1::ProgramNode&) { return Duration::max(); });
  EXPECT_EQ(wf2->Slack(0, Time{}), Duration(kMaxDeadlineMs * 1'000'000 - INT64_MAX));
  // deadline - now saturates at Duration::max(), minus Duration::max() of work.
  EXPECT_EQ(wf2->Slack(0, Time{INT64_MIN}), Duration::zero());
}

}  // namespace
}  // namespace switchyard::program_graph
