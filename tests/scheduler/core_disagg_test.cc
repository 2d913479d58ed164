// Disaggregation in the core (CoreOptions::disaggregation, core_disagg.cc): a call routed
// to a prefill worker prefills there, hands off once its first token is out, and decodes
// on a decode worker after its KV moved there as a latency-class move; colocated ignores
// the roles; auto sends a fresh prompt to the prefill worker only when the decode workers'
// batches would stall behind it, and keeps an append where its context lives.
#include <gtest/gtest.h>

#include "scheduler/core.h"
#include "scheduler/reference_policies.h"
#include "tests/scheduler/test_util.h"

namespace switchyard::scheduler {
namespace {

using testing::BlockBytes;
using testing::EngineReport;
using testing::FixedRateCost;
using testing::kBlock;
using testing::kBpt;
using testing::Llm;
using testing::LlmDone;
using testing::Submit;
using testing::Wf;
using testing::Xfer;

// Three workers: 0 prefills, 1 and 2 decode (when calls are disaggregated).
struct PdCore {
  explicit PdCore(Disaggregation mode)
      : fabric(SimulatedFabric::Options{.workers = 3}),
        core(Options(mode), &policy, &fabric, &fabric, &cost) {}
  static CoreOptions Options(Disaggregation mode) {
    CoreOptions o;
    o.workers = 3;
    o.hbm_bytes_per_worker = BlockBytes(10'000);
    o.kv_block_tokens = kBlock;
    o.use_host = o.use_disk = o.use_peer = false;
    o.worker_roles = {WorkerRole::kPrefill, WorkerRole::kDecode, WorkerRole::kDecode};
    o.disaggregation = mode;
    return o;
  }
  Commands At(double t, const Event& e) { return core.handle(e, Time::FromSeconds(t)); }
  KeepDuringToolPolicy policy;
  SimulatedFabric fabric;
  FixedRateCost cost{kBpt};
  Core core;
};

std::vector<const Command*> Of(const Commands& c, CommandKind k) {
  std::vector<const Command*> out;
  for (const Command& x : c.list)
    if (x.kind == k) out.push_back(&x);
  return out;
}

v1::Workflow OneCall(const std::string& id, int64_t prompt) {
  return Wf(id, "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, prompt, 64)});
}

TEST(CoreDisagg, AlwaysPrefillsOnThePrefillWorkerThenMovesTheKvToDecode) {
  PdCore f(Disaggregation::kAlways);
  Commands c = f.At(0, Submit(OneCall("a", 1000)));
  ASSERT_EQ(Of(c, CommandKind::kPlace).size(), 1u);
  EXPECT_EQ(Of(c, CommandKind::kPlace)[0]->worker, 0);
  // Halfway through the prefill nothing happens; once it is done (the first token out) the
  // call stops there, keeping its KV, and its context moves to a decode worker.
  c = f.At(0.01, EngineReport(0, {{"a", "x", 500, 0}}));
  EXPECT_TRUE(Of(c, CommandKind::kPreempt).empty());
  c = f.At(0.03, EngineReport(0, {{"a", "x", 1000, 1}}));
  ASSERT_EQ(Of(c, CommandKind::kPreempt).size(), 1u);
  EXPECT_FALSE(Of(c, CommandKind::kPreempt)[0]->reason.empty());
  ASSERT_EQ(Of(c, CommandKind::kPrefetch).size(), 1u);
  const Command move = *Of(c, CommandKind::kPrefetch)[0];
  EXPECT_EQ(move.src.tier, Tier::kHbm);
  EXPECT_EQ(move.src.worker, 0);
  EXPECT_EQ(move.dst.tier, Tier::kHbm);
  EXPECT_NE(move.dst.worker, 0);
  EXPECT_EQ(move.grant.traffic_class, TrafficClass::kLatency);
  EXPECT_EQ(move.bytes, BlockBytes(63));  // 1,001 tokens in 16-token blocks
  // Committed: the call resumes on the decode worker, its prefill and first token done.
  c = f.At(0.04, Xfer(move.transfer_id));
  ASSERT_EQ(Of(c, CommandKind::kPlace).size(), 1u);
  const Command place = *Of(c, CommandKind::kPlace)[0];
  EXPECT_EQ(place.worker, move.dst.worker);
  EXPECT_EQ(place.prefill_done, 1000);
  EXPECT_EQ(place.output_done, 1);
  EXPECT_EQ(place.recompute_tokens, 0);
  EXPECT_EQ(f.core.hbm_used(0), 0u);
  f.At(0.5, LlmDone("a", "x", 20, Seconds(0.5)));
  EXPECT_EQ(f.core.ContextTokens("a/c"), 1020);
  EXPECT_EQ(f.core.ContextLocation("a/c")->worker, move.dst.worker);
  const PdStats& pd = f.core.pd_stats();
  EXPECT_EQ(pd.calls, 1u);
  EXPECT_EQ(pd.disaggregated, 1u);
  EXPECT_EQ(pd.handoffs, 1u);
  EXPECT_EQ(pd.moves, 1u);
  EXPECT_EQ(pd.bytes_moved, BlockBytes(63));
}

TEST(CoreDisagg, ColocatedIgnoresTheRoles) {
  PdCore f(Disaggregation::kColocated);
  std::set<int> used;
  for (const char* id : {"a", "b", "c"}) {
    Commands c = f.At(0, Submit(OneCall(id, 1000)));
    ASSERT_EQ(Of(c, CommandKind::kPlace).size(), 1u);
    used.insert(Of(c, CommandKind::kPlace)[0]->worker);
  }
  EXPECT_EQ(used, (std::set<int>{0, 1, 2}));  // the prefill worker decodes too
  Commands c = f.At(0.03, EngineReport(0, {{"a", "x", 1000, 1}}));
  EXPECT_TRUE(Of(c, CommandKind::kPreempt).empty());
  EXPECT_EQ(f.core.pd_stats().calls, 3u);
  EXPECT_EQ(f.core.pd_stats().disaggregated, 0u);
}

TEST(CoreDisagg, AutoSplitsAFreshPromptOnlyWhenDecodeBatchesWouldStall) {
  PdCore f(Disaggregation::kAuto);
  // Idle decode workers: prefilling there costs nothing else, and the move would add to it.
  Commands c = f.At(0, Submit(OneCall("a", 10'000)));
  ASSERT_EQ(Of(c, CommandKind::kPlace).size(), 1u);
  EXPECT_NE(Of(c, CommandKind::kPlace)[0]->worker, 0);
  c = f.At(0, Submit(OneCall("b", 10'000)));
  ASSERT_EQ(Of(c, CommandKind::kPlace).size(), 1u);
  EXPECT_NE(Of(c, CommandKind::kPlace)[0]->worker, 0);
  // Both decode workers now run a call: a third 10k-token prefill there would stall it
  // (0.25 s), the prefill worker computes it at no one's cost.
  c = f.At(0.01, Submit(OneCall("d", 10'000)));
  ASSERT_EQ(Of(c, CommandKind::kPlace).size(), 1u);
  EXPECT_EQ(Of(c, CommandKind::kPlace)[0]->worker, 0);
  EXPECT_EQ(f.core.pd_stats().disaggregated, 1u);
}

TEST(CoreDisagg, AutoKeepsAnAppendWhereItsContextLives) {
  PdCore f(Disaggregation::kAuto);
  v1::Workflow w = Wf("a", "t",
                      {Llm("x", {}, "c", v1::CacheRef::CREATE, 10'000, 64),
                       Llm("y", {"x"}, "c", v1::CacheRef::EXTEND, 100, 64)});
  Commands c = f.At(0, Submit(w));
  ASSERT_EQ(Of(c, CommandKind::kPlace).size(), 1u);
  const int home = Of(c, CommandKind::kPlace)[0]->worker;
  ASSERT_NE(home, 0);
  // Another session decodes on each decode worker, so a prefill there is not free.
  f.At(0.1, Submit(OneCall("b", 50)));
  f.At(0.1, Submit(OneCall("d", 50)));
  const uint64_t split = f.core.pd_stats().disaggregated;  // b or d may have been
  c = f.At(1, LlmDone("a", "x", 30, Seconds(1)));
  ASSERT_EQ(Of(c, CommandKind::kPlace).size(), 1u);
  EXPECT_EQ(Of(c, CommandKind::kPlace)[0]->worker, home);  // 100 new tokens, not 10,130
  EXPECT_EQ(f.core.pd_stats().disaggregated, split);
}

}  // namespace
}  // namespace switchyard::scheduler
