#include "bench/replay/cli_options.h"

#include <algorithm>
#include <cstdlib>

#include "scheduler/reference_policies.h"

namespace switchyard::replay {

const char* const kReplayUsage =
    "usage: switchyard replay --trace T [--policy P[,P...]] [--cluster C] [--seed S]\n"
    "  [--rate R (re-synthesise Poisson arrivals, workflows/s)] [--out DIR] [--json]\n"
    "  T: a Switchyard trace (JSON lines of TraceRecord; `switchyard convert` makes one).\n"
    "  P: switchyard, keep-during-tool, vllm-fcfs, infercept, continuum, autellix, kvflow\n"
    "     (default: all). C: a cluster JSON file or a name in bench/clusters/\n"
    "     (default: h200x8-llama8b, built in).\n";

const char* const kSweepUsage =
    "usage: switchyard sweep --trace T --rates R1,R2,... [--policy P[,P...]] [--cluster C]\n"
    "  [--arrivals poisson|scale] [--seed S] [--name TITLE] [--out DIR] [--json]\n"
    "  Replays T once per (rate, policy) with arrivals re-synthesised at each rate\n"
    "  (poisson) or the recorded arrivals stretched to it (scale); the lowest rate serves as\n"
    "  the unloaded reference. Writes DIR/sweep.json, DIR/sweep.html and DIR/sweep.txt.\n";

namespace {

Status Bad(const std::string& what) { return Status::InvalidArgument(what); }

bool ParseNumber(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// Walks flags; `take` handles one flag (with its value when it needs one).
template <typename Fn>
Status Walk(const std::vector<std::string>& args, const std::vector<std::string>& with_value,
            Fn take) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool needs = std::find(with_value.begin(), with_value.end(), a) != with_value.end();
    if (needs) {
      if (i + 1 >= args.size()) return Bad(a + " needs a value");
      SY_RETURN_IF_ERROR(take(a, args[++i]));
    } else {
      SY_RETURN_IF_ERROR(take(a, std::string()));
    }
  }
  return Status::OK();
}

Status Seed(const std::string& v, uint64_t* seed) {
  double d = 0;
  if (!ParseNumber(v, &d) || d < 0 || d != static_cast<double>(static_cast<uint64_t>(d)))
    return Bad("--seed needs a non-negative integer, not '" + v + "'");
  *seed = static_cast<uint64_t>(d);
  return Status::OK();
}

}  // namespace

std::vector<std::string> AllPolicies() {
  std::vector<std::string> out;
  for (std::string_view n : scheduler::PolicyNames()) out.emplace_back(n);
  return out;
}

Result<std::vector<std::string>> ParsePolicyList(const std::string& list) {
  std::vector<std::string> out;
  for (const std::string& p : Split(list)) {
    if (p.empty()) return Bad("--policy has an empty name in '" + list + "'");
    // A name, or "switchyard:option=value:..." (scheduler::CreatePolicy checks both).
    auto policy = scheduler::CreatePolicy(p);
    if (!policy.ok()) return Bad("--policy: " + policy.status().message());
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

Result<ReplayArgs> ParseReplayArgs(const std::vector<std::string>& args) {
  ReplayArgs r;
  Status st = Walk(args, {"--trace", "--policy", "--cluster", "--seed", "--out", "--rate"},
                   [&](const std::string& a, const std::string& v) -> Status {
                     if (a == "-h" || a == "--help") {
                       r.help = true;
                     } else if (a == "--trace") {
                       r.trace = v;
                     } else if (a == "--policy") {
                       SY_ASSIGN_OR_RETURN(r.policies, ParsePolicyList(v));
                     } else if (a == "--cluster") {
                       r.cluster = v;
                     } else if (a == "--seed") {
                       return Seed(v, &r.seed);
                     } else if (a == "--out") {
                       r.out = v;
                     } else if (a == "--json") {
                       r.json = true;
                     } else if (a == "--rate") {
                       if (!ParseNumber(v, &r.rate) || r.rate <= 0)
                         return Bad("--rate needs a number > 0, not '" + v + "'");
                     } else {
                       return Bad("unexpected argument '" + a + "'");
                     }
                     return Status::OK();
                   });
  if (!st.ok()) return st;
  if (r.help) return r;
  if (r.trace.empty()) return Bad("--trace is required");
  if (r.policies.empty()) r.policies = AllPolicies();
  return r;
}

Result<SweepArgs> ParseSweepArgs(const std::vector<std::string>& args) {
  SweepArgs s;
  Status st = Walk(
      args,
      {"--trace", "--policy", "--cluster", "--seed", "--out", "--rates", "--arrivals", "--name"},
      [&](const std::string& a, const std::string& v) -> Status {
        if (a == "-h" || a == "--help") {
          s.help = true;
        } else if (a == "--trace") {
          s.trace = v;
        } else if (a == "--policy") {
          SY_ASSIGN_OR_RETURN(s.policies, ParsePolicyList(v));
        } else if (a == "--cluster") {
          s.cluster = v;
        } else if (a == "--seed") {
          return Seed(v, &s.seed);
        } else if (a == "--out") {
          s.out = v;
        } else if (a == "--name") {
          s.name = v;
        } else if (a == "--json") {
          s.json = true;
        } else if (a == "--arrivals") {
          if (v != "poisson" && v != "scale")
            return Bad("--arrivals must be poisson or scale, not '" + v + "'");
          s.arrivals = v;
        } else if (a == "--rates") {
          s.rates.clear();
          for (const std::string& r : Split(v)) {
            double d = 0;
            if (!ParseNumber(r, &d) || d <= 0)
              return Bad("--rates needs numbers > 0 separated by commas, not '" + r + "'");
            s.rates.push_back(d);
          }
          std::sort(s.rates.begin(), s.rates.end());
        } else {
          return Bad("unexpected argument '" + a + "'");
        }
        return Status::OK();
      });
  if (!st.ok()) return st;
  if (s.help) return s;
  if (s.trace.empty()) return Bad("--trace is required");
  if (s.rates.empty()) return Bad("--rates is required");
  if (s.policies.empty()) s.policies = AllPolicies();
  return s;
}

}  // namespace switchyard::replay
