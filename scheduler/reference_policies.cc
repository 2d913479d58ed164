#include "scheduler/reference_policies.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "scheduler/internal/policy_math.h"

namespace switchyard::scheduler {
namespace {

using internal::MeanOf;
using internal::S;

// Lazy-LRU eviction order: the context idle longest goes first.
double Lru(const IdleContextInfo& c) { return c.idle_since.seconds(); }

const WaitOption* HostOption(const WaitInput& in) {
  for (const WaitOption& o : in.options)
    if (o.dst.tier == Tier::kHost) return &o;
  return nullptr;
}

WaitDecision Keep(const char* why) { return {WaitAction::kKeep, {}, Duration(0), 0, why}; }
WaitDecision Discard(const char* why) { return {WaitAction::kDiscard, {}, Duration(0), 0, why}; }

// A context leaving HBM written back to the host tier (KVFlow's HiCache, LMCache), or
// dropped when there is none.
WaitDecision WriteBack(const WaitInput& in, const char* why, const char* why_dropped) {
  if (const WaitOption* host = HostOption(in))
    return {WaitAction::kDemote, host->dst, Duration(0), 0, why};
  return Discard(why_dropped);
}

// vLLM's and SGLang's queue: request (call) arrival, preempted requests first.
OrderKey CallArrival(const ReadyNodeInfo& n) {
  return {n.resumed ? 0 : 1, n.ready_since.seconds()};
}

// A swap-out whose swap-in is reactive: the core reloads on demand when the node is ready;
// the timed prefetch is set far beyond any tool wait.
constexpr double kReactive = 1e6;

}  // namespace

std::vector<std::string_view> PolicyNames() {
  return {"switchyard", "keep-during-tool", "vllm-fcfs", "infercept", "continuum",
          "autellix",   "kvflow",           "lmcache",   "oracle"};
}

// ---- vLLM FCFS ----------------------------------------------------------------------

OrderKey VllmFcfsPolicy::Order(const ReadyNodeInfo& n) const { return CallArrival(n); }

WaitDecision VllmFcfsPolicy::OnWait(const WaitInput& in) const {
  if (in.reason == WaitReason::kEviction) return Discard("LRU eviction (no CPU tier)");
  return Keep("freed to prefix cache");
}

double VllmFcfsPolicy::EvictionPriority(const IdleContextInfo& c) const { return Lru(c); }

// ---- vLLM + LMCache -----------------------------------------------------------------

OrderKey LmCachePolicy::Order(const ReadyNodeInfo& n) const { return CallArrival(n); }

WaitDecision LmCachePolicy::OnWait(const WaitInput& in) const {
  if (in.reason == WaitReason::kEviction || in.reason == WaitReason::kPreempted)
    return WriteBack(in, "leaves the GPU: written back to host", "leaves the GPU (no host tier)");
  return Keep("freed to prefix cache");
}

double LmCachePolicy::EvictionPriority(const IdleContextInfo& c) const { return Lru(c); }

// ---- InferCept ----------------------------------------------------------------------

bool InferCeptPolicy::SwapFits(const WaitInput& in) {
  if (in.step_time <= Duration(0)) return true;  // no step measured yet: no budget known
  return in.swap_backlog <= in.step_time;
}

double InferCeptPolicy::Tint(const WaitInput& in) const {
  // The paper's estimator: the interception has lasted this long, so expect as much again.
  if (estimator_ == Estimator::kElapsed) return S(in.elapsed);
  return MeanOf(in.wait_quantiles);
}

double InferCeptPolicy::WastePreserve(const WaitInput& in, double t_int) {
  return t_int * in.hbm_fraction;
}

namespace {
double OtherFraction(const WaitInput& in) {
  return in.running_fraction >= 0 ? in.running_fraction : std::max(0.0, 1.0 - in.hbm_fraction);
}
}  // namespace

double InferCeptPolicy::WasteDiscard(const WaitInput& in) {
  double t_fwd = S(in.recompute);
  return t_fwd * in.hbm_fraction + t_fwd * OtherFraction(in);
}

double InferCeptPolicy::WasteSwap(const WaitInput& in, const WaitOption& host) {
  // Swap-out and swap-in each stall the batch for T_swap(C).
  double t_swap = std::max(S(host.out), S(host.in));
  return 2.0 * t_swap * OtherFraction(in);
}

OrderKey InferCeptPolicy::Order(const ReadyNodeInfo& n) const {
  // All queues are ordered by the ORIGINAL request's arrival (the program's).
  return {n.resumed ? 0 : 1, n.workflow_arrival.seconds()};
}

WaitDecision InferCeptPolicy::OnWait(const WaitInput& in) const {
  WaitDecision best = Keep("preserve");
  best.cost = in.reason == WaitReason::kEviction ? std::numeric_limits<double>::infinity()
                                                 : WastePreserve(in, Tint(in));
  // T_INT is re-estimated as the wait goes on (the paper: every iteration; here at doubling
  // elapsed times, 0.1 s, 0.2 s, 0.4 s, ..., so a long wait costs a few decisions only).
  if (estimator_ == Estimator::kElapsed) best.reevaluate_after = std::max(Millis(100), in.elapsed);
  double d = WasteDiscard(in);
  if (d < best.cost) best = {WaitAction::kDiscard, {}, Duration(0), d, "discard (recompute)"};
  if (const WaitOption* host = HostOption(in)) {
    double c = WasteSwap(in, *host);
    if (c < best.cost) {
      // Swap budget: swaps are hidden behind the forward pass, so no new swap-out starts
      // while those in flight already fill this iteration; the request is preserved or
      // discarded, whichever wastes less, and looked at again after the iteration.
      if (!SwapFits(in)) {
        best.reevaluate_after = std::max(Millis(10), in.step_time);
        best.why += " (swap budget spent)";
        return best;
      }
      best = {WaitAction::kDemote, host->dst, Seconds(kReactive), c, "swap"};
    }
  }
  return best;
}

double InferCeptPolicy::EvictionPriority(const IdleContextInfo& c) const { return Lru(c); }

// ---- Continuum ----------------------------------------------------------------------

double ContinuumPolicy::Ttl(const WaitInput& in) {
  static constexpr double kLevels[] = {0.1, 0.25, 0.5, 0.75, 0.9};
  double gain_per_hit = S(in.queue_delay) * 1.0 /*eta*/ + S(in.recompute);
  // Cold start (K = 100 samples): with too little history, the optimum for durations
  // ~ Exp(1 s) and eta = 1, tau = max(0, ln(T + PrefillReload)) [A: closed form].
  constexpr double kColdStart = 100;
  if (in.all_samples >= 0 && in.all_samples <= kColdStart)
    return gain_per_hit > 1 ? std::log(gain_per_hit) : 0.0;
  double best_tau = 0, best = 0;  // τ = 0: P(0) = 0, value 0
  for (size_t i = 0; i < in.wait_quantiles.size() && i < 5; ++i) {
    double tau = S(in.wait_quantiles[i]);
    double value = kLevels[i] * gain_per_hit - tau;
    if (value > best) {
      best = value;
      best_tau = tau;
    }
  }
  return best_tau;
}

OrderKey ContinuumPolicy::Order(const ReadyNodeInfo& n) const {
  int band = n.resumed ? 0 : (n.context_resident ? 1 : 2);
  return {band, n.workflow_arrival.seconds()};
}

WaitDecision ContinuumPolicy::OnWait(const WaitInput& in) const {
  if (in.reason == WaitReason::kEviction) return Discard("unpinned and evicted (LRU)");
  if (in.reason == WaitReason::kToolWait) {
    double tau = Ttl(in);
    if (tau > 0) {
      WaitDecision d = Keep("pinned for TTL");
      d.pin_for = Seconds(tau);
      d.reevaluate_after = Seconds(1e6);  // the pin expires by itself; no second look
      return d;
    }
  }
  // tau* = 0, a preemption or a late look: freed (vLLM's LRU cache, evicted first).
  WaitDecision d = Keep("unpinned: LRU cache");
  d.reevaluate_after = Seconds(1e6);
  return d;
}

double ContinuumPolicy::EvictionPriority(const IdleContextInfo& c) const {
  // Unpinned first, LRU; pinned within their TTL last (the deadlock guard — evicting
  // pinned ones when nothing else fits — is the core's: every idle context stays a
  // candidate; among pinned ones the least recently used go first [A: the paper unpins
  // the latest program arrival first]).
  return (c.pinned ? 1e12 : 0.0) + Lru(c);
}

// ---- Autellix -----------------------------------------------------------------------

int AutellixPolicy::Queue(Duration service) {
  static constexpr double kThresholds[] = {1, 2, 4, 8, 16, 32};
  double s = S(service);
  int q = 0;
  for (double t : kThresholds)
    if (s >= t) ++q;
  return q;
}

OrderKey AutellixPolicy::Order(const ReadyNodeInfo& n) const {
  // An arriving call enters the queue that holds its program's attained service; FCFS by
  // call arrival within a queue. A starving program's call goes to Q1.
  double waited = S(n.program_waited) + S(n.call_waited);
  double served = std::max(1.0, S(n.program_total));
  if (waited / served >= kBeta) return {0, n.ready_since.seconds()};
  return {Queue(n.program_service), n.ready_since.seconds()};
}

size_t AutellixPolicy::ChoosePoolVictim(const std::vector<PoolVictimInfo>& running) const {
  size_t v = 0;
  auto rank = [](const PoolVictimInfo& r) {
    return std::make_pair(Queue(r.program_service + r.running_for), r.admitted_seq);
  };
  for (size_t i = 1; i < running.size(); ++i)
    if (rank(running[i]) > rank(running[v])) v = i;
  return v;
}

WaitDecision AutellixPolicy::OnWait(const WaitInput& in) const {
  if (in.reason == WaitReason::kPreempted) {
    if (const WaitOption* host = HostOption(in))
      return {WaitAction::kDemote, host->dst, Seconds(kReactive), 0, "preempted: swap"};
  }
  if (in.reason == WaitReason::kEviction) return Discard("LRU eviction");
  return Keep("freed to prefix cache");
}

double AutellixPolicy::EvictionPriority(const IdleContextInfo& c) const { return Lru(c); }

// ---- KVFlow -------------------------------------------------------------------------

OrderKey KvFlowPolicy::Order(const ReadyNodeInfo& n) const { return CallArrival(n); }

WaitDecision KvFlowPolicy::OnWait(const WaitInput& in) const {
  if (in.reason == WaitReason::kEviction)
    return WriteBack(in, "evict: write back to host", "evict (no host tier)");
  return Keep("cached in radix tree");
}

double KvFlowPolicy::EvictionPriority(const IdleContextInfo& c) const {
  // Larger steps-to-execution is evicted first; ties by LRU.
  return -1e9 * static_cast<double>(std::max(0, c.steps_to_execution)) + Lru(c);
}

}  // namespace switchyard::scheduler
