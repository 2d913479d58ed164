// Command-line options of `switchyard replay`, `switchyard sweep` and `switchyard convert`,
// parsed here (not in cli/) so tests can check every parse error. Errors are
// InvalidArgument naming the flag.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "replay/convert.h"
#include "scheduler/disaggregation.h"

namespace switchyard::replay {

struct ReplayArgs {
  std::string trace;
  std::vector<std::string> policies;  // default: every policy
  std::string cluster;                // empty: DefaultCluster()
  uint64_t seed = 1;
  std::string out;  // empty: no report files
  bool json = false;
  double rate = 0;  // > 0: re-synthesise Poisson arrivals at this rate (workflows/s)
  // --shared-prefix on|off|both (--no-shared-prefix: off): replay with shared prefixes,
  // without (every context computes its own), or each policy both ways, side by side.
  std::vector<bool> shared_prefix_modes = {true};
  // --disaggregation MODE[,MODE...]: where calls prefill on a cluster with prefillWorkers
  // (several: each policy replayed in each mode, the runs named P/MODE).
  std::vector<scheduler::Disaggregation> disaggregation_modes = {
      scheduler::Disaggregation::kColocated};
  bool help = false;
};

struct SweepArgs {
  std::string trace;
  std::vector<std::string> policies;  // default: every policy
  std::string cluster;
  std::vector<double> rates;         // workflows/s, ascending, distinct; empty when rates_auto
  bool rates_auto = false;           // --rates auto or no --rates: AutoRates(TraceRate(trace))
  std::string arrivals = "poisson";  // poisson | gamma | scale (stretch the recorded arrivals)
  double arrival_cv = 1.0;           // gamma: the gaps' coefficient of variation
  uint64_t seed = 1;
  std::string out;
  std::string name;  // title of the sweep (default: trace file name on cluster name)
  bool json = false;
  bool help = false;
  // --slo-capacity (replay/slo.h); the other SLO flags need it.
  bool slo_capacity = false;
  double slo_k = 2;          // --slo-k, >= 1
  double slo_target = 0.9;   // --slo-target, in (0, 1]
  int seeds = 1;             // --seeds, >= 1: seeds seed..seed+N-1
  double warmup_frac = 0.1;  // --warmup-frac, in [0, 1)
  double drain_frac = 0.1;   // --drain-frac, in [0, 1); warmup + drain < 1
  // --disaggregation colocated|always|auto (one mode per sweep).
  scheduler::Disaggregation disaggregation = scheduler::Disaggregation::kColocated;
};

struct ConvertArgs {
  std::string from;  // agent-sessions | mooncake | azure
  std::string input;
  std::string output;
  ConvertOptions options;
  bool help = false;
};

Result<ReplayArgs> ParseReplayArgs(const std::vector<std::string>& args);
Result<SweepArgs> ParseSweepArgs(const std::vector<std::string>& args);
// --deadline none|oracle-span:F|NAME:DUR,...; --deadline-class NAME:DUR,... (class
// deadlines; default interactive:900s,batch:3h); --tenant-class TENANT=CLASS,...;
// --deadline-factor F (old spelling: 0 = none, F > 0 = oracle-span:F); --token-scale F and
// --time-scale F (finite, > 0; ConvertOptions::token_scale / time_scale).
Result<ConvertArgs> ParseConvertArgs(const std::vector<std::string>& args);

// "a,b,c" -> {"a","b","c"}; checks every name against scheduler::PolicyNames().
Result<std::vector<std::string>> ParsePolicyList(const std::string& list);
// Every policy name, the default first.
std::vector<std::string> AllPolicies();

extern const char* const kReplayUsage;
extern const char* const kSweepUsage;
extern const char* const kConvertUsage;

}  // namespace switchyard::replay
