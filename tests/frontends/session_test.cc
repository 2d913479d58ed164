// The session layer (frontends/session.h) on a service without a scheduler, the test
// playing the front and the engine: a session's turns are one workflow whose LLM nodes
// extend one context from the longest common prefix, with wait nodes between turns; one
// turn at a time; ids checked; a one-node workflow closed once admitted; an aborted turn
// starts the session afresh; ending and sweeping idle sessions close their workflows.
#include "frontends/session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <future>
#include <thread>

#include "base/clock.h"
#include "tests/common/wait_until.h"

namespace switchyard::frontends {
namespace {

constexpr char kTenant[] = "acme";
constexpr char kSessionModel[] = "m";

class SessionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/sy_sessions_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    service::ServiceOptions o;
    o.data_dir = dir_;
    o.scheduler.enabled = false;  // the test reports the LLM nodes' events
    auto s = service::Service::Open(o, &clock_);
    ASSERT_TRUE(s.ok()) << s.status();
    service_ = std::move(*s);
    Open(std::chrono::minutes(10));
  }
  void TearDown() override {
    life_.End();
    sessions_.reset();
    service_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open(std::chrono::milliseconds idle) {
    sessions_ = std::make_unique<Sessions>(service_.get(), Sessions::Options{"test", idle}, life_);
  }
  Sessions::Turn Begin(const std::string& id) {
    auto t = sessions_->BeginTurn(kTenant, id, /*shared=*/false, kSessionModel);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : Sessions::Turn{};
  }
  // Submits the turn's node (its prompt extending the session's context) and waits until
  // it was admitted.
  Status Submit(Sessions::Turn* t, const std::vector<int32_t>& prompt) {
    sessions_->Extend(t, prompt);
    v1::ProgramNode n =
        sessions_->LlmNode(*t, kSessionModel, static_cast<int64_t>(prompt.size()), 8);
    std::promise<Status> admitted;
    sessions_->Submit(*t, std::move(n), 0, 0,
                      [&admitted](const Status& st) { admitted.set_value(st); });
    Status st = admitted.get_future().get();
    EXPECT_TRUE(service_->Flush().ok());
    return st;
  }
  // The engine runs the node and the answer ends: `context` is what it holds, `tools` the
  // calls it asked for. Waits until the waits started, then releases the session.
  Status Answer(const Sessions::Turn& t, std::vector<int32_t> context,
                std::vector<std::string> tools) {
    sessions_->ReportStarted(t);
    sessions_->ReportFinished(t, 1);
    std::promise<Status> done;
    sessions_->EndTurn(t, std::move(context), std::move(tools),
                       [&done](const Status& st) { done.set_value(st); });
    Status st = done.get_future().get();
    EXPECT_TRUE(service_->Flush().ok());
    sessions_->Release(t);
    return st;
  }
  v1::WorkflowStatus State(const std::string& wf) {
    EXPECT_TRUE(service_->Flush().ok());
    auto s = service_->Get(kTenant, wf);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : v1::WorkflowStatus{};
  }
  // Whether `done` comes to hold (what follows an admission runs after `admitted`).
  static bool Eventually(const std::function<bool()>& done) { return testing::WaitUntil(done); }
  static const v1::NodeStatus* Node(const v1::WorkflowStatus& s, const std::string& id) {
    for (const auto& n : s.nodes())
      if (n.id() == id) return &n;
    return nullptr;
  }

  ManualClock clock_{Time::FromSeconds(1000)};
  std::string dir_;
  std::unique_ptr<service::Service> service_;
  Lifetime life_;
  std::unique_ptr<Sessions> sessions_;
};

TEST_F(SessionsTest, TurnsAreOneWorkflowWithWaitsBetweenThem) {
  Sessions::Turn t0 = Begin("s1");
  EXPECT_TRUE(t0.first);
  EXPECT_EQ(t0.index, 0);
  EXPECT_EQ(t0.node, "llm-0");
  EXPECT_EQ(t0.session_id, "s1");
  ASSERT_TRUE(Submit(&t0, {1, 2, 3}).ok());
  EXPECT_TRUE(t0.create);
  EXPECT_EQ(t0.context, "main");
  EXPECT_EQ(sessions_->size(), 1u);
  ASSERT_TRUE(Answer(t0, {1, 2, 3, 7, 8}, {"bash"}).ok());
  const v1::WorkflowStatus state = State(t0.workflow);
  const v1::NodeStatus* wait = Node(state, "bash-0");
  ASSERT_NE(wait, nullptr);
  EXPECT_EQ(wait->kind(), v1::TOOL);
  EXPECT_EQ(wait->tool_name(), "bash");
  EXPECT_EQ(wait->state(), v1::NODE_RUNNING) << "the wait runs until the next turn";

  Sessions::Turn t1 = Begin("s1");
  EXPECT_FALSE(t1.first);
  EXPECT_EQ(t1.index, 1);
  EXPECT_EQ(t1.node, "llm-1");
  EXPECT_EQ(t1.workflow, t0.workflow) << "one workflow per session";
  EXPECT_EQ(t1.waits, std::vector<std::string>{"bash-0"});
  sessions_->Extend(&t1, {1, 2, 3, 7, 8, 9});  // repeats the context, then one new token
  EXPECT_FALSE(t1.create);
  EXPECT_EQ(t1.cached, 5);
  EXPECT_EQ(t1.keep, 0);
  v1::ProgramNode n = sessions_->LlmNode(t1, kSessionModel, 6, 16);
  EXPECT_EQ(n.id(), "llm-1");
  EXPECT_EQ(n.model_id(), kSessionModel);
  ASSERT_EQ(n.cache_refs_size(), 1);
  EXPECT_EQ(n.cache_refs(0).context(), "main");
  EXPECT_EQ(n.cache_refs(0).mode(), v1::CacheRef::EXTEND);
  EXPECT_EQ(n.cache_refs(0).keep_tokens(), 0);
  EXPECT_EQ(std::vector<std::string>(n.deps().begin(), n.deps().end()),
            std::vector<std::string>{"bash-0"});
  EXPECT_EQ(n.hints().prompt_tokens(), 6);
  EXPECT_EQ(n.hints().extend_tokens(), 1);
  EXPECT_EQ(n.hints().max_output_tokens(), 16);
  ASSERT_TRUE(Submit(&t1, {1, 2, 3, 7, 8, 9}).ok());
  EXPECT_TRUE(Eventually([&] {
    return Node(State(t0.workflow), "bash-0")->state() == v1::NODE_SUCCEEDED;
  })) << "the turn ended the wait";
  ASSERT_TRUE(Answer(t1, {1, 2, 3, 7, 8, 9, 4}, {}).ok());
  EXPECT_NE(Node(State(t0.workflow), "client-1"), nullptr) << "no tool calls: one `client` wait";
}

// The retention the client asked for (a cache_control ttl) goes to the turn's wait nodes.
TEST_F(SessionsTest, ARetentionGoesToTheWaitsOfItsTurn) {
  Sessions::Turn t0 = Begin("s1");
  t0.retain_ms = 300'000;
  ASSERT_TRUE(Submit(&t0, {1, 2, 3}).ok());
  ASSERT_TRUE(Answer(t0, {1, 2, 3, 7}, {"Bash", "Read"}).ok());
  const v1::WorkflowStatus state = State(t0.workflow);
  for (const char* id : {"Bash-0", "Read-0-1"}) {
    const v1::NodeStatus* wait = Node(state, id);
    ASSERT_NE(wait, nullptr) << id << ": " << state.DebugString();
    EXPECT_EQ(wait->retain_ms(), 300'000) << id;
  }
  Sessions::Turn t1 = Begin("s1");
  ASSERT_TRUE(Submit(&t1, {1, 2, 3, 7, 9}).ok());
  ASSERT_TRUE(Answer(t1, {1, 2, 3, 7, 9, 4}, {}).ok());
  EXPECT_EQ(Node(State(t0.workflow), "client-1")->retain_ms(), 0) << "asked for by turn 0 only";
}

// A sub-agent's session (parent set) creates its context starting with the prefix it shares
// with its parent's, named by the prefix's tokens: two sub-agents sharing the same tokens
// name the same prefix; too short a prefix, or no parent session, names none.
TEST_F(SessionsTest, ASubAgentsContextStartsWithThePrefixItSharesWithItsParent) {
  std::vector<int32_t> preamble;
  for (int32_t i = 0; i < 40; ++i) preamble.push_back(100 + i);
  Sessions::Turn p0 = Begin("parent");
  ASSERT_TRUE(Submit(&p0, preamble).ok());
  std::vector<int32_t> parent_ctx = preamble;
  parent_ctx.insert(parent_ctx.end(), {5, 6, 7});
  ASSERT_TRUE(Answer(p0, parent_ctx, {"Agent"}).ok());

  auto child = [&](const std::string& id, std::vector<int32_t> prompt) {
    Sessions::Turn t = Begin(id);
    t.parent = "parent";
    sessions_->Extend(&t, prompt);
    v1::ProgramNode n =
        sessions_->LlmNode(t, kSessionModel, static_cast<int64_t>(prompt.size()), 8);
    sessions_->Abort(t, "test");
    return n.cache_refs(0);
  };
  std::vector<int32_t> a = preamble, b = preamble;
  a.insert(a.end(), {1, 1, 1});
  b.insert(b.end(), {2, 2});
  v1::CacheRef ra = child("parent/agent/a", a), rb = child("parent/agent/b", b);
  EXPECT_EQ(ra.mode(), v1::CacheRef::CREATE);
  EXPECT_EQ(ra.shared_prefix_tokens(), 40);
  EXPECT_FALSE(ra.shared_prefix().empty());
  EXPECT_EQ(ra.shared_prefix(), rb.shared_prefix()) << "the same tokens, the same prefix";
  std::vector<int32_t> short_prompt(preamble.begin(), preamble.begin() + 10);
  short_prompt.push_back(9);
  EXPECT_TRUE(child("parent/agent/c", short_prompt).shared_prefix().empty()) << "10 < 16 tokens";
  Sessions::Turn orphan = Begin("orphan");
  orphan.parent = "nobody";
  sessions_->Extend(&orphan, a);
  EXPECT_TRUE(orphan.shared_prefix.empty());
  sessions_->Abort(orphan, "test");
}

TEST_F(SessionsTest, AChangedPromptCutsTheContextAndAnUnrelatedOneStartsAFreshContext) {
  Sessions::Turn t0 = Begin("s1");
  ASSERT_TRUE(Submit(&t0, {1, 2, 3}).ok());
  ASSERT_TRUE(Answer(t0, {1, 2, 3, 4}, {}).ok());

  Sessions::Turn t1 = Begin("s1");
  ASSERT_TRUE(Submit(&t1, {1, 2, 9, 9}).ok());  // the last answer re-sent changed
  EXPECT_FALSE(t1.create);
  EXPECT_EQ(t1.context, "main");
  EXPECT_EQ(t1.cached, 2);
  EXPECT_EQ(t1.keep, 2) << "the context continues from the shared prefix";
  ASSERT_TRUE(Answer(t1, {1, 2, 9, 9, 5}, {}).ok());

  Sessions::Turn t2 = Begin("s1");
  ASSERT_TRUE(Submit(&t2, {6, 6}).ok());  // shares nothing
  EXPECT_TRUE(t2.create);
  EXPECT_EQ(t2.context, "main-1");
  EXPECT_EQ(t2.cached, 0);
  EXPECT_EQ(t2.keep, 0);
  EXPECT_EQ(t2.workflow, t0.workflow);
}

TEST_F(SessionsTest, ASessionServesOneTurnAtATime) {
  Sessions::Turn t0 = Begin("s1");
  auto busy = sessions_->BeginTurn(kTenant, "s1", /*shared=*/false, kSessionModel);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.status().code(), StatusCode::kAborted);
  EXPECT_EQ(busy.status().message(), "session 's1' is answering another request");
  auto alone = sessions_->BeginTurn(kTenant, "s1", /*shared=*/true, kSessionModel);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(alone->session_id, "") << "a shared id's parallel request runs on its own";
  EXPECT_TRUE(alone->first);
  EXPECT_NE(alone->workflow, t0.workflow);
  sessions_->Release(t0);
  auto other = sessions_->BeginTurn(kTenant, "s1", /*shared=*/false, "other-model");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(other.status().message(),
            "session 's1' runs model 'm' (its context's KV is that model's)");
  EXPECT_TRUE(sessions_->BeginTurn("another-tenant", "s1", false, "other-model").ok())
      << "sessions are per tenant";
}

TEST_F(SessionsTest, SessionIdsAreShortUtf8Text) {
  auto bad = sessions_->BeginTurn(kTenant, "a\xff", false, kSessionModel);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind("session id: ", 0), 0u) << bad.status();
  auto long_id = sessions_->BeginTurn(kTenant, std::string(257, 'x'), false, kSessionModel);
  ASSERT_FALSE(long_id.ok());
  EXPECT_EQ(long_id.status().message(), "session id: longer than 256 bytes");
  EXPECT_TRUE(sessions_->BeginTurn(kTenant, std::string(256, 'x'), false, kSessionModel).ok());
  EXPECT_EQ(sessions_->size(), 1u);
}

TEST_F(SessionsTest, AOneNodeWorkflowIsClosedOnceAdmitted) {
  Sessions::Turn t = Begin("");
  EXPECT_EQ(t.session_id, "");
  EXPECT_EQ(t.node, "llm-0");
  ASSERT_TRUE(Submit(&t, {1, 2, 3}).ok());
  EXPECT_TRUE(t.create);
  EXPECT_TRUE(Eventually([&] { return State(t.workflow).closed(); }));
  ASSERT_TRUE(Answer(t, {1, 2, 3, 4}, {"bash"}).ok());
  v1::WorkflowStatus s = State(t.workflow);
  EXPECT_EQ(s.state(), v1::WORKFLOW_COMPLETED);
  EXPECT_EQ(s.nodes_size(), 1) << "no waits without a session";
  EXPECT_EQ(sessions_->size(), 0u);
}

TEST_F(SessionsTest, AnAbortedTurnStartsTheSessionAfresh) {
  Sessions::Turn t0 = Begin("s1");
  ASSERT_TRUE(Submit(&t0, {1, 2, 3}).ok());
  ASSERT_TRUE(Answer(t0, {1, 2, 3, 4}, {}).ok());
  Sessions::Turn t1 = Begin("s1");
  ASSERT_TRUE(Submit(&t1, {1, 2, 3, 4, 5}).ok());
  sessions_->Abort(t1, "the client went away");
  EXPECT_EQ(State(t1.workflow).state(), v1::WORKFLOW_CANCELLED);
  Sessions::Turn t2 = Begin("s1");
  EXPECT_TRUE(t2.first);
  EXPECT_EQ(t2.index, 0);
  EXPECT_NE(t2.workflow, t1.workflow);
  EXPECT_TRUE(t2.waits.empty());
  ASSERT_TRUE(Submit(&t2, {1, 2, 3, 4, 5}).ok());
  EXPECT_TRUE(t2.create) << "a new workflow computes its context afresh";
  EXPECT_EQ(t2.context, "main");
}

// An answer that ends after its call was abandoned (the engine finished the node just as
// the client went away) leaves the session as Abort left it: its next turn starts afresh,
// with no wait of the cancelled workflow to end.
TEST_F(SessionsTest, AnAnswerEndingAfterItsAbortLeavesTheSessionAfresh) {
  Sessions::Turn t0 = Begin("s1");
  ASSERT_TRUE(Submit(&t0, {1, 2, 3}).ok());
  sessions_->Abort(t0, "the client went away");
  std::promise<Status> done;
  sessions_->EndTurn(t0, {1, 2, 3, 4}, {"Bash"}, [&done](const Status& st) { done.set_value(st); });
  EXPECT_TRUE(done.get_future().get().ok());
  Sessions::Turn t1 = Begin("s1");
  EXPECT_TRUE(t1.first);
  EXPECT_NE(t1.workflow, t0.workflow);
  EXPECT_TRUE(t1.waits.empty()) << "a wait of the cancelled workflow";
  ASSERT_TRUE(Submit(&t1, {1, 2, 3, 4, 5}).ok());
  EXPECT_TRUE(t1.create);
}

TEST_F(SessionsTest, EndingASessionClosesItsWorkflow) {
  Sessions::Turn t = Begin("s1");
  ASSERT_TRUE(Submit(&t, {1, 2, 3}).ok());
  ASSERT_TRUE(Answer(t, {1, 2, 3, 4}, {"bash"}).ok());
  EXPECT_FALSE(sessions_->End(kTenant, "nope"));
  EXPECT_TRUE(sessions_->End(kTenant, "s1"));
  EXPECT_EQ(sessions_->size(), 0u);
  v1::WorkflowStatus s = State(t.workflow);
  EXPECT_EQ(s.state(), v1::WORKFLOW_COMPLETED);
  EXPECT_EQ(Node(s, "bash-0")->state(), v1::NODE_SUCCEEDED);
  EXPECT_FALSE(sessions_->End(kTenant, "s1"));
}

TEST_F(SessionsTest, AnIdleSessionIsSweptButABusyOneIsNot) {
  Open(std::chrono::milliseconds(1));
  Sessions::Turn idle = Begin("idle");
  ASSERT_TRUE(Submit(&idle, {1}).ok());
  ASSERT_TRUE(Answer(idle, {1, 2}, {}).ok());
  Sessions::Turn busy = Begin("busy");
  // Sweeps until the idle one (idle past 1 ms) is gone: the busy one, as old, stays.
  EXPECT_TRUE(testing::WaitUntil([&] {
    sessions_->SweepIdle();
    return sessions_->size() < 2;
  }));
  EXPECT_EQ(sessions_->size(), 1u) << "the busy one stays";
  EXPECT_EQ(State(idle.workflow).state(), v1::WORKFLOW_COMPLETED);
  sessions_->Release(busy);
  EXPECT_TRUE(testing::WaitUntil([&] {
    sessions_->SweepIdle();
    return sessions_->size() == 0;
  }));
}

}  // namespace
}  // namespace switchyard::frontends
