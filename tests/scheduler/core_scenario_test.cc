// Table-driven scenarios for scheduler::Core with exact expected command lists.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace switchyard::scheduler {
namespace {

using testing::FixedRateCost;
using testing::Llm;
using testing::LlmDone;
using testing::Of;
using testing::Submit;
using testing::Tick;
using testing::Tool;
using testing::ToolDone;
using testing::Wf;
using testing::Xfer;

struct Step {
  double t;  // seconds
  Event event;
  std::vector<std::string> expect;
};

struct ScenarioRig {
  ScenarioRig(CoreOptions o, SimulatedFabric::Options f, uint64_t bpt = 131072)
      : fabric(MakeFabricOptions(f, o.workers)),
        cost(bpt),
        core(o, &policy, &fabric, &fabric, &cost) {}
  static SimulatedFabric::Options MakeFabricOptions(SimulatedFabric::Options f, int workers) {
    f.workers = workers;
    return f;
  }
  void Run(const std::vector<Step>& steps) {
    for (size_t i = 0; i < steps.size(); ++i) {
      Commands c = core.handle(steps[i].event, Time::FromSeconds(steps[i].t));
      EXPECT_EQ(ToStrings(c), steps[i].expect)
          << "step " << i << " (" << EventKindName(steps[i].event.kind) << " at " << steps[i].t
          << "s)";
      last = c;
    }
  }
  // The scenarios' hand arithmetic prices link time at 0.05 GPU-s per s and a recompute
  // at 5 x its time (the defaults, 0.3 and 20, are tuned on replays): they test the core's
  // mechanics, not that tuning.
  static SwitchyardPolicy::Options ScenarioPolicy() {
    SwitchyardPolicy::Options o;
    o.link_weight = 0.05;
    o.discard_weight = 5;
    return o;
  }
  SwitchyardPolicy policy{ScenarioPolicy()};
  SimulatedFabric fabric;
  FixedRateCost cost;
  Core core;
  Commands last;
};

CoreOptions Opts(int workers, uint64_t hbm, int slots) {
  CoreOptions o;
  o.workers = workers;
  o.hbm_bytes_per_worker = hbm;
  o.max_num_seqs = slots;
  return o;
}

std::string Secs(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3fs", s);
  return b;
}

// The hint seeds the sketch with 3 pseudo-samples: every quantile is the hint's bucket.
double SeededMedian(double hint_s) {
  DurationSketch s;
  s.Add(hint_s, 3.0);
  return *s.Quantile(0.5);
}

// wf1: an 8000-token prefill, a 30 s tool, then an extend of the same context.
v1::Workflow ToolWaitWorkflow() {
  return Wf(
      "wf1", "t1",
      {Llm("a", {}, "main", v1::CacheRef::CREATE, 8000, 100), Tool("t", {"a"}, "build", 30000),
       Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 100, 100)});
}

// One LLM call with a big context of its own (pressure on HBM).
v1::Workflow BigWorkflow(const std::string& id, int64_t tokens = 10000) {
  return Wf(id, "t2", {Llm("x", {}, "c", v1::CacheRef::CREATE, tokens, 256)});
}

TEST(CoreScenario, ShortToolKeepsContextInHbm) {
  ScenarioRig r(Opts(1, 80'000'000'000, 4), {});
  auto wf =
      Wf("wf1", "a",
         {Llm("a", {}, "main", v1::CacheRef::CREATE, 1000, 100), Tool("t", {"a"}, "search", 100),
          Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 50, 100)});
  r.Run({{0, Submit(wf), {"place wf1/a worker=0 recompute=0 done=0"}},
         {0, Of(EventKind::kWorkflowClosed, "wf1"), {}},
         {0.5, LlmDone("wf1", "a", 100, Millis(500)), {"admit wf1/t"}},
         {0.5, Of(EventKind::kToolStarted, "wf1", "t"), {"keep wf1/main"}},
         {0.6, ToolDone("wf1", "t"), {"place wf1/b worker=0 recompute=0 done=0"}},
         {1.0,
          LlmDone("wf1", "b", 100, Millis(400)),
          {"discard wf1/main (workflow ended)", "complete wf1"}}});
  EXPECT_EQ(r.core.hbm_used(0), 0u);
}

TEST(CoreScenario, LongToolUnderPressureDemotesToHostAndPrefetchesForReturn) {
  ScenarioRig r(Opts(1, 4'000'000'000, 1), {});
  auto wf1 = ToolWaitWorkflow();
  auto big = [](const std::string& id) { return BigWorkflow(id); };
  const uint64_t bytes = 8100ULL * 131072;  // 1061683200
  double in = ToSeconds(
      r.fabric.Estimate({Tier::kHost, 0}, {Tier::kHbm, 0}, bytes, TrafficClass::kBackground)
          .duration);
  double prefetch_at = 1.0 + SeededMedian(30.0) - 1.1 * in;
  std::string xfer = " bytes=1061683200 xfer=";
  r.Run({{0, Submit(wf1), {"place wf1/a worker=0 recompute=0 done=0"}},
         {0, Submit(big("wf2")), {}},
         {0, Submit(big("wf3")), {}},
         {1,
          LlmDone("wf1", "a", 100, Millis(200)),
          {"admit wf1/t", "place wf2/x worker=0 recompute=0 done=0"}},
         {1,
          Of(EventKind::kToolStarted, "wf1", "t"),
          {"demote wf1/main hbm@0->host@0" + xfer +
           "1 grant=1 class=background prefetch_at=" + Secs(prefetch_at)}},
         {1.1, Xfer(1), {}}});
  EXPECT_NEAR(r.last.wakeup.seconds(), prefetch_at, 1e-6);
  r.Run({{prefetch_at,
          Tick(),
          {"prefetch wf1/main host@0->hbm@0" + xfer + "2 grant=2 class=background"}}});
  EXPECT_LE(r.core.hbm_used(0), r.core.hbm_capacity());
}

TEST(CoreScenario, HugeContextWithFastIdleLinkGoesToPeer) {
  SimulatedFabric::Options f;
  ScenarioRig r(Opts(2, 80'000'000'000, 1), f, 327680);  // Llama-3.1-70B: 320 KiB per token
  r.fabric.SetPeerBandwidth(0, 1, 900e9);                // NVLink
  auto wf1 =
      Wf("wf1", "a",
         {Llm("a", {}, "main", v1::CacheRef::CREATE, 122000, 100), Tool("t", {"a"}, "shell", 2000),
          Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 100, 100)});
  auto wf2 = Wf("wf2", "b", {Llm("y", {}, "c", v1::CacheRef::CREATE, 1000, 1000)});
  auto big = [](const std::string& id) {
    return Wf(id, "c", {Llm("z", {}, "c", v1::CacheRef::CREATE, 150000, 256)});
  };
  const uint64_t bytes = 122100ULL * 327680;  // 40009728000
  double in = ToSeconds(
      r.fabric.Estimate({Tier::kPeer, 1}, {Tier::kHbm, 0}, bytes, TrafficClass::kBackground)
          .duration);
  double prefetch_at = 4.0 + SeededMedian(2.0) - 1.1 * in;
  r.Run({{0, Submit(wf1), {"place wf1/a worker=0 recompute=0 done=0"}},
         {0, Submit(wf2), {"place wf2/y worker=1 recompute=0 done=0"}},
         {0, Submit(big("wf3")), {}},
         {0, Submit(big("wf4")), {}},
         {4, LlmDone("wf1", "a", 100, Seconds(3.1)), {"admit wf1/t"}},
         {4,
          Of(EventKind::kToolStarted, "wf1", "t"),
          {"demote wf1/main hbm@0->peer@1 bytes=40009728000 xfer=1 grant=1 class=background "
           "prefetch_at=" +
           Secs(prefetch_at)}}});
}

TEST(CoreScenario, ShortContextOnCongestedLinkIsDiscarded) {
  SimulatedFabric::Options f;
  f.class_floor[2] = 0.02;  // background gets 2% of a saturated link
  ScenarioRig r(Opts(1, 2'000'000'000, 1), f);
  r.fabric.SetPcieLoad(0, 0.98);
  auto wf1 =
      Wf("wf1", "a",
         {Llm("a", {}, "main", v1::CacheRef::CREATE, 412, 100), Tool("t", {"a"}, "wait", 60000),
          Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 10, 10)});
  auto big = [](const std::string& id) {
    return Wf(id, "b", {Llm("x", {}, "c", v1::CacheRef::CREATE, 10000, 256)});
  };
  r.Run(
      {{0, Submit(wf1), {"place wf1/a worker=0 recompute=0 done=0"}},
       {0, Submit(big("wf2")), {}},
       {0, Submit(big("wf3")), {}},
       {1,
        LlmDone("wf1", "a", 100, Millis(100)),
        {"admit wf1/t", "place wf2/x worker=0 recompute=0 done=0"}},
       {1, Of(EventKind::kToolStarted, "wf1", "t"), {"discard wf1/main (recompute is cheapest)"}}});
  EXPECT_EQ(r.core.ContextLocation("wf1/main")->tier, Tier::kNone);
  // Only wf2/x's prefill: its decode blocks are reserved as the engine reports them.
  EXPECT_EQ(r.core.hbm_used(0), 10000ULL * 131072);
}

TEST(CoreScenario, DemotionRefusedByTheLinkBudgetIsRetriedNotDiscarded) {
  SimulatedFabric::Options f;
  f.max_grants[2] = 1;  // one background move at a time on the PCIe link
  CoreOptions o = Opts(1, 4'000'000'000, 2);
  o.use_disk = o.use_peer = false;
  ScenarioRig r(o, f);
  auto agent = [](const std::string& id) {
    return Wf(
        id, "t1",
        {Llm("a", {}, "main", v1::CacheRef::CREATE, 6000, 100), Tool("t", {"a"}, "build", 30000),
         Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 100, 100)});
  };
  auto big = [](const std::string& id) {
    return Wf(id, "t2", {Llm("x", {}, "c", v1::CacheRef::CREATE, 10000, 256)});
  };
  r.Run({{0, Submit(agent("wf1")), {"place wf1/a worker=0 recompute=0 done=0"}},
         {0, Submit(agent("wf2")), {"place wf2/a worker=0 recompute=0 done=0"}},
         {0, Submit(big("wf3")), {}},
         {0, Submit(big("wf4")), {}}});
  std::vector<Duration> waits;  // grant_wait of each demotion, in order
  auto run = [&](double t, const Event& e) {
    Commands c = r.core.handle(e, Time::FromSeconds(t));
    std::string all;
    for (const std::string& s : ToStrings(c)) all += s + "\n";
    for (const Command& cmd : c.list)
      if (cmd.kind == CommandKind::kDemote) waits.push_back(cmd.grant_wait);
    return all;
  };
  run(1, LlmDone("wf1", "a", 100, Millis(200)));
  run(1, LlmDone("wf2", "a", 100, Millis(200)));
  std::string first = run(1, Of(EventKind::kToolStarted, "wf1", "t"));
  EXPECT_NE(first.find("demote wf1/main hbm@0->host@0"), std::string::npos) << first;
  // The second demotion finds the link's background grant taken: it waits, it is not
  // discarded (recompute would cost far more than waiting one move's time).
  std::string second = run(1, Of(EventKind::kToolStarted, "wf2", "t"));
  EXPECT_EQ(second.find("discard wf2/main"), std::string::npos) << second;
  EXPECT_EQ(second.find("demote wf2/main"), std::string::npos) << second;
  EXPECT_EQ(r.core.ContextLocation("wf2/main")->tier, Tier::kHbm);
  run(1.05, Xfer(1));
  std::string later = run(2, Tick());
  EXPECT_NE(later.find("demote wf2/main hbm@0->host@0"), std::string::npos) << later;
  EXPECT_LE(r.core.hbm_used(0), r.core.hbm_capacity());
  // The first move was granted at once; the second waited from its refusal (t=1) to its
  // grant (t=2): what the grant-wait histogram reports.
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_EQ(waits[0], Duration(0));
  EXPECT_EQ(waits[1], Millis(1000));
}

TEST(CoreScenario, TightDeadlineVerifierPreemptsLongPrefillAtChunkBoundary) {
  ScenarioRig r(Opts(1, 80'000'000'000, 1), {});
  auto wf1 = Wf("wf1", "a", {Llm("p", {}, "main", v1::CacheRef::CREATE, 200000, 10)});
  auto wf2 =
      Wf("wf2", "b", {Llm("v", {}, "vc", v1::CacheRef::CREATE, 2000, 10)}, /*deadline_ms=*/700);
  v1::ProgramNode verifier = wf2.nodes(0);
  Event step = Of(EventKind::kEngineStep, "wf1", "p");
  step.worker = 0;
  step.tokens_done = 2048;
  r.Run({{0, Submit(wf1), {"place wf1/p worker=0 recompute=0 done=0"}},
         {0.1, Submit(wf2), {}},
         {0.1, Of(EventKind::kWorkflowClosed, "wf2"), {}},
         {0.2,
          step,
          {"preempt wf1/p worker=0", "keep wf1/main", "place wf2/v worker=0 recompute=0 done=0"}},
         {0.3,
          LlmDone("wf2", "v", 10, Millis(100)),
          {"discard wf2/vc (workflow ended)", "complete wf2",
           "place wf1/p worker=0 recompute=0 done=2048"}}});
  EXPECT_EQ(r.core.ContextTokens("wf1/main"), 2048);
}

TEST(CoreScenario, IdempotentFailureIsRetriedWithinDeadline) {
  struct Case {
    std::string name;
    v1::ProgramNode node;
    int64_t deadline_ms;
    std::vector<std::string> at_failure;
  };
  std::vector<Case> cases = {
      {"pure tool", Tool("f", {}, "fetch", 500), 10000, {"retry wf1/f attempt=2 at=1.100s"}},
      {"side effect with idempotency key",
       Tool("f", {}, "pay", 500, true, "order-17"),
       10000,
       {"retry wf1/f attempt=2 at=1.100s"}},
      {"retry past deadline",
       Tool("f", {}, "fetch", 500),
       1050,
       {"fail wf1 node=f: node 'f' failed (Unavailable: timeout [retryable]); not retried: a "
        "retry would miss the deadline"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ScenarioRig r(Opts(1, 80'000'000'000, 4), {});
    r.Run({{0, Submit(Wf("wf1", "a", {c.node}, c.deadline_ms)), {"admit wf1/f"}},
           {0, Of(EventKind::kWorkflowClosed, "wf1"), {}},
           {0, Of(EventKind::kToolStarted, "wf1", "f"), {}},
           {1, ToolDone("wf1", "f", Status::Unavailable("timeout")), c.at_failure}});
    if (c.at_failure[0].rfind("retry", 0) != 0) continue;
    EXPECT_EQ(r.last.wakeup, Time::FromSeconds(1.1));
    r.Run({{1.1, Tick(), {"admit wf1/f"}},
           {1.1, Of(EventKind::kToolStarted, "wf1", "f"), {}},
           {1.5, ToolDone("wf1", "f"), {"complete wf1"}}});
  }
}

TEST(CoreScenario, SideEffectFailureFailsWorkflowWithoutRetry) {
  ScenarioRig r(Opts(1, 80'000'000'000, 4), {});
  auto wf =
      Wf("wf1", "a",
         {Llm("a", {}, "main", v1::CacheRef::CREATE, 100, 10), Tool("pay", {"a"}, "pay", 500, true),
          Llm("b", {"pay"}, "main", v1::CacheRef::EXTEND, 10, 10)});
  r.Run({{0, Submit(wf), {"place wf1/a worker=0 recompute=0 done=0"}},
         {0, Of(EventKind::kWorkflowClosed, "wf1"), {}},
         {0.1, LlmDone("wf1", "a", 10, Millis(100)), {"admit wf1/pay"}},
         {0.1, Of(EventKind::kToolStarted, "wf1", "pay"), {"keep wf1/main"}},
         {0.5,
          ToolDone("wf1", "pay", Status::Unavailable("gateway timeout")),
          {"discard wf1/main (workflow failed)",
           "fail wf1 node=pay: node 'pay' failed (Unavailable: gateway timeout [retryable]); not "
           "retried: node 'pay' is a side-effecting tool without an idempotency_key"}},
         // The tool's late duplicate report changes nothing.
         {0.6, ToolDone("wf1", "pay"), {}}});
  EXPECT_EQ(r.core.live_workflows(), 0u);
}

// A demotion goes only to a tier with room: with the host tier too small for the context
// it goes to disk, and with both too small nothing is moved (no move that must fail).
TEST(CoreScenario, DemotionSkipsOffloadTiersWithoutRoom) {
  for (uint64_t disk : {uint64_t(0), uint64_t(1'000'000'000)}) {
    CoreOptions o = Opts(1, 4'000'000'000, 1);
    o.host_bytes_per_worker = 1'000'000'000;  // the context needs 1,061,683,200 B
    o.disk_bytes_per_worker = disk;           // 0: not modelled (room)
    ScenarioRig r(o, {});
    auto wf1 = ToolWaitWorkflow();
    auto big = [](const std::string& id) { return BigWorkflow(id); };
    r.Run({{0, Submit(wf1), {"place wf1/a worker=0 recompute=0 done=0"}},
           {0, Submit(big("wf2")), {}},
           {0, Submit(big("wf3")), {}},
           {1,
            LlmDone("wf1", "a", 100, Millis(200)),
            {"admit wf1/t", "place wf2/x worker=0 recompute=0 done=0"}}});
    std::vector<std::string> out =
        ToStrings(r.core.handle(Of(EventKind::kToolStarted, "wf1", "t"), Time::FromSeconds(1)));
    bool to_host = false, to_disk = false;
    for (const std::string& c : out) {
      to_host |= c.rfind("demote wf1/main hbm@0->host@0", 0) == 0;
      to_disk |= c.rfind("demote wf1/main hbm@0->disk@0", 0) == 0;
    }
    EXPECT_FALSE(to_host) << "host has no room";
    EXPECT_EQ(to_disk, disk == 0) << "disk " << disk << ": " << ::testing::PrintToString(out);
  }
}

// A tier that refuses the blocks (the move fails) is not retried without end: after a few
// failed moves out of HBM the context stays (or is discarded), so nodes waiting for the
// memory are not stuck behind a demotion loop.
TEST(CoreScenario, FailedDemotionsAreNotRetriedForever) {
  ScenarioRig r(Opts(1, 4'000'000'000, 1), {});
  // wf1 runs five LLM calls with a 30 s tool between each; the big workflows queued behind
  // it keep HBM under pressure, so each tool start asks to demote wf1/main, and every move
  // of it fails (the tier refuses the blocks). Everything else runs as commanded.
  std::vector<v1::ProgramNode> nodes = {Llm("l0", {}, "main", v1::CacheRef::CREATE, 8000, 100)};
  for (int i = 1; i <= 6; ++i) {
    std::string t = "t" + std::to_string(i), l = "l" + std::to_string(i);
    nodes.push_back(Tool(t, {"l" + std::to_string(i - 1)}, "build", 30000));
    nodes.push_back(Llm(l, {t}, "main", v1::CacheRef::EXTEND, 100, 100));
  }
  auto big = [](const std::string& id) {
    return Wf(id, "t2", {Llm("x", {}, "c", v1::CacheRef::CREATE, 10000, 256)});
  };
  std::multimap<double, Event> due = {{0, Submit(Wf("wf1", "t1", nodes))},
                                      {0, Submit(big("wf2"))},
                                      {0, Submit(big("wf3"))},
                                      {0, Of(EventKind::kWorkflowClosed, "wf1")}};
  int failed = 0;
  while (!due.empty() && due.begin()->first < 1000) {
    auto [t, ev] = *due.begin();
    due.erase(due.begin());
    Commands out = r.core.handle(ev, Time::FromSeconds(t));
    for (const Command& c : out.list) {
      if (c.kind == CommandKind::kPlace)
        due.insert({t + 0.2, LlmDone(c.workflow_id, c.node_id, 100, Millis(200))});
      if (c.kind == CommandKind::kAdmit) {
        due.insert({t, Of(EventKind::kToolStarted, c.workflow_id, c.node_id)});
        due.insert({t + 30, ToolDone(c.workflow_id, c.node_id)});
      }
      if (c.transfer_id != 0 && c.kind != CommandKind::kDiscard) {
        bool fail = c.kind == CommandKind::kDemote && c.context == "wf1/main";
        failed += fail ? 1 : 0;
        due.insert({t + 0.01, Xfer(c.transfer_id, !fail)});
      }
    }
    // A nanosecond past the wakeup: Time::FromSeconds truncates, and a tick that lands a
    // nanosecond before its timer fires nothing and asks for the same wakeup again.
    if (out.wakeup != Time::Max()) due.insert({std::max(t, out.wakeup.seconds() + 1e-9), Tick()});
  }
  EXPECT_GE(failed, 1);
  EXPECT_LE(failed, 3) << "failed demotions retried without end";
  EXPECT_EQ(r.core.live_workflows(), 2u) << "wf1 completed";
}

// A long-running service forgets ended workflows; a running one is kept, and events that
// name a forgotten workflow are ignored.
TEST(CoreScenario, ForgetDropsOnlyEndedWorkflows) {
  ScenarioRig r(Opts(1, 80'000'000'000, 4), {});
  auto wf = Wf("wf1", "a", {Tool("t", {}, "Bash", 500)});
  r.Run({{0, Submit(wf), {"admit wf1/t"}}, {0, Of(EventKind::kWorkflowClosed, "wf1"), {}}});
  EXPECT_FALSE(r.core.Forget("wf1")) << "still running";
  EXPECT_FALSE(r.core.Forget("nope"));
  r.Run({{0.1, Of(EventKind::kToolStarted, "wf1", "t"), {}},
         {0.5, ToolDone("wf1", "t"), {"complete wf1"}}});
  EXPECT_TRUE(r.core.Forget("wf1"));
  EXPECT_FALSE(r.core.Forget("wf1")) << "already gone";
  uint64_t ignored = r.core.ignored_events();
  r.Run({{0.6, ToolDone("wf1", "t"), {}}});
  EXPECT_EQ(r.core.ignored_events(), ignored + 1);
}

// A workflow ends with the kind of its end: a client's cancel is "cancel" (not "complete"),
// and a failure decided outside the core (kCancel carrying a status: the service's durable
// graph failed a node for good) is "fail" naming the node; late reports change nothing.
TEST(CoreScenario, CancelEndsWithCancelAndAnOutsideFailureWithFail) {
  auto wf =
      Wf("wf1", "a",
         {Llm("a", {}, "main", v1::CacheRef::CREATE, 1000, 100), Tool("t", {"a"}, "search", 100),
          Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 50, 100)});
  auto until_tool = [&](ScenarioRig& r) {
    r.Run({{0, Submit(wf), {"place wf1/a worker=0 recompute=0 done=0"}},
           {0.5, LlmDone("wf1", "a", 100, Millis(500)), {"admit wf1/t"}},
           {0.5, Of(EventKind::kToolStarted, "wf1", "t"), {"keep wf1/main"}}});
  };
  {
    ScenarioRig r(Opts(1, 80'000'000'000, 4), {});
    until_tool(r);
    r.Run({{0.6,
            Of(EventKind::kCancel, "wf1"),
            {"discard wf1/main (workflow cancelled)", "cancel wf1 (cancelled)"}},
           {0.7, ToolDone("wf1", "t"), {}}});
    EXPECT_EQ(r.core.live_workflows(), 0u);
  }
  {
    ScenarioRig r(Opts(1, 80'000'000'000, 4), {});
    until_tool(r);
    Event failed = Of(EventKind::kCancel, "wf1", "t");
    failed.status = Status::Aborted("node 't' failed: exit 1 (reported not retryable)");
    r.Run({{0.6,
            failed,
            {"discard wf1/main (workflow failed)",
             "fail wf1 node=t: node 't' failed: exit 1 (reported not retryable)"}},
           {0.7, ToolDone("wf1", "t", Status::Unavailable("exit 1")), {}}});
    EXPECT_EQ(r.core.live_workflows(), 0u);
  }
}

TEST(CoreScenario, DecisionKindsNameHowAWorkflowEnded) {
  Command done{.kind = CommandKind::kComplete, .workflow_id = "wf1"};
  EXPECT_STREQ(DecisionKindName(done), "complete");
  EXPECT_FALSE(IsCancel(done));
  Command cancelled{.kind = CommandKind::kComplete, .workflow_id = "wf1", .reason = "cancelled"};
  EXPECT_STREQ(DecisionKindName(cancelled), "cancel");
  EXPECT_TRUE(IsCancel(cancelled));
  EXPECT_EQ(ToString(cancelled), "cancel wf1 (cancelled)");
  Command failed{.kind = CommandKind::kFail, .workflow_id = "wf1", .reason = "x"};
  EXPECT_STREQ(DecisionKindName(failed), "fail");
  EXPECT_STREQ(CommandKindName(cancelled.kind), "complete") << "the command itself is unchanged";
}

TEST(CoreScenario, ModelEpochChangeRecomputesOnlyStaleContexts) {
  ScenarioRig r(Opts(1, 80'000'000'000, 4), {});
  auto wf = [](const std::string& id, const std::string& model) {
    return Wf(
        id, "a",
        {Llm("a", {}, "main", v1::CacheRef::CREATE, 1000, 10, model), Tool("t", {"a"}, "t", 5000),
         Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 10, 10, model)});
  };
  Event epoch;
  epoch.kind = EventKind::kModelEpochChanged;
  epoch.model_id = "m1";
  epoch.epoch = 2;
  r.Run({{0, Submit(wf("wf1", "m1")), {"place wf1/a worker=0 recompute=0 done=0"}},
         {0, Submit(wf("wf2", "m2")), {"place wf2/a worker=0 recompute=0 done=0"}},
         {0.1, LlmDone("wf1", "a", 10, Millis(100)), {"admit wf1/t"}},
         {0.1, LlmDone("wf2", "a", 10, Millis(100)), {"admit wf2/t"}},
         {0.1, Of(EventKind::kToolStarted, "wf1", "t"), {"keep wf1/main"}},
         {0.1, Of(EventKind::kToolStarted, "wf2", "t"), {"keep wf2/main"}},
         {0.2, epoch, {"discard wf1/main (stale model epoch 0 < 2)"}},
         {0.3, ToolDone("wf1", "t"), {"place wf1/b worker=0 recompute=1010 done=0"}},
         {0.3, ToolDone("wf2", "t"), {"place wf2/b worker=0 recompute=0 done=0"}}});
}

// CacheRef.keep_tokens: a call that continues its context from a prefix (the previous
// prompt, its answer re-sent differently) frees the rest of the context's blocks when it is
// placed and grows from the prefix; a discarded context is rebuilt only up to the prefix.
TEST(CoreScenario, KeepTokensCutsTheContextAtPlacementAndLimitsItsRecompute) {
  CoreOptions o = Opts(1, 80'000'000'000, 4);
  o.kv_block_tokens = 16;
  ScenarioRig r(o, {});
  const uint64_t bpt = 131072, block = 16 * bpt;
  auto blocks = [&](int64_t tokens) { return (tokens + 15) / 16 * block; };
  auto wf = [](const std::string& id) {
    auto b = Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 50, 20);
    b.mutable_cache_refs(0)->set_keep_tokens(1000);
    return Wf(
        id, "a",
        {Llm("a", {}, "main", v1::CacheRef::CREATE, 1000, 100), Tool("t", {"a"}, "t", 5000), b});
  };
  // Resident: 1000 + 100 output tokens held through the tool, cut to 1000 at placement.
  r.Run({{0, Submit(wf("wf1")), {"place wf1/a worker=0 recompute=0 done=0"}},
         {0.1, LlmDone("wf1", "a", 100, Millis(100)), {"admit wf1/t"}},
         {0.1, Of(EventKind::kToolStarted, "wf1", "t"), {"keep wf1/main"}}});
  EXPECT_EQ(r.core.hbm_used(0), blocks(1100));
  EXPECT_EQ(r.core.ContextTokens("wf1/main"), 1100);
  r.Run({{0.2, ToolDone("wf1", "t"), {"place wf1/b worker=0 recompute=0 done=0"}}});
  EXPECT_EQ(r.core.ContextTokens("wf1/main"), 1000);
  EXPECT_EQ(r.core.hbm_used(0), blocks(1000 + 50));  // the cut context + b's prefill
  r.Run({{0.3, LlmDone("wf1", "b", 20, Millis(100)), {}}});
  EXPECT_EQ(r.core.ContextTokens("wf1/main"), 1070);
  // Discarded during the wait (a model epoch change): rebuilt up to the kept 1000 only.
  Event epoch;
  epoch.kind = EventKind::kModelEpochChanged;
  epoch.model_id = "m";
  epoch.epoch = 5;
  r.Run({{1, Submit(wf("wf2")), {"place wf2/a worker=0 recompute=0 done=0"}},
         {1.1, LlmDone("wf2", "a", 100, Millis(100)), {"admit wf2/t"}},
         {1.1, Of(EventKind::kToolStarted, "wf2", "t"), {"keep wf2/main"}},
         {1.2,
          epoch,
          {"discard wf1/main (stale model epoch 0 < 5)",
           "discard wf2/main (stale model epoch 0 < 5)"}},
         {1.3, ToolDone("wf2", "t"), {"place wf2/b worker=0 recompute=1000 done=0"}}});
  EXPECT_EQ(r.core.ContextTokens("wf2/main"), 1000);
}

TEST(CoreScenario, WeightedTenantsShareServiceTwoToOneUnderSaturation) {
  CoreOptions o = Opts(1, 80'000'000'000, 1);
  o.tenant_weights = {{"gold", 2.0}, {"silver", 1.0}};
  ScenarioRig r(o, {});
  double t = 0;
  std::map<std::string, int> placed;
  std::vector<Command> pending;
  auto absorb = [&](const Commands& c) {
    for (const Command& x : c.list)
      if (x.kind == CommandKind::kPlace) pending.push_back(x);
  };
  for (int i = 0; i < 200; ++i) {
    for (std::string tenant : {"gold", "silver"}) {
      std::string id = tenant + std::to_string(i);
      absorb(
          r.core.handle(Submit(Wf(id, tenant, {Llm("n", {}, "c", v1::CacheRef::CREATE, 1000, 10)})),
                        Time::FromSeconds(t)));
    }
  }
  // Run 150 calls back to back, each taking its estimated 75 ms, while both have backlog.
  for (int i = 0; i < 150 && !pending.empty(); ++i) {
    Command c = pending.front();
    pending.erase(pending.begin());
    placed[c.workflow_id.substr(0, c.workflow_id.find_first_of("0123456789"))]++;
    t += 0.075;
    absorb(r.core.handle(LlmDone(c.workflow_id, c.node_id, 10, Millis(75)), Time::FromSeconds(t)));
  }
  double gold = ToSeconds(r.core.TenantService("gold"));
  double silver = ToSeconds(r.core.TenantService("silver"));
  ASSERT_GT(silver, 0);
  EXPECT_NEAR(gold / silver, 2.0, 0.2)
      << "gold " << placed["gold"] << " silver " << placed["silver"];
  EXPECT_NEAR(static_cast<double>(placed["gold"]) / placed["silver"], 2.0, 0.2);
}

// Several models (CoreOptions::worker_models): a node runs only on a worker of its model,
// priced and sized by that model's cost; a model no worker runs fails the node.
TEST(CoreScenario, EachModelRunsOnItsOwnWorkersAtItsOwnCost) {
  CoreOptions o = Opts(3, 80'000'000'000, 4);
  o.worker_models = {"a", "b", "b"};
  o.worker_hbm_bytes = {80'000'000'000, 40'000'000'000, 40'000'000'000};
  FixedRateCost cost_b(65536);
  o.model_costs = {{"b", &cost_b}};
  ScenarioRig r(o, {});
  auto one = [](const std::string& id, const std::string& model, int64_t tokens = 1000) {
    return Wf(id, "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, tokens, 100, model)});
  };
  r.Run({{0, Submit(one("w1", "b")), {"place w1/x worker=1 recompute=0 done=0"}},
         {0, Submit(one("w2", "a")), {"place w2/x worker=0 recompute=0 done=0"}},
         {0, Submit(one("w3", "b")), {"place w3/x worker=2 recompute=0 done=0"}},
         {0, Submit(one("w4", "zzz")), {"fail w4 node=x: node 'x': no worker runs model 'zzz'"}}});
  EXPECT_EQ(r.core.hbm_used(1), 1000u * 65536) << "model b's bytes per token";
  EXPECT_EQ(r.core.hbm_used(0), 1000u * 131072) << "the core's own cost prices model a";
  EXPECT_EQ(r.core.hbm_capacity(1), 40'000'000'000u);
  // 700k tokens of model b (45.9 GB, and a block to decode into) fit no worker of b (40 GB),
  // though worker 0 has 80 GB.
  r.Run({{0,
          Submit(one("w5", "b", 700'000)),
          {"fail w5 node=x: node 'x' needs 45875265536 bytes of HBM, more than a worker's capacity "
           "of 40000000000"}}});
}

// A context's KV is demoted to a peer only of its own model: worker 1 has the most free
// HBM and the fastest link but runs another model, so the context goes to worker 2.
TEST(CoreScenario, PeerDemotionStaysWithinTheContextsModel) {
  CoreOptions o = Opts(3, 80'000'000'000, 1);
  o.worker_models = {"m", "x", "m"};
  ScenarioRig r(o, {}, 327680);
  r.fabric.SetPeerBandwidth(0, 1, 900e9);
  r.fabric.SetPeerBandwidth(0, 2, 900e9);
  auto wf1 =
      Wf("wf1", "a",
         {Llm("a", {}, "main", v1::CacheRef::CREATE, 122000, 100), Tool("t", {"a"}, "shell", 2000),
          Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 100, 100)});
  auto big = [](const std::string& id) {
    return Wf(id, "c", {Llm("z", {}, "c", v1::CacheRef::CREATE, 150000, 256)});
  };
  r.Run({{0, Submit(wf1), {"place wf1/a worker=0 recompute=0 done=0"}},
         {0,
          Submit(Wf("wf2", "b", {Llm("y", {}, "c", v1::CacheRef::CREATE, 1000, 1000)})),
          {"place wf2/y worker=2 recompute=0 done=0"}},
         {0, Submit(big("wf3")), {}},
         {0, Submit(big("wf4")), {}},
         {4, LlmDone("wf1", "a", 100, Seconds(3.1)), {"admit wf1/t"}}});
  Commands c = r.core.handle(Of(EventKind::kToolStarted, "wf1", "t"), Time::FromSeconds(4));
  ASSERT_EQ(c.list.size(), 1u) << ::testing::PrintToString(ToStrings(c));
  EXPECT_EQ(c.list[0].kind, CommandKind::kDemote);
  EXPECT_EQ(c.list[0].dst.tier, Tier::kPeer) << ToString(c.list[0]);
  EXPECT_EQ(c.list[0].dst.worker, 2) << ToString(c.list[0]);
}

// A lost worker is placed on again once it rejoins (a new incarnation, empty); a join of
// a worker that is alive, or out of range, changes nothing.
TEST(CoreScenario, ALostWorkerIsPlacedOnAgainWhenItRejoins) {
  ScenarioRig r(Opts(2, 80'000'000'000, 1), {});
  auto one = [](const std::string& id) {
    return Wf(id, "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 1000, 100)});
  };
  Event lost = Of(EventKind::kWorkerLost, "");
  lost.worker = 1;
  Event joined = Of(EventKind::kWorkerJoined, "");
  joined.worker = 1;
  Event stray = joined;
  stray.worker = 7;
  r.Run({{0, lost, {}},
         {0, Submit(one("w1")), {"place w1/x worker=0 recompute=0 done=0"}},
         {0, Submit(one("w2")), {}}});
  EXPECT_FALSE(r.core.alive(1));
  EXPECT_EQ(r.core.queued_nodes(), 1u) << "worker 0 is busy and worker 1 is lost";
  r.Run({{1, stray, {}}, {1, joined, {"place w2/x worker=1 recompute=0 done=0"}}});
  EXPECT_TRUE(r.core.alive(1));
  EXPECT_EQ(r.core.hbm_used(1), 1000u * 131072);
  r.Run({{2, joined, {}}, {2, Submit(one("w3")), {}}});
  EXPECT_EQ(r.core.hbm_used(1), 1000u * 131072) << "a second join does not reset it";
}

// A draining worker takes no new placement; its idle contexts move off (the policy's
// eviction choice, or a discard when it would keep them) until it is drained; the node
// that extends a moved context runs elsewhere; undrained, it is placed on again.
TEST(CoreScenario, ADrainingWorkerTakesNoPlacementAndIsEmptiedOfIdleContexts) {
  ScenarioRig r(Opts(2, 80'000'000'000, 1), {});
  auto one = [](const std::string& id) {
    return Wf(id, "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 1000, 100)});
  };
  auto wf =
      Wf("wf1", "a",
         {Llm("a", {}, "main", v1::CacheRef::CREATE, 1000, 100), Tool("t", {"a"}, "search", 100),
          Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 50, 100)});
  Event drain = Of(EventKind::kDrainWorker, "");
  drain.worker = 0;
  Event undrain = Of(EventKind::kUndrainWorker, "");
  undrain.worker = 0;
  r.Run({{0, Submit(wf), {"place wf1/a worker=0 recompute=0 done=0"}},
         {0.5, LlmDone("wf1", "a", 100, Millis(500)), {"admit wf1/t"}},
         {0.5, Of(EventKind::kToolStarted, "wf1", "t"), {"keep wf1/main"}}});
  EXPECT_FALSE(r.core.draining(0));
  // Draining: the kept context must leave worker 0's HBM now.
  Commands c = r.core.handle(drain, Time::FromSeconds(0.55));
  ASSERT_EQ(c.list.size(), 1u) << ::testing::PrintToString(ToStrings(c));
  EXPECT_TRUE(r.core.draining(0));
  if (c.list[0].kind == CommandKind::kDemote) {
    EXPECT_FALSE(r.core.drained(0)) << "a move out is still in flight";
    r.core.handle(Xfer(c.list[0].transfer_id), Time::FromSeconds(0.56));
  } else {
    EXPECT_EQ(c.list[0].kind, CommandKind::kDiscard) << ToString(c.list[0]);
    EXPECT_NE(c.list[0].reason.find("draining"), std::string::npos) << c.list[0].reason;
  }
  EXPECT_TRUE(r.core.drained(0));
  EXPECT_EQ(r.core.hbm_used(0), 0u);
  // New work and the workflow's next call go to worker 1 only; worker 0 stays idle.
  c = r.core.handle(Submit(one("w2")), Time::FromSeconds(0.6));
  EXPECT_EQ(ToStrings(c), std::vector<std::string>{"place w2/x worker=1 recompute=0 done=0"});
  c = r.core.handle(ToolDone("wf1", "t"), Time::FromSeconds(0.6));
  EXPECT_TRUE(c.list.empty()) << ::testing::PrintToString(ToStrings(c))
                              << ": worker 1 is busy and worker 0 is draining";
  EXPECT_EQ(r.core.queued_nodes(), 1u);
  // Back in service: the queued call goes to worker 0 at once (its context brought back
  // first when it was demoted, else placed to recompute it).
  c = r.core.handle(undrain, Time::FromSeconds(0.7));
  ASSERT_EQ(c.list.size(), 1u) << ::testing::PrintToString(ToStrings(c));
  const std::string back = ToStrings(c)[0];
  EXPECT_TRUE(back.rfind("prefetch wf1/main host@0->hbm@0", 0) == 0 ||
              back.rfind("place wf1/b worker=0", 0) == 0)
      << back;
  EXPECT_FALSE(r.core.draining(0));
  EXPECT_FALSE(r.core.drained(0));
  // A lost worker is not draining; a drain of a lost or unknown worker changes nothing.
  Event lost = Of(EventKind::kWorkerLost, "");
  lost.worker = 1;
  Event drain1 = drain, stray = drain;
  drain1.worker = 1;
  stray.worker = 9;
  r.core.handle(lost, Time::FromSeconds(0.8));
  r.core.handle(drain1, Time::FromSeconds(0.8));
  r.core.handle(stray, Time::FromSeconds(0.8));
  EXPECT_FALSE(r.core.draining(1));
  EXPECT_FALSE(r.core.drained(1));
}

}  // namespace
}  // namespace switchyard::scheduler
