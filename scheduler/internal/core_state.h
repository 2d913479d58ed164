// Internal state of scheduler::Core: workflows, ordering, admission and placement, and the
// decisions about KV, over the KV ledger (kv_ledger.h: where every context lives and how
// much room each worker's tiers have). Split by responsibility over core*.cc files:
//   core_events.cc    the event table: one small handler per EventKind
//   core.cc           workflow graph (submit/append/close/cancel/end), timers, Core's API
//   core_dispatch.cc  ordering: the queue of ready nodes, its keys, the dispatch loop
//   core_placement.cc admission against HBM, placement with KV locality
//   core_disagg.cc    prefill/decode disaggregation: routing, hand-off, what moved
//   core_preempt.cc   eviction choice, engine step reports, preemption at chunk boundaries
//   core_kv.cc        tool-wait decisions, transfers and their completion, prefetch timing,
//                     worker loss and model-epoch invalidation
//   core_retry.cc     failure classification, retry with backoff and credit, fail closed
//   core_prefix.cc    shared prefixes as nodes read and build them (the copies themselves
//                     are the ledger's)
//   kv_ledger.cc      KvLedger
// Not a public interface: only the core's .cc files include it.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "program_graph/workflow.h"
#include "scheduler/core.h"
#include "scheduler/internal/kv_ledger.h"

namespace switchyard::scheduler::internal {

enum class NState : uint8_t {
  kPending,
  kReady,
  kAdmitted,
  kRunning,
  kRetryWait,
  kSucceeded,
  kFailed,
  kCancelled
};
inline bool Terminal(NState s) {
  return s == NState::kSucceeded || s == NState::kFailed || s == NState::kCancelled;
}

struct QKey {
  int band = 0;
  double key = 0;
  uint64_t seq = 0;
  std::string wf;
  int node = 0;
  friend bool operator<(const QKey& a, const QKey& b) {
    return std::tie(a.band, a.key, a.seq) < std::tie(b.band, b.key, b.seq);
  }
};

// A call's phase under disaggregation (CoreOptions::disaggregation): none (colocated, or
// not routed yet), its prefill running on a prefill worker, or handed off to decode.
enum class PdPhase : uint8_t { kNone, kPrefill, kDecode };

struct NodeRec {
  v1::ProgramNode spec;
  NState state = NState::kPending;  // the scheduler's view; the program's is graph->state()
  int attempts = 0;                 // placements and admissions (preemption re-places)
  Time ready_since{0};
  Time started{0};
  int worker = -1;
  int64_t new_tokens = 0;  // tokens this node prefills into its primary context
  int64_t new_done = 0;    // of those, already computed (kept across preemption)
  int64_t recompute_at_place = 0;
  uint64_t reserved = 0;  // HBM bytes reserved for growth on `worker`
  Duration est_run{0};
  Duration charged{0};  // service charged to the tenant at placement
  bool queued = false;
  QKey qkey;
  Time latest_start = Time::Max();  // deadline - est_run (urgent index key)
  uint64_t demand = 0;              // bytes counted in queued demand
  bool resumed = false;
  Duration inherited{0};     // ATLAS service the call inherited when it became ready
  int64_t out_done = 0;      // output tokens decoded by earlier (preempted) attempts
  int64_t base_tokens = 0;   // tokens of the primary context when placed
  int64_t keep_tokens = 0;   // EXTEND: continue the primary context from its first this many
  int64_t prog_prefill = 0;  // engine-reported progress of the running attempt
  int64_t prog_out = 0;      // output tokens decoded so far (out_done included)
  uint64_t place_seq = 0;    // admission order (the vLLM victim rule)
  std::vector<std::string> rebuilding;  // contexts this attempt recomputes from scratch
  int64_t prefix_hit = 0;               // prefix tokens this attempt found resident
  bool builds_prefix = false;           // this attempt computes a shared prefix copy
  PdPhase pd = PdPhase::kNone;
};

// The KV tokens a running node's next decode step reads from its primary context.
inline int64_t DecodeKvTokens(const NodeRec& n) {
  return n.base_tokens + n.new_tokens - n.new_done + n.prog_out;
}

struct WfRec {
  std::string id, tenant;
  Time deadline = Time::Max();
  int priority = 2;
  Time arrival{0};
  // The program: definition, validation, readiness, failure propagation and retry
  // bookkeeping, steps-to-execution (program_graph). Node i of the graph is nodes[i].
  std::unique_ptr<program_graph::Workflow> graph;
  std::vector<NodeRec> nodes;
  std::vector<std::string> contexts;  // keys, creation order
  bool closed = false, ended = false;
  Duration atlas{0}, plas{0};
  Duration waited{0};  // queueing time of the program's placed calls
  int running_tools = 0;
  int admitted_tools = 0;  // tools admitted but not yet reported started
  int queued_nodes = 0;    // LLM nodes in the ready queue
};

// A worker as ordering and placement see it (its KV room is the ledger's WorkerKv).
// A node running on a worker, as the per-worker sums (RunningFraction, BatchHeadroom,
// LoadedDecodeSeconds) walk it: its workflow's record and the records of the contexts its
// cache refs name, so that no sum looks anything up by key per running node. Both stay
// valid while it runs: `wfs` and the ledger's contexts are node-based maps; a workflow is
// forgotten only once it ended, and its contexts are erased only after EndWorkflow stopped
// its running nodes (kv_ledger.h, rule 5).
struct RunningRef {
  WfRec* wf = nullptr;
  std::vector<const CtxRec*> contexts;  // NodeContexts order
};

struct WorkerRec {
  int running = 0;
  bool alive = true;
  bool draining = false;  // no new placements; contexts move off
  Duration step_time{0};  // the engine's last reported step (0: none yet)
  std::map<std::pair<std::string, int>, RunningRef> nodes;  // running (wf, node)
  // Σ DecodeKvTokens over its running nodes, kept as they start, progress and stop (what
  // one decode step reads; LoadedDecodeSeconds, per candidate worker of every placement).
  int64_t decode_kv_tokens = 0;
  // Its engine's last kWorkerLoad report and when it came (reported_at < 0: none yet).
  ReportedLoad reported;
  Time reported_at{-1};
  // The (wf, node) ids of its running nodes, in order: a copy, for loops that stop them.
  std::vector<std::pair<std::string, int>> RunningIds() const {
    std::vector<std::pair<std::string, int>> ids;
    ids.reserve(nodes.size());
    for (const auto& [id, ref] : nodes) ids.push_back(id);
    return ids;
  }
};

struct TenantRec {
  double weight = 1.0;
  Duration service{0};
  double credit = 0;
  Time credit_at{0};
  std::set<QKey> ready;
};

enum class TimerKind : uint8_t { kRetry, kPrefetch, kReeval, kRekey };
struct Timer {
  Time at;
  TimerKind kind;
  std::string key;  // wf id (retry) or context key
  int node = -1;
  friend bool operator<(const Timer& a, const Timer& b) {
    return std::tie(a.at, a.kind, a.key, a.node) < std::tie(b.at, b.kind, b.key, b.node);
  }
};

struct CoreState {
  CoreOptions opt;
  const Policy* policy;
  const TransferPlanner* planner;
  GrantIssuer* grants;
  const ComputeCostModel* cost;
  DurationModel durations;
  // Where KV lives and how much room each worker's tiers have: contexts, moves in flight,
  // shared-prefix copies, HBM / host / disk accounting (kv_ledger.h).
  KvLedger kv;

  // Hash maps (element addresses are stable; nothing depends on their iteration order:
  // code that walks them sorts what it collects).
  std::unordered_map<std::string, WfRec> wfs;
  std::vector<WorkerRec> workers;
  std::map<std::string, TenantRec> tenants;
  std::set<std::tuple<Time, uint64_t, std::string, int>> urgent;  // latest_start index
  std::set<Timer> timers;
  std::map<std::string, uint64_t> model_epoch;
  uint64_t queued_demand = 0;
  size_t queued = 0;
  Duration queue_delay_ewma{0};  // recent queueing delay of placed nodes (Continuum's input)
  // Mean output tokens of finished calls per model (EWMA over ~50 calls; absent: none yet).
  std::map<std::string, double> output_mean;
  uint64_t deferred_demotions = 0;
  uint64_t next_seq = 1, ignored = 0;
  uint64_t changes = 0;           // bumped whenever memory or a queue is freed (re-dispatch needed)
  uint64_t changes_at_event = 0;  // Changes() when the event being handled arrived
  uint64_t pool_preemptions = 0;  // nodes preempted because a KV pool ran out
  PrefixStats prefix_stats;
  PdStats pd_stats;
  bool dispatch_next_report = false;  // a preempting step skipped its dispatch
  bool rekey_pending = false;         // a kRekey timer is set
  Commands* out = nullptr;
  Time now{0};

  CoreState(CoreOptions o, const Policy* p, const TransferPlanner* pl, GrantIssuer* g,
            const ComputeCostModel* c);

  // core_events.cc: one handler per event kind, dispatched through a table indexed by
  // EventKind. A handler says what follows it: the idle contexts of draining workers move
  // off and queued nodes are placed (most events), only the placement, or nothing.
  enum class Then : uint8_t { kDrainAndDispatch, kDispatch, kNothing };
  using Handler = Then (CoreState::*)(const Event&);
  void Handle(const Event& e);
  static Handler HandlerFor(EventKind kind);
  // Memory or a queue was freed since `changes_at_event` when this differs from it.
  uint64_t Changes() const { return changes + kv.changes(); }
  Then HandleSubmitted(const Event& e);
  Then HandleAppended(const Event& e);
  Then HandleClosed(const Event& e);
  Then HandleCancel(const Event& e);
  Then HandleEngineStep(const Event& e);
  Then HandleEngineReport(const Event& e);
  Then HandleLlmStarted(const Event& e);
  Then HandleLlmFinished(const Event& e);
  Then HandleToolStarted(const Event& e);
  Then HandleToolFinished(const Event& e);
  Then HandleTransfer(const Event& e);  // completed or failed
  Then HandleWorkerLost(const Event& e);
  Then HandleWorkerJoined(const Event& e);
  Then HandleDrain(const Event& e);  // drain or undrain
  Then HandleWorkerLoad(const Event& e);
  Then HandleContextEvicted(const Event& e);
  Then HandleEpochChanged(const Event& e);
  Then HandleTick(const Event& e);
  Then HandleUnknown(const Event& e);
  // The live workflow an event names (null, counted as ignored, when there is none).
  WfRec* EventWorkflow(const Event& e);
  // The workflow and node index an event names (null workflow: ignored).
  std::pair<WfRec*, int> EventNode(const Event& e);
  // An engine's report about an earlier attempt of the node on another worker (ignored).
  bool FromEarlierAttempt(const Event& e, const NodeRec& n);
  // kLlmFinished OK: the primary context grows by what the node wrote; service is charged.
  void OnLlmSucceeded(WfRec& wf, int idx, const Event& e);

  // core.cc
  void Submit(const v1::Workflow& w);
  void Append(WfRec& wf, const v1::ProgramNode& n);
  void AddNode(WfRec& wf, int idx);  // scheduler record of graph node idx
  // The ledger's record of context `r` of node `n`, created when the node names it first.
  void AddContext(WfRec& wf, NodeRec& n, int ref);
  void Close(WfRec& wf);
  void OnReady(WfRec& wf, int idx);
  void OnSucceeded(WfRec& wf, int idx);
  void FailNode(WfRec& wf, int idx, const std::string& why);  // terminal, ends the workflow
  int StepsToUse(const CtxRec& c) const;                      // KVFlow steps-to-execution
  void CancelWorkflow(WfRec& wf);  // the client's cancel: ends with kComplete "cancelled"
  // The workflow failed outside the core (kCancel with a status): ends with kFail.
  void FailWorkflow(WfRec& wf, const std::string& node, const std::string& why);
  void EndWorkflow(WfRec& wf, CommandKind kind, const std::string& node, const std::string& why);
  void MaybeComplete(WfRec& wf);
  void RunTimers();
  void Emit(Command c) { out->list.push_back(std::move(c)); }
  WfRec* FindWf(const std::string& id);
  TenantRec& Tenant(const std::string& name);
  Time NodeDeadline(const WfRec& wf, const NodeRec& n) const;
  // The cost of `model` (CoreOptions::model_costs; else the core's own).
  const ComputeCostModel& CostOf(const std::string& model) const {
    auto it = opt.model_costs.find(model);
    return it == opt.model_costs.end() || !it->second ? *cost : *it->second;
  }
  // The model worker `w` runs ("" when every worker runs every model).
  const std::string& ModelOf(int w) const {
    static const std::string kAny;
    return opt.worker_models.empty() ? kAny : opt.worker_models[static_cast<size_t>(w)];
  }
  // Worker `w` runs `model` (and may hold its KV).
  bool Serves(int w, const std::string& model) const {
    return opt.worker_models.empty() || opt.worker_models[static_cast<size_t>(w)] == model;
  }
  // HBM a running node holds beyond its contexts' committed blocks, once it has decoded
  // `out_total` output tokens (its whole prefill is allocated at admission).
  uint64_t Growth(const WfRec& wf, const NodeRec& n, int64_t out_total) const;
  // The same with the primary context's tokens given (`base`).
  uint64_t GrowthFrom(const NodeRec& n, int64_t base, int64_t out_total) const;
  bool ExtendsPrimary(const NodeRec& n) const {
    return n.spec.cache_refs_size() > 0 && n.spec.cache_refs(0).mode() != v1::CacheRef::READ;
  }

  // core_dispatch.cc, core_placement.cc, core_preempt.cc
  void Enqueue(WfRec& wf, int idx);
  void Dequeue(WfRec& wf, int idx);
  void Rekey();  // every queued node keyed again (Policy::RekeyInterval)
  void Dispatch();
  const QKey* PickNext(const std::set<std::pair<std::string, int>>& skipped);
  bool TryPlace(WfRec& wf, int idx);
  // What placing node `n` (its contexts `keys`, its prefixes `prefixes_read`) on worker w
  // needs: HBM bytes beyond `growth` and the readying cost in seconds; nothing when w
  // cannot take it now (no free sequence, not in service, its prefix still being built).
  struct WorkerFit {
    uint64_t need = 0;
    double cost_s = 0;
  };
  std::optional<WorkerFit> FitOn(const NodeRec& n, int w, uint64_t growth,
                                 const std::vector<std::string>& keys,
                                 const std::vector<std::pair<std::string, int64_t>>& prefixes_read);
  // No worker has room: fails a node that cannot fit anywhere, else evicts for the
  // cheapest worker `any` and tries again. Whether the node was placed.
  bool NoRoom(WfRec& wf, int idx, const std::vector<std::string>& keys, uint64_t growth,
              uint64_t cap, int any, uint64_t any_need);
  // Readies the node's contexts on worker w (a move where cheaper than recomputing, else a
  // discard); the tokens to recompute, or nothing while moves are on their way.
  std::optional<int64_t> ReadyContexts(const NodeRec& n, int w,
                                       const std::vector<std::string>& keys);
  // Policy::PlacementLoadWeight's term: the call's expected decode seconds on worker w,
  // its model's mean output x one step of w's batch with the call added (the cost model's
  // batch step over the running calls' KV tokens and the call's own `kv_tokens`, with
  // `other_seqs` more sequences other clients run there, as its engine reported).
  double LoadedDecodeSeconds(const NodeRec& n, int w, int64_t kv_tokens,
                             int64_t other_seqs = 0) const;
  // The same term where w's engine reported its load (kWorkerLoad, fresh): the batch's KV
  // is the larger of the running calls' and the reported share of w's KV capacity (other
  // clients' requests included; without a share, each request running beyond the core's
  // counts as large as the core's own), and each request queued there delays the call by
  // its share of a call's decode (one slot frees per call ending among the running ones).
  double LoadSeconds(const NodeRec& n, int w, int64_t kv_tokens) const;
  const ReportedLoad* FreshReport(int w) const;
  // Whether KV at `from` can be moved into worker w's HBM (CoreOptions::kv_between_workers).
  bool Movable(const Location& from, int w) const;
  // CacheRef.keep_tokens: the primary context cut to the tokens the node continues from,
  // where nothing of the node's own is in it yet and no engine holds blocks the core would
  // stop counting: a discarded context (nothing held), or, with `worker` >= 0, one resident
  // in that worker's HBM (the engine drops the same blocks when it admits the node).
  void CutToKept(WfRec& wf, NodeRec& n, int worker);
  void Place(WfRec& wf, int idx, int worker, int64_t recompute);
  // Place's part for the shared prefixes the node reads on w: found resident (counted in
  // prefix_stats) or built by the node; the prefix tokens it must compute.
  int64_t ReadPrefixes(WfRec& wf, int idx, int w, uint64_t epoch);
  void StopRunning(WfRec& wf, int idx);
  bool EvictFor(int worker, uint64_t need, const std::vector<std::string>& keep);
  void OnEngineStep(WfRec& wf, int idx, int64_t tokens_done);
  void OnEngineReport(const Event& e);
  void OnPoolExhausted(int worker, size_t needing);
  // Stops a running node at its current progress and requeues it; its KV stays with its
  // contexts (the caller decides their fate). Emits kPreempt (with `reason`, if any).
  void PreemptNode(WfRec& wf, int idx, int64_t tokens_done, int64_t out_done,
                   const char* reason = "");
  std::vector<std::string> NodeContexts(const WfRec& wf, const NodeRec& n) const;
  Duration EstimateRun(const WfRec& wf, const NodeRec& n) const;
  // The trace's recorded future (CoreOptions::foresight) when the policy uses it; else
  // null: no other policy's inputs ever come from it.
  const Foresight* foresight() const { return policy->UsesForesight() ? opt.foresight : nullptr; }
  // A tool's predicted total duration at quantile q: its recorded one under foresight,
  // else the learned sketch (with the node's expected_duration_ms hint before any sample).
  Duration PredictTool(const WfRec& wf, const NodeRec& tool, double q) const;
  double Pressure(int worker) const;
  bool ContextsResident(const WfRec& wf, const NodeRec& n) const;  // all committed in HBM

  // core_disagg.cc: prefill/decode disaggregation (CoreOptions::disaggregation)
  // A prefill-only worker while calls are disaggregated.
  bool PrefillOnly(int w) const {
    return opt.disaggregation != Disaggregation::kColocated &&
           static_cast<size_t>(w) < opt.worker_roles.size() &&
           opt.worker_roles[static_cast<size_t>(w)] == WorkerRole::kPrefill;
  }
  // Routes a fresh call (ChoosePrefill): nothing when it runs colocated (TryPlace goes on),
  // else whether it was placed on the prefill worker chosen (false: it waits there).
  std::optional<bool> RouteToPrefill(
      WfRec& wf, int idx, uint64_t growth, const std::vector<std::string>& keys,
      const std::vector<std::pair<std::string, int64_t>>& prefixes_read);
  // The call's candidates and model for ChoosePrefill (RouteToPrefill's inputs).
  std::vector<DecodeCandidate> DecodeCandidates(
      const NodeRec& n, uint64_t growth, const std::vector<std::string>& keys,
      const std::vector<std::pair<std::string, int64_t>>& prefixes_read);
  std::vector<PrefillCandidate> PrefillCandidates(
      const NodeRec& n, uint64_t growth, const std::vector<std::string>& keys,
      const std::vector<std::pair<std::string, int64_t>>& prefixes_read, int64_t prompt,
      const PdModel& model, const std::vector<DecodeCandidate>& decode);
  PdModel PdModelOf(const NodeRec& n, int64_t prompt) const;
  // Prompt tokens of the node's contexts and prefixes whose KV is committed on worker w.
  int64_t ResidentTokens(const std::vector<std::string>& keys,
                         const std::vector<std::pair<std::string, int64_t>>& prefixes_read,
                         int w) const;
  // A step report of a call prefilling on a prefill worker: once its prefill is done (and
  // it did not end in that step), it stops there and is queued for a decode worker.
  void MaybeHandOff(WfRec& wf, int idx, const SeqStep& st);
  // ReadyContexts' part: a handed-off context leaving a prefill worker (moved or dropped).
  void CountHandOffMove(const NodeRec& n, Location src, uint64_t bytes, bool moved);

  // core_kv.cc: decisions about KV (the ledger keeps the facts)
  void OnToolStarted(WfRec& wf, int idx);
  void DecideWait(CtxRec& c, WaitReason reason, std::vector<Duration> quantiles, Duration slack);
  // The policy's input for a decision about `c` (resident on its worker), with every
  // destination a demotion could take.
  WaitInput MakeWaitInput(const CtxRec& c, WaitReason reason, std::vector<Duration> quantiles,
                          Duration slack);
  void AddDemotionOptions(const CtxRec& c, WaitInput& in);
  std::vector<Duration> ToolQuantiles(const WfRec& wf, const NodeRec& tool, Duration elapsed);
  // Starts a move of `c` to `dst`; false when `dst` has no room or the links grant no
  // budget now (`*refused_grant` tells which).
  bool StartTransfer(CtxRec& c, Location dst, TrafficClass cls, CommandKind kind, Time prefetch_at,
                     bool* refused_grant = nullptr);
  bool DeferDemotion(CtxRec& c, WaitReason reason, const WaitInput& in, const WaitDecision& d);
  // What a wait decision to discard becomes for a context the client asked to retain.
  WaitDecision Retained(const CtxRec& c, const WaitInput& in, WaitReason reason) const;
  double RunningFraction(int worker) const;  // HBM held by running nodes there / capacity
  Duration SwapBacklog(int worker) const;    // planned time of moves out of its HBM in flight
  double BatchHeadroom(int worker) const;    // WaitInput::batch_headroom
  void OnTransferDone(uint64_t id, bool ok);
  // Drops the context's KV (KvLedger::Discard) and emits kDiscard.
  void DiscardContext(CtxRec& c, const std::string& reason);
  void OnPrefetchTimer(CtxRec& c);
  void LoadAhead();  // Policy::LoadAheadSteps
  void OnReevalTimer(CtxRec& c);
  void OnWorkerLost(int worker);
  // A lost worker is back, empty (a new incarnation: nothing of the lost one is trusted).
  void OnWorkerJoined(int worker);
  // Draining (`on`) or back in service. A draining worker takes no placement, no peer
  // demotion and no prefetch; DrainStep moves its idle contexts off (the policy's eviction
  // choice: another tier, a peer, or discard) until it is drained (Drained).
  void OnDrain(int worker, bool on);
  void DrainStep();
  bool Drained(int worker) const;
  // Alive and not draining: may be given work.
  bool Placeable(int w) const {
    const WorkerRec& r = workers[static_cast<size_t>(w)];
    return r.alive && !r.draining;
  }
  void OnEpochChanged(const std::string& model, uint64_t epoch);

  // core_prefix.cc: the nodes' side of shared prefixes (the copies are the ledger's)
  // The prefixes a node reads (those of its contexts), without repeats.
  std::vector<std::pair<std::string, int64_t>> NodePrefixes(const WfRec& wf,
                                                            const NodeRec& n) const;
  // A resident copy of `key` spares the node prefill: it creates a context starting with it
  // or rebuilds a discarded one (else its context holds its own tokens only and the prefix
  // would not have been computed again).
  bool PrefixSaves(const WfRec& wf, const NodeRec& n, const std::string& key) const;
  // Creates the copy on `worker`, built by node (wf, idx); charges its bytes there.
  PrefixRec& BuildPrefix(const std::string& key, int64_t tokens, int worker, const WfRec& wf,
                         int idx, const std::string& model, uint64_t epoch);
  // Drops the copy (emits kDiscard of its key at its worker) and detaches its holders.
  void DropPrefix(PrefixRec& p, const std::string& reason);
  // The node stops running: its reads end; a copy it was still building is dropped.
  void ReleaseNodePrefixes(WfRec& wf, int idx);
  // Its prefill reached `prefill_done`: a copy it builds is complete once the prefill has
  // covered what it recomputes (the engines compute rebuilt contexts first).
  void OnPrefixProgress(WfRec& wf, int idx, int64_t prefill_done);
  // Idle copies on `worker`, least recently used first, dropped until `need` is freed.
  uint64_t EvictIdlePrefixes(int worker, uint64_t need);

  // core_retry.cc
  void OnNodeFailed(WfRec& wf, int idx, const Status& st);
  std::string RetryBlocker(WfRec& wf, int idx, const Status& st, Duration backoff);
  Duration Backoff(const WfRec& wf, int idx) const;
};

}  // namespace switchyard::scheduler::internal
