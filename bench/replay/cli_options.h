// Command-line options of `switchyard replay` and `switchyard sweep`, parsed here (not in
// cli/) so tests can check every parse error. Errors are InvalidArgument naming the flag.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace switchyard::replay {

struct ReplayArgs {
  std::string trace;
  std::vector<std::string> policies;  // default: every policy
  std::string cluster;                // empty: DefaultCluster()
  uint64_t seed = 1;
  std::string out;  // empty: no report files
  bool json = false;
  double rate = 0;  // > 0: re-synthesise Poisson arrivals at this rate (workflows/s)
  bool help = false;
};

struct SweepArgs {
  std::string trace;
  std::vector<std::string> policies;  // default: every policy
  std::string cluster;
  std::vector<double> rates;         // workflows/s; required
  std::string arrivals = "poisson";  // poisson | scale (stretch the recorded arrivals)
  uint64_t seed = 1;
  std::string out;
  std::string name;  // title of the sweep (default: trace file name on cluster name)
  bool json = false;
  bool help = false;
};

Result<ReplayArgs> ParseReplayArgs(const std::vector<std::string>& args);
Result<SweepArgs> ParseSweepArgs(const std::vector<std::string>& args);

// "a,b,c" -> {"a","b","c"}; checks every name against scheduler::PolicyNames().
Result<std::vector<std::string>> ParsePolicyList(const std::string& list);
// Every policy name, the default first.
std::vector<std::string> AllPolicies();

extern const char* const kReplayUsage;
extern const char* const kSweepUsage;

}  // namespace switchyard::replay
