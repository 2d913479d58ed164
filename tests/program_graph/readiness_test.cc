// State transitions, failure propagation, retry, cancellation and workflow state.
#include <gtest/gtest.h>

#include "program_graph/workflow.h"
#include "tests/program_graph/test_util.h"

namespace switchyard::program_graph {
namespace {

using testing::Llm;
using testing::MustCreate;
using testing::Tool;

using Nodes = std::vector<NodeIndex>;

void RunOk(Workflow* wf, NodeIndex i) {
  ASSERT_TRUE(wf->MarkRunning(i).ok());
  ASSERT_TRUE(wf->MarkSucceeded(i).ok());
}

// a -> {b, c} -> d (diamond), plus an independent e.
std::unique_ptr<Workflow> Diamond() {
  return MustCreate({Llm("a"), Tool("b", {"a"}), Llm("c", {"a"}), Llm("d", {"b", "c"}), Llm("e")});
}

TEST(ReadinessTest, ReadyWhenAllDepsSucceeded) {
  auto wf = Diamond();
  EXPECT_EQ(wf->ReadyNodes(), (Nodes{0, 4}));
  EXPECT_EQ(wf->state(3), v1::NODE_PENDING);
  ASSERT_TRUE(wf->MarkRunning(0).ok());
  EXPECT_EQ(wf->state(0), v1::NODE_RUNNING);
  EXPECT_EQ(wf->ReadyNodes(), (Nodes{4}));
  auto ready = wf->MarkSucceeded(0);
  ASSERT_TRUE(ready.ok());
  EXPECT_EQ(*ready, (Nodes{1, 2}));
  RunOk(wf.get(), 1);
  EXPECT_EQ(wf->state(3), v1::NODE_PENDING);  // still waits on c
  ASSERT_TRUE(wf->MarkRunning(2).ok());
  EXPECT_EQ(*wf->MarkSucceeded(2), (Nodes{3}));
  EXPECT_EQ(wf->ReadyNodes(), (Nodes{3, 4}));
}

TEST(ReadinessTest, IllegalTransitionsAreFailedPrecondition) {
  auto wf = Diamond();
  Status s = wf->MarkSucceeded(0).status();
  EXPECT_TRUE(s.IsFailedPrecondition());
  EXPECT_EQ(s.message(), "node 'a': MarkSucceeded: state NODE_READY, want NODE_RUNNING");
  EXPECT_EQ(wf->MarkRunning(3).message(),
            "node 'd': MarkRunning: state NODE_PENDING, want NODE_READY");
  EXPECT_TRUE(wf->MarkFailed(1, "x").status().IsFailedPrecondition());
  EXPECT_TRUE(wf->ResetForRetry(0).IsFailedPrecondition());
  RunOk(wf.get(), 0);
  EXPECT_TRUE(wf->MarkRunning(0).IsFailedPrecondition());  // already succeeded
  EXPECT_EQ(wf->MarkRunning(99).code(), StatusCode::kOutOfRange);
}

TEST(ReadinessTest, TerminalFailureCancelsDescendants) {
  auto wf = Diamond();
  ASSERT_TRUE(wf->MarkRunning(0).ok());
  auto cancelled = wf->MarkFailed(0, "model crashed", FailMode::kTerminal);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(*cancelled, (Nodes{1, 2, 3}));
  EXPECT_EQ(wf->state(0), v1::NODE_FAILED);
  EXPECT_EQ(wf->state(3), v1::NODE_CANCELLED);
  EXPECT_EQ(wf->reason(3), "ancestor 'a' failed: model crashed");
  EXPECT_EQ(wf->state(4), v1::NODE_READY);  // independent branch keeps going
  EXPECT_EQ(wf->state(), v1::WORKFLOW_FAILED);
  EXPECT_EQ(wf->failure_reason(), "node 'a' failed: model crashed");
  EXPECT_FALSE(wf->done());  // e is not terminal yet
  RunOk(wf.get(), 4);
  EXPECT_TRUE(wf->done());
}

TEST(ReadinessTest, RetryableFailureAwaitsResetAndCountsAttempts) {
  auto wf = Diamond();
  ASSERT_TRUE(wf->MarkRunning(0).ok());
  auto cancelled = wf->MarkFailed(0, "transient");
  ASSERT_TRUE(cancelled.ok());
  EXPECT_TRUE(cancelled->empty());
  EXPECT_TRUE(wf->CanRetry(0));
  EXPECT_EQ(wf->state(), v1::WORKFLOW_RUNNING);
  EXPECT_EQ(wf->StepsToExecution(0), 0u);
  EXPECT_EQ(wf->attempts(0), 1u);
  ASSERT_TRUE(wf->ResetForRetry(0).ok());
  EXPECT_EQ(wf->attempts(0), 2u);
  EXPECT_EQ(wf->state(0), v1::NODE_READY);
  ASSERT_TRUE(wf->MarkRunning(0).ok());
  EXPECT_TRUE(wf->RetryAllowed(0)) << "a failure of attempt 2 of 3 would be retried";
  ASSERT_TRUE(wf->MarkFailed(0, "again").ok());
  ASSERT_TRUE(wf->ResetForRetry(0).ok());
  EXPECT_EQ(wf->attempts(0), 3u);
  ASSERT_TRUE(wf->MarkRunning(0).ok());
  // Third attempt of max_attempts = 3 (default): the failure is terminal, as the running
  // node already says.
  EXPECT_FALSE(wf->RetryAllowed(0));
  auto last = wf->MarkFailed(0, "third");
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, (Nodes{1, 2, 3}));
  EXPECT_EQ(wf->ResetForRetry(0).message(), "node 'a': ResetForRetry: all 3 attempts used");
}

TEST(ReadinessTest, GiveUpOnRetryPendingFailure) {
  auto wf = Diamond();
  ASSERT_TRUE(wf->MarkRunning(0).ok());
  ASSERT_TRUE(wf->MarkFailed(0, "transient").ok());
  auto cancelled = wf->MarkFailed(0, "ignored", FailMode::kTerminal);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(*cancelled, (Nodes{1, 2, 3}));
  EXPECT_EQ(wf->reason(1), "ancestor 'a' failed: transient");
  EXPECT_EQ(wf->ResetForRetry(0).message(), "node 'a': ResetForRetry: the failure is terminal");
}

TEST(ReadinessTest, SideEffectToolWithoutKeyIsNotRetryable) {
  auto pay = Tool("pay");
  pay.set_side_effect(true);
  auto wf = MustCreate({pay, Llm("after", {"pay"})});
  ASSERT_FALSE(wf->retryable(0));
  ASSERT_TRUE(wf->MarkRunning(0).ok());
  auto cancelled = wf->MarkFailed(0, "timeout");
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(*cancelled, (Nodes{1}));
  Status s = wf->ResetForRetry(0);
  EXPECT_TRUE(s.IsFailedPrecondition());
  EXPECT_EQ(s.message(),
            "node 'pay': ResetForRetry: not retryable: node 'pay' is a side-effecting tool "
            "without an idempotency_key");
}

TEST(ReadinessTest, CancelWorkflowCancelsAllNonTerminal) {
  auto wf = Diamond();
  RunOk(wf.get(), 0);
  ASSERT_TRUE(wf->MarkRunning(1).ok());
  wf->Cancel("client went away");
  EXPECT_EQ(wf->state(0), v1::NODE_SUCCEEDED);
  for (NodeIndex i : {1u, 2u, 3u, 4u}) {
    EXPECT_EQ(wf->state(i), v1::NODE_CANCELLED) << i;
    EXPECT_EQ(wf->reason(i), "client went away");
  }
  EXPECT_TRUE(wf->ReadyNodes().empty());
  EXPECT_EQ(wf->state(), v1::WORKFLOW_CANCELLED);
  EXPECT_TRUE(wf->done());
  EXPECT_TRUE(wf->MarkSucceeded(1).status().IsFailedPrecondition());
}

TEST(ReadinessTest, CancelNodeCancelsSubtree) {
  auto wf = Diamond();
  RunOk(wf.get(), 0);
  auto out = wf->CancelNode(2, "not needed");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, (Nodes{2, 3}));
  EXPECT_EQ(wf->reason(3), "ancestor 'c' cancelled: not needed");
  EXPECT_EQ(wf->state(1), v1::NODE_READY);
  EXPECT_EQ(wf->state(), v1::WORKFLOW_CANCELLED);
  EXPECT_TRUE(wf->CancelNode(2, "again").status().IsFailedPrecondition());
}

TEST(ReadinessTest, CompletesOnlyWhenClosedAndAllSucceeded) {
  auto wf = MustCreate({Llm("a"), Llm("b", {"a"})});
  RunOk(wf.get(), 0);
  RunOk(wf.get(), 1);
  EXPECT_EQ(wf->state(), v1::WORKFLOW_RUNNING);  // the client may still append
  EXPECT_FALSE(wf->done());
  ASSERT_TRUE(wf->Append({Llm("c", {"b"})}, Time{}).ok());
  EXPECT_EQ(wf->ReadyNodes(), (Nodes{2}));
  wf->Close();
  EXPECT_FALSE(wf->done());
  RunOk(wf.get(), 2);
  EXPECT_EQ(wf->state(), v1::WORKFLOW_COMPLETED);
  EXPECT_TRUE(wf->done());
  wf->Cancel("late");  // no effect on a completed workflow
  EXPECT_EQ(wf->state(), v1::WORKFLOW_COMPLETED);
}

TEST(ReadinessTest, EmptyClosedWorkflowIsComplete) {
  auto wf = MustCreate({});
  ASSERT_NE(wf, nullptr);
  EXPECT_FALSE(wf->done());
  wf->Close();
  EXPECT_TRUE(wf->done());
}

TEST(ReadinessTest, MaxAttemptsFromPolicy) {
  auto n = Llm("a");
  n.mutable_retry()->set_max_attempts(1);
  auto wf = MustCreate({n});
  EXPECT_EQ(wf->max_attempts(0), 1u);
  ASSERT_TRUE(wf->MarkRunning(0).ok());
  ASSERT_TRUE(wf->MarkFailed(0, "x").ok());
  EXPECT_FALSE(wf->CanRetry(0));
  EXPECT_EQ(wf->state(), v1::WORKFLOW_FAILED);
  EXPECT_TRUE(wf->done());
}

}  // namespace
}  // namespace switchyard::program_graph
