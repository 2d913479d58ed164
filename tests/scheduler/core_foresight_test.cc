// The oracle's foresight (scheduler/foresight.h): the core fills a foresight policy's
// inputs from the recorded future and never reads it for any other policy, and the oracle
// is switchyard's structure.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "scheduler/core.h"
#include "scheduler/foresight.h"
#include "scheduler/oracle_policy.h"
#include "tests/scheduler/test_util.h"

namespace switchyard::scheduler {
namespace {

using testing::FixedRateCost;
using testing::Llm;
using testing::LlmDone;
using testing::Of;
using testing::Submit;
using testing::Tool;
using testing::Wf;

// A recorded future in which every tool takes 7 s and every call writes 42 tokens; it
// counts its reads.
class CountingForesight final : public Foresight {
 public:
  std::optional<Duration> ToolDuration(const std::string&, const std::string&) const override {
    ++reads;
    return Seconds(7);
  }
  std::optional<int64_t> OutputTokens(const std::string&, const std::string&) const override {
    ++reads;
    return 42;
  }
  mutable int reads = 0;
};

// Switchyard's decisions, recording the predicted waits the core hands it.
class RecordingPolicy final : public Policy {
 public:
  explicit RecordingPolicy(bool foresight) : foresight_(foresight) {}
  std::string_view name() const override { return "recording"; }
  bool UsesForesight() const override { return foresight_; }
  OrderKey Order(const ReadyNodeInfo& n) const override { return base_.Order(n); }
  WaitDecision OnWait(const WaitInput& in) const override {
    waits.push_back(in.wait_quantiles);
    return base_.OnWait(in);
  }
  mutable std::vector<std::vector<Duration>> waits;

 private:
  bool foresight_;
  SwitchyardPolicy base_;
};

// One session: a call, a tool whose hint says 30 s, the next call; the tool's start is
// where the core asks the policy about the waiting context.
std::vector<std::vector<Duration>> WaitsSeen(bool policy_uses_foresight, CountingForesight* f) {
  RecordingPolicy policy(policy_uses_foresight);
  SimulatedFabric::Options fo;
  fo.workers = 1;
  SimulatedFabric fabric(fo);
  FixedRateCost cost;
  CoreOptions o;
  o.workers = 1;
  o.hbm_bytes_per_worker = 4'000'000'000;
  o.foresight = f;
  Core core(o, &policy, &fabric, &fabric, &cost);
  core.handle(Submit(Wf("wf1", "t1",
                        {Llm("a", {}, "main", v1::CacheRef::CREATE, 2000, 10),
                         Tool("t", {"a"}, "Bash", 30000),
                         Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 100, 10)})),
              Time::FromSeconds(0));
  core.handle(LlmDone("wf1", "a", 10, Millis(100)), Time::FromSeconds(1));
  core.handle(Of(EventKind::kToolStarted, "wf1", "t"), Time::FromSeconds(1));
  return policy.waits;
}

TEST(CoreForesight, NeverReadForAPolicyThatDoesNotUseIt) {
  CountingForesight f;
  std::vector<std::vector<Duration>> waits = WaitsSeen(/*policy_uses_foresight=*/false, &f);
  ASSERT_FALSE(waits.empty()) << "the core asked nothing about the waiting context";
  EXPECT_EQ(f.reads, 0) << "the recorded future leaked into a policy that predicts";
  EXPECT_NEAR(std::chrono::duration<double>(waits[0][2]).count(), 30, 1)
      << "the prediction before any sample: the hint";
}

TEST(CoreForesight, GivesAForesightPolicyTheRecordedWait) {
  CountingForesight f;
  std::vector<std::vector<Duration>> waits = WaitsSeen(/*policy_uses_foresight=*/true, &f);
  ASSERT_FALSE(waits.empty());
  EXPECT_GT(f.reads, 0);
  for (Duration q : waits[0]) EXPECT_EQ(q, Seconds(7)) << "every quantile is the recorded wait";
}

TEST(OraclePolicy, IsSwitchyardWithForesight) {
  std::unique_ptr<Policy> oracle = MakePolicy("oracle");
  ASSERT_NE(oracle, nullptr);
  EXPECT_EQ(oracle->name(), "oracle");
  EXPECT_TRUE(oracle->UsesForesight());
  SwitchyardPolicy sy;
  EXPECT_FALSE(sy.UsesForesight());
  WaitInput in;
  in.bytes = 2'000'000'000;
  in.tokens = 16000;
  in.hbm_fraction = 0.5;
  in.hbm_pressure = 0.8;
  in.wait_quantiles = std::vector<Duration>(5, Seconds(20));
  in.recompute = Seconds(2);
  in.options.push_back(WaitOption{Location{Tier::kHost, 0}, Seconds(1), Seconds(1)});
  WaitDecision a = oracle->OnWait(in), b = sy.OnWait(in);
  EXPECT_EQ(a.action, b.action);
  EXPECT_EQ(a.prefetch_after, b.prefetch_after);
  IdleContextInfo near, far;
  near.until_next_use = Seconds(1);
  far.until_next_use = Seconds(100);
  EXPECT_LT(oracle->EvictionPriority(far), oracle->EvictionPriority(near))
      << "Belady: the farthest next use goes first (lowest first)";
}

}  // namespace
}  // namespace switchyard::scheduler
