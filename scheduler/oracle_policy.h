// OraclePolicy ("oracle"): the default policy (SwitchyardPolicy, default options) given
// the trace's recorded future (foresight.h) instead of predictions. It is not a policy to
// deploy: it bounds what better prediction could buy, and the evaluation reports what
// share of its headroom over the best reference policy switchyard captures.
//
// What the core gives it from the Foresight (scheduler/README.md "The oracle"):
//   - every tool wait's exact remaining time: all of WaitInput::wait_quantiles equal it,
//     so the cost rule keeps, demotes or discards on the true wait and times the reload to
//     land as the tool returns (prefetch at the exact return);
//   - the exact next use of each idle context waiting on a tool
//     (IdleContextInfo::until_next_use): Policy::EvictionPriority, farthest next use
//     first, is then Belady's rule;
//   - each LLM call's exact output length in the run-time estimate that orders and places
//     calls.
// Its structure is otherwise switchyard's: ordering, fair share, deadlines, placement,
// preemption. Not given (left as the default policy has them): admission by exact KV need
// (the core reserves a call's prompt blocks and grows its output block by block, for
// every policy) and the next use of a context with no tool running (a session between
// its LLM calls).
//
// Thread-safety: immutable.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "scheduler/policy.h"

namespace switchyard::scheduler {

class OraclePolicy final : public Policy {
 public:
  std::string_view name() const override { return "oracle"; }
  bool UsesForesight() const override { return true; }
  OrderKey Order(const ReadyNodeInfo& n) const override { return inner_.Order(n); }
  bool FairShareAcrossTenants() const override { return inner_.FairShareAcrossTenants(); }
  Duration RekeyInterval() const override { return inner_.RekeyInterval(); }
  bool HeadOfLineBlocking() const override { return inner_.HeadOfLineBlocking(); }
  bool DeadlineAware() const override { return inner_.DeadlineAware(); }
  bool SkipHopelessDeadlines() const override { return inner_.SkipHopelessDeadlines(); }
  WaitDecision OnWait(const WaitInput& in) const override { return inner_.OnWait(in); }
  double EvictionPriority(const IdleContextInfo& c) const override {
    return inner_.EvictionPriority(c);
  }
  int LoadAheadSteps() const override { return inner_.LoadAheadSteps(); }
  size_t ChoosePoolVictim(const std::vector<PoolVictimInfo>& running) const override {
    return inner_.ChoosePoolVictim(running);
  }
  double PlacementLoadWeight() const override { return inner_.PlacementLoadWeight(); }
  std::optional<size_t> ChoosePreemptionVictim(
      const PreemptionInput& in, const std::vector<RunningInfo>& running) const override {
    return inner_.ChoosePreemptionVictim(in, running);
  }

 private:
  SwitchyardPolicy inner_;
};

}  // namespace switchyard::scheduler
