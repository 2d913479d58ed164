// The core against a continuously batching engine (kEngineReport): admission by free KV
// blocks with a watermark, decode growth reserved as the engine reports it, pool
// exhaustion answered by each policy's victim rule, and the recompute charge of a node
// preempted part-way through rebuilding its context.
#include <gtest/gtest.h>

#include "scheduler/core.h"
#include "scheduler/policy.h"
#include "scheduler/reference_policies.h"
#include "tests/scheduler/test_util.h"

namespace switchyard::scheduler {
namespace {

using testing::BlockBytes;
using testing::CoreFixture;
using testing::EngineReport;
using testing::kBlock;
using testing::kBpt;
using testing::Llm;
using testing::LlmDone;
using testing::Submit;
using testing::Tool;
using testing::Wf;

CoreOptions OneWorker(int64_t blocks, double watermark = 0) {
  CoreOptions o;
  o.workers = 1;
  o.hbm_bytes_per_worker = static_cast<uint64_t>(blocks * kBlock) * kBpt;
  o.kv_block_tokens = kBlock;
  o.admission_watermark = watermark;
  o.use_host = o.use_disk = o.use_peer = false;
  return o;
}

std::vector<std::string> Kinds(const Commands& c, CommandKind k) {
  std::vector<std::string> out;
  for (const Command& x : c.list)
    if (x.kind == k) out.push_back(x.workflow_id + "/" + x.node_id + x.context);
  return out;
}

TEST(CoreEngine, AdmitsByPrefillBlocksAndReservesDecodeAsReported) {
  VllmFcfsPolicy policy;
  CoreFixture f(OneWorker(10), &policy);
  // 33 prompt tokens = 3 blocks at admission; the 256-token cap is not reserved up front.
  Commands c = f.At(0, Submit(Wf("a", "t", {Llm("x", {}, "ctx", v1::CacheRef::CREATE, 33, 256)})));
  ASSERT_EQ(Kinds(c, CommandKind::kPlace).size(), 1u);
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(3));
  // 15 output tokens later the context holds 48 tokens: still 3 blocks.
  f.At(1, EngineReport(0, {{"a", "x", 33, 15}}));
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(3));
  // One more token crosses into a fourth block.
  f.At(2, EngineReport(0, {{"a", "x", 33, 16}}));
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(4));
  // The end: 33 + 20 = 53 tokens stay with the context (4 blocks), nothing reserved.
  f.At(3, LlmDone("a", "x", 20, Seconds(3)));
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(4));
  EXPECT_EQ(f.core.ContextTokens("a/ctx"), 53);
}

TEST(CoreEngine, VllmBlocksTheHeadOfTheLine) {
  VllmFcfsPolicy policy;
  CoreFixture f(OneWorker(100), &policy);
  f.At(0, Submit(Wf("a", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 60 * kBlock, 8)})));
  f.At(1, Submit(Wf("b", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 41 * kBlock, 8)})));
  // d would fit, but b is ahead of it and does not: vLLM admits nobody behind b.
  Commands c =
      f.At(2, Submit(Wf("d", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 10 * kBlock, 8)})));
  EXPECT_TRUE(Kinds(c, CommandKind::kPlace).empty());
  KeepDuringToolPolicy other;  // looks past b
  CoreFixture g(OneWorker(100), &other);
  g.At(0, Submit(Wf("a", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 60 * kBlock, 8)})));
  g.At(1, Submit(Wf("b", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 41 * kBlock, 8)})));
  c = g.At(2, Submit(Wf("d", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 10 * kBlock, 8)})));
  EXPECT_EQ(Kinds(c, CommandKind::kPlace), std::vector<std::string>{"d/x"});
}

TEST(CoreEngine, WatermarkKeepsRoomForRunningDecodes) {
  KeepDuringToolPolicy policy;
  CoreFixture f(OneWorker(100, 0.1), &policy);  // 10 blocks kept free once something runs
  f.At(0, Submit(Wf("a", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 50 * kBlock, 8)})));
  // 41 blocks would leave 9 < 10 free: waits.
  Commands c =
      f.At(0, Submit(Wf("b", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 41 * kBlock, 8)})));
  EXPECT_TRUE(Kinds(c, CommandKind::kPlace).empty());
  // 40 blocks leave exactly 10: admitted.
  c = f.At(0, Submit(Wf("d", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 40 * kBlock, 8)})));
  EXPECT_EQ(Kinds(c, CommandKind::kPlace), std::vector<std::string>{"d/x"});
}

TEST(CoreEngine, PoolExhaustionPreemptsTheMostRecentlyAdmittedUnderVllm) {
  VllmFcfsPolicy policy;
  CoreFixture f(OneWorker(8), &policy);
  f.At(0, Submit(Wf("a", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 4 * kBlock, 64)})));
  f.At(0, Submit(Wf("b", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 3 * kBlock, 64)})));
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(7));
  // a grows into the last block; then both need a new block: the pool is out.
  f.At(1, EngineReport(0, {{"a", "x", 4 * kBlock, 1}, {"b", "x", 3 * kBlock, 0}}));
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(8));
  Commands c = f.At(2, EngineReport(0, {}, {{"a", "x", 0, 0}, {"b", "x", 0, 0}}));
  // vLLM's rule: the most recently admitted (b) goes, its KV freed for recompute.
  EXPECT_EQ(Kinds(c, CommandKind::kPreempt), std::vector<std::string>{"b/x"});
  EXPECT_EQ(Kinds(c, CommandKind::kDiscard), std::vector<std::string>{"b/b/c"});
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(5));
  EXPECT_EQ(f.core.ContextLocation("b/c")->tier, Tier::kNone);
  // b is back in the queue: placed again once a finishes, recomputing what it had.
  c = f.At(3, LlmDone("a", "x", 10, Seconds(3)));
  ASSERT_EQ(Kinds(c, CommandKind::kPlace), std::vector<std::string>{"b/x"});
  for (const Command& x : c.list)
    if (x.kind == CommandKind::kPlace) {
      EXPECT_EQ(x.recompute_tokens, 3 * kBlock);
    }
}

TEST(CoreEngine, IdleContextsAreEvictedBeforeAnyRunningNodeIsPreempted) {
  VllmFcfsPolicy policy;
  CoreFixture f(OneWorker(8), &policy);
  // a's first call leaves a 3-block context idle during its tool.
  f.At(0, Submit(Wf("a", "t",
                    {Llm("x", {}, "c", v1::CacheRef::CREATE, 3 * kBlock - 4, 64),
                     Tool("t", {"x"}, "bash", 60000)})));
  f.At(1, LlmDone("a", "x", 4, Seconds(1)));
  f.At(1, testing::Of(EventKind::kToolStarted, "a", "t"));
  f.At(1, Submit(Wf("b", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 5 * kBlock, 64)})));
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(8));
  Commands c = f.At(2, EngineReport(0, {}, {{"b", "x", 0, 0}}));
  EXPECT_TRUE(Kinds(c, CommandKind::kPreempt).empty());
  EXPECT_EQ(Kinds(c, CommandKind::kDiscard), std::vector<std::string>{"a/a/c"});
}

// A policy may choose another victim: the oldest admitted here.
class OldestVictim final : public Policy {
 public:
  std::string_view name() const override { return "oldest-victim"; }
  OrderKey Order(const ReadyNodeInfo& n) const override { return {0, n.ready_since.seconds()}; }
  WaitDecision OnWait(const WaitInput&) const override { return {WaitAction::kDiscard}; }
  size_t ChoosePoolVictim(const std::vector<PoolVictimInfo>& running) const override {
    size_t v = 0;
    for (size_t i = 1; i < running.size(); ++i)
      if (running[i].admitted_seq < running[v].admitted_seq) v = i;
    return v;
  }
};

// Workflow a: x creates context c (2 blocks of prompt, 8 output tokens: 40 tokens), tool t
// starts (the policy decides c's fate), then y extends c by one block.
void StartToolWait(CoreFixture& f) {
  f.At(0, Submit(Wf("a", "t",
                    {Llm("x", {}, "c", v1::CacheRef::CREATE, 2 * kBlock, 8),
                     Tool("t", {"x"}, "bash", 60000),
                     Llm("y", {"t"}, "c", v1::CacheRef::EXTEND, kBlock, 32)})));
  f.At(1, LlmDone("a", "x", 8, Seconds(1)));
  f.At(1, testing::Of(EventKind::kToolStarted, "a", "t"));
}

// Preempted part-way through recomputing a discarded context: the partial blocks are
// dropped and the next placement is charged the whole recompute again.
TEST(CoreEngine, PreemptedWhileRecomputingIsChargedTheWholeRecomputeAgain) {
  OldestVictim policy;  // discards every waiting context; the oldest node is the victim
  CoreFixture f(OneWorker(8), &policy);
  StartToolWait(f);
  EXPECT_EQ(f.core.ContextLocation("a/c")->tier, Tier::kNone);
  auto recompute_of = [](const Commands& c, const std::string& wf) {
    for (const Command& x : c.list)
      if (x.kind == CommandKind::kPlace && x.workflow_id == wf) return x.recompute_tokens;
    return int64_t{-1};
  };
  Commands c = f.At(2, testing::ToolDone("a", "t"));
  ASSERT_EQ(recompute_of(c, "a"), 2 * kBlock + 8);  // 40 tokens rebuilt, then 16 new
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(4));
  f.At(2, Submit(Wf("b", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 4 * kBlock, 64)})));
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(8));
  // 10 of a's 40 recompute tokens are done when b finds no block: a (the oldest) goes.
  f.At(3, EngineReport(0, {{"a", "y", 10, 0}}));
  c = f.At(4, EngineReport(0, {}, {{"b", "x", 0, 0}}));
  ASSERT_EQ(Kinds(c, CommandKind::kPreempt), std::vector<std::string>{"a/y"});
  EXPECT_EQ(f.core.ContextLocation("a/c")->tier, Tier::kNone);
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(4));
  // Placed again when b ends: the whole 40-token rebuild, not the 30 left.
  c = f.At(5, LlmDone("b", "x", 1, Seconds(1)));
  EXPECT_EQ(recompute_of(c, "a"), 2 * kBlock + 8);
}

// Records what the core tells it about the running node it could preempt for an urgent
// one, and never preempts.
class RecordingPreempter final : public Policy {
 public:
  std::string_view name() const override { return "recording-preempter"; }
  OrderKey Order(const ReadyNodeInfo& n) const override { return {0, n.ready_since.seconds()}; }
  bool DeadlineAware() const override { return true; }
  WaitDecision OnWait(const WaitInput&) const override { return {WaitAction::kDiscard}; }
  std::optional<size_t> ChoosePreemptionVictim(
      const PreemptionInput&, const std::vector<RunningInfo>& running) const override {
    seen.insert(seen.end(), running.begin(), running.end());
    return std::nullopt;
  }
  mutable std::vector<RunningInfo> seen;
};

// An urgent node that fits nowhere asks about a node rebuilding a discarded context: the
// policy is told how many rebuilt tokens a preemption would throw away (all done so far
// until the rebuild completes, none after).
TEST(CoreEngine, AnUrgentNodeIsToldWhatPreemptingARebuildWouldThrowAway) {
  RecordingPreempter policy;
  CoreFixture f(OneWorker(8), &policy);
  StartToolWait(f);
  f.At(2, testing::ToolDone("a", "t"));  // y placed: 40 tokens rebuilt, then 16 new
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(4));
  // b needs 5 blocks, 4 are free: urgent (a deadline) and admissible nowhere.
  f.At(2, Submit(Wf("b", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 4 * kBlock + 1, 8)}, 2500)));
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(4));
  f.At(3, EngineReport(0, {{"a", "y", 10, 0}}));
  ASSERT_EQ(policy.seen.size(), 1u);
  EXPECT_EQ(policy.seen[0].prefill_remaining_tokens, 2 * kBlock + 8 + kBlock - 10);
  EXPECT_EQ(policy.seen[0].rebuild_lost_tokens, 10);
  f.At(4, EngineReport(0, {{"a", "y", 45, 0}}));  // the rebuild is complete: nothing to lose
  ASSERT_EQ(policy.seen.size(), 2u);
  EXPECT_EQ(policy.seen[1].rebuild_lost_tokens, 0);
  EXPECT_EQ(policy.seen[1].prefill_remaining_tokens, 2 * kBlock + 8 + kBlock - 45);
}

TEST(CoreEngine, ThePolicyPicksThePoolVictim) {
  OldestVictim policy;
  CoreFixture f(OneWorker(8), &policy);
  f.At(0, Submit(Wf("a", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 4 * kBlock, 64)})));
  f.At(0, Submit(Wf("b", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 4 * kBlock, 64)})));
  Commands c = f.At(1, EngineReport(0, {}, {{"b", "x", 0, 0}}));
  EXPECT_EQ(Kinds(c, CommandKind::kPreempt), std::vector<std::string>{"a/x"});
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(4));  // only b's blocks are left
}

// A context its workflow has moved on from (it created a newer one, and no known node
// reads the old) is evicted before an older context that may still be used.
TEST(CoreEngine, SupersededContextsAreEvictedFirst) {
  KeepDuringToolPolicy policy;  // default eviction order; evicted contexts are discarded
  CoreFixture f(OneWorker(3 + 3 + 3 + 2), &policy);
  // z: an idle 3-block context, the oldest.
  f.At(0, Submit(Wf("z", "t",
                    {Llm("x", {}, "c", v1::CacheRef::CREATE, 3 * kBlock - 4, 4),
                     Tool("t", {"x"}, "bash", 60000)})));
  f.At(1, LlmDone("z", "x", 4, Seconds(1)));
  f.At(1, testing::Of(EventKind::kToolStarted, "z", "t"));
  // a: c1 then c2 (the prompt diverged), then a tool: c1 is superseded.
  f.At(2, Submit(Wf("a", "t",
                    {Llm("x", {}, "c1", v1::CacheRef::CREATE, 3 * kBlock - 4, 4),
                     Llm("y", {"x"}, "c2", v1::CacheRef::CREATE, 3 * kBlock - 4, 4),
                     Tool("t", {"y"}, "bash", 60000)})));
  f.At(3, LlmDone("a", "x", 4, Seconds(1)));
  f.At(4, LlmDone("a", "y", 4, Seconds(1)));
  f.At(4, testing::Of(EventKind::kToolStarted, "a", "t"));
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(9));
  Commands c =
      f.At(5, Submit(Wf("b", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 3 * kBlock, 4)})));
  EXPECT_EQ(Kinds(c, CommandKind::kDiscard), std::vector<std::string>{"a/a/c1"});
  EXPECT_EQ(Kinds(c, CommandKind::kPlace), std::vector<std::string>{"b/x"});
}

// Continuum through the real core: a context pinned for tau* is evicted after an
// unpinned, younger one while the pin lasts, and by plain LRU once tau* has passed.
std::string EvictedUnderContinuum(double demand_at) {
  ContinuumPolicy policy;
  CoreFixture f(OneWorker(12501 + 251 + 150), &policy);
  // a: a 200,000-token context (5 s to recompute): cold start pins it for ln(5 s) = 1.6 s.
  f.At(0, Submit(Wf("a", "t",
                    {Llm("x", {}, "c", v1::CacheRef::CREATE, 200000 - 4, 4),
                     Tool("t", {"x"}, "bash", 60000)})));
  f.At(0.1, LlmDone("a", "x", 4, Seconds(0.1)));
  f.At(0.1, testing::Of(EventKind::kToolStarted, "a", "t"));
  // c: 4,000 tokens (0.1 s to recompute): ln(0.1 s) < 0, never pinned.
  f.At(0.2, Submit(Wf("c", "t",
                      {Llm("x", {}, "c", v1::CacheRef::CREATE, 4000 - 4, 4),
                       Tool("t", {"x"}, "bash", 60000)})));
  f.At(0.3, LlmDone("c", "x", 4, Seconds(0.1)));
  f.At(0.3, testing::Of(EventKind::kToolStarted, "c", "t"));
  Commands c = f.At(
      demand_at, Submit(Wf("d", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 200 * kBlock, 4)})));
  std::vector<std::string> gone = Kinds(c, CommandKind::kDiscard);
  return gone.size() == 1 ? gone[0] : "";
}

TEST(CoreEngine, ContinuumPinsForTauThenFreesTheContext) {
  EXPECT_EQ(EvictedUnderContinuum(1.0), "c/c/c");  // a is pinned until ~1.7 s: c goes
  EXPECT_EQ(EvictedUnderContinuum(3.0), "a/a/c");  // the pin expired: a is the LRU one
}

// Autellix's anti-starvation through the real core: queued calls are keyed again every
// second, so a program that waited long enough overtakes younger ones.
TEST(CoreEngine, AutellixRekeysWaitingCallsSoAStarvingProgramRunsFirst) {
  AutellixPolicy policy;
  CoreOptions o = OneWorker(1000);
  o.max_num_seqs = 1;
  CoreFixture f(o, &policy);
  // "old" has 2 s of service behind it, so it queues behind fresh programs (queue 1)...
  f.At(0, Submit(Wf("old", "t",
                    {Llm("a", {}, "c", v1::CacheRef::CREATE, 16, 4),
                     Llm("b", {"a"}, "c", v1::CacheRef::EXTEND, 16, 4)})));
  f.At(1, Submit(Wf("y0", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 16, 4)})));
  Commands c = f.At(2, LlmDone("old", "a", 4, Seconds(2)));  // old/b queued; y0 runs
  ASSERT_EQ(Kinds(c, CommandKind::kPlace), std::vector<std::string>{"y0/x"});
  // ...while a stream of young programs keeps the single sequence busy.
  std::string last_placed;
  for (int i = 1; i < 40; ++i) {
    double t = 2 + i;
    f.At(t, Submit(Wf("y" + std::to_string(i), "t",
                      {Llm("x", {}, "c", v1::CacheRef::CREATE, 16, 4)})));
    c = f.At(t, LlmDone("y" + std::to_string(i - 1), "x", 4, Millis(500)));
    for (const Command& x : c.list)
      if (x.kind == CommandKind::kPlace) last_placed = x.workflow_id;
    if (last_placed == "old") break;
  }
  // W/T >= 8 with T = 2 s: after about 16 s of waiting old/b is promoted and placed.
  EXPECT_EQ(last_placed, "old");
  EXPECT_GE(f.core.queued_nodes(), 1u);  // the young program that arrived meanwhile waits
}

}  // namespace
}  // namespace switchyard::scheduler
