// Sweeps: the same trace replayed at several loads under several policies.
//
// Retime() re-times a trace to a target arrival rate: "poisson" draws new arrivals with
// the converter's SynthesiseArrivals (same seed → same arrivals), "scale" stretches the
// recorded arrival times (keeps their burstiness). Each workflow keeps its deadline
// relative to its arrival. RunSweep() replays every (rate, policy) cell with RunReplay.
// GoalVerdict() states, per rate, whether switchyard meets the goal against the
// references (see replay/README.md "Sweep goal").
//
// Thread-safety: pure functions (the progress callback runs on the caller's thread).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "replay/replay.h"
#include "replay/report.h"

namespace switchyard::replay {

// How Retime places arrivals at a rate: Poisson, gamma gaps of a given coefficient of
// variation (ArrivalProcess::kGamma), or the recorded arrivals stretched (scale).
enum class RetimeMode { kPoisson, kGamma, kScale };

// Natural rate of a trace: workflows / arrival span (0 for fewer than two).
double TraceRate(const std::vector<v1::TraceRecord>& trace);
// `cv`: kGamma's coefficient of variation of the gaps.
std::vector<v1::TraceRecord> Retime(const std::vector<v1::TraceRecord>& trace, double rate_per_s,
                                    RetimeMode mode, uint64_t seed, double cv = 1.0);

struct SweepOptions {
  RetimeMode mode = RetimeMode::kPoisson;
  double arrival_cv = 1.0;  // kGamma
  uint64_t seed = 1;
  scheduler::Disaggregation disaggregation = scheduler::Disaggregation::kColocated;
  // Called before each cell with (cell index, cell count, policy, rate).
  std::function<void(size_t, size_t, const std::string&, double)> on_cell;
};

Result<SweepResult> RunSweep(const std::vector<v1::TraceRecord>& trace,
                             const v1::ReplayCluster& cluster, const std::vector<double>& rates,
                             const std::vector<std::string>& policies, const SweepOptions& o,
                             const std::string& name);

// One line per rate: the best reference on P99 JCT, its ratio to its unloaded (lowest
// rate) P99, and whether switchyard beats every reference on mean JCT, P99 JCT and
// deadline-miss rate and the best on P99 by >= 1.3x.
std::string GoalVerdict(const SweepResult& s);

}  // namespace switchyard::replay
