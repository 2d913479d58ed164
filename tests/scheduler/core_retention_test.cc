// A tool wait whose node asks for retention (Hints.retain_ms, what Anthropic's cache_control
// ttl and OpenAI's prompt_cache_retention become): a policy's decision to drop the context
// for recompute is overridden — it moves to a tier, or stays pinned where there is none —
// until the retention ends; without the hint the same policy drops it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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
using testing::Wf;

// The switchyard policy, except that every wait drops the context (recompute later).
class DiscardingPolicy final : public Policy {
 public:
  std::string_view name() const override { return "discard-at-wait"; }
  OrderKey Order(const ReadyNodeInfo& n) const override { return base_.Order(n); }
  WaitDecision OnWait(const WaitInput&) const override {
    return {WaitAction::kDiscard, {}, Duration(0), 0, "test policy drops every waiting context"};
  }

 private:
  SwitchyardPolicy base_;
};

struct RetentionRig {
  explicit RetentionRig(CoreOptions o)
      : fabric(FabricOptions(o.workers)), core(o, &policy, &fabric, &fabric, &cost) {}
  static SimulatedFabric::Options FabricOptions(int workers) {
    SimulatedFabric::Options f;
    f.workers = workers;
    return f;
  }
  DiscardingPolicy policy;
  SimulatedFabric fabric;
  FixedRateCost cost;
  Core core;
};

CoreOptions Options(bool host) {
  CoreOptions o;
  o.workers = 1;
  o.hbm_bytes_per_worker = 4'000'000'000;
  o.max_num_seqs = 4;
  o.use_host = host;
  o.use_disk = false;
  o.use_peer = false;
  return o;
}

v1::Workflow SessionWorkflow(int64_t retain_ms) {
  v1::ProgramNode wait = Tool("t", {"a"}, "Bash", 30000);
  wait.mutable_hints()->set_retain_ms(retain_ms);
  return Wf("wf1", "t1",
            {Llm("a", {}, "main", v1::CacheRef::CREATE, 2000, 10), wait,
             Llm("b", {"t"}, "main", v1::CacheRef::EXTEND, 100, 10)});
}

// The commands the core answers the tool's start with, once `a` ran.
std::vector<std::string> AtToolStart(RetentionRig& r, int64_t retain_ms) {
  r.core.handle(Submit(SessionWorkflow(retain_ms)), Time::FromSeconds(0));
  r.core.handle(LlmDone("wf1", "a", 10, Millis(100)), Time::FromSeconds(1));
  return ToStrings(r.core.handle(Of(EventKind::kToolStarted, "wf1", "t"), Time::FromSeconds(1)));
}

bool Has(const std::vector<std::string>& out, const std::string& prefix) {
  for (const std::string& c : out)
    if (c.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(CoreRetention, WithoutTheHintThePolicysDiscardStands) {
  RetentionRig r(Options(/*host=*/true));
  std::vector<std::string> out = AtToolStart(r, 0);
  EXPECT_TRUE(Has(out, "discard wf1/main")) << ::testing::PrintToString(out);
}

TEST(CoreRetention, ARetainedContextMovesToATierInsteadOfBeingDropped) {
  RetentionRig r(Options(/*host=*/true));
  std::vector<std::string> out = AtToolStart(r, 300'000);
  EXPECT_FALSE(Has(out, "discard wf1/main")) << ::testing::PrintToString(out);
  EXPECT_TRUE(Has(out, "demote wf1/main hbm@0->host@0")) << ::testing::PrintToString(out);
}

TEST(CoreRetention, WithNoTierARetainedContextStaysPinnedUntilTheRetentionEnds) {
  RetentionRig r(Options(/*host=*/false));
  std::vector<std::string> out = AtToolStart(r, 5'000);
  EXPECT_TRUE(Has(out, "keep wf1/main")) << ::testing::PrintToString(out);
  // The core looks again while the tool is out (its re-evaluation timer): within the
  // retention the context is kept, past it the policy's discard stands.
  bool discarded_within = false, discarded_after = false;
  for (double t = 1.1; t < 40; t += 0.1) {
    std::vector<std::string> tick = ToStrings(r.core.handle(Tick(), Time::FromSeconds(t)));
    bool d = Has(tick, "discard wf1/main");
    if (t < 6.0) discarded_within |= d;
    discarded_after |= d;
    if (discarded_after) break;
  }
  EXPECT_FALSE(discarded_within) << "dropped within the 5 s retention";
  EXPECT_TRUE(discarded_after) << "the re-evaluation after the retention did not drop it";
}

}  // namespace
}  // namespace switchyard::scheduler
