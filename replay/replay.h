// Replay driver: runs a Switchyard trace through the REAL scheduler::Core and
// executors::Runtime on a base::VirtualEventLoop with the simulated executors.
//
// Per workflow record: Submit at its arrival with the nodes known at submission;
// nodes with `revealed_after` are Appended when that node succeeds (dynamic growth), and
// the workflow is Closed once nothing is held back. Tool waits take the recorded
// durations (NodeActual.duration_ms: the oracle, seen only by the SimulatedToolWaiter,
// never by the policy); LLM calls are timed by the roofline cost model of the cluster's
// model and GPU (one SimulatedEngine per worker: continuous batching, step times from the
// cluster's step cost); KV moves by the simulated network
// (SimulatedFabric: PCIe, NVMe, NVLink, NIC links with per-class grants). Nothing of the
// scheduler is re-implemented: metrics come only from Runtime::SetObserver (events and
// the commands they produced) and the core's introspection (hbm_used).
//
// Thread-safety: RunReplay is a pure function of its inputs (no globals, no wall clock
// except the measured wall time and the optional progress callback).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "proto/switchyard/v1/replay.pb.h"
#include "proto/switchyard/v1/trace.pb.h"
#include "scheduler/disaggregation.h"

namespace switchyard::replay {

struct ReplayOptions {
  uint64_t seed = 1;        // recorded in the report (the replay itself is deterministic)
  int series_points = 120;  // buckets of the time series in the report
  // Virtual-time limit after the last arrival; workflows still running then count as
  // unfinished (deadline missed, excluded from JCT). 0: no limit.
  double drain_limit_s = 24 * 3600.0;
  // Called now and then with the fraction of arrivals submitted (0..1).
  std::function<void(double)> progress;
  // Check the HBM ledger after every event (PolicyReport::ledger_*): costs a pass over the
  // workers per event.
  bool check_ledger = true;
  // Folder a cluster's relative step_table path is read from ("" : the working folder).
  // LoadCluster / ClusterFromArg already return it absolute (the cluster file's folder);
  // this is for clusters built in code.
  std::string cluster_dir;
  // Shared prefixes (scheduler::CoreOptions::share_prefixes): false replays the same trace
  // with every context computing and holding its prefix itself.
  bool shared_prefixes = true;
  // Where calls prefill (scheduler::CoreOptions::disaggregation) on a cluster with
  // prefillWorkers; kColocated (or a cluster without them) runs every call where it decodes.
  scheduler::Disaggregation disaggregation = scheduler::Disaggregation::kColocated;
};

// A time series sampled in equal buckets over [0, end_s].
struct Series {
  double bucket_s = 0;
  std::vector<double> values;
};

// One workflow's outcome in virtual time (seconds from the trace's clock origin).
struct WorkflowRecord {
  std::string id;
  double arrival_s = 0;
  double end_s = -1;       // -1: did not end before the drain limit (null in report.json)
  std::string state;       // "completed", "failed", "cancelled" or "unfinished"
  double deadline_s = -1;  // -1: none
  // The session's tool time: the recorded durations of its tool nodes (the replay waits
  // them out as recorded, whatever the policy), and its LLM calls.
  double tool_s = 0;
  int64_t llm_calls = 0;
};

struct PolicyReport {
  std::string policy;
  std::string cluster;
  uint64_t seed = 0;
  int64_t workflows = 0;   // in the trace
  int64_t completed = 0;   // ended successfully
  int64_t failed = 0;      // ended failed or cancelled
  int64_t unfinished = 0;  // still running at the drain limit
  double jct_mean_s = 0, jct_p50_s = 0, jct_p95_s = 0, jct_p99_s = 0;
  double ttft_p50_s = 0, ttft_p99_s = 0;
  // Time between output tokens per call: (end - first token) / (output tokens - 1), for
  // calls with two or more output tokens.
  double tbt_p50_s = 0, tbt_p99_s = 0;
  double deadline_miss_rate = 0;  // of workflows with a deadline: late, failed or unfinished
  double throughput_wf_per_min = 0;
  double hbm_util_mean = 0;  // time-weighted mean over workers, arrival of first to last end
  std::map<std::string, uint64_t> bytes_moved_by_class;  // completed transfers
  std::map<std::string, uint64_t> bytes_moved_by_link;   // link name -> bytes
  uint64_t transfers = 0;
  uint64_t recompute_tokens = 0;  // context tokens rebuilt by prefill (place recompute=)
  // Prefill tokens the engines computed (every step's chunks: new tokens, recomputes and
  // shared prefixes built), and the shared-prefix tokens placed nodes found resident
  // instead (saved). shared_prefixes: the replay's ReplayOptions::shared_prefixes.
  bool shared_prefixes = true;
  uint64_t prefill_tokens = 0;
  uint64_t prefill_tokens_saved = 0;
  uint64_t prefix_hits = 0, prefix_builds = 0, prefix_evictions = 0;
  uint64_t preemptions = 0;
  // Disaggregation (ReplayOptions::disaggregation, scheduler::PdStats): the mode, the LLM
  // calls routed, the share prefilled on a prefill worker, their hand-offs, and the KV
  // moved prefill -> decode (moves started; a context the decode side recomputed instead
  // is counted in pd_recomputed).
  std::string disaggregation = "colocated";
  uint64_t pd_calls = 0, pd_disaggregated = 0, pd_handoffs = 0;
  double pd_share = 0;
  uint64_t pd_moves = 0, pd_bytes_moved = 0, pd_recomputed = 0;
  uint64_t retries = 0;
  uint64_t demotions = 0, prefetches = 0, discards = 0, keeps = 0;
  std::map<std::string, uint64_t> discards_by_reason;  // Command::reason
  uint64_t events = 0;
  double events_per_s = 0;  // scheduler events per second of wall time
  double wall_s = 0;
  double makespan_s = 0;                         // virtual time of the last workflow end
  std::vector<double> jct_s;                     // sorted, completed workflows
  std::vector<double> ttft_s;                    // sorted, per LLM call
  std::vector<double> tbt_s;                     // sorted, per LLM call of >= 2 tokens
  std::vector<WorkflowRecord> workflow_records;  // one per trace record, in trace order
  Series hbm_util;                               // mean HBM occupancy over workers
  std::map<std::string, Series> link_bytes;      // "<link>/<class>" -> bytes per bucket
  // Checks made during the run (conservation): false when violated.
  bool time_monotonic = true;
  bool bytes_conserved = true;
  // HBM ledger: engine blocks in use == the core's accounting, per worker, after every
  // event (ReplayOptions::check_ledger).
  uint64_t ledger_checks = 0, ledger_violations = 0;
  std::string ledger_first_violation;
};

// Runs one policy over the trace on the cluster. InvalidArgument for an unknown policy,
// a bad cluster or a trace record the runtime cannot take.
Result<PolicyReport> RunReplay(const std::vector<v1::TraceRecord>& trace,
                               const v1::ReplayCluster& cluster, const std::string& policy,
                               const ReplayOptions& options);

// Percentile (0..100) of sorted values by nearest rank; 0 when empty.
double Percentile(const std::vector<double>& sorted, double p);

}  // namespace switchyard::replay
