// Placement with the load a worker's engine reports (kWorkerLoad: in proxy mode an
// upstream's Prometheus gauges, which count other clients' requests too): a new call goes
// where less is reported; a waiting session moves off its worker only when the load it
// avoids costs more than recomputing its context elsewhere; a stale report stops counting.
#include <gtest/gtest.h>

#include <optional>

#include "scheduler/core.h"
#include "scheduler/policy.h"
#include "tests/scheduler/test_util.h"

namespace switchyard::scheduler {
namespace {

using testing::kBlock;
using testing::kBpt;
using testing::Llm;
using testing::LlmDone;
using testing::Of;
using testing::Submit;
using testing::Tool;
using testing::ToolDone;
using testing::Wf;

// Prefill 25 us/token; a decode step reads the weights (5 ms) and every running
// sequence's KV (100 ns/token): the batch's KV is what makes a loaded worker slower.
class KvReadCost final : public ComputeCostModel {
 public:
  Duration PrefillTime(int64_t n, int64_t) const override { return Micros(25) * n; }
  Duration DecodeTime(int64_t s, int64_t kv_tokens) const override {
    return Millis(5) * s + std::chrono::nanoseconds(100) * kv_tokens;
  }
  uint64_t KvBytesPerToken() const override { return kBpt; }
};

constexpr int64_t kPoolTokens = 100'000;

struct LoadFixture {
  // `linked`: the fabric has a 50 GB/s path between the workers (else none: a context
  // elsewhere can only be recomputed, whatever kv_between_workers says).
  // `priced`: the cost model the core prices with (nullptr: KvReadCost).
  explicit LoadFixture(bool kv_between_workers = true, bool linked = false,
                       const ComputeCostModel* priced = nullptr)
      : fabric(SimulatedFabric::Options{.workers = linked ? 2 : 1}),
        core(Options(kv_between_workers), &policy, &fabric, &fabric, priced ? priced : &cost) {}
  static CoreOptions Options(bool kv_between_workers) {
    CoreOptions o;
    o.kv_between_workers = kv_between_workers;
    o.workers = 2;
    o.hbm_bytes_per_worker = static_cast<uint64_t>(kPoolTokens) * kBpt;
    o.kv_block_tokens = kBlock;
    o.use_host = o.use_disk = o.use_peer = false;  // a waiting context is kept or dropped
    return o;
  }
  Commands At(double t, const Event& e) { return core.handle(e, Time::FromSeconds(t)); }
  // The worker `node` of `wf` was placed on by `c` (-1: not placed).
  static int PlacedOn(const Commands& c, const std::string& wf, const std::string& node) {
    for (const Command& x : c.list)
      if (x.kind == CommandKind::kPlace && x.workflow_id == wf && x.node_id == node)
        return x.worker;
    return -1;
  }
  // One call of 100 output tokens run and finished on worker 0: the mean the load term
  // prices a call's decode by.
  void LearnOutputMean() {
    ASSERT_EQ(
        PlacedOn(
            At(0, Submit(Wf("warm", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 100, 100)}))),
            "warm", "x"),
        0);
    At(0.5, LlmDone("warm", "x", 100, Seconds(0.5)));
  }
  static Event Load(int worker, double running, double waiting, double kv_usage) {
    Event e;
    e.kind = EventKind::kWorkerLoad;
    e.worker = worker;
    e.load = {running, waiting, kv_usage};
    return e;
  }

  SwitchyardPolicy policy;
  SimulatedFabric fabric;
  KvReadCost cost;
  Core core;
};

// KvReadCost with a price per batched sequence, as a CPU engine's measured step table has
// (executors::StepTableCostModel): 2 ms for each sequence a decode step carries.
class PerSequenceCost final : public ComputeCostModel {
 public:
  Duration PrefillTime(int64_t n, int64_t c) const override { return kv_.PrefillTime(n, c); }
  Duration DecodeTime(int64_t s, int64_t c) const override { return kv_.DecodeTime(s, c); }
  Duration BatchStepTime(int64_t seqs, int64_t kv_tokens) const override {
    return kv_.DecodeTime(1, kv_tokens) + Millis(2) * seqs;
  }
  uint64_t KvBytesPerToken() const override { return kBpt; }

 private:
  KvReadCost kv_;
};

v1::Workflow OneCall(const std::string& id) {
  return Wf(id, "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 500, 100)});
}

TEST(CoreReportedLoad, ANewCallGoesWhereTheEngineReportsLessLoadWhileTheReportIsFresh) {
  LoadFixture f;
  f.LearnOutputMean();
  // Nothing reported: both workers cost the same and the first wins.
  ASSERT_EQ(LoadFixture::PlacedOn(f.At(1, Submit(OneCall("a"))), "a", "x"), 0);
  f.At(1.5, LlmDone("a", "x", 100, Seconds(0.5)));
  // Worker 0's engine runs 12 requests of other clients over 90 % of its KV.
  EXPECT_TRUE(f.At(2, LoadFixture::Load(0, 12, 0, 0.9)).list.empty());
  std::optional<ReportedLoad> r = f.core.reported_load(0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->running, 12);
  EXPECT_FALSE(f.core.reported_load(1).has_value());
  EXPECT_EQ(LoadFixture::PlacedOn(f.At(2.5, Submit(OneCall("b"))), "b", "x"), 1);
  f.At(3, LlmDone("b", "x", 100, Seconds(0.5)));
  // Requests queued there weigh too, with no KV share reported.
  f.At(3.5, LoadFixture::Load(0, 4, 8, -1));
  EXPECT_EQ(LoadFixture::PlacedOn(f.At(4, Submit(OneCall("c"))), "c", "x"), 1);
  f.At(4.5, LlmDone("c", "x", 100, Seconds(0.5)));
  // Ten seconds on, the report is stale (the engine's reporter went quiet): it no longer
  // counts, and worker 0 is as good as worker 1 again.
  EXPECT_EQ(LoadFixture::PlacedOn(f.At(14, Submit(OneCall("d"))), "d", "x"), 0);
  EXPECT_FALSE(f.core.reported_load(0).has_value());
  // A report for a worker that does not exist changes nothing.
  EXPECT_TRUE(f.At(15, LoadFixture::Load(7, 1, 1, 1)).list.empty());
}

// Worker 0's engine runs 12 short requests of other clients (their KV share next to
// nothing): a GPU's step barely notices them, a CPU engine's pays for each. Where a new
// call goes depends on which engine the core's cost model says it prices.
TEST(CoreReportedLoad, SequencesTheEngineBatchesCountWhereItsCostModelPricesThem) {
  auto placed = [](const ComputeCostModel* priced) {
    LoadFixture f(true, false, priced);
    f.LearnOutputMean();
    f.At(2, LoadFixture::Load(0, 12, 0, 1e-6));
    return LoadFixture::PlacedOn(f.At(2.5, Submit(OneCall("a"))), "a", "x");
  };
  EXPECT_EQ(placed(nullptr), 0) << "KV read only: both workers cost the same; the first wins";
  const PerSequenceCost per_sequence;
  EXPECT_EQ(placed(&per_sequence), 1) << "13 sequences a step against 1";
}

// Session "s": a call creating a context of `tokens` on worker 0, then a tool wait (started
// at 2 s), then a call extending it.
void StartWaitingSession(LoadFixture& f, int64_t tokens) {
  v1::Workflow s =
      Wf("s", "t",
         {Llm("a", {}, "ctx", v1::CacheRef::CREATE, tokens, 100), Tool("t", {"a"}, "bash", 5000),
          Llm("b", {"t"}, "ctx", v1::CacheRef::EXTEND, 10, 100)});
  ASSERT_EQ(LoadFixture::PlacedOn(f.At(1, Submit(s)), "s", "a"), 0);
  f.At(2, LlmDone("s", "a", 100, Seconds(1)));
  f.At(2, Of(EventKind::kToolStarted, "s", "t"));
}

// A session whose context of `tokens` is kept on worker 0 through a tool wait, during
// which worker 0's engine reports 90 % of its KV in use: where its next call goes.
int NextCallWorker(int64_t tokens) {
  LoadFixture f;
  f.LearnOutputMean();
  StartWaitingSession(f, tokens);
  EXPECT_EQ(f.core.ContextLocation("s/ctx")->tier, Tier::kHbm) << "kept through the wait";
  f.At(3, LoadFixture::Load(0, 12, 0, 0.9));
  return LoadFixture::PlacedOn(f.At(7, ToolDone("s", "t")), "s", "b");
}

TEST(CoreReportedLoad, ASessionMovesOnlyWhenTheLoadItAvoidsCostsMoreThanItsRecompute) {
  // 1,100 tokens: recomputing them on worker 1 (28 ms) costs far less than 100 decode steps
  // over worker 0's reported 90,000 KV tokens (+0.9 s): the session moves.
  EXPECT_EQ(NextCallWorker(1'000), 1);
  // 60,100 tokens: the recompute (1.5 s) costs more than the load it avoids (0.9 s): the
  // session stays where its KV is.
  EXPECT_EQ(NextCallWorker(60'000), 0);
}

// The engine says it no longer holds a waiting session's KV (kContextEvicted: proxy mode's
// KV events): the core drops it (a discard), and the next call is placed as a recompute,
// wherever that is cheapest — here off the loaded worker it was pinned to.
TEST(CoreReportedLoad, AContextItsEngineEvictedIsDroppedAndTheNextCallGoesWhereLoadIsLeast) {
  LoadFixture f;
  f.LearnOutputMean();
  StartWaitingSession(f, 60'000);
  f.At(3, LoadFixture::Load(0, 12, 0, 0.9));
  auto evicted = [](const std::string& context, int worker) {
    Event e;
    e.kind = EventKind::kContextEvicted;
    e.context = context;
    e.worker = worker;
    return e;
  };
  // Reports the core cannot act on change nothing: another worker, an unknown context.
  EXPECT_TRUE(f.At(3.5, evicted("s/ctx", 1)).list.empty());
  EXPECT_TRUE(f.At(3.5, evicted("s/none", 0)).list.empty());
  EXPECT_EQ(f.core.ContextLocation("s/ctx")->tier, Tier::kHbm);
  Commands c = f.At(4, evicted("s/ctx", 0));
  ASSERT_EQ(c.list.size(), 1u);
  EXPECT_EQ(c.list[0].kind, CommandKind::kDiscard);
  EXPECT_EQ(c.list[0].context, "s/ctx");
  EXPECT_EQ(c.list[0].reason, "its engine evicted it (KV events)");
  EXPECT_EQ(f.core.ContextLocation("s/ctx")->tier, Tier::kNone);
  // The same session kept its context on worker 0 without the report (the test above); now
  // its 60,110 tokens are recomputed wherever, and worker 1 is the less loaded.
  Commands next = f.At(7, ToolDone("s", "t"));
  EXPECT_EQ(LoadFixture::PlacedOn(next, "s", "b"), 1);
  for (const Command& x : next.list) {
    if (x.kind == CommandKind::kPlace) {
      EXPECT_EQ(x.recompute_tokens, 60'100);
    }
  }
}

// Proxy mode (kv_between_workers false): a context another worker holds cannot be read
// from there, so a session leaving its worker recomputes its context instead of moving it.
TEST(CoreReportedLoad, WithoutKvBetweenWorkersALeavingSessionRecomputesItsContext) {
  for (bool between : {true, false}) {
    SCOPED_TRACE(between ? "KV moves between workers" : "proxy mode");
    LoadFixture f(between, /*linked=*/true);
    f.LearnOutputMean();
    StartWaitingSession(f, 60'000);
    f.At(3, LoadFixture::Load(0, 12, 24, 0.9));  // far more than the recompute costs
    Commands c = f.At(7, ToolDone("s", "t"));
    bool moved = false;
    for (const Command& x : c.list) moved = moved || x.kind == CommandKind::kPrefetch;
    if (between) {
      EXPECT_TRUE(moved) << "worker 0's HBM to worker 1's: cheaper than a recompute";
    } else {
      EXPECT_FALSE(moved);
      EXPECT_EQ(LoadFixture::PlacedOn(c, "s", "b"), 1);
      for (const Command& x : c.list) {
        if (x.kind == CommandKind::kPlace) {
          EXPECT_EQ(x.recompute_tokens, 60'100);
        }
      }
    }
  }
}

}  // namespace
}  // namespace switchyard::scheduler
