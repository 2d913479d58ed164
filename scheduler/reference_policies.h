// Reference policies for the replay benchmark, each behind scheduler::Policy.
//
// Each class reproduces the decision rule of a published system as far as the Policy
// interface and the core's mechanics allow (specifications summarised in
// replay/README.md "Policies"). What the core does for every policy alike —
// admission by free KV blocks with a watermark, decode blocks as the engine reports them
// (so a pool can run out mid-decode: idle contexts are evicted first, then the policy's
// ChoosePoolVictim is preempted), whole-context (not block) eviction granularity,
// placement by KV locality, on-demand reloads — is not re-implemented here; the
// per-class comments list what was simplified.
//
// Mapping of "freed to the prefix cache" (vLLM-style lazy LRU): the core's kKeep leaves
// the context resident but evictable (EvictFor asks EvictionPriority, then
// OnWait(kEviction)), which is exactly a freed-but-still-hashed vLLM block list at
// context granularity. "Pinned" (Continuum) differs from it only in eviction order.
//
// Thread-safety: immutable after construction; const methods only.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "scheduler/policy.h"

namespace switchyard::scheduler {

// vLLM V1 default scheduler (vllm-project/vllm v1/core/sched/scheduler.py,
// kv_cache_manager.py). FCFS by REQUEST (LLM call) arrival, preempted requests go to
// the front, strict head-of-line blocking (admission stops at the first request that
// does not fit), no admissions in a step that preempted; when the pool runs out, the most
// recently admitted request is preempted and its KV freed for recompute (the Policy
// default). No program or tool awareness: when a call ends its KV is freed to the prefix
// cache (kept resident, evictable) and evicted lazily in LRU order with no CPU tier
// (evicted = discarded; the next call recomputes). Simplified: a context's blocks are
// evicted together (vLLM evicts single blocks, tail first); freed blocks count as used
// until evicted (vLLM counts them free and drops their hash on reuse: here eviction
// happens on demand, before a preemption, which is where vLLM would reuse them).
class VllmFcfsPolicy final : public Policy {
 public:
  std::string_view name() const override { return "vllm-fcfs"; }
  bool HeadOfLineBlocking() const override { return true; }
  OrderKey Order(const ReadyNodeInfo& n) const override;
  WaitDecision OnWait(const WaitInput& in) const override;
  double EvictionPriority(const IdleContextInfo& c) const override;
};

// InferCept (Abhyankar et al., ICML'24, arXiv 2402.01869; WukLab/InferCept; docs/design.md
// "Reference policies" §2). On an interception (tool call) choose the action of least
// GPU-memory waste:
//   WastePreserve = T_INT · C·M
//   WasteDiscard  = T_fwd(C) · C·M + T_fwd(C) · C_other·M
//   WasteSwap     = 2 · T_swap(C) · C_batch·M
// in HBM-fraction-seconds (C·M = context bytes / HBM capacity). T_fwd = the core's
// recompute time, T_swap = the planner's HBM→host time. Queues are FCFS by ORIGINAL
// (workflow) arrival. Simplified: T_INT is the mean of the learned remaining-wait
// quantiles (the paper uses elapsed time, the code the oracle; neither is in WaitInput);
// C_other·M = WaitInput::running_fraction when the core fills it, else assumed 1 − C·M
// (a busy batch fills HBM); swap-in is reactive (on demand when the call returns);
// swap budget per iteration: a new swap-out starts only while the swaps in flight from
// that worker (their planned link time, WaitInput::swap_backlog) fit in one engine step
// (WaitInput::step_time); otherwise the request is preserved or discarded, whichever
// wastes less, and re-examined after a step (a coarse form of the paper's T_swap(N_i) =
// T_fwd(B_i)). Recompute of a discarded context is chunked prefill inside the engine's
// steps, shared with the decodes (InferCept's chunked recompute), under the cluster's
// step token budget rather than its 384-token iteration cap; WasteDiscard keeps the
// unchunked formula (the chunked one halves its own-context term).
// T_INT: the paper's elapsed-time estimator by default (T_INT = time the interception has
// lasted, re-estimated at 0.1, 0.2, 0.4, ... s of waiting rather than every iteration);
// "infercept:t_int=learned" uses the mean of the learned remaining-wait quantiles instead.
// (The code's oracle estimator needs the trace's recorded duration, which the core never
// sees: not offered.)
class InferCeptPolicy final : public Policy {
 public:
  enum class Estimator : uint8_t { kElapsed, kLearned };
  explicit InferCeptPolicy(Estimator e = Estimator::kElapsed) : estimator_(e) {}
  std::string_view name() const override {
    return estimator_ == Estimator::kElapsed ? "infercept" : "infercept:t_int=learned";
  }
  OrderKey Order(const ReadyNodeInfo& n) const override;
  WaitDecision OnWait(const WaitInput& in) const override;
  double EvictionPriority(const IdleContextInfo& c) const override;

  // The three wastes (exposed for tests); T_INT as this policy estimates it.
  double Tint(const WaitInput& in) const;
  static double WastePreserve(const WaitInput& in, double t_int);
  static double WasteDiscard(const WaitInput& in);
  static double WasteSwap(const WaitInput& in, const WaitOption& host);
  static bool SwapFits(const WaitInput& in);  // the per-iteration swap budget

 private:
  Estimator estimator_;
};

// Continuum (arXiv 2511.02230, §4-5, Alg. 1; docs/design.md "Reference policies" §3). On a
// tool call the KV is pinned for τ* = argmax_τ P(τ)·(T·η + PrefillReload) − τ over
// τ ∈ {0} ∪ {learned duration quantiles}, P = the learned duration CDF of that tool (online,
// never the trace's oracle), η = 1, PrefillReload = recompute time. The context is pinned for τ*
// (WaitDecision::pin_for: evicted only when nothing unpinned is left) and unpinned when
// τ* passes; τ* = 0 frees it at once. "Freed" is vLLM's free: the blocks stay cached and
// are evicted first, LRU. Cold start: with at most K = 100 learned samples of all tools,
// τ = max(0, ln(T + PrefillReload)). Order: preempted first, then pinned (context
// resident), then PROGRAM arrival.
// Simplified: P is read at the five quantiles the core provides (0.1..0.9), from the
// per-tenant-tool sketch, which falls back to the tool's sketch across tenants while it
// has few samples (Continuum's per-tool vs global CDF switch at K);
// T = WaitInput::queue_delay (0 until the core measures it).
class ContinuumPolicy final : public Policy {
 public:
  std::string_view name() const override { return "continuum"; }
  OrderKey Order(const ReadyNodeInfo& n) const override;
  WaitDecision OnWait(const WaitInput& in) const override;
  double EvictionPriority(const IdleContextInfo& c) const override;
  // τ* in seconds for the given input (exposed for tests).
  static double Ttl(const WaitInput& in);
};

// Autellix (Luo et al., arXiv 2502.13965 v1 §4.2-4.3; docs/design.md "Reference policies"
// §4). Non-clairvoyant program-level scheduling: a call's priority is its program's
// attained model time (ATLAS: max over completed ancestors of service + time, the core's
// program_service), discretised into K = 7 multi-level queues with thresholds
// {1,2,4,8,16,32} s [A] (FCFS by call arrival within a queue). KV is freed to the prefix
// cache at call end (keep, LRU eviction); a preempted call is swapped to host.
//
// Anti-starvation: a call whose program has waited beta = 8 times as long as it was
// served ((W_p + W_c) / max(1 s, T_p + T_c) >= beta) moves to Q1; the core keys queued
// calls again every second (RekeyInterval) so waiting counts. Quantum demotion: a running
// call's service so far counts towards its queue, so when a KV pool runs out the victim
// is the running call in the lowest queue (program service + time running), the most
// recently admitted among equals (ChoosePoolVictim); it is swapped to host.
// Still simplified: no Alg. 2 load balancer (the core places by KV locality); the
// scheduler runs at every event, not every N decode steps; W_c and T_c are not reset on
// promotion.
class AutellixPolicy final : public Policy {
 public:
  std::string_view name() const override { return "autellix"; }
  OrderKey Order(const ReadyNodeInfo& n) const override;
  WaitDecision OnWait(const WaitInput& in) const override;
  double EvictionPriority(const IdleContextInfo& c) const override;
  Duration RekeyInterval() const override { return Seconds(1.0); }
  size_t ChoosePoolVictim(const std::vector<PoolVictimInfo>& running) const override;
  static int Queue(Duration service);  // 0..6
  static constexpr double kBeta = 8;
};

// KVFlow (Pan et al., NeurIPS'25, arXiv 2507.07400; PanZaifeng/KVFlow; docs/design.md
// "Reference policies" §5). Workflow-aware eviction: contexts whose next use is more
// steps-to-execution away are evicted first (ties LRU); evicted contexts are written back
// to host (HiCache) rather than dropped, and reloaded ahead of use; KV stays cached during
// tool calls. Order: FCFS by call arrival (SGLang default). Simplified: whole contexts
// instead of radix nodes; steps_to_execution comes from the core (today a constant 1, so
// ties fall to LRU); reloads are started by the core on demand when the node is ready (the
// load-ahead of agents within 2 steps needs a core hook, see replay/README.md).
class KvFlowPolicy final : public Policy {
 public:
  std::string_view name() const override { return "kvflow"; }
  OrderKey Order(const ReadyNodeInfo& n) const override;
  WaitDecision OnWait(const WaitInput& in) const override;
  double EvictionPriority(const IdleContextInfo& c) const override;
  int LoadAheadSteps() const override { return 2; }  // load_ahead_step=2 in KVFlow's code
};

// vLLM + LMCache (LMCache/LMCache's LMCacheConnectorV1; vLLM's OffloadingConnector behaves
// alike; specified in replay/README.md "Policies"): the
// production baseline most deployments would pick. vLLM V1 on the GPU (VllmFcfsPolicy's
// order, head-of-line blocking, prefix cache with lazy LRU eviction), plus a host tier: a
// context leaving the GPU — evicted from the prefix cache, or its call preempted — is
// written back to host rather than dropped, and a later call reloads it (the core's
// on-demand reload, skipped when recomputing is faster) instead of recomputing. No tool or
// program awareness. Simplified: LMCache writes every finished request's blocks back at
// once (a copy; the GPU blocks stay cached) and keeps chunks of 256 tokens in LRU; here a
// context is written back when it leaves the GPU (a move: the core holds one copy), so the
// write-back's PCIe bytes are spent only for contexts that leave, and the host tier is LRU
// by context; the host tier's disk write-through is the core's demotion to disk.
class LmCachePolicy final : public Policy {
 public:
  std::string_view name() const override { return "lmcache"; }
  bool HeadOfLineBlocking() const override { return true; }
  OrderKey Order(const ReadyNodeInfo& n) const override;
  WaitDecision OnWait(const WaitInput& in) const override;
  double EvictionPriority(const IdleContextInfo& c) const override;
};

// Names of every policy MakePolicy knows, the default ("switchyard") first.
std::vector<std::string_view> PolicyNames();

}  // namespace switchyard::scheduler
