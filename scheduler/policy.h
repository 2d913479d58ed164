// Policy: the pluggable decisions of the scheduler core.
//
// The core owns state and mechanics (graphs, HBM accounting, transfers, grants, retries);
// a Policy answers five questions, so the replay benchmark can run reference baselines
// (vLLM FCFS, keep-during-tool, InferCept, Continuum TTL, Autellix PLAS/ATLAS, KVFlow)
// beside the default "switchyard" policy on the same core:
//   name()               a stable name for reports;
//   Order()              a time-invariant ordering key for a ready LLM node (lower runs
//                        first), plus whether the core shares service across tenants by
//                        weight and whether deadline-urgent nodes jump the queue;
//   OnWait()             what to do with a context while its workflow waits (a tool call,
//                        a preemption, an eviction): keep, demote to a tier, or discard,
//                        and when to start bringing it back;
//   EvictionPriority()   which idle context to push out of HBM first (lowest first);
//   ChoosePreemptionVictim()  whether an urgent node preempts a running prefill.
// Inputs carry everything a policy may use (sizes, estimates from the planner and cost
// model, pressure, learned duration quantiles, slack); policies hold no core state.
//
// Thread-safety: const methods on immutable configuration; callable from the core thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "scheduler/types.h"

namespace switchyard::scheduler {

struct ReadyNodeInfo {
  std::string tenant;
  int priority_class = 2;       // v1::PriorityClass, unspecified mapped to STANDARD (2)
  Duration program_service{0};  // ATLAS: max over completed ancestors of service + time
  Duration program_total{0};    // PLAS: sum of completed calls' model time
  Time workflow_arrival{0};
  Time ready_since{0};
  Time deadline = Time::Max();
  Duration estimated_run{0};
  int64_t prompt_tokens = 0;
  bool context_resident = false;  // all its contexts are committed in HBM somewhere
  bool resumed = false;           // preempted earlier and requeued
  // Time spent waiting: this call since it became ready (as of keying, see
  // RekeyInterval), and the program's earlier calls in queues (Autellix's W_c and W_p).
  Duration call_waited{0};
  Duration program_waited{0};
};

struct OrderKey {
  int band = 0;    // lower band first
  double key = 0;  // then lower key
};

enum class WaitReason : uint8_t { kToolWait, kPreempted, kEviction, kReevaluate };

// One place the context could go, with planner estimates (both directions).
struct WaitOption {
  Location dst;
  Duration out{0};          // HBM -> dst
  Duration in{0};           // dst -> HBM (reload)
  double path_load = 0;     // highest background utilisation on the path (0..1)
  double dst_pressure = 0;  // peer: HBM pressure on the peer (0..1)
  double dst_fraction = 0;  // peer: bytes / peer HBM capacity
};

struct WaitInput {
  WaitReason reason = WaitReason::kToolWait;
  uint64_t bytes = 0;
  int64_t tokens = 0;
  double hbm_fraction = 0;   // bytes / HBM capacity of the worker holding it
  double hbm_pressure = 0;   // 0..1: waiting demand on that worker relative to capacity
  double hbm_occupancy = 0;  // 0..1: HBM committed or reserved on that worker / capacity
  // Predicted remaining wait at quantiles 0.1, 0.25, 0.5, 0.75, 0.9 (non-decreasing).
  std::vector<Duration> wait_quantiles;
  Duration recompute{0};             // prefill time to rebuild the context
  Duration slack = Duration::max();  // deadline slack of the workflow (max: none)
  std::vector<WaitOption> options;   // reachable demotion targets (host, disk, peers)
  // Inputs of reference policies (-1 / 0: not measured, e.g. by a hand-built input).
  double running_fraction = -1;  // HBM fraction held by running nodes on that worker (InferCept)
  Duration queue_delay{0};       // recent mean queueing delay of placed nodes (Continuum)
  Duration elapsed{0};           // how long the wait has lasted so far (InferCept's T_INT)
  // The worker's last engine step (0: none reported) and the planned time of the moves
  // out of its HBM already in flight (InferCept's per-iteration swap budget).
  Duration step_time{0};
  Duration swap_backlog{0};
  // What more HBM is worth to the worker's throughput (0..1; -1: not measured). A decode
  // step reads the weights once for the whole batch and every sequence's KV: with
  // weights W and the running sequences' KV R read per step, tokens per second grow with
  // the batch only while W is not yet amortised, by W / (W + R). Near 0, admitting more
  // sequences (what freed memory buys) barely adds throughput: the step is KV-read bound.
  double batch_headroom = -1;
  // Real duration samples the core has learned, of this tool and of all tools (-1: not
  // given). Continuum's cold-start rule reads them.
  double tool_samples = -1, all_samples = -1;
};

enum class WaitAction : uint8_t { kKeep, kDemote, kDiscard };

struct WaitDecision {
  WaitAction action = WaitAction::kKeep;
  Location dst;                // kDemote
  Duration prefetch_after{0};  // kDemote: start the reload this long after now
  double cost = 0;             // expected cost of the chosen action (GPU-seconds)
  std::string why;             // short explanation for logs
  // kKeep: protect the context from eviction this long (Continuum's pin; 0: not pinned,
  // an ordinary cached context), and ask again after this long (0: the core's rule, 25 %
  // past the predicted p90 of the wait).
  Duration pin_for{0};
  Duration reevaluate_after{0};
};

struct IdleContextInfo {
  uint64_t bytes = 0;
  Time idle_since{0};
  Duration until_next_use = Duration::max();  // predicted (max: unknown / none)
  int steps_to_execution = 0;                 // graph steps until a node using it can run (KVFlow)
  bool pinned = false;                        // within a pin the policy asked for (pin_for)
  // Its workflow has created a newer context since, and no known node uses this one (an
  // agent whose prompt diverged moved on: likely never read again). Not an oracle: a
  // node appended later may still read it.
  bool superseded = false;
};

struct RunningInfo {
  int64_t prefill_remaining_tokens = 0;
  // Tokens of a context it is rebuilding (a recompute) that preempting it now would
  // throw away: a partly rebuilt context is dropped, and its next placement starts over.
  int64_t rebuild_lost_tokens = 0;
  Duration remaining_time{0};
  Duration slack = Duration::max();
  int priority_class = 2;
};

// A running node on a worker whose KV pool ran out (ChoosePoolVictim).
struct PoolVictimInfo {
  uint64_t admitted_seq = 0;  // admission order on the worker (larger = more recent)
  Time workflow_arrival{0};
  Time ready_since{0};
  Time deadline = Time::Max();
  int priority_class = 2;
  Duration program_service{0};
  uint64_t reserved_bytes = 0;  // KV the node holds beyond its contexts' committed blocks
  Duration running_for{0};      // since this attempt was admitted
};

struct PreemptionInput {
  Duration urgent_slack{0};  // slack of the urgent node if it waited for no one
  Duration urgent_wait{0};   // time until a slot frees without preemption
  Duration urgent_run{0};
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  virtual OrderKey Order(const ReadyNodeInfo& n) const = 0;
  virtual bool FairShareAcrossTenants() const { return false; }
  // Order keys that change as nodes wait (anti-starvation): the core keys every queued
  // node again this often (0: keys are fixed once a node is queued).
  virtual Duration RekeyInterval() const { return Duration(0); }
  // vLLM's head-of-line blocking: admission stops at the first queued node that does not
  // fit (false: the core looks further down the queue for one that does).
  virtual bool HeadOfLineBlocking() const { return false; }
  virtual bool DeadlineAware() const { return false; }
  // Deadline-aware only: a node that can no longer meet its deadline (its latest start has
  // passed) leaves the EDF band and competes like any other, so that under overload EDF
  // does not spend the cluster on lost causes while the next deadlines are missed too.
  virtual bool SkipHopelessDeadlines() const { return false; }
  virtual WaitDecision OnWait(const WaitInput& in) const = 0;
  // The oracle only (foresight.h): the core fills this policy's inputs from the trace's
  // recorded future instead of its predictions; it needs CoreOptions::foresight.
  virtual bool UsesForesight() const { return false; }
  virtual double EvictionPriority(const IdleContextInfo& c) const;
  // Load-ahead (KVFlow): when an LLM node becomes ready, contexts held on host or disk
  // whose next use is at most this many graph steps away are reloaded into HBM while it has
  // room, nearest first, stopping at the first that does not fit. -1: off (reload on demand
  // or by the OnWait prefetch time only).
  virtual int LoadAheadSteps() const { return -1; }
  // The KV pool of a worker ran out while its running nodes decode: the index into
  // `running` of the node to preempt (its KV then goes by OnWait(kPreempted), and is
  // dropped if that would keep it in HBM). Default: vLLM's rule, the most recently
  // admitted node.
  virtual size_t ChoosePoolVictim(const std::vector<PoolVictimInfo>& running) const;
  // Placement beyond locality: the core adds this weight x the call's expected decode time
  // on each candidate worker (its learned mean output x the step time of that worker's
  // batch with the call added, from the cost model over the running calls' KV) to the
  // cost of readying the call there (moves, recompute). 0 (the reference policies: their
  // sources are single engines; session affinity stands in for their router): the worker
  // holding the context wins, the less loaded only breaks ties.
  virtual double PlacementLoadWeight() const { return 0; }
  // Index into `running` of the victim to preempt at its chunk boundary, or nullopt.
  virtual std::optional<size_t> ChoosePreemptionVictim(
      const PreemptionInput& in, const std::vector<RunningInfo>& running) const {
    return std::nullopt;
  }
};

// The default policy: ATLAS service + aging within a tenant, weighted fair share across
// tenants, EDF for deadline-urgent nodes, and the expected-cost tool-wait rule
// (scheduler/README.md "The cost rule").
class SwitchyardPolicy final : public Policy {
 public:
  struct Options {
    double aging_per_second = 0.1;  // seconds of attained service forgiven per second waited
    // GPU-seconds charged per second of link time (idle link). 0.3 since the traces reuse
    // an agent's context across calls (keep_tokens): on the memory-bound cluster near its
    // SLO capacity, 1.0-1.5 sent contexts that overflowed the host tier to recompute
    // rather than to disk (a 12.8 GB context: 2.1 s of disk against 2.4 s of prefill), and
    // the recompute, on GPUs already saturated, snowballed (JCT 520 s -> 6,000 s at 0.03/s);
    // 0.1-0.6 all held; on the compute-bound clusters it changes nothing (bench/RESULTS.md
    // "Replay with batching engines, agent context reuse"). It was 1.5 on traces that
    // started a new context at most calls, where 0.05 demoted live contexts whose reloads
    // then waited for memory.
    double link_weight = 0.3;
    double urgency_scale_s = 1.0;  // stall weight = 1 + urgency_scale_s / slack_s
    double prefetch_margin = 0.1;  // start reloads this fraction of `in` early
    // Pressure assumed for HBM held through a wait even when nothing is queued at the
    // moment the wait starts: work that arrives during a long wait needs that memory.
    double pressure_floor = 0.0;
    // HBM occupancy above which memory held through a wait is assumed contended even with
    // nothing queued yet: pressure rises linearly from 0 at the knee to 1 when full (1:
    // occupancy is ignored). Demoting before the queue forms spreads the moves out instead
    // of evicting in bursts that the link budgets cannot carry.
    double occupancy_knee = 0.5;
    // Choose the reload time among the median rule, each predicted quantile and "on
    // demand" by expected idle-memory + stall cost (false: the median rule only).
    bool choose_reload_time = true;
    // See Policy::SkipHopelessDeadlines; also: no preemption for a hopeless node.
    bool skip_hopeless = true;
    // Policy::PlacementLoadWeight: a call's context moves to a less loaded worker when the
    // decode time it saves there exceeds the move (1: seconds for seconds; 0: off).
    double placement_load_weight = 1.0;
    // Weigh HBM pressure by WaitInput::batch_headroom. Off by default: tried on the
    // agent sessions (bench/RESULTS.md "Replay with batching engines"), it did not change
    // the choices that matter there (the link-time term decides them).
    bool batch_aware = false;
    // Offer peers' HBM as a destination of a waiting context (false: host and disk only).
    bool peer_demotion = true;
    // Preempt a node that is rebuilding a discarded context for an urgent one (its partial
    // rebuild is then lost). Off: under memory pressure, urgent nodes preempted rebuilds
    // over and over — each preemption threw the rebuild away, the next placement started
    // it again, and recomputed tokens snowballed.
    bool preempt_rebuilds = false;
    // Multiplies the discard cost (a recompute's GPU time x (1 + urgency)). A recompute on
    // a busy worker costs more than its own roofline time: its chunks lengthen every step
    // that all running sequences share, and the work it adds makes more contexts wait.
    // At 1, on the compute-bound 8B cluster above its k = 2 capacity, evictions chose
    // recompute and it snowballed (85 M recomputed tokens, 3.6 x the trace's prefill, mean
    // JCT 731 s against kvflow's 531 s at 0.35/s); 2 still did (676 s), 3 and 5 did not
    // (527-528 s); 5 raised the k = 3 SLO capacity there from 0.324 to 0.400/s and changed
    // no other cell beyond its spread (bench/RESULTS.md, "SLO capacity with agent context
    // reuse"). 20 since the DGX clusters' copies pay for their PCIe switch's shared uplink
    // and per-piece copy costs (13 GB/s in effect for a 70B TP4 worker, not 200): a
    // queued link makes an eviction's demotion cost (its time, queue included) exceed 5 x
    // the recompute, evictions then chose recompute (7,158 in one replay), the recompute
    // saturated the GPUs, sessions lasted longer, more of them held KV, and the worker
    // collapsed (mean JCT 4,412 s against kvflow's 528 s at 0.028/s). At 20 the same
    // replay recomputes nothing (bench/RESULTS.md "Evaluation v2": SLO capacity on
    // dgx-h100-llama70b-tp4 0.0255 -> 0.0295/s, with think time 0.016 -> 0.027/s; the
    // compute-bound clusters unchanged).
    double discard_weight = 20.0;
    // Headroom at or below which memory is worth nothing to throughput (the pressure
    // factor rises linearly from 0 there to 1 at headroom 1).
    double headroom_knee = 0;
    // The ordering key within a priority band (bench/RESULTS.md "Replay" compares them):
    //   kDeadline (default): program-level EDF with a starvation bound, key = arrival +
    //     min(deadline_weight x (deadline - arrival), deadline_cap_s); a program without a
    //     deadline counts as one whose deadline is past the cap;
    //   kArrival: program arrival (program-level FCFS);
    //   kAtlas: program service + aging (least attained service first, Autellix-like).
    enum class OrderBy : uint8_t { kAtlas, kArrival, kDeadline };
    OrderBy order = OrderBy::kDeadline;
    double deadline_weight = 1.0;  // 1: EDF; 0: FCFS; between: a virtual finish time
    // A program yields to work that arrived at most this much later, however distant its
    // deadline (a long session is not starved by a stream of short ones).
    // 900 s was chosen by the sweep in bench/RESULTS.md "Replay" (600-1200 s compared).
    double deadline_cap_s = 900;
  };
  SwitchyardPolicy() : SwitchyardPolicy(Options{}) {}
  explicit SwitchyardPolicy(Options o, std::string label = "switchyard")
      : options_(o), label_(std::move(label)) {}
  std::string_view name() const override { return label_; }
  const Options& options() const { return options_; }
  OrderKey Order(const ReadyNodeInfo& n) const override;
  bool FairShareAcrossTenants() const override { return true; }
  bool DeadlineAware() const override { return true; }
  bool SkipHopelessDeadlines() const override { return options_.skip_hopeless; }
  double PlacementLoadWeight() const override { return options_.placement_load_weight; }
  WaitDecision OnWait(const WaitInput& in) const override;
  std::optional<size_t> ChoosePreemptionVictim(
      const PreemptionInput& in, const std::vector<RunningInfo>& running) const override;

  // Expected costs of each action (exposed for tests and the README's worked example).
  double KeepCost(const WaitInput& in) const;
  double DemoteCost(const WaitInput& in, const WaitOption& o, Duration* prefetch_after) const;
  double DiscardCost(const WaitInput& in) const;

 private:
  double Urgency(const WaitInput& in) const;
  double Pressure(const WaitInput& in) const;
  Options options_;
  std::string label_;
};

// Reference: FCFS by workflow arrival, keep every context in HBM while tools run, never
// preempt (docs/design.md "Reference policies", keep-during-tool).
class KeepDuringToolPolicy final : public Policy {
 public:
  std::string_view name() const override { return "keep-during-tool"; }
  OrderKey Order(const ReadyNodeInfo& n) const override;
  WaitDecision OnWait(const WaitInput& in) const override;
};

// Builds a policy by name: "switchyard", "keep-during-tool", the reference policies of
// scheduler/reference_policies.h ("vllm-fcfs", "infercept", "continuum", "autellix",
// "kvflow", "lmcache") and "oracle" (oracle_policy.h); nullptr when unknown.
std::unique_ptr<Policy> MakePolicy(std::string_view name);

// Builds a policy from a spec: a name as for MakePolicy, and for "switchyard" optional
// option overrides, "switchyard:occupancy_knee=0.7:pressure_floor=0.05" (the fields of
// SwitchyardPolicy::Options; the policy reports the whole spec as its name). InvalidArgument
// naming the unknown policy, the unknown option or the bad value.
Result<std::unique_ptr<Policy>> CreatePolicy(std::string_view spec);

}  // namespace switchyard::scheduler
