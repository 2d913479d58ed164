// The embedding facade: lifecycle, tenancy, retry rule, atomicity and durability.
#include "service/service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "proto/json.h"
#include "service/store.h"

namespace switchyard::service {
namespace {

v1::Workflow TwoStep() {
  v1::Workflow wf;
  EXPECT_TRUE(proto::ParseJson(R"({"nodes":[
      {"id":"plan","kind":"LLM","cacheRefs":[{"context":"main","mode":"CREATE"}],
       "hints":{"promptTokens":1000}},
      {"id":"run","kind":"TOOL","deps":["plan"],"toolName":"Bash"}]})",
                               &wf)
                  .ok());
  return wf;
}

v1::NodeEvent Ev(const std::string& node, v1::NodeEventType t) {
  v1::NodeEvent e;
  e.set_node_id(node);
  e.set_type(t);
  return e;
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/sy_service_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    Reopen();
  }
  void TearDown() override {
    svc_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    svc_.reset();
    ServiceOptions o;
    o.data_dir = dir_;
    o.max_live_workflows_per_tenant = 3;
    o.ended_in_memory = ended_in_memory_;
    o.ended_retention_s = ended_retention_s_;
    o.idempotency_retention_s = idempotency_retention_s_;
    o.scheduler.engines_run_llm = false;  // the tests report LLM results as an engine
    auto s = Service::Open(o, &clock_);
    ASSERT_TRUE(s.ok()) << s.status();
    svc_ = std::move(*s);
  }
  ManualClock clock_{Time::FromSeconds(1000)};
  size_t ended_in_memory_ = 1000;
  int64_t ended_retention_s_ = 0;
  int64_t idempotency_retention_s_ = 0;
  std::string dir_;
  std::unique_ptr<Service> svc_;
};

TEST_F(ServiceTest, LifecycleToCompletion) {
  auto id = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->substr(0, 3), "wf_");
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("plan", v1::LLM_STARTED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("plan", v1::LLM_FINISHED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("run", v1::TOOL_STARTED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("run", v1::TOOL_FINISHED)).ok());
  EXPECT_EQ(svc_->Get("acme", *id)->state(), v1::WORKFLOW_RUNNING) << "not closed yet";
  ASSERT_TRUE(svc_->Close("acme", *id).ok());
  auto st = svc_->Get("acme", *id);
  EXPECT_EQ(st->state(), v1::WORKFLOW_COMPLETED);
  EXPECT_EQ(st->nodes(1).state(), v1::NODE_SUCCEEDED);
  EXPECT_EQ(svc_->counts().events_applied, 4u);
}

TEST_F(ServiceTest, OtherTenantSeesNotFound) {
  auto id = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(svc_->Get("globex", *id).status().IsNotFound());
  EXPECT_TRUE(svc_->ReportEvent("globex", *id, Ev("plan", v1::LLM_STARTED)).IsNotFound());
  EXPECT_TRUE(svc_->Cancel("globex", *id, "").IsNotFound());
  EXPECT_EQ(svc_->List("globex").workflows_size(), 0);
  EXPECT_EQ(svc_->List("acme").workflows_size(), 1);
}

TEST_F(ServiceTest, IllegalTransitionsAreRefusedAndChangeNothing) {
  auto id = svc_->Submit("acme", TwoStep());
  Status s = svc_->ReportEvent("acme", *id, Ev("run", v1::TOOL_STARTED));
  EXPECT_TRUE(s.IsFailedPrecondition()) << s;  // deps not done
  s = svc_->ReportEvent("acme", *id, Ev("plan", v1::TOOL_STARTED));
  EXPECT_TRUE(s.IsInvalidArgument()) << s;  // tool event on an LLM node
  s = svc_->ReportEvent("acme", *id, Ev("nope", v1::LLM_STARTED));
  EXPECT_TRUE(s.IsNotFound()) << s;
  EXPECT_EQ(svc_->counts().events_applied, 0u);
}

// An event without nodeId is a 400 naming the field, not a 404 for node '' (and one
// without a type names `type`, whatever its node).
TEST_F(ServiceTest, EventWithoutNodeIdOrTypeIsInvalidArgumentNamingTheField) {
  auto id = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(id.ok()) << id.status();
  Status s = svc_->ReportEvent("acme", *id, Ev("", v1::LLM_STARTED));
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_NE(s.message().find("nodeId"), std::string::npos) << s;
  s = svc_->ReportEvent("acme", *id, Ev("nope", v1::NODE_EVENT_UNSPECIFIED));
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_NE(s.message().find("type"), std::string::npos) << s;
  EXPECT_EQ(svc_->counts().events_applied, 0u);
}

// A cancel reason or an event's error that is not UTF-8 is refused: protobuf would write
// it into the log and then fail to parse it back, and the service would not open again.
TEST_F(ServiceTest, TextThatIsNotUtf8IsRefusedAndTheStoreStillOpens) {
  auto id = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(id.ok()) << id.status();
  Status s = svc_->Cancel("acme", *id, "stop \xff");
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_NE(s.message().find("reason: byte 0xFF at offset 5 is not UTF-8"), std::string::npos) << s;
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("plan", v1::LLM_STARTED)).ok());
  auto fail = Ev("plan", v1::LLM_FAILED);
  fail.set_error("oom \xc0\xaf");
  s = svc_->ReportEvent("acme", *id, fail);
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_NE(s.message().find("event.error"), std::string::npos) << s;
  ASSERT_TRUE(svc_->Cancel("acme", *id, "caf\xc3\xa9\nline two").ok())
      << "UTF-8 with control characters is fine here";
  Reopen();
  auto st = svc_->Get("acme", *id);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->state(), v1::WORKFLOW_CANCELLED);
  EXPECT_EQ(st->failure_reason(), "caf\xc3\xa9\nline two");
}

TEST_F(ServiceTest, RetryableFailureIsOfferedAgainSideEffectFailsClosed) {
  v1::Workflow wf = TwoStep();
  wf.mutable_nodes(1)->set_side_effect(true);  // no idempotency key: not retryable
  auto id = svc_->Submit("acme", wf);
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("plan", v1::LLM_STARTED)).ok());
  auto fail = Ev("plan", v1::LLM_FAILED);
  fail.set_error("engine OOM");
  fail.set_retryable(true);
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, fail).ok());
  auto st = svc_->Get("acme", *id);
  EXPECT_EQ(st->nodes(0).state(), v1::NODE_READY) << "idempotent LLM node is retried";
  EXPECT_EQ(st->nodes(0).attempts(), 2u);
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("plan", v1::LLM_STARTED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("plan", v1::LLM_FINISHED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("run", v1::TOOL_STARTED)).ok());
  auto tool_fail = Ev("run", v1::TOOL_FAILED);
  tool_fail.set_retryable(true);  // the reporter's word does not make a side effect safe
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, tool_fail).ok());
  st = svc_->Get("acme", *id);
  EXPECT_EQ(st->state(), v1::WORKFLOW_FAILED);
  EXPECT_EQ(st->nodes(1).state(), v1::NODE_FAILED);
  EXPECT_EQ(st->nodes(1).attempts(), 1u) << "a side-effect node never runs twice";
  EXPECT_FALSE(st->failure_reason().empty());
  EXPECT_TRUE(svc_->ReportEvent("acme", *id, Ev("run", v1::TOOL_STARTED)).IsFailedPrecondition());
}

// retryable false (also the default when the field is absent) fails the node for good:
// no retry although attempts are left, the workflow fails and its dependents are
// cancelled; the same history replays to the same state.
TEST_F(ServiceTest, NotRetryableFailureFailsTheWorkflow) {
  auto id = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("plan", v1::LLM_STARTED)).ok());
  auto fail = Ev("plan", v1::LLM_FAILED);
  fail.set_error("prompt too long");
  fail.set_retryable(false);
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, fail).ok());
  for (bool reopened : {false, true}) {
    SCOPED_TRACE(reopened ? "after reopen" : "live");
    if (reopened) Reopen();
    auto st = svc_->Get("acme", *id);
    ASSERT_TRUE(st.ok()) << st.status();
    EXPECT_EQ(st->state(), v1::WORKFLOW_FAILED);
    EXPECT_EQ(st->nodes(0).state(), v1::NODE_FAILED);
    EXPECT_EQ(st->nodes(0).attempts(), 1u) << "attempts were left, but no retry";
    EXPECT_EQ(st->nodes(1).state(), v1::NODE_CANCELLED);
    EXPECT_NE(st->failure_reason().find("prompt too long"), std::string::npos)
        << st->failure_reason();
    EXPECT_NE(st->failure_reason().find("not retryable"), std::string::npos)
        << st->failure_reason();
  }
  EXPECT_TRUE(svc_->ReportEvent("acme", *id, Ev("plan", v1::LLM_STARTED)).IsFailedPrecondition());

  // A tool (no side effect) reported failed without the flag: the same.
  auto id2 = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(id2.ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id2, Ev("plan", v1::LLM_STARTED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id2, Ev("plan", v1::LLM_FINISHED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id2, Ev("run", v1::TOOL_STARTED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id2, Ev("run", v1::TOOL_FAILED)).ok());
  auto st = svc_->Get("acme", *id2);
  EXPECT_EQ(st->state(), v1::WORKFLOW_FAILED);
  EXPECT_EQ(st->nodes(1).attempts(), 1u);
}

// retryable true retries while attempts are left (retry.maxAttempts, default 3), then fails.
TEST_F(ServiceTest, RetryableFailureRetriesUntilAttemptsRunOut) {
  auto id = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(id.ok());
  auto fail = Ev("plan", v1::LLM_FAILED);
  fail.set_error("engine OOM");
  fail.set_retryable(true);
  for (uint32_t attempt = 1; attempt <= 3; ++attempt) {
    ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("plan", v1::LLM_STARTED)).ok()) << attempt;
    ASSERT_TRUE(svc_->ReportEvent("acme", *id, fail).ok()) << attempt;
    auto st = svc_->Get("acme", *id);
    if (attempt < 3) {
      EXPECT_EQ(st->state(), v1::WORKFLOW_RUNNING) << attempt;
      EXPECT_EQ(st->nodes(0).state(), v1::NODE_READY) << attempt;
      EXPECT_EQ(st->nodes(0).attempts(), attempt + 1);
    } else {
      EXPECT_EQ(st->state(), v1::WORKFLOW_FAILED);
      EXPECT_EQ(st->nodes(0).attempts(), 3u);
    }
  }
}

TEST_F(ServiceTest, BadAppendIsAtomic) {
  auto id = svc_->Submit("acme", TwoStep());
  v1::ProgramNode ok, bad;
  ok.set_id("next");
  ok.set_kind(v1::LLM);
  ok.add_deps("run");
  bad.set_id("broken");
  bad.set_kind(v1::LLM);
  bad.add_deps("ghost");
  Status s = svc_->Append("acme", *id, {ok, bad});
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_NE(s.message().find("ghost"), std::string::npos) << s;
  EXPECT_EQ(svc_->Get("acme", *id)->nodes_size(), 2);
  ASSERT_TRUE(svc_->Append("acme", *id, {ok}).ok());
  EXPECT_EQ(svc_->Get("acme", *id)->nodes_size(), 3);
}

TEST_F(ServiceTest, TenantsOwnMaxWorkflowsIsTheirLimit) {
  svc_.reset();
  ServiceOptions o;
  o.data_dir = dir_;
  o.max_live_workflows_per_tenant = 3;
  o.max_live_workflows_by_tenant["acme"] = 1;    // below the default
  o.max_live_workflows_by_tenant["globex"] = 5;  // above it
  o.scheduler.engines_run_llm = false;
  auto s = Service::Open(o, &clock_);
  ASSERT_TRUE(s.ok()) << s.status();
  svc_ = std::move(*s);
  ASSERT_TRUE(svc_->Submit("acme", TwoStep()).ok());
  auto r = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(r.status().IsResourceExhausted()) << r.status();
  EXPECT_NE(r.status().message().find("maxWorkflows 1"), std::string::npos) << r.status();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(svc_->Submit("globex", TwoStep()).ok()) << i;
  EXPECT_TRUE(svc_->Submit("globex", TwoStep()).status().IsResourceExhausted());
  EXPECT_TRUE(svc_->Submit("initech", TwoStep()).ok()) << "others keep the default";
}

TEST_F(ServiceTest, QuotaOnLiveWorkflows) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(svc_->Submit("acme", TwoStep()).ok());
  auto r = svc_->Submit("acme", TwoStep());
  EXPECT_TRUE(r.status().IsResourceExhausted()) << r.status();
  EXPECT_TRUE(svc_->Submit("globex", TwoStep()).ok()) << "quota is per tenant";
  auto list = svc_->List("acme");
  ASSERT_TRUE(svc_->Cancel("acme", list.workflows(0).workflow_id(), "done").ok());
  EXPECT_TRUE(svc_->Submit("acme", TwoStep()).ok()) << "a cancelled workflow frees quota";
}

// The durable part of a status (the scheduler's KV placement and decisions are rebuilt
// after a restart, not restored).
std::string Durable(Result<v1::WorkflowStatus> s) {
  s->clear_kv();
  s->clear_decisions();
  s->clear_decisions_dropped();
  s->clear_archived();
  return s->SerializeAsString();
}

TEST_F(ServiceTest, StateSurvivesReopen) {
  auto a = svc_->Submit("acme", TwoStep());
  auto b = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(svc_->ReportEvent("acme", *a, Ev("plan", v1::LLM_STARTED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *a, Ev("plan", v1::LLM_FINISHED)).ok());
  ASSERT_TRUE(svc_->Cancel("acme", *b, "user gave up").ok());
  IdempotentAnswer idem{"key-1", 42, 200, "{\"first\":true}"};
  ASSERT_TRUE(svc_->Close("acme", *a, &idem).ok());
  auto before_a = Durable(svc_->Get("acme", *a));
  auto before_b = Durable(svc_->Get("acme", *b));
  Reopen();
  EXPECT_EQ(Durable(svc_->Get("acme", *a)), before_a);
  EXPECT_EQ(Durable(svc_->Get("acme", *b)), before_b);
  auto stored = svc_->LookupIdempotent("acme", "key-1");
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->body(), "{\"first\":true}");
  EXPECT_EQ((*stored)->fingerprint(), 42u);
  EXPECT_FALSE(svc_->LookupIdempotent("globex", "key-1")->has_value());
  // Recovered workflows keep going.
  ASSERT_TRUE(svc_->ReportEvent("acme", *a, Ev("run", v1::TOOL_STARTED)).ok());
}

TEST_F(ServiceTest, DuplicateIdAndTenantMismatch) {
  v1::Workflow wf = TwoStep();
  wf.set_id("mine");
  ASSERT_TRUE(svc_->Submit("acme", wf).ok());
  EXPECT_EQ(svc_->Submit("acme", wf).status().code(), StatusCode::kAlreadyExists);
  wf.set_id("other");
  wf.set_tenant("globex");
  EXPECT_TRUE(svc_->Submit("acme", wf).status().IsInvalidArgument());
}

// Ended workflows beyond the in-memory bound are archived: read back by id, refused as
// duplicate ids, counted, listed as summaries; the bound holds across a restart.
TEST_F(ServiceTest, ArchivesEndedWorkflowsBeyondTheBound) {
  ended_in_memory_ = 2;
  Reopen();
  std::vector<std::string> ids;
  std::vector<std::string> before;
  for (int i = 0; i < 5; ++i) {
    auto id = svc_->Submit("acme", TwoStep());
    ASSERT_TRUE(id.ok()) << id.status();
    ASSERT_TRUE(svc_->Cancel("acme", *id, "done " + std::to_string(i)).ok());
    before.push_back(Durable(svc_->Get("acme", *id)));
    ids.push_back(*id);
  }
  auto live = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(live.ok());
  ASSERT_TRUE(svc_->Flush().ok());
  EXPECT_EQ(svc_->archived(), 3u);
  EXPECT_EQ(svc_->in_memory(), 3u) << "two ended + one live";
  ASSERT_NE(svc_->scheduler(), nullptr);
  svc_->scheduler()->Sync();
  EXPECT_EQ(svc_->scheduler()->mirrored_workflows(), 3u) << "the scheduler forgot the archived";
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < ids.size(); ++i) {
      auto st = svc_->Get("acme", ids[i]);
      ASSERT_TRUE(st.ok()) << "round " << round << " " << ids[i] << ": " << st.status();
      EXPECT_EQ(st->state(), v1::WORKFLOW_CANCELLED);
      if (round == 0) {
        EXPECT_EQ(st->archived(), i < 3) << "the oldest ended go first";
      }
      EXPECT_EQ(Durable(st), before[i]) << "archived status reads back the same";
      EXPECT_TRUE(svc_->Get("globex", ids[i]).status().IsNotFound()) << "tenancy holds";
    }
    auto c = svc_->counts();
    EXPECT_EQ(c.cancelled, 5u);
    EXPECT_EQ(c.archived, 3u) << "recovery archives in id order, as many";
    EXPECT_EQ(c.workflows, 6u);
    EXPECT_EQ(c.running, 1u);
    if (round == 0) {
      EXPECT_EQ(svc_->counts().archived_reads_snapshot, 3u) << "archived live: from snapshots";
      EXPECT_EQ(svc_->counts().archived_reads_replay, 0u);
    }
    auto list = svc_->List("acme");
    ASSERT_EQ(list.workflows_size(), 6) << "archived ones are listed too";
    int archived = 0;
    for (const auto& w : list.workflows()) archived += w.archived();
    EXPECT_EQ(archived, 3);
    v1::Workflow dup = TwoStep();
    dup.set_id(ids[0]);
    EXPECT_EQ(svc_->Submit("acme", dup).status().code(), StatusCode::kAlreadyExists)
        << "an archived id is still taken";
    EXPECT_EQ(svc_->Submit("globex", dup).status().code(), StatusCode::kAlreadyExists);
    Reopen();  // recovery archives the same way
    EXPECT_EQ(svc_->archived(), 3u);
    EXPECT_EQ(svc_->in_memory(), 3u);
  }
}

// A mutation of an archived workflow restores it first, so its history stays gapless and
// the answer is the same as for one in memory.
TEST_F(ServiceTest, MutatingAnArchivedWorkflowRestoresIt) {
  ended_in_memory_ = 0;  // archive as soon as a workflow ends
  Reopen();
  v1::Workflow wf = TwoStep();
  wf.mutable_nodes(1)->set_side_effect(true);
  auto id = svc_->Submit("acme", wf);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("plan", v1::LLM_STARTED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("plan", v1::LLM_FINISHED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("run", v1::TOOL_STARTED)).ok());
  ASSERT_TRUE(svc_->ReportEvent("acme", *id, Ev("run", v1::TOOL_FAILED)).ok());
  ASSERT_TRUE(svc_->Flush().ok());
  EXPECT_EQ(svc_->archived(), 1u) << "failed, not closed: archived at once";
  EXPECT_TRUE(svc_->ReportEvent("acme", *id, Ev("run", v1::TOOL_STARTED)).IsFailedPrecondition());
  EXPECT_TRUE(svc_->Cancel("acme", *id, "").IsFailedPrecondition());
  EXPECT_TRUE(svc_->Close("globex", *id).IsNotFound());
  ASSERT_TRUE(svc_->Close("acme", *id).ok()) << "closing a failed workflow is still allowed";
  EXPECT_TRUE(svc_->Close("acme", *id).IsFailedPrecondition()) << "and applied once";
  auto st = svc_->Get("acme", *id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->closed());
  EXPECT_EQ(st->state(), v1::WORKFLOW_FAILED);
  Reopen();  // the history replays without a gap
  st = svc_->Get("acme", *id);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_TRUE(st->closed());
  EXPECT_TRUE(st->archived());
}

// With a retention period, archived workflows whose last record is older are deleted from
// the store and forgotten, at the next sweep and at recovery; newer ones stay.
TEST_F(ServiceTest, RetentionDeletesExpiredArchivedWorkflows) {
  ended_in_memory_ = 0;
  ended_retention_s_ = 60;
  Reopen();
  auto old1 = svc_->Submit("acme", TwoStep());
  auto old2 = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(old1.ok() && old2.ok());
  ASSERT_TRUE(svc_->Cancel("acme", *old1, "").ok());
  ASSERT_TRUE(svc_->Cancel("acme", *old2, "").ok());
  auto live = svc_->Submit("acme", TwoStep());  // not ended: never expires
  ASSERT_TRUE(live.ok());
  clock_.Advance(Seconds(30));
  auto young = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(svc_->Cancel("acme", *young, "").ok());
  ASSERT_TRUE(svc_->Flush().ok());
  EXPECT_EQ(svc_->archived(), 3u);
  clock_.Advance(Seconds(31));  // old1 and old2 ended 61 s ago, young 31 s ago
  auto trigger = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(svc_->Cancel("acme", *trigger, "").ok());  // an end runs the sweep
  ASSERT_TRUE(svc_->Flush().ok());
  ASSERT_TRUE(svc_->Flush().ok());  // the deletes ride the commit after the sweep
  EXPECT_EQ(svc_->archived(), 2u);
  EXPECT_TRUE(svc_->Get("acme", *old1).status().IsNotFound());
  EXPECT_TRUE(svc_->Get("acme", *old2).status().IsNotFound());
  EXPECT_TRUE(svc_->Get("acme", *young).ok());
  EXPECT_TRUE(svc_->Get("acme", *live).ok());
  EXPECT_EQ(svc_->counts().cancelled, 2u);
  Reopen();  // deleted from the store, not only forgotten
  EXPECT_TRUE(svc_->Get("acme", *old1).status().IsNotFound());
  EXPECT_TRUE(svc_->Get("acme", *young).ok());
  EXPECT_EQ(svc_->archived(), 2u);
  clock_.Advance(Seconds(60));
  Reopen();  // recovery sweeps too
  EXPECT_EQ(svc_->archived(), 0u);
  EXPECT_TRUE(svc_->Get("acme", *young).status().IsNotFound());
  EXPECT_EQ(svc_->Get("acme", *live)->state(), v1::WORKFLOW_RUNNING);
  v1::Workflow again = TwoStep();
  again.set_id(*old1);
  EXPECT_TRUE(svc_->Submit("acme", again).ok()) << "an expired id may be used again";
}

// Idempotency answers older than the retention are forgotten: a repeat with the key is a
// new request. Younger ones are still replayed.
TEST_F(ServiceTest, IdempotencyAnswersExpireAfterTheirRetention) {
  idempotency_retention_s_ = 60;
  Reopen();
  auto a = svc_->Submit("acme", TwoStep());
  auto b = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(a.ok() && b.ok());
  IdempotentAnswer first{"key-a", 7, 200, "{}"};
  ASSERT_TRUE(svc_->Cancel("acme", *a, "x", &first).ok());
  clock_.Advance(Seconds(30));
  IdempotentAnswer second{"key-b", 8, 200, "{}"};
  ASSERT_TRUE(svc_->Cancel("acme", *b, "y", &second).ok());
  EXPECT_TRUE(svc_->PeekIdempotent("acme", "key-a")->has_value());
  clock_.Advance(Seconds(31));  // key-a stored 61 s ago, key-b 31 s ago
  EXPECT_FALSE(svc_->PeekIdempotent("acme", "key-a")->has_value()) << "expired";
  EXPECT_FALSE(svc_->LookupIdempotent("acme", "key-a")->has_value());
  auto kept = svc_->LookupIdempotent("acme", "key-b");
  ASSERT_TRUE(kept.ok() && kept->has_value());
  EXPECT_EQ((*kept)->fingerprint(), 8u);
  Reopen();  // the time travels with the answer
  EXPECT_FALSE(svc_->PeekIdempotent("acme", "key-a")->has_value());
  EXPECT_TRUE(svc_->PeekIdempotent("acme", "key-b")->has_value());
}

// A workflow archived by recovery has no snapshot: a GET replays its history, and reads
// the same as before the restart; retention deletes a snapshot with the history.
TEST_F(ServiceTest, ArchivedWithoutSnapshotReadsFromHistory) {
  std::vector<std::string> ids, before;
  for (int i = 0; i < 3; ++i) {
    auto id = svc_->Submit("acme", TwoStep());
    ASSERT_TRUE(id.ok()) << id.status();
    ASSERT_TRUE(svc_->Cancel("acme", *id, "done").ok());
    before.push_back(Durable(svc_->Get("acme", *id)));
    ids.push_back(*id);
  }
  ASSERT_TRUE(svc_->Flush().ok());
  EXPECT_EQ(svc_->archived(), 0u) << "the bound is 1000 here";
  ended_in_memory_ = 1;
  Reopen();  // recovery archives two of them (in id order), without snapshots
  ASSERT_EQ(svc_->archived(), 2u);
  size_t in_memory = ids.size();
  for (size_t i = 0; i < ids.size(); ++i) {
    auto st = svc_->Get("acme", ids[i]);
    ASSERT_TRUE(st.ok()) << st.status();
    if (!st->archived()) in_memory = i;
    EXPECT_EQ(Durable(st), before[i]);
  }
  ASSERT_LT(in_memory, ids.size());
  EXPECT_EQ(svc_->counts().archived_reads_replay, 2u);
  EXPECT_EQ(svc_->counts().archived_reads_snapshot, 0u);
  // Ending one more archives the one still in memory, live: with a snapshot.
  auto id = svc_->Submit("acme", TwoStep());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(svc_->Cancel("acme", *id, "done").ok());
  ASSERT_TRUE(svc_->Flush().ok());
  ASSERT_EQ(svc_->archived(), 3u);
  auto st = svc_->Get("acme", ids[in_memory]);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_TRUE(st->archived());
  EXPECT_EQ(Durable(st), before[in_memory]);
  EXPECT_EQ(svc_->counts().archived_reads_snapshot, 1u);
  EXPECT_TRUE(svc_->Get("globex", ids[in_memory]).status().IsNotFound()) << "tenancy holds";
}

// A snapshot that does not parse as an ArchiveSnapshot (corrupt, or the 8-byte-prefix
// encoding used until 2026-11-30) is not trusted: the GET replays the history and reads the same.
TEST_F(ServiceTest, UnreadableSnapshotFallsBackToHistory) {
  ended_in_memory_ = 0;  // every ended workflow is archived, live: with a snapshot
  Reopen();
  std::vector<std::string> ids, before;
  for (int i = 0; i < 3; ++i) {
    auto id = svc_->Submit("acme", TwoStep());
    ASSERT_TRUE(id.ok()) << id.status();
    ASSERT_TRUE(svc_->Cancel("acme", *id, "done").ok());
    ASSERT_TRUE(svc_->Flush().ok());
    before.push_back(Durable(svc_->Get("acme", *id)));
    ids.push_back(*id);
  }
  ASSERT_EQ(svc_->archived(), 3u);
  EXPECT_EQ(svc_->counts().archived_reads_snapshot, 3u);
  svc_.reset();
  {
    auto store = Store::Open(dir_ + "/state", /*sync=*/true, 0);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->EnqueueSnapshot(ids[0], "not a snapshot").ok());
    std::string old_format(8, '\0');
    old_format[0] = 4;  // the 2026-11-30 format: u64 record count, then a bare WorkflowStatus
    ASSERT_TRUE((*store)->EnqueueSnapshot(ids[1], old_format + "\x0a\x02id").ok());
    ASSERT_TRUE((*store)->Flush().ok());
  }
  Reopen();
  for (int i = 0; i < 3; ++i) {
    auto st = svc_->Get("acme", ids[i]);
    ASSERT_TRUE(st.ok()) << st.status();
    EXPECT_TRUE(st->archived());
    EXPECT_EQ(Durable(st), before[i]);
  }
  EXPECT_EQ(svc_->counts().archived_reads_replay, 2u);
  EXPECT_EQ(svc_->counts().archived_reads_snapshot, 1u) << "the third is intact";
}

// Lists page through live and archived workflows in arrival order, both ways, filtered by
// state, with nothing repeated or skipped; a bad page token is refused by name.
TEST_F(ServiceTest, ListPagesLiveAndArchivedWorkflows) {
  ended_in_memory_ = 1;
  Reopen();
  std::vector<std::string> ids;  // in arrival order
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(Seconds(1));
    auto id = svc_->Submit("acme", TwoStep());
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
    if (i < 4) {
      ASSERT_TRUE(svc_->Cancel("acme", *id, "done").ok());
    }
  }
  ASSERT_TRUE(svc_->Submit("globex", TwoStep()).ok());
  ASSERT_TRUE(svc_->Flush().ok());
  ASSERT_EQ(svc_->archived(), 3u);
  for (bool newest_first : {false, true}) {
    Service::ListQuery q;
    q.page_size = 2;
    q.newest_first = newest_first;
    std::vector<std::string> seen;
    int pages = 0, archived = 0;
    do {
      auto page = svc_->List("acme", q);
      ASSERT_TRUE(page.ok()) << page.status();
      ++pages;
      for (const auto& w : page->workflows()) {
        seen.push_back(w.workflow_id());
        archived += w.archived();
        EXPECT_EQ(w.tenant(), "acme");
        if (w.archived()) {
          EXPECT_EQ(w.state(), v1::WORKFLOW_CANCELLED);
        }
      }
      q.page_token = page->next_page_token();
    } while (!q.page_token.empty());
    std::vector<std::string> want = ids;
    if (newest_first) std::reverse(want.begin(), want.end());
    EXPECT_EQ(seen, want);
    EXPECT_EQ(pages, 3);
    EXPECT_EQ(archived, 3);
  }
  Service::ListQuery running;
  running.state = v1::WORKFLOW_RUNNING;
  auto r = svc_->List("acme", running);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->workflows_size(), 1);
  EXPECT_EQ(r->workflows(0).workflow_id(), ids[4]);
  Service::ListQuery cancelled;
  cancelled.state = v1::WORKFLOW_CANCELLED;
  cancelled.page_size = 3;
  r = svc_->List("acme", cancelled);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->workflows_size(), 3);
  EXPECT_FALSE(r->next_page_token().empty()) << "a fourth cancelled one follows";
  cancelled.page_size = 4;
  r = svc_->List("acme", cancelled);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->workflows_size(), 4);
  EXPECT_TRUE(r->next_page_token().empty()) << "only a running one follows: no token";
  Service::ListQuery bad;
  bad.page_token = "not-a-token";
  auto b = svc_->List("acme", bad);
  ASSERT_TRUE(b.status().IsInvalidArgument());
  EXPECT_NE(b.status().message().find("pageToken"), std::string::npos);
  EXPECT_EQ(svc_->List("nobody").workflows_size(), 0);
}

}  // namespace
}  // namespace switchyard::service
