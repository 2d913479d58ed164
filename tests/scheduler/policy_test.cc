#include "scheduler/policy.h"

#include <gtest/gtest.h>

namespace switchyard::scheduler {
namespace {

WaitInput Base() {
  WaitInput in;
  in.bytes = 1'000'000'000;
  in.tokens = 7629;
  in.hbm_fraction = 0.0125;  // 1 GB of 80 GB
  in.hbm_pressure = 1.0;
  in.wait_quantiles.assign(5, Seconds(10));
  in.recompute = Seconds(0.2);
  in.options.push_back({{Tier::kHost, 0}, Seconds(0.02), Seconds(0.02), 0, 0, 0});
  return in;
}

TEST(SwitchyardPolicy, CostsFollowTheDocumentedFormulas) {
  SwitchyardPolicy::Options o;
  o.link_weight = 0.05;    // the arithmetic below; the default is 0.3
  o.discard_weight = 1.0;  // the default is 20
  SwitchyardPolicy p(o);
  WaitInput in = Base();
  // keep = pressure x fraction x mean wait = 1 x 0.0125 x 10.
  EXPECT_DOUBLE_EQ(p.KeepCost(in), 0.125);
  // discard = recompute x (1 + urgency), urgency 1 without a deadline.
  EXPECT_DOUBLE_EQ(p.DiscardCost(in), 0.4);
  // demote: reload starts at 10 - 1.1 x 0.02 = 9.978 s and lands at 9.998 s, 2 ms before
  // the return: memory 0.0125 x (0.04 + 0.002) + link 0.05 x 0.04, no stall.
  Duration after;
  EXPECT_NEAR(p.DemoteCost(in, in.options[0], &after), 0.0125 * 0.042 + 0.05 * 0.04, 1e-12);
  EXPECT_NEAR(ToSeconds(after), 10 - 0.022, 1e-9);
  EXPECT_EQ(p.OnWait(in).action, WaitAction::kDemote);
}

TEST(SwitchyardPolicy, BatchAwareOptionWeighsPressureByBatchHeadroom) {
  WaitInput in = Base();
  in.batch_headroom = 0.2;  // the step is mostly KV reads: more memory buys little
  SwitchyardPolicy plain;   // default: headroom ignored
  EXPECT_DOUBLE_EQ(plain.KeepCost(in), 0.125);
  SwitchyardPolicy::Options o;
  o.batch_aware = true;
  SwitchyardPolicy aware(o);
  EXPECT_DOUBLE_EQ(aware.KeepCost(in), 0.2 * 0.125);
  in.batch_headroom = -1;  // not measured: pressure as is
  EXPECT_DOUBLE_EQ(aware.KeepCost(in), 0.125);
  auto parsed = CreatePolicy("switchyard:batch_aware=1");
  ASSERT_TRUE(parsed.ok());
}

TEST(SwitchyardPolicy, NoPressureKeepsAndEarlyReturnsCostStall) {
  SwitchyardPolicy p;
  WaitInput in = Base();
  in.hbm_pressure = 0;
  EXPECT_EQ(p.OnWait(in).action, WaitAction::kKeep);
  // A reload slower than the wait stalls the node: keep wins under pressure for short waits.
  in.hbm_pressure = 1;
  in.wait_quantiles.assign(5, Millis(10));
  in.options[0].out = in.options[0].in = Seconds(0.5);
  EXPECT_EQ(p.OnWait(in).action, WaitAction::kKeep);
}

TEST(SwitchyardPolicy, ReloadTimeIsChosenByIdleMemoryAndStall) {
  SwitchyardPolicy p;
  WaitInput in = Base();
  // A wide spread under pressure: reloading at the median would hold HBM idle for the
  // long returns; reloading on demand (or only just before the p90 return) stalls 20 ms.
  in.hbm_fraction = 0.5;
  in.wait_quantiles = {Seconds(1), Seconds(2), Seconds(5), Seconds(60), Seconds(300)};
  Duration after;
  p.DemoteCost(in, in.options[0], &after);
  EXPECT_GT(ToSeconds(after), 299.9);  // at the p90 return or on demand, not the median
  SwitchyardPolicy::Options median_only;
  median_only.choose_reload_time = false;
  SwitchyardPolicy q(median_only);
  q.DemoteCost(in, in.options[0], &after);
  EXPECT_NEAR(ToSeconds(after), 5 - 0.022, 1e-9);
  EXPECT_LT(p.DemoteCost(in, in.options[0], nullptr), q.DemoteCost(in, in.options[0], nullptr));
}

TEST(SwitchyardPolicy, TightSlackShiftsAwayFromDiscard) {
  SwitchyardPolicy::Options five;
  five.discard_weight = 5;
  SwitchyardPolicy p(five);
  WaitInput in = Base();
  in.options.clear();
  in.recompute = Seconds(0.01);  // discard 5 x 0.02 = 0.1 < keep 0.125 with no deadline
  EXPECT_EQ(p.OnWait(in).action, WaitAction::kDiscard);
  in.slack = Millis(200);  // urgency 1 + 1/0.2 = 6: discard 5 x 0.07 = 0.35 > keep 0.125
  EXPECT_EQ(p.OnWait(in).action, WaitAction::kKeep);
}

TEST(SwitchyardPolicy, EvictionNeverKeepsAndPreemptsOnlyToMeetDeadline) {
  SwitchyardPolicy p;
  WaitInput in = Base();
  in.reason = WaitReason::kEviction;
  in.hbm_pressure = 0;
  EXPECT_NE(p.OnWait(in).action, WaitAction::kKeep);
  std::vector<RunningInfo> running = {{0, 0, Seconds(5), Duration::max(), 2},
                                      {4000, 0, Seconds(3), Duration::max(), 2}};
  PreemptionInput pi{Millis(400), Seconds(3), Millis(100)};
  ASSERT_TRUE(p.ChoosePreemptionVictim(pi, running).has_value());
  EXPECT_EQ(*p.ChoosePreemptionVictim(pi, running), 1u);  // the one still in prefill
  pi.urgent_wait = Millis(300);                           // it would make it anyway
  EXPECT_FALSE(p.ChoosePreemptionVictim(pi, running).has_value());
  pi = {Millis(-50), Seconds(3), Millis(100)};  // hopeless: it misses even if run now
  EXPECT_FALSE(p.ChoosePreemptionVictim(pi, running).has_value());
  SwitchyardPolicy::Options o;
  o.skip_hopeless = false;
  EXPECT_TRUE(SwitchyardPolicy(o).ChoosePreemptionVictim(pi, running).has_value());
}

TEST(SwitchyardPolicy, NeverPreemptsARebuildPartWayUnlessAskedTo) {
  SwitchyardPolicy p;
  // Both still in prefill; the longer one is part-way through rebuilding a context.
  std::vector<RunningInfo> running = {{4000, 1200, Seconds(5), Duration::max(), 2},
                                      {3000, 0, Seconds(3), Duration::max(), 2}};
  PreemptionInput pi{Millis(400), Seconds(3), Millis(100)};
  ASSERT_TRUE(p.ChoosePreemptionVictim(pi, running).has_value());
  EXPECT_EQ(*p.ChoosePreemptionVictim(pi, running), 1u);  // not the rebuild
  running.pop_back();
  EXPECT_FALSE(p.ChoosePreemptionVictim(pi, running).has_value());
  auto with = CreatePolicy("switchyard:preempt_rebuilds=1");
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ((*with)->ChoosePreemptionVictim(pi, running), std::optional<size_t>(0));
}

TEST(SwitchyardPolicy, HighOccupancyCountsAsPressureBeforeAQueueForms) {
  SwitchyardPolicy p;  // knee 0.5
  WaitInput in = Base();
  in.hbm_pressure = 0;
  in.hbm_occupancy = 0.5;  // at the knee: nothing contended yet
  EXPECT_EQ(p.OnWait(in).action, WaitAction::kKeep);
  in.hbm_occupancy = 0.95;  // pressure (0.95 - 0.5) / 0.5 = 0.9
  EXPECT_NEAR(p.KeepCost(in), 0.9 * 0.0125 * 10, 1e-12);
  EXPECT_EQ(p.OnWait(in).action, WaitAction::kDemote);
  SwitchyardPolicy::Options off;
  off.occupancy_knee = 1;  // occupancy ignored
  EXPECT_EQ(SwitchyardPolicy(off).OnWait(in).action, WaitAction::kKeep);
}

// discard_weight scales the recompute's cost against the other choices; peer_demotion=0
// takes peers' HBM out of the destinations.
TEST(SwitchyardPolicy, DiscardWeightAndPeerDemotionOptions) {
  WaitInput in = Base();
  in.reason = WaitReason::kEviction;
  in.recompute = Seconds(0.1);  // discard = 0.1 x (1 + 1) = 0.2
  in.options = {{{Tier::kDisk, 0}, Seconds(0.5), Seconds(0.5), 0, 0, 0}};
  // demote to disk ~ link 0.3 x 1 s + memory 0.0125 x 1.05 s: above the discard.
  auto plain_policy = CreatePolicy("switchyard:discard_weight=1");
  ASSERT_TRUE(plain_policy.ok()) << plain_policy.status();
  const auto& plain = dynamic_cast<const SwitchyardPolicy&>(**plain_policy);
  EXPECT_DOUBLE_EQ(plain.DiscardCost(in), 0.2);
  EXPECT_EQ(plain.OnWait(in).action, WaitAction::kDiscard);
  auto heavy = CreatePolicy("switchyard");  // discard_weight 20
  ASSERT_TRUE(heavy.ok()) << heavy.status();
  EXPECT_DOUBLE_EQ(dynamic_cast<const SwitchyardPolicy&>(**heavy).DiscardCost(in), 4.0);
  WaitDecision d = (*heavy)->OnWait(in);
  EXPECT_EQ(d.action, WaitAction::kDemote);
  EXPECT_EQ(d.dst.tier, Tier::kDisk);
  in.options = {{{Tier::kPeer, 1}, Seconds(0.02), Seconds(0.02), 0, 0, 0.0125}};
  EXPECT_EQ(plain.OnWait(in).action, WaitAction::kDemote);
  auto no_peers = CreatePolicy("switchyard:peer_demotion=0");
  ASSERT_TRUE(no_peers.ok()) << no_peers.status();
  EXPECT_EQ((*no_peers)->OnWait(in).action, WaitAction::kDiscard);  // eviction: no keep
}

TEST(Policies, CreatePolicyParsesOptionsAndNamesWhatIsWrong) {
  auto p = CreatePolicy("switchyard:occupancy_knee=0.7:pressure_floor=0.05:choose_reload_time=0");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->name(), "switchyard:occupancy_knee=0.7:pressure_floor=0.05:choose_reload_time=0");
  const auto* s = dynamic_cast<const SwitchyardPolicy*>(p->get());
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(s->options().occupancy_knee, 0.7);
  EXPECT_DOUBLE_EQ(s->options().pressure_floor, 0.05);
  EXPECT_FALSE(s->options().choose_reload_time);
  EXPECT_EQ((*CreatePolicy("infercept"))->name(), "infercept");
  auto err = [](const char* spec) { return CreatePolicy(spec).status().message(); };
  EXPECT_NE(err("fifo").find("unknown policy 'fifo'"), std::string::npos);
  EXPECT_NE(err("switchyard:knee=1").find("unknown option 'knee'"), std::string::npos);
  EXPECT_NE(err("switchyard:link_weight=x").find("link_weight must be a non-negative number"),
            std::string::npos);
  EXPECT_NE(err("switchyard:link_weight").find("is not key=value"), std::string::npos);
  EXPECT_NE(err("switchyard:occupancy_knee=2").find("occupancy_knee must be in [0, 1]"),
            std::string::npos);
  EXPECT_NE(err("infercept:x=1").find("infercept takes t_int=elapsed or t_int=learned"),
            std::string::npos);
  EXPECT_NE(err("kvflow:x=1").find("only 'switchyard' and 'infercept' take options"),
            std::string::npos);
  auto learned = CreatePolicy("infercept:t_int=learned");
  ASSERT_TRUE(learned.ok());
  EXPECT_EQ((*learned)->name(), "infercept:t_int=learned");
  EXPECT_NE(err("switchyard:order=sjf").find("order must be atlas, arrival or deadline"),
            std::string::npos);
}

TEST(SwitchyardPolicy, OrdersByDeadlineWithAStarvationBound) {
  SwitchyardPolicy s;  // EDF, cap 900 s
  ReadyNodeInfo a, b, c;
  a.workflow_arrival = Time::FromSeconds(0);
  a.deadline = Time::FromSeconds(3000);  // a long session
  b.workflow_arrival = Time::FromSeconds(100);
  b.deadline = Time::FromSeconds(400);  // a short one that arrived later
  EXPECT_LT(s.Order(b).key, s.Order(a).key);
  b.workflow_arrival = Time::FromSeconds(1000);  // past the cap: a goes first
  b.deadline = Time::FromSeconds(1100);
  EXPECT_LT(s.Order(a).key, s.Order(b).key);
  c.workflow_arrival = Time::FromSeconds(50);  // no deadline: arrival + cap
  EXPECT_DOUBLE_EQ(s.Order(c).key, 950);
  SwitchyardPolicy::Options fcfs;
  fcfs.order = SwitchyardPolicy::Options::OrderBy::kArrival;
  EXPECT_DOUBLE_EQ(SwitchyardPolicy(fcfs).Order(b).key, 1000);
  EXPECT_DOUBLE_EQ(
      (*CreatePolicy("switchyard:order=deadline:deadline_weight=0.5:deadline_cap_s=1e9"))
          ->Order(a)
          .key,
      1500);
}

TEST(Policies, OrderKeysAndRegistry) {
  SwitchyardPolicy::Options atlas;
  atlas.order = SwitchyardPolicy::Options::OrderBy::kAtlas;
  SwitchyardPolicy s(atlas);
  ReadyNodeInfo a, b;
  a.program_service = Seconds(2);
  b.program_service = Seconds(1);
  EXPECT_LT(s.Order(b).key, s.Order(a).key);  // least attained service first
  b.ready_since = Time::FromSeconds(20);      // but b waited less: aging 0.1/s
  EXPECT_LT(s.Order(a).key, s.Order(b).key);
  KeepDuringToolPolicy k;
  a.workflow_arrival = Time::FromSeconds(1);
  b.workflow_arrival = Time::FromSeconds(2);
  EXPECT_LT(k.Order(a).key, k.Order(b).key);  // FCFS by program arrival
  EXPECT_EQ(k.OnWait(Base()).action, WaitAction::kKeep);
  EXPECT_EQ(MakePolicy("switchyard")->name(), "switchyard");
  EXPECT_EQ(MakePolicy("keep-during-tool")->name(), "keep-during-tool");
  EXPECT_EQ(MakePolicy("nope"), nullptr);
}

}  // namespace
}  // namespace switchyard::scheduler
