// scheduler::Core: the pure decision core (docs/design.md "Scheduler decisions").
//
// handle(event, now) updates the core's state and returns the commands the runtime must
// carry out, plus the next time it wants a deadline tick. It never sleeps, locks, does I/O
// or reads a clock: `now` comes with every event, so the same event sequence always gives
// the same commands. State: workflows and their node graphs, KV contexts and where they
// live (tier, worker, bytes, in-flight transfer), HBM accounting per worker (committed +
// reserved bytes never exceed capacity), per-tenant attained service and weights,
// per-tenant retry credit, and learned tool durations (DurationModel).
//
// Ownership: the Core borrows the Policy, TransferPlanner, GrantIssuer and
// ComputeCostModel it is given; they must outlive it.
// Thread-safety: none. One thread calls handle(); the runtime serialises events.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scheduler/disaggregation.h"
#include "scheduler/duration_sketch.h"
#include "scheduler/environment.h"
#include "scheduler/events.h"
#include "scheduler/foresight.h"
#include "scheduler/policy.h"

namespace switchyard::scheduler {

struct CoreOptions {
  int workers = 1;
  uint64_t hbm_bytes_per_worker = 64ULL << 30;  // KV capacity per worker
  // More than one model (a service whose config serves several): worker_models[w] is the
  // model worker w runs (size `workers`). A node runs only on a worker of its model_id;
  // its contexts' KV stays on that model's workers (their HBM, host and disk tiers, and
  // peers of the same model). Empty: every worker runs every model.
  std::vector<std::string> worker_models;
  // The cost (prefill, decode, KV bytes per token) of each model named here; any other
  // model is priced by the cost the core was built with.
  std::map<std::string, const ComputeCostModel*> model_costs;
  // KV capacity of each worker when they differ (size `workers`, e.g. models on different
  // GPUs); empty: hbm_bytes_per_worker for all.
  std::vector<uint64_t> worker_hbm_bytes;
  // LLM nodes running at once on a worker (the engine's max_num_seqs). Memory, not this
  // cap, is what normally bounds a worker: nodes are admitted by free KV blocks.
  int max_num_seqs = 256;
  // KV block size in tokens: a context holds whole blocks, and a running node reserves the
  // blocks its prefill writes at admission and one more each time its decode crosses a
  // block boundary (reported by the engine, kEngineReport). 1: byte-exact accounting.
  int64_t kv_block_tokens = 1;
  // Fraction of a worker's KV kept free when admitting a node (vLLM's watermark, 0.01),
  // so running decodes have blocks to grow into.
  double admission_watermark = 0;
  std::map<std::string, double> tenant_weights;  // absent: 1.0
  bool use_host = true, use_disk = true, use_peer = true;
  // Capacity of each worker's host and disk offload tiers; 0: not modelled (unbounded). A
  // context is demoted only to a tier with room for it.
  uint64_t host_bytes_per_worker = 0, disk_bytes_per_worker = 0;
  double retry_credit_capacity = 20;     // per tenant
  double retry_credit_per_second = 1.0;  // refill
  int64_t default_max_output_tokens = 256;
  int dispatch_tries = 16;  // candidates examined per dispatch pass
  // Shared prefixes (CacheRef.shared_prefix): a context created with one holds only its own
  // tokens; the prefix's blocks are held once per (tenant, model, prefix id) on each
  // worker, referenced by the contexts there, and a node finding them resident prefills
  // only what follows. false: the prefix is part of each context (computed every time).
  bool share_prefixes = true;
  // Deadline-bound nodes whose latest start is within this horizon run first (EDF).
  Duration urgent_horizon = Seconds(1.0);
  DurationModel::Options durations;
  // Prefill/decode disaggregation (disaggregation.h, docs/design.md "Disaggregation"): the
  // role of each worker (size `workers`; empty: all mixed) and how calls are routed. Under
  // kAlways and kAuto a prefill worker takes only the prefill of calls routed to it; once
  // its prefill is done (the first token out) the call hands off: it stops there, keeping
  // its KV, and is placed again on a decode-capable worker, its context moved there as a
  // latency-class KV move (or recomputed there when that is cheaper). kColocated ignores
  // the roles.
  std::vector<WorkerRole> worker_roles;
  Disaggregation disaggregation = Disaggregation::kColocated;
  // KV moves between workers: HBM to HBM, or from one worker's host or disk tier into
  // another's HBM. false in proxy mode, where each worker is an upstream engine whose KV
  // (GPU and CPU offload alike) no other can read: a context held by another worker is
  // recomputed, never moved, and no context is demoted to a peer.
  bool kv_between_workers = true;
  // A worker's kWorkerLoad report counts in placement for this long after it arrived (the
  // reporter sends one every second or so; one older is stale: the worker went quiet).
  Duration reported_load_ttl = Seconds(10.0);
  // The trace's recorded future, for the oracle policy only (foresight.h): read only when
  // the policy's UsesForesight() holds, never for another policy. Borrowed.
  const Foresight* foresight = nullptr;
};

// What shared prefixes saved so far (CoreOptions::share_prefixes).
struct PrefixStats {
  // Prefix tokens placed nodes found resident and would otherwise have prefilled (the node
  // creates its context, or rebuilds a discarded one): the prefill sharing saved.
  int64_t hit_tokens = 0;
  int64_t built_tokens = 0;  // prefix tokens computed into a new copy
  uint64_t hits = 0;         // placements behind hit_tokens
  uint64_t reads = 0;        // placements that read a resident copy (hits included)
  uint64_t builds = 0, evictions = 0;
};

// What disaggregation did so far (CoreOptions::disaggregation).
struct PdStats {
  uint64_t calls = 0;                 // LLM calls routed (placed for the first time)
  uint64_t disaggregated = 0;         // of those, prefilled on a prefill worker
  uint64_t handoffs = 0;              // prefills that completed there and handed off
  uint64_t moves = 0;                 // KV moves started from a prefill worker to a decode worker
  uint64_t bytes_moved = 0;           // their bytes
  uint64_t recomputed_on_decode = 0;  // handed-off contexts the decode side recomputed
};

// A context's shared prefix as the engines see it: the key of its blocks in a worker's
// pool (one per tenant, model and prefix id) and its tokens.
struct SharedPrefixView {
  std::string key;
  int64_t tokens = 0;
};

namespace internal {
struct CoreState;
}

class Core {
 public:
  Core(CoreOptions options, const Policy* policy, const TransferPlanner* planner,
       GrantIssuer* grants, const ComputeCostModel* cost);
  ~Core();
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  Commands handle(const Event& event, Time now);
  // Drops what the core keeps about an ended workflow (its graph, nodes and tenant
  // bookkeeping); later events naming it are ignored. A workflow that has not ended is
  // kept: false. A long-running service calls this when it archives a workflow, so the
  // core's memory follows the live workflows, not the history.
  bool Forget(const std::string& workflow_id);

  // Introspection (tests, metrics, property checks).
  const Policy& policy() const { return *policy_; }
  uint64_t hbm_used(int worker) const;
  // false from kWorkerLost of the worker until its kWorkerJoined (out of range: false).
  bool alive(int worker) const;
  // Between kDrainWorker and kUndrainWorker (or a loss); drained: draining, and nothing
  // runs there, is committed in its HBM or moves to or from it.
  bool draining(int worker) const;
  bool drained(int worker) const;
  uint64_t hbm_capacity() const { return options_.hbm_bytes_per_worker; }
  uint64_t hbm_capacity(int worker) const;  // CoreOptions::worker_hbm_bytes where set
  const CoreOptions& options() const { return options_; }
  int64_t default_max_output_tokens() const { return options_.default_max_output_tokens; }
  std::optional<Location> ContextLocation(const std::string& context_key) const;
  int64_t ContextTokens(const std::string& context_key) const;
  // The shared prefix the context starts with (none without one, or when sharing is off).
  std::optional<SharedPrefixView> ContextPrefix(const std::string& context_key) const;
  // Tokens of the copy of a shared prefix committed on `worker` (-1: none there).
  int64_t PrefixTokensOn(const std::string& prefix_key, int worker) const;
  const PrefixStats& prefix_stats() const;
  const PdStats& pd_stats() const;
  // The worker's role (CoreOptions::worker_roles, or a kWorkerJoined's): kMixed unset.
  WorkerRole role(int worker) const;
  // The worker's last kWorkerLoad report while fresh (CoreOptions::reported_load_ttl).
  std::optional<ReportedLoad> reported_load(int worker) const;
  // LLM nodes running now, on all workers.
  size_t running_nodes() const;
  Duration TenantService(const std::string& tenant) const;
  size_t live_workflows() const;
  size_t queued_nodes() const;
  uint64_t ignored_events() const;
  const DurationModel& durations() const;
  // Replaces the learned tool durations with saved ones (a restart restoring what it learned);
  // on error nothing changes.
  Status RestoreDurations(const v1::LearnedDurations& saved);

 private:
  CoreOptions options_;
  const Policy* policy_;
  std::unique_ptr<internal::CoreState> s_;
};

}  // namespace switchyard::scheduler
