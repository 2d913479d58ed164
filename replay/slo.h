// SLO capacity: the highest arrival rate at which a policy still finishes at least
// `target` (90 %) of the workflows within k × their unloaded JCT (JCT⁰).
//
// JCT⁰ of a workflow is its JCT when replayed ALONE: a one-record trace (arrival moved to
// 0, deadline kept relative to it) through RunReplay on the same cluster under ONE fixed
// reference policy, "keep-during-tool" (SloOptions::jct0_policy), whatever policies are
// under test. The SLO is then a property of the workflow, not of the policy: every policy
// is measured against the same per-workflow target (a policy's own JCT⁰ would reward one
// that is slow even when alone). Workflows whose content is identical (same nodes,
// actuals and relative deadline; `convert --repeat` makes many) are replayed alone once.
// A workflow that does not complete alone has no JCT⁰ and is left out of every count.
//
// Attainment at one rate: of the workflows whose arrival falls in the middle window of
// the arrival span (the first warmup_frac and last drain_frac of [first, last arrival]
// are dropped: warm-up and drain are not steady state) and that have a JCT⁰, the share
// that completed with JCT ≤ k × JCT⁰; a workflow that failed, was cancelled or did not
// finish does not attain.
//
// Capacity λ* from a curve (rates ascending): find the first rate whose attainment is
// below the target; λ* is interpolated linearly between it and the rate before (whose
// attainment is ≥ target). If the lowest rate is already below: "< lowest" (λ* = the
// lowest rate, an upper bound); if no rate is below: "≥ highest" (λ* = the highest rate,
// a lower bound). A non-monotone curve is cut at its first crossing (conservative).
//
// RunSloCapacity: for each seed s (seed, seed+1, ..., seed+seeds-1) the trace is re-timed
// to every rate with Poisson arrivals (Retime(..., kPoisson, s)) and replayed under every
// policy; λ* is taken per (policy, seed) and summarised over seeds (mean, min, max, sample
// standard deviation; censored seeds count at their bound). Then each policy is replayed
// again at load_fraction × its mean λ* (50/70/85/95 %), per seed, and the slowdown
// JCT / JCT⁰ of the window's workflows is reported as P50/P90/P99 (nearest rank; a
// workflow that did not complete has slowdown +inf), each the mean over seeds.
//
// Thread-safety: pure functions (callbacks run on the caller's thread).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "proto/switchyard/v1/replay.pb.h"
#include "proto/switchyard/v1/trace.pb.h"
#include "replay/replay.h"

namespace switchyard::replay {

// Arrivals in [begin_s, end_s] count.
struct SloWindow {
  double begin_s = -std::numeric_limits<double>::infinity();
  double end_s = std::numeric_limits<double>::infinity();
  bool Contains(double arrival_s) const { return arrival_s >= begin_s && arrival_s <= end_s; }
};

// [first + warmup_frac × span, last − drain_frac × span] over the records' arrivals
// (span = last − first arrival); the whole line for no records.
SloWindow MiddleWindow(const std::vector<WorkflowRecord>& records, double warmup_frac,
                       double drain_frac);

// The slowdown of a session's LLM part: (JCT − tool_s) / (JCT⁰ − tool_s), where JCT⁰ is its
// JCT alone on the cluster: tool time is the same under every policy, so a ratio of whole
// JCTs would let a long tool wait hide the wait for the GPU (and set k differently per
// trace). A session whose JCT⁰ is (almost) all tool time (JCT⁰ − tool_s < 1 ms), or whose
// record has no tool time, is measured on its whole JCT. +inf when it did not complete.
double LlmSlowdown(const WorkflowRecord& r, double jct0_s);

struct AttainmentResult {
  int64_t counted = 0;   // in the window with a JCT⁰
  int64_t attained = 0;  // of those: completed with LlmSlowdown <= k
  double fraction = 0;   // attained / counted; 0 when nothing counted
};

// JCT⁰ per workflow id, seconds.
using Jct0Map = std::map<std::string, double>;

AttainmentResult Attainment(const std::vector<WorkflowRecord>& records, const Jct0Map& jct0_by_id,
                            double k, const SloWindow& window);

enum class CapacityBound { kInterpolated, kBelowLowest, kAtLeastHighest };

struct SloCapacity {
  double rate_per_s = 0;  // λ*; for a bound, the lowest / highest rate
  CapacityBound bound = CapacityBound::kInterpolated;
};
// "0.123", "< 0.05" or ">= 0.8" (rate with "%.4g").
std::string CapacityText(const SloCapacity& c);
// "interpolated", "below_lowest" or "at_least_highest".
const char* BoundName(CapacityBound b);

// InvalidArgument when rates and attainment differ in size, are empty, or rates are not
// > 0 and strictly ascending, or target is not in (0, 1].
Result<SloCapacity> CapacityFromCurve(const std::vector<double>& rates,
                                      const std::vector<double>& attainment, double target = 0.9);

struct SlowdownStats {
  int64_t counted = 0;  // in the window with a JCT⁰ > 0
  double p50 = 0, p90 = 0, p99 = 0;
};
// LlmSlowdown of the window's workflows (+inf for one that did not complete).
SlowdownStats SlowdownPercentiles(const std::vector<WorkflowRecord>& records,
                                  const Jct0Map& jct0_by_id, const SloWindow& window);

// Geometric grid around a trace's natural rate: natural × 2^(i/2) for i = -4..4 (1/4× to
// 4×, 9 rates). Empty when natural_rate <= 0.
std::vector<double> AutoRates(double natural_rate);

struct Spread {
  double mean = 0, min = 0, max = 0, stddev = 0;  // stddev: sample (n − 1); 0 for n = 1
};
Spread SpreadOf(const std::vector<double>& values);

struct SloOptions {
  std::string name;           // title, e.g. "agents.jsonl on h200x8-llama8b"
  std::vector<double> rates;  // workflows/s, > 0 ascending; empty: AutoRates(TraceRate)
  double k = 2;               // SLO: JCT <= k × JCT⁰
  double target = 0.9;        // attainment needed at λ*
  uint64_t seed = 1;          // first seed of the re-timing (Poisson, or gamma gaps)
  double arrival_cv = 1.0;    // > 1: gamma gaps of this coefficient of variation
  int seeds = 1;              // number of seeds
  double warmup_frac = 0.1;   // of the arrival span, dropped at the start
  double drain_frac = 0.1;    // of the arrival span, dropped at the end
  std::string jct0_policy = "keep-during-tool";
  std::vector<double> load_fractions = {0.5, 0.7, 0.85, 0.95};  // of λ*, for slowdowns
  double drain_limit_s = 24 * 3600.0;                           // ReplayOptions::drain_limit_s
  // ReplayOptions::disaggregation of the loaded runs. JCT0 (the workflow alone) is measured
  // colocated, so that every mode is held to the same SLO.
  scheduler::Disaggregation disaggregation = scheduler::Disaggregation::kColocated;
  // Called before each replay: stage ("jct0", "curve", "slowdown"), index, count in stage.
  std::function<void(const std::string&, size_t, size_t)> progress;
};

// Whether one replay measured a steady state, by the evaluation's rules: its arrival span at
// least 10x the mean JCT of the workflows that completed, and the warm-up it drops
// (warmup_frac of the span) at least 2x that mean JCT. A run past the cluster's
// sustainable rate fails them, its JCTs growing with the span: its attainment is a
// transient's, not a capacity's. Counts come with the attainment (>= 2,000 per point wanted
// over the seeds).
struct SteadyState {
  double span_s = 0, warmup_s = 0;
  double mean_jct_s = 0;  // +inf when nothing completed
  bool ok() const {
    return mean_jct_s > 0 && span_s >= 10 * mean_jct_s && warmup_s >= 2 * mean_jct_s;
  }
};
SteadyState SteadyStateOf(const std::vector<WorkflowRecord>& records, double warmup_frac);

struct SloSeedCurve {
  uint64_t seed = 0;
  std::vector<AttainmentResult> attainment;  // per rate
  std::vector<SteadyState> steady;           // per rate
  SloCapacity capacity;
};

struct SloSlowdown {
  double load_fraction = 0;
  double rate_per_s = 0;  // load_fraction × the policy's mean λ*
  SlowdownStats stats;    // p50/p90/p99: mean over seeds; counted: sum over seeds
};

struct SloPolicyResult {
  std::string policy;
  std::vector<SloSeedCurve> seeds;
  std::vector<double> attainment_mean;  // per rate, mean over seeds
  Spread capacity;                      // λ* over seeds
  int below_lowest = 0;                 // seeds whose λ* is "< lowest"
  int at_least_highest = 0;             // seeds whose λ* is ">= highest"
  std::vector<SloSlowdown> slowdown;    // per load fraction
};

struct SloResult {
  std::string name;
  double k = 2, target = 0.9, warmup_frac = 0.1, drain_frac = 0.1;
  std::string jct0_policy;
  double natural_rate_per_s = 0;  // TraceRate of the input trace
  std::vector<double> rates;
  std::vector<uint64_t> seeds;
  int64_t workflows = 0;     // in the trace
  int64_t jct0_missing = 0;  // workflows that did not complete alone (left out)
  Jct0Map jct0_s;            // per workflow id
  std::vector<SloPolicyResult> policies;
};

// InvalidArgument for an empty trace or policy list, duplicate workflow ids, bad options
// (named by their flag: --rates, --slo-k, --slo-target, --seeds, --warmup-frac,
// --drain-frac), no workflow completing alone, or a replay error.
Result<SloResult> RunSloCapacity(const std::vector<v1::TraceRecord>& trace,
                                 const v1::ReplayCluster& cluster,
                                 const std::vector<std::string>& policies,
                                 const SloOptions& options);

// Fixed-width text table: attainment per rate and policy, λ* per policy, the steady state
// of every point, slowdowns.
std::string SloTable(const SloResult& r);
// SloTable's steady-state section (slo_steady.cc), its policy column `width` wide: each
// point's span and warm-up over its mean JCT and the workflows counted, and notes for
// capacities read between points that are not steady and for points counting < 2,000.
std::string SteadyStateTable(const SloResult& r, int width);
// Deterministic JSON (no wall clock; numbers "%.6g"), layout in replay/README.md.
std::string SloJson(const SloResult& r);
// Self-contained page: attainment against rate per policy (inline SVG), the tables.
std::string SloHtml(const SloResult& r, const std::string& command);

}  // namespace switchyard::replay
