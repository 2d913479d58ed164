// The embedding API end to end: an engine receives the scheduler's commands (queue and
// callback), runs the LLM nodes it is told to place and reports their results; the agent
// side reports its tool; the workflow completes and its status shows the decisions.
#include "service/embedded.h"

#include <gtest/gtest.h>

#include "base/mutex.h"
#include "proto/json.h"
#include "tests/common/wait_until.h"
#include "tests/service/pattern_engine.h"

#include <atomic>
#include <filesystem>
#include <thread>

namespace switchyard::service {
namespace {

using ::switchyard::testing::WaitUntil;

v1::ProgramNode Llm(const std::string& id, const std::vector<std::string>& deps,
                    v1::CacheRef::Mode mode) {
  v1::ProgramNode n;
  n.set_id(id);
  n.set_kind(v1::LLM);
  n.set_model_id("Llama-3.1-8B");
  for (const auto& d : deps) n.add_deps(d);
  auto* r = n.add_cache_refs();
  r->set_context("main");
  r->set_mode(mode);
  n.mutable_hints()->set_prompt_tokens(1000);
  n.mutable_hints()->set_extend_tokens(mode == v1::CacheRef::CREATE ? 1000 : 200);
  n.mutable_hints()->set_max_output_tokens(8);
  return n;
}

class EmbeddedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/sy_embedded_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<Embedded> Open() {
    EmbeddedOptions o;
    o.data_dir = dir_;
    o.durable = false;
    auto e = Embedded::Open(o);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? std::move(*e) : nullptr;
  }
  // Waits for the next command of `kind` for `node`, skipping others (WaitUntil's bound:
  // a failure then).
  static std::optional<EngineCommand> Expect(Embedded& e, const std::string& kind,
                                             const std::string& node) {
    std::optional<EngineCommand> c;
    // NextCommand waits for a command itself: no pause between polls.
    if (WaitUntil(
            [&] {
              c = e.NextCommand(Millis(10));
              return c && c->decision.kind() == kind &&
                     (node.empty() || c->decision.node_id() == node);
            },
            ::switchyard::testing::kWaitSeconds, std::chrono::microseconds(0)))
      return c;
    ADD_FAILURE() << "no '" << kind << "' command for " << node;
    return std::nullopt;
  }
  std::string dir_;
};

TEST_F(EmbeddedTest, EngineReceivesCommandsAndReportsResults) {
  auto e = Open();
  ASSERT_TRUE(e);
  v1::Workflow w;
  w.set_id("emb");
  *w.add_nodes() = Llm("plan", {}, v1::CacheRef::CREATE);
  v1::ProgramNode tool;
  tool.set_id("grep");
  tool.set_kind(v1::TOOL);
  tool.add_deps("plan");
  tool.mutable_hints()->set_expected_duration_ms(50);
  *w.add_nodes() = tool;
  ASSERT_TRUE(e->Submit(w).ok());

  auto place = Expect(*e, "place", "plan");
  ASSERT_TRUE(place);
  EXPECT_EQ(place->workflow_id, "emb");
  EXPECT_EQ(place->decision.worker(), 0);
  ASSERT_TRUE(e->LlmStarted("emb", "plan").ok());
  ASSERT_TRUE(e->LlmFinished("emb", "plan", 8).ok());

  ASSERT_TRUE(Expect(*e, "admit", "grep"));
  v1::NodeEvent ev;
  ev.set_node_id("grep");
  ev.set_type(v1::TOOL_STARTED);
  ASSERT_TRUE(e->Report("emb", ev).ok());
  ev.set_type(v1::TOOL_FINISHED);
  ASSERT_TRUE(e->Report("emb", ev).ok());

  // The engine now takes commands through a callback.
  std::atomic<int> places{0}, completes{0};
  e->OnCommand([&](const EngineCommand& c) {
    if (c.decision.kind() == "place" && c.decision.node_id() == "answer") {
      ++places;
      EXPECT_TRUE(e->LlmFinished(c.workflow_id, "answer", 8).ok());  // reentrant report
    }
    if (c.decision.kind() == "complete") ++completes;
  });
  ASSERT_TRUE(e->Append("emb", {Llm("answer", {"grep"}, v1::CacheRef::EXTEND)}).ok());
  ASSERT_TRUE(e->Close("emb").ok());
  ASSERT_TRUE(WaitUntil([&] { return completes.load() > 0; }));
  EXPECT_EQ(places.load(), 1);
  EXPECT_EQ(completes.load(), 1);
  auto st = e->Get("emb");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state(), v1::WORKFLOW_COMPLETED);
  EXPECT_GE(st->decisions_size(), 4);
  ASSERT_EQ(st->kv_size(), 1);
  EXPECT_EQ(st->kv(0).context(), "main");
  auto c = e->Cluster();
  EXPECT_EQ(c.model_executor(), "engine (reported LLM results)");
}

// A result for a node the scheduler has not placed is refused (FailedPrecondition naming
// the node): here "b" is READY but waits for a sequence slot (max_num_seqs 1) behind "a".
// Before the check, the service took it and marked "b" done without it ever running.
TEST_F(EmbeddedTest, ResultsForUnplacedNodesAreRefused) {
  EmbeddedOptions o;
  o.data_dir = dir_;
  o.durable = false;
  o.scheduler.max_num_seqs = 1;
  auto opened = Embedded::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Embedded& e = **opened;
  v1::Workflow a, b;
  a.set_id("a");
  *a.add_nodes() = Llm("a", {}, v1::CacheRef::CREATE);
  b.set_id("b");
  *b.add_nodes() = Llm("b", {}, v1::CacheRef::CREATE);
  ASSERT_TRUE(e.Submit(a).ok());
  ASSERT_TRUE(Expect(e, "place", "a"));
  ASSERT_TRUE(e.Submit(b).ok());
  // The scheduler has seen "b" and queued it (its ready queue holds it: no slot for it).
  ASSERT_TRUE(WaitUntil([&] { return e.service().scheduler()->metrics().queued_nodes() == 1; }));
  Status st = e.LlmFinished("b", "b", 8);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("node 'b' of workflow 'b'"), std::string::npos) << st;
  EXPECT_EQ(e.LlmStarted("b", "b").code(), StatusCode::kFailedPrecondition);
  v1::NodeEvent ev;
  ev.set_node_id("b");
  ev.set_type(v1::LLM_FAILED);
  EXPECT_EQ(e.Report("b", ev).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(e.Get("b")->nodes(0).state(), v1::NODE_READY);
  // "a" was placed: its result is taken; then "b" is placed and its result too.
  ASSERT_TRUE(e.LlmFinished("a", "a", 8).ok());
  ASSERT_TRUE(Expect(e, "place", "b"));
  ASSERT_TRUE(e.LlmFinished("b", "b", 8).ok());
  // Once ended, a node is no longer placed: a second result is refused.
  ASSERT_TRUE(WaitUntil([&] { return !e.service().scheduler()->Placed("a", "a"); }));
  EXPECT_EQ(e.LlmFinished("a", "a", 8).code(), StatusCode::kFailedPrecondition);
}

TEST_F(EmbeddedTest, RestartKeepsState) {
  {
    auto e = Open();
    ASSERT_TRUE(e);
    v1::Workflow w;
    w.set_id("early");
    *w.add_nodes() = Llm("plan", {}, v1::CacheRef::CREATE);
    ASSERT_TRUE(e->Submit(w).ok());
    ASSERT_TRUE(Expect(*e, "place", "plan"));
    ASSERT_TRUE(e->LlmFinished("early", "plan", 3).ok());
    ASSERT_TRUE(e->Close("early").ok());
    ASSERT_TRUE(Expect(*e, "complete", ""));
  }
  auto e = Open();  // restart on the same data dir
  ASSERT_TRUE(e);
  auto st = e->Get("early");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->state(), v1::WORKFLOW_COMPLETED);
  EXPECT_EQ(e->Get("nope").status().code(), StatusCode::kNotFound);
}

// The command stream says how a workflow ended: "cancel" for a cancelled one, "fail" (naming
// the node) for one whose node failed for good, never "complete".
TEST_F(EmbeddedTest, CommandStreamEndsWithCancelOrFail) {
  auto e = Open();
  ASSERT_TRUE(e);
  v1::Workflow w;
  w.set_id("gone");
  *w.add_nodes() = Llm("plan", {}, v1::CacheRef::CREATE);
  ASSERT_TRUE(e->Submit(w).ok());
  ASSERT_TRUE(Expect(*e, "place", "plan"));
  ASSERT_TRUE(e->Cancel("gone", "user left").ok());
  auto cancel = Expect(*e, "cancel", "");
  ASSERT_TRUE(cancel);
  EXPECT_EQ(cancel->workflow_id, "gone");

  w.set_id("broken");
  ASSERT_TRUE(e->Submit(w).ok());
  ASSERT_TRUE(Expect(*e, "place", "plan"));
  ASSERT_TRUE(e->LlmFailed("broken", "plan", "bad request", /*retryable=*/false).ok());
  auto fail = Expect(*e, "fail", "plan");
  ASSERT_TRUE(fail);
  EXPECT_EQ(fail->workflow_id, "broken");
  EXPECT_NE(fail->decision.reason().find("bad request"), std::string::npos)
      << fail->decision.reason();
  EXPECT_EQ(e->Get("broken")->state(), v1::WORKFLOW_FAILED);
}

// ---- The serving stack's own engines (EmbeddedOptions::engine_factory) ------------------

using testing::EngineProbe;
using testing::PatternOptions;

v1::ProgramNode PatternLlm(const std::string& id, const std::vector<std::string>& deps,
                           v1::CacheRef::Mode mode, int64_t extend, int64_t max_output) {
  v1::ProgramNode n = Llm(id, deps, mode);
  n.set_model_id("pattern-model");
  n.mutable_hints()->set_prompt_tokens(extend);
  n.mutable_hints()->set_extend_tokens(extend);
  n.mutable_hints()->set_max_output_tokens(max_output);
  return n;
}

v1::ProgramNode Tool(const std::string& id, const std::string& dep, int64_t expected_ms) {
  v1::ProgramNode t;
  t.set_id(id);
  t.set_kind(v1::TOOL);
  t.set_tool_name("Bash");
  t.add_deps(dep);
  t.mutable_hints()->set_expected_duration_ms(expected_ms);
  return t;
}

// plan (800 tokens of "main") -> bash (expected 10 min) -> answer, on a 1024-token pool.
v1::Workflow ToolWaitWorkflow(const std::string& id) {
  v1::Workflow w;
  w.set_id(id);
  *w.add_nodes() = PatternLlm("plan", {}, v1::CacheRef::CREATE, 800, 4);
  *w.add_nodes() = Tool("bash", "plan", 600000);
  *w.add_nodes() = PatternLlm("answer", {"bash"}, v1::CacheRef::EXTEND, 50, 4);
  return w;
}

void ReportTool(Embedded& e, const std::string& wf, const std::string& node,
                v1::NodeEventType type) {
  v1::NodeEvent ev;
  ev.set_node_id(node);
  ev.set_type(type);
  ASSERT_TRUE(e.Report(wf, ev).ok());
}

bool HasDecision(const v1::WorkflowStatus& s, const std::string& kind) {
  for (const auto& d : s.decisions())
    if (d.kind() == kind) return true;
  return false;
}

// Waits until the context "main" of `wf` is in the host or disk tier, not moving.
bool WaitDemoted(Embedded& e, const std::string& wf) {
  return WaitUntil([&] {
    auto st = e.Get(wf);
    if (st.ok())
      for (const auto& kv : st->kv())
        if (kv.context() == "main" && !kv.in_flight() &&
            (kv.tier() == "host" || kv.tier() == "disk"))
          return true;
    return false;
  });
}

TEST_F(EmbeddedTest, EngineMemoryIsDemotedDuringAToolAndPrefetchedBack) {
  EngineProbe probe;
  auto opened = Embedded::Open(PatternOptions(dir_, &probe, 1024));
  ASSERT_TRUE(opened.ok()) << opened.status();
  Embedded& e = **opened;
  ASSERT_TRUE(e.Submit(ToolWaitWorkflow("tw")).ok());
  ASSERT_TRUE(Expect(e, "admit", "bash"));
  ReportTool(e, "tw", "bash", v1::TOOL_STARTED);
  ASSERT_TRUE(WaitDemoted(e, "tw")) << "the scheduler never demoted main";
  ReportTool(e, "tw", "bash", v1::TOOL_FINISHED);
  ASSERT_TRUE(e.Close("tw").ok());
  ASSERT_TRUE(Expect(e, "complete", ""));
  auto st = e.Get("tw");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state(), v1::WORKFLOW_COMPLETED);
  EXPECT_TRUE(HasDecision(*st, "demote"));
  EXPECT_TRUE(HasDecision(*st, "prefetch"));
  MutexLock lock(&probe.mu);
  ASSERT_TRUE(probe.exported.count("tw/main"));
  ASSERT_TRUE(probe.imported.count("tw/main"));
  const std::vector<char>& out = probe.exported["tw/main"];
  const std::vector<char>& in = probe.imported["tw/main"];
  ASSERT_GE(in.size(), out.size());
  EXPECT_GE(out.size(), 800 * testing::kPatternTokenBytes);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin()))
      << "the engine's memory after the prefetch differs from what was demoted";
  // The answer ran on the restored context: nothing was rebuilt.
  bool found = false;
  for (const auto& [w, spec] : probe.admitted) {
    if (spec.key != "tw/answer") continue;
    found = true;
    ASSERT_FALSE(spec.contexts.empty());
    EXPECT_TRUE(spec.contexts[0].resident);
    EXPECT_EQ(spec.prefill_tokens, 50);
  }
  EXPECT_TRUE(found);
  EXPECT_NE(e.Cluster().model_executor().find("pattern engine"), std::string::npos);
}

// After a model epoch change the demoted copy is stale: the context is dropped and the
// answer recomputes it instead of a prefetch bringing it back.
TEST_F(EmbeddedTest, EpochBumpInvalidatesBlocksAndTheNextCallRecomputes) {
  EngineProbe probe;
  auto opened = Embedded::Open(PatternOptions(dir_, &probe, 1024));
  ASSERT_TRUE(opened.ok()) << opened.status();
  Embedded& e = **opened;
  ASSERT_TRUE(e.Submit(ToolWaitWorkflow("ep")).ok());
  ASSERT_TRUE(Expect(e, "admit", "bash"));
  ReportTool(e, "ep", "bash", v1::TOOL_STARTED);
  ASSERT_TRUE(WaitDemoted(e, "ep"));
  EXPECT_EQ(e.BumpModelEpoch("").status().code(), StatusCode::kInvalidArgument);
  auto epoch = e.BumpModelEpoch("pattern-model");
  ASSERT_TRUE(epoch.ok()) << epoch.status();
  EXPECT_EQ(*epoch, 1u);
  ASSERT_TRUE(Expect(e, "discard", ""));
  ReportTool(e, "ep", "bash", v1::TOOL_FINISHED);
  ASSERT_TRUE(e.Close("ep").ok());
  ASSERT_TRUE(Expect(e, "complete", ""));
  auto st = e.Get("ep");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state(), v1::WORKFLOW_COMPLETED);
  EXPECT_FALSE(HasDecision(*st, "prefetch"));
  MutexLock lock(&probe.mu);
  EXPECT_FALSE(probe.imported.count("ep/main"));
  bool found = false;
  for (const auto& [w, spec] : probe.admitted) {
    if (spec.key != "ep/answer") continue;
    found = true;
    ASSERT_FALSE(spec.contexts.empty());
    EXPECT_FALSE(spec.contexts[0].resident);
    EXPECT_GE(spec.prefill_tokens, 800 + 50);  // the context rebuilt, then the new tokens
  }
  EXPECT_TRUE(found);
}

// The engines' step reports reach the runtime: first tokens are timed from them, and when
// decodes exhaust the pool the core preempts a sequence (reported by the engine, not told).
TEST_F(EmbeddedTest, StepReportsReachTheRuntimeAndExhaustionPreempts) {
  EngineProbe probe;
  // No step ends before both sequences are in the pool: they then decode side by side
  // (2 x 700 tokens > 1024), however fast the first would run alone.
  probe.steps_wait_for_admissions = 2;
  auto opened = Embedded::Open(PatternOptions(dir_, &probe, 1024));
  ASSERT_TRUE(opened.ok()) << opened.status();
  Embedded& e = **opened;
  for (const char* id : {"s1", "s2"}) {
    v1::Workflow w;
    w.set_id(id);
    *w.add_nodes() = PatternLlm("gen", {}, v1::CacheRef::CREATE, 300, 400);
    ASSERT_TRUE(e.Submit(w).ok());
    ASSERT_TRUE(e.Close(id).ok());
  }
  int completes = 0;
  bool preempted = false;
  WaitUntil(
      [&] {
        auto c = e.NextCommand(Millis(10));  // waits for a command itself
        if (c) {
          completes += c->decision.kind() == "complete";
          preempted |= c->decision.kind() == "preempt";
        }
        return completes >= 2;
      },
      ::switchyard::testing::kWaitSeconds, std::chrono::microseconds(0));
  EXPECT_EQ(completes, 2);
  EXPECT_TRUE(preempted) << "700 tokens of output on a 1024-token pool never ran out";
  for (const char* id : {"s1", "s2"}) {
    auto st = e.Get(id);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->state(), v1::WORKFLOW_COMPLETED) << id;
    EXPECT_GT(st->nodes(0).first_token_ms(), 0) << id << ": no step report reached the driver";
  }
  MutexLock lock(&probe.mu);
  EXPECT_GE(probe.steps, 400);
  // Results come from the step reports; an engine-side report is refused.
  EXPECT_EQ(e.LlmFinished("s1", "gen", 1).code(), StatusCode::kFailedPrecondition);
}

// A worker that hangs is declared lost: its idempotent node is recomputed on the other
// worker and its workflow completes; a side-effecting node fails its workflow closed and
// never runs twice.
TEST_F(EmbeddedTest, WorkerLossRecomputesElsewhereOrFailsClosed) {
  EngineProbe probe;
  auto opened = Embedded::Open(PatternOptions(dir_, &probe, 1024, /*workers=*/2));
  ASSERT_TRUE(opened.ok()) << opened.status();
  Embedded& e = **opened;
  EXPECT_EQ(e.WorkerLost(2, "no such worker").code(), StatusCode::kInvalidArgument);

  probe.hold_next = true;
  v1::Workflow w;
  w.set_id("idem");
  *w.add_nodes() = PatternLlm("gen", {}, v1::CacheRef::CREATE, 100, 4);
  ASSERT_TRUE(e.Submit(w).ok());
  ASSERT_TRUE(e.Close("idem").ok());
  auto place = Expect(e, "place", "gen");
  ASSERT_TRUE(place);
  const int lost = place->decision.worker();
  ASSERT_TRUE(WaitUntil([&] { return !probe.hold_next.load(); })) << "the held step never ran";
  ASSERT_TRUE(e.WorkerLost(lost, "test: engine hung").ok());
  auto again = Expect(e, "place", "gen");
  ASSERT_TRUE(again);
  EXPECT_NE(again->decision.worker(), lost);
  ASSERT_TRUE(Expect(e, "complete", ""));
  EXPECT_EQ(e.Get("idem")->state(), v1::WORKFLOW_COMPLETED);
  // Its status counts both attempts: the one on the lost worker and the one that finished.
  EXPECT_EQ(e.Get("idem")->nodes(0).attempts(), 2u) << *proto::ToJson(*e.Get("idem"));

  // The side effect: on the surviving worker, which is then lost too.
  probe.hold_next = true;
  w.set_id("effect");
  w.mutable_nodes(0)->set_side_effect(true);
  ASSERT_TRUE(e.Submit(w).ok());
  place = Expect(e, "place", "gen");
  ASSERT_TRUE(place);
  ASSERT_TRUE(WaitUntil([&] { return !probe.hold_next.load(); })) << "the held step never ran";
  ASSERT_TRUE(e.WorkerLost(place->decision.worker(), "test: engine hung").ok());
  auto fail = Expect(e, "fail", "");
  ASSERT_TRUE(fail);
  EXPECT_EQ(fail->workflow_id, "effect");
  EXPECT_EQ(e.Get("effect")->state(), v1::WORKFLOW_FAILED);
  EXPECT_EQ(probe.Admissions("effect/gen"), 1);

  // Each loss left its evidence in the workflow's durable log, read back after a restart.
  auto check = [&](Embedded& emb, const std::string& id, const char* action) {
    auto st = emb.Get(id);
    ASSERT_TRUE(st.ok()) << st.status();
    ASSERT_EQ(st->worker_losses_size(), 1) << *proto::ToJson(*st);
    const v1::WorkerLoss& l = st->worker_losses(0);
    EXPECT_NE(l.reason().find("test: engine hung"), std::string::npos) << l.reason();
    EXPECT_GT(l.time_ms(), 0);
    ASSERT_EQ(l.nodes_size(), 1);
    EXPECT_EQ(l.nodes(0), "gen");
    bool acted = false;
    for (const std::string& a : l.actions()) acted |= a.rfind(action, 0) == 0;
    EXPECT_TRUE(acted) << id << ": no '" << action << "' among " << *proto::ToJson(l);
  };
  check(e, "idem", "retry");
  check(e, "effect", "fail");
  EXPECT_EQ(e.Get("idem")->worker_losses(0).worker(), lost);
  opened->reset();
  EngineProbe again_probe;
  auto reopened = Embedded::Open(PatternOptions(dir_, &again_probe, 1024, 2));
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  check(**reopened, "idem", "retry");
  check(**reopened, "effect", "fail");
  EXPECT_EQ((*reopened)->Get("idem")->nodes(0).attempts(), 2u);
  EXPECT_EQ((*reopened)->Get("effect")->nodes(0).attempts(), 1u) << "the side effect ran once";
}

}  // namespace
}  // namespace switchyard::service
