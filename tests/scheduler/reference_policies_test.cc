// Each reference policy's defining behaviour on a small scenario.
#include "scheduler/reference_policies.h"

#include <gtest/gtest.h>
#include <cmath>

#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace switchyard::scheduler {
namespace {

WaitInput ToolWait(double wait_s, double recompute_s, double fraction) {
  WaitInput in;
  in.reason = WaitReason::kToolWait;
  in.bytes = static_cast<uint64_t>(fraction * 100e9);
  in.hbm_fraction = fraction;
  in.hbm_pressure = 1.0;
  in.wait_quantiles.assign(5, Seconds(wait_s));
  in.recompute = Seconds(recompute_s);
  in.options.push_back({{Tier::kHost, 0}, Seconds(0.1), Seconds(0.1), 0, 0, 0});
  return in;
}

ReadyNodeInfo Ready(double wf_arrival, double ready, double service = 0, bool resumed = false) {
  ReadyNodeInfo n;
  n.workflow_arrival = Time::FromSeconds(wf_arrival);
  n.ready_since = Time::FromSeconds(ready);
  n.program_service = Seconds(service);
  n.resumed = resumed;
  return n;
}

bool Before(const Policy& p, const ReadyNodeInfo& a, const ReadyNodeInfo& b) {
  OrderKey x = p.Order(a), y = p.Order(b);
  return x.band != y.band ? x.band < y.band : x.key < y.key;
}

TEST(VllmFcfs, OrdersByCallArrivalKeepsAsLruCacheAndDropsOnEviction) {
  VllmFcfsPolicy p;
  // An old program's new call waits behind a young program's earlier call.
  EXPECT_TRUE(Before(p, Ready(100, 105), Ready(0, 110)));
  EXPECT_TRUE(Before(p, Ready(0, 200, 0, true), Ready(0, 105)));  // preempted first
  EXPECT_EQ(p.OnWait(ToolWait(60, 0.01, 0.5)).action, WaitAction::kKeep);
  WaitInput ev = ToolWait(60, 0.01, 0.5);
  ev.reason = WaitReason::kEviction;
  EXPECT_EQ(p.OnWait(ev).action, WaitAction::kDiscard);  // no CPU tier
  IdleContextInfo old_idle{1, Time::FromSeconds(1), Seconds(1), 1};
  IdleContextInfo new_idle{1, Time::FromSeconds(5), Duration::max(), 1};
  EXPECT_LT(p.EvictionPriority(old_idle), p.EvictionPriority(new_idle));  // LRU
}

TEST(InferCept, ElapsedTimeEstimatorPreservesFirstThenSwapsAsTheWaitGoesOn) {
  InferCeptPolicy p;  // the paper's default: T_INT = time the interception has lasted
  WaitInput in = ToolWait(30, 1.0, 0.1);  // the learned quantiles say 30 s: ignored
  in.running_fraction = 0.5;
  in.elapsed = Duration(0);
  EXPECT_DOUBLE_EQ(p.Tint(in), 0);
  WaitDecision first = p.OnWait(in);
  EXPECT_EQ(first.action, WaitAction::kKeep);  // nothing has been wasted yet
  EXPECT_EQ(first.reevaluate_after, Millis(100));
  // 0.05 s in: preserve waste 0.05·0.1 = 0.005 < swap 2·0.1·0.5 = 0.1: still preserved,
  // looked at again after as long as it has lasted.
  in.reason = WaitReason::kReevaluate;
  in.elapsed = Millis(50);
  EXPECT_EQ(p.OnWait(in).action, WaitAction::kKeep);
  // 3.2 s in: preserving (0.32) now wastes more than swapping.
  in.elapsed = Millis(3200);
  WaitDecision late = p.OnWait(in);
  EXPECT_EQ(late.action, WaitAction::kDemote);
  EXPECT_EQ(late.dst.tier, Tier::kHost);
}

TEST(InferCept, SwapsOnlyWithinThePerIterationSwapBudget) {
  InferCeptPolicy p;
  WaitInput in = ToolWait(30, 1.0, 0.1);
  in.running_fraction = 0.5;
  in.reason = WaitReason::kReevaluate;
  in.elapsed = Seconds(5);  // preserving now wastes 0.5 > swapping 0.1
  in.step_time = Millis(30);
  in.swap_backlog = Millis(10);  // the swaps in flight fit in this iteration
  EXPECT_EQ(p.OnWait(in).action, WaitAction::kDemote);
  in.swap_backlog = Millis(45);  // they already fill it: no new swap-out now...
  WaitDecision d = p.OnWait(in);
  EXPECT_EQ(d.action, WaitAction::kKeep);     // ...preserve (0.5) beats discard (0.6)
  EXPECT_EQ(d.reevaluate_after, Millis(30));  // and look again after the iteration
  // Where discarding wastes less than preserving, the budget leaves discard.
  in.recompute = Seconds(0.1);
  EXPECT_EQ(p.OnWait(in).action, WaitAction::kDiscard);
}

TEST(InferCept, ChoosesTheActionOfLeastMemoryWaste) {
  InferCeptPolicy p(InferCeptPolicy::Estimator::kLearned);
  // Short call, big context: preserving wastes least.
  WaitInput a = ToolWait(0.05, 1.0, 0.1);
  a.running_fraction = 0.5;
  EXPECT_NEAR(InferCeptPolicy::WastePreserve(a, p.Tint(a)), 0.005, 1e-12);
  EXPECT_NEAR(InferCeptPolicy::WasteDiscard(a), 1.0 * 0.1 + 1.0 * 0.5, 1e-12);
  EXPECT_NEAR(InferCeptPolicy::WasteSwap(a, a.options[0]), 2 * 0.1 * 0.5, 1e-12);
  EXPECT_EQ(p.OnWait(a).action, WaitAction::kKeep);
  // Long call: swapping beats preserving when the swap is cheap.
  WaitInput b = ToolWait(30, 1.0, 0.1);
  b.running_fraction = 0.5;
  EXPECT_EQ(p.OnWait(b).action, WaitAction::kDemote);
  EXPECT_EQ(p.OnWait(b).dst.tier, Tier::kHost);
  // Long call, tiny context and a slow swap path: recomputing wastes least.
  WaitInput c = ToolWait(30, 0.001, 0.001);
  c.running_fraction = 0.5;
  c.options[0].out = c.options[0].in = Seconds(5);
  EXPECT_EQ(p.OnWait(c).action, WaitAction::kDiscard);
  // Without a measured running fraction the batch is assumed to fill HBM.
  WaitInput d = ToolWait(30, 1.0, 0.25);
  EXPECT_NEAR(InferCeptPolicy::WasteDiscard(d), 1.0, 1e-12);
  // Original (program) arrival order.
  EXPECT_TRUE(Before(p, Ready(0, 110), Ready(100, 105)));
}

TEST(Continuum, PinsForTheTtlThatPaysAndEvictsUnpinnedFirst) {
  ContinuumPolicy p;
  WaitInput in = ToolWait(0, 2.0, 0.1);
  in.wait_quantiles = {Seconds(0.1), Seconds(0.2), Seconds(0.5), Seconds(3), Seconds(20)};
  // value(τ) = P(τ)·2 − τ: 0.1: 0.1, 0.2: 0.3, 0.5: 0.5, 3: −1.5, 20: −18.2 → τ* = 0.5 s.
  EXPECT_DOUBLE_EQ(ContinuumPolicy::Ttl(in), 0.5);
  WaitDecision pin = p.OnWait(in);
  EXPECT_EQ(pin.why, "pinned for TTL");
  EXPECT_EQ(pin.pin_for, Seconds(0.5));  // the TTL decides: pinned for tau*, then freed
  // Tools that take far longer than reloading never pin.
  in.wait_quantiles.assign(5, Seconds(60));
  EXPECT_DOUBLE_EQ(ContinuumPolicy::Ttl(in), 0);
  WaitDecision freed = p.OnWait(in);
  EXPECT_EQ(freed.action, WaitAction::kKeep);  // freed to vLLM's LRU cache...
  EXPECT_EQ(freed.pin_for, Duration(0));       // ...not pinned
  // Cold start: with at most 100 samples learned, tau = ln(T + reload) (Exp(1) optimum).
  in.all_samples = 50;
  in.queue_delay = Seconds(0);
  in.recompute = Seconds(std::exp(1.5));
  EXPECT_NEAR(ContinuumPolicy::Ttl(in), 1.5, 1e-9);
  in.all_samples = 500;
  in.recompute = Seconds(2.0);
  // A higher queueing delay lengthens the pin.
  in.queue_delay = Seconds(200);
  EXPECT_DOUBLE_EQ(ContinuumPolicy::Ttl(in), 60);
  IdleContextInfo pinned{1, Time::FromSeconds(1), Seconds(2), 1, true};
  IdleContextInfo unpinned{1, Time::FromSeconds(9), Duration::max(), 1, false};
  EXPECT_LT(p.EvictionPriority(unpinned), p.EvictionPriority(pinned));
  // A pin that expired is an ordinary cached context: LRU.
  IdleContextInfo expired{1, Time::FromSeconds(1), Seconds(2), 1, false};
  EXPECT_LT(p.EvictionPriority(expired), p.EvictionPriority(unpinned));
  // Order: preempted, then resident (pinned), then program arrival.
  ReadyNodeInfo resident = Ready(50, 60);
  resident.context_resident = true;
  EXPECT_TRUE(Before(p, resident, Ready(0, 70)));
  EXPECT_TRUE(Before(p, Ready(80, 90, 0, true), resident));
  EXPECT_TRUE(Before(p, Ready(0, 100), Ready(10, 20)));
}

TEST(Autellix, LeastAttainedProgramServiceFirstInDiscreteQueues) {
  AutellixPolicy p;
  EXPECT_EQ(AutellixPolicy::Queue(Seconds(0)), 0);
  EXPECT_EQ(AutellixPolicy::Queue(Seconds(1.5)), 1);
  EXPECT_EQ(AutellixPolicy::Queue(Seconds(100)), 6);
  // A young program beats an old one that already got 10 s, regardless of arrival...
  EXPECT_TRUE(Before(p, Ready(100, 110, 0.2), Ready(0, 5, 10)));
  // ...and within a queue calls are FCFS.
  EXPECT_TRUE(Before(p, Ready(100, 105, 0.5), Ready(0, 106, 0.1)));
  WaitInput pre = ToolWait(1, 1, 0.1);
  pre.reason = WaitReason::kPreempted;
  EXPECT_EQ(p.OnWait(pre).action, WaitAction::kDemote);  // swap
  EXPECT_EQ(p.OnWait(ToolWait(60, 1, 0.1)).action, WaitAction::kKeep);
}

TEST(Autellix, PromotesAStarvingProgramAndPicksTheLowestQueueAsPoolVictim) {
  AutellixPolicy p;
  EXPECT_GT(p.RekeyInterval(), Duration(0));  // waiting must be able to change the key
  ReadyNodeInfo old = Ready(0, 10, 20);       // 20 s of service: queue 5
  old.program_total = Seconds(20);
  ReadyNodeInfo young = Ready(100, 110, 0.1);
  EXPECT_TRUE(Before(p, young, old));
  // Waited 8 x its service (160 s over its calls): to Q1, ahead of the young program.
  old.program_waited = Seconds(100);
  old.call_waited = Seconds(60);
  EXPECT_EQ(p.Order(old).band, 0);
  EXPECT_TRUE(Before(p, old, young));
  // Pool victim: the running call in the lowest queue (service + running time), then the
  // most recent; a young program's long-running call is demoted by its own quantum.
  std::vector<PoolVictimInfo> running(3);
  running[0].admitted_seq = 1;
  running[0].program_service = Seconds(0.5);
  running[1].admitted_seq = 2;
  running[1].program_service = Seconds(0.5);
  running[2].admitted_seq = 3;
  running[2].program_service = Seconds(0.5);
  EXPECT_EQ(p.ChoosePoolVictim(running), 2u);  // equal queues: the most recent
  running[0].running_for = Seconds(40);        // exhausted its quanta: lowest queue now
  EXPECT_EQ(p.ChoosePoolVictim(running), 0u);
}

TEST(KvFlow, EvictsFarthestStepsFirstAndWritesBackToHost) {
  KvFlowPolicy p;
  IdleContextInfo near{1, Time::FromSeconds(1), Duration::max(), 1};
  IdleContextInfo far{1, Time::FromSeconds(9), Duration::max(), 3};
  IdleContextInfo near_newer{1, Time::FromSeconds(5), Duration::max(), 1};
  EXPECT_LT(p.EvictionPriority(far), p.EvictionPriority(near));
  EXPECT_LT(p.EvictionPriority(near), p.EvictionPriority(near_newer));  // ties: LRU
  WaitInput ev = ToolWait(1, 1, 0.1);
  ev.reason = WaitReason::kEviction;
  EXPECT_EQ(p.OnWait(ev).action, WaitAction::kDemote);
  ev.options.clear();
  EXPECT_EQ(p.OnWait(ev).action, WaitAction::kDiscard);
  EXPECT_EQ(p.OnWait(ToolWait(60, 1, 0.1)).action, WaitAction::kKeep);
}

// A core with one worker and one slot (the real-core scenarios below).
CoreOptions OneSlot(uint64_t hbm_bytes) {
  CoreOptions o;
  o.workers = 1;
  o.max_num_seqs = 1;
  o.hbm_bytes_per_worker = hbm_bytes;
  return o;
}

// KVFlow's load-ahead on the real core: a context written back to host by an eviction is
// reloaded when another request arrives and HBM has room, because its next use is one
// step away (its tool is running); the default policy has no load-ahead.
std::string LoadAheadRun(const Policy& policy) {
  using namespace testing;  // NOLINT
  SimulatedFabric fabric(SimulatedFabric::Options{});
  FixedRateCost cost;
  CoreOptions o = OneSlot(2'000'000'000);
  o.use_disk = o.use_peer = false;
  Core core(o, &policy, &fabric, &fabric, &cost);
  auto agent = Wf("wf1", "t",
                  {Llm("a", {}, "main", v1::CacheRef::CREATE, 6000, 100),
                   testing::Tool("t", {"a"}, "build", 60000),
                   Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 100, 100)});
  std::string all;
  auto run = [&](double t, const Event& e) {
    for (const std::string& s : ToStrings(core.handle(e, Time::FromSeconds(t)))) all += s + "\n";
  };
  run(0, Submit(agent));
  run(1, LlmDone("wf1", "a", 100, Millis(500)));
  run(1, Of(EventKind::kToolStarted, "wf1", "t"));
  // A big call needs the room: the idle context is evicted (KVFlow: written back to host).
  run(2, Submit(Wf("wf2", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 10000, 256)})));
  run(2, Of(EventKind::kWorkflowClosed, "wf2"));
  if (all.find("demote wf1/main hbm@0->host@0") == std::string::npos) return "no eviction\n" + all;
  run(2.1, Xfer(1));
  run(3, LlmDone("wf2", "x", 256, Millis(800)));
  all.clear();
  run(4, Submit(Wf("wf3", "t", {Llm("y", {}, "d", v1::CacheRef::CREATE, 100, 10)})));
  return all;
}

TEST(KvFlow, LoadsAheadContextsWithinTwoStepsWhenHbmHasRoom) {
  std::string kv = LoadAheadRun(KvFlowPolicy());
  EXPECT_NE(kv.find("prefetch wf1/main host@0->hbm@0"), std::string::npos) << kv;
  std::string sy = LoadAheadRun(SwitchyardPolicy());
  EXPECT_EQ(sy.find("prefetch wf1/main"), std::string::npos) << sy;
}

TEST(LmCache, VllmOnTheGpuAndWritesBackWhatLeavesIt) {
  LmCachePolicy p;
  VllmFcfsPolicy vllm;
  EXPECT_TRUE(p.HeadOfLineBlocking());
  EXPECT_TRUE(Before(p, Ready(100, 105), Ready(0, 110))) << "vLLM's order: call arrival";
  EXPECT_TRUE(Before(p, Ready(0, 200, 0, true), Ready(0, 105)));
  EXPECT_EQ(p.OnWait(ToolWait(60, 0.01, 0.5)).action, WaitAction::kKeep) << "prefix cache";
  for (WaitReason r : {WaitReason::kEviction, WaitReason::kPreempted}) {
    WaitInput leave = ToolWait(60, 0.01, 0.5);
    leave.reason = r;
    WaitDecision d = p.OnWait(leave);
    EXPECT_EQ(d.action, WaitAction::kDemote);
    EXPECT_EQ(d.dst.tier, Tier::kHost);
    EXPECT_NE(vllm.OnWait(leave).action, WaitAction::kDemote) << "vLLM alone has no host tier";
    leave.options.clear();
    EXPECT_EQ(p.OnWait(leave).action, WaitAction::kDiscard);
  }
  IdleContextInfo old_idle{1, Time::FromSeconds(1), Seconds(1), 1};
  IdleContextInfo new_idle{1, Time::FromSeconds(5), Duration::max(), 1};
  EXPECT_LT(p.EvictionPriority(old_idle), p.EvictionPriority(new_idle));  // LRU
}

// On the real core: an idle context evicted for a big call is written back to host, and
// when its own next call comes it is loaded back, not recomputed.
TEST(LmCache, OnTheCoreReloadsAWrittenBackContext) {
  using namespace testing;  // NOLINT
  LmCachePolicy policy;
  SimulatedFabric fabric(SimulatedFabric::Options{});
  FixedRateCost cost;
  CoreOptions o = OneSlot(2'000'000'000);
  o.use_disk = o.use_peer = false;
  Core core(o, &policy, &fabric, &fabric, &cost);
  std::string all;
  auto run = [&](double t, const Event& e) {
    for (const std::string& s : ToStrings(core.handle(e, Time::FromSeconds(t)))) all += s + "\n";
  };
  run(0, Submit(Wf("wf1", "t",
                   {Llm("a", {}, "main", v1::CacheRef::CREATE, 6000, 100),
                    testing::Tool("t", {"a"}, "build", 60000),
                    Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 100, 100)})));
  run(1, LlmDone("wf1", "a", 100, Millis(500)));
  run(1, Of(EventKind::kToolStarted, "wf1", "t"));
  run(2, Submit(Wf("wf2", "t", {Llm("x", {}, "c", v1::CacheRef::CREATE, 10000, 256)})));
  run(2, Of(EventKind::kWorkflowClosed, "wf2"));
  ASSERT_NE(all.find("demote wf1/main hbm@0->host@0"), std::string::npos) << all;
  run(2.1, Xfer(1));
  run(3, LlmDone("wf2", "x", 256, Millis(800)));
  all.clear();
  run(61, ToolDone("wf1", "t"));
  EXPECT_NE(all.find("wf1/main host@0->hbm@0"), std::string::npos) << all;
  EXPECT_EQ(all.find("discard wf1/main"), std::string::npos) << all;
}

TEST(ReferencePolicies, RegistryKnowsEveryName) {
  for (std::string_view name : PolicyNames()) {
    std::unique_ptr<Policy> p = MakePolicy(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->name(), name);
  }
  EXPECT_EQ(PolicyNames().size(), 9u);
}

// On the real core, one slot: A's second call became ready (1.05 s) before the young
// program Y arrived (1.5 s), but A already attained 1.05 s of service. vLLM FCFS runs A's
// call first (earlier request); Autellix runs Y first (less program service).
std::vector<std::string> Placements(const Policy& policy) {
  using namespace testing;  // NOLINT
  SimulatedFabric fabric(SimulatedFabric::Options{});
  FixedRateCost cost;
  Core core(OneSlot(100ULL << 30), &policy, &fabric, &fabric, &cost);
  auto wf = [](const std::string& id, int calls) {
    v1::Workflow w;
    w.set_id(id);
    w.set_tenant("t");
    for (int i = 0; i < calls; ++i) {
      std::vector<std::string> deps;
      if (i) deps.push_back("c" + std::to_string(i - 1));
      *w.add_nodes() = Llm("c" + std::to_string(i), deps, "main",
                           i ? v1::CacheRef::EXTEND : v1::CacheRef::CREATE, 40000, 10);
    }
    return w;
  };
  std::vector<std::string> order;
  auto run = [&](const Event& e, double t) {
    for (const Command& c : core.handle(e, Time::FromSeconds(t)).list)
      if (c.kind == CommandKind::kPlace) order.push_back(c.workflow_id + "/" + c.node_id);
  };
  run(Submit(wf("A", 2)), 0);  // A/c0 runs 0 .. 1.05
  run(Submit(wf("B", 1)), 0.1);
  run(LlmDone("A", "c0", 10, Seconds(1.05)), 1.05);  // B/c0 runs 1.05 .. 2.1; A/c1 ready
  run(Submit(wf("Y", 1)), 1.5);
  run(LlmDone("B", "c0", 10, Seconds(1.05)), 2.1);
  return order;
}

TEST(ReferencePolicies, OnTheCoreAutellixFavoursTheYoungProgramVllmTheEarlierCall) {
  AutellixPolicy autellix;
  VllmFcfsPolicy vllm;
  std::vector<std::string> a = Placements(autellix);
  std::vector<std::string> v = Placements(vllm);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(a[1], "B/c0");
  EXPECT_EQ(v[1], "B/c0");
  EXPECT_EQ(a[2], "Y/c0");
  EXPECT_EQ(v[2], "A/c1");
}

}  // namespace
}  // namespace switchyard::scheduler
