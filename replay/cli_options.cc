#include "replay/cli_options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "scheduler/reference_policies.h"

namespace switchyard::replay {

const char* const kReplayUsage =
    "usage: switchyard replay --trace T [--policy P[,P...]] [--cluster C] [--seed S]\n"
    "  [--rate R (re-synthesise Poisson arrivals, workflows/s)] [--out DIR] [--json]\n"
    "  [--shared-prefix on|off|both] [--no-shared-prefix]\n"
    "  [--disaggregation colocated|always|auto[,...]]\n"
    "  T: a Switchyard trace (JSON lines of TraceRecord; `switchyard convert` makes one).\n"
    "  P: switchyard, keep-during-tool, vllm-fcfs, infercept, continuum, autellix, kvflow,\n"
    "     lmcache,\n"
    "     oracle (switchyard with the trace's recorded future: an upper bound) (default:\n"
    "     all). C: a cluster JSON file or a name in replay/clusters/\n"
    "     (default: h200x8-llama8b, built in).\n"
    "  --shared-prefix: contexts reuse their tenant's resident shared prefixes (on, the\n"
    "     default), compute their own (off, also --no-shared-prefix), or both, each policy\n"
    "     replayed both ways (the runs without are named P/no-shared-prefix).\n"
    "  --disaggregation: on a cluster with prefillWorkers, colocated (the default) runs\n"
    "     every call where it decodes, ignoring the roles; always prefills every call on a\n"
    "     prefill worker and moves its KV to a decode worker; auto decides per call by the\n"
    "     estimate of docs/design.md \"Disaggregation\". Several modes: each policy in each,\n"
    "     the runs named P/MODE.\n";

const char* const kSweepUsage =
    "usage: switchyard sweep --trace T [--rates R1,R2,...|auto] [--policy P[,P...]]\n"
    "  [--cluster C] [--arrivals poisson|gamma:CV|scale] [--seed S] [--name TITLE] [--out DIR]\n"
    "  [--json]\n"
    "  [--slo-capacity [--slo-k K] [--slo-target F] [--seeds N] [--warmup-frac F]\n"
    "   [--drain-frac F]] [--disaggregation colocated|always|auto]\n"
    "  Replays T once per (rate, policy) with arrivals re-synthesised at each rate\n"
    "  (poisson; gamma:CV: gamma-distributed gaps of coefficient of variation CV in [0.1,\n"
    "  10], bursty above 1) or the recorded arrivals stretched to it (scale); the lowest\n"
    "  rate serves as the unloaded reference. Writes DIR/sweep.json, DIR/sweep.html and\n"
    "  DIR/sweep.txt.\n"
    "  --rates auto (the default): 9 rates from 1/4x to 4x the trace's natural rate, sqrt(2)\n"
    "  apart.\n"
    "  --slo-capacity: per policy and rate the share of workflows (arrivals in the middle of\n"
    "  the span: --warmup-frac 0.1 and --drain-frac 0.1 dropped) whose LLM part slowed at\n"
    "  most K (2) times, (JCT - tool time) <= K x (JCT0 - tool time), JCT0 = the workflow\n"
    "  alone under keep-during-tool; the SLO capacity (highest rate with attainment >= F\n"
    "  (0.9), interpolated) over N (1) seeds S, S+1, ... of the arrivals; those slowdowns at\n"
    "  50/70/85/95% of it. Writes DIR/slo.txt, DIR/slo.json, DIR/slo.html.\n";

const char* const kConvertUsage =
    "usage: switchyard convert --from agent-sessions|mooncake|azure INPUT -o OUTPUT\n"
    "  [--arrival poisson|bursty|gamma:CV] [--rate R (workflows/s, agent-sessions)] [--seed S]\n"
    "  [--burst-factor F] [--tenants N] [--repeat K (agent-sessions)] [--limit N] [--model ID]\n"
    "  [--context-reuse prefix|exact (agent-sessions)] [--output-cap N|recorded]\n"
    "  [--deadline-class NAME:DUR,...] [--tenant-class TENANT=NAME,...]\n"
    "  [--deadline none|oracle-span:F]\n"
    "  Deadlines (default): arrival + the slack of the tenant's SLO class, classes\n"
    "  interactive:900s,batch:3h (DUR: a number with s, m or h); tenant-<i> takes class\n"
    "  i mod the number of classes, other tenants (azure's \"background\") the last one,\n"
    "  unless --tenant-class names theirs. --deadline oracle-span:F: arrival + F x the\n"
    "  workflow's recorded span, an ORACLE (it tracks the workflow's size). --deadline none:\n"
    "  no deadlines. --deadline-factor F: old spelling of oracle-span:F (0: none).\n"
    "  [--token-scale F] every token count (prompts, extends, outputs) x F, rounded, at\n"
    "  least 1 where it was > 0 (e.g. 0.02 for a CPU engine); label token_scale.\n"
    "  [--time-scale F] every recorded duration (tool waits) and arrival offset x F (a\n"
    "  --rate R becomes R/F), for `switchyard replay` of compressed waits; play such a\n"
    "  trace with run_workload.py --time-scale 1, not F again; label time_scale.\n"
    "  --context-reuse prefix (default): a call whose prompt repeats the previous prompt but\n"
    "  not all of its answer continues the context from that prompt (CacheRef.keepTokens);\n"
    "  exact: such a call starts a new context (full prefill), as traces made before did.\n"
    "  --output-cap N (default 16384): every LLM call's max_output_tokens is max(N, its\n"
    "  recorded output), so policies cannot read the recorded length (the simulated engine\n"
    "  still stops there); recorded: the cap is the recorded output (an oracle for policies;\n"
    "  what a real engine that decodes to the cap needs: bench fidelity, scripts/run.sh).\n"
    "  [--think-time S[:SIGMA]] [--think-every N] (agent-sessions): a human in the loop. A\n"
    "  user request comes before a call with probability 1/N (default 8: one every 8 agent\n"
    "  calls), after the human's think time, log-normal with median S seconds and shape\n"
    "  SIGMA (default 1.5: heavy-tailed), at most a day: a tool node \"human\". Deadline\n"
    "  classes do not allow for it (--deadline none for such traces).\n"
    "  [--shared-preamble N] (agent-sessions): every context a session creates starts with\n"
    "  the same N tokens (the harness's system prompt and tools), a tenant-wide shared\n"
    "  prefix; label shared_preamble.\n";

namespace {

Status Bad(const std::string& what) { return Status::InvalidArgument(what); }

bool ParseNumber(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end && *end == '\0';
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

// A number for `flag` within [lo, hi] (open at either end when the *_open flag is set).
Status Number(const std::string& flag, const std::string& v, double lo, bool lo_open, double hi,
              bool hi_open, const std::string& range, double* out) {
  double d = 0;
  if (!ParseNumber(v, &d) || !(lo_open ? d > lo : d >= lo) || !(hi_open ? d < hi : d <= hi))
    return Bad(flag + " needs a number " + range + ", not '" + v + "'");
  *out = d;
  return Status::OK();
}

// "gamma:CV" for `flag`: gamma-distributed gaps whose coefficient of variation CV is in
// [0.1, 10] (1 is Poisson).
Status GammaCv(const std::string& flag, const std::string& v, double* cv) {
  if (v.rfind("gamma:", 0) != 0) return Bad(flag + ": not gamma:CV: '" + v + "'");
  return Number(flag + " gamma:CV", v.substr(6), 0.1, false, 10, false, "in [0.1, 10]", cv);
}

// A whole number >= lo for `flag`.
Status Count(const std::string& flag, const std::string& v, double lo, int64_t* out) {
  double d = 0;
  if (!ParseNumber(v, &d) || d < lo || d > 9e15 || d != std::floor(d))
    return Bad(flag + " needs a whole number >= " + std::to_string(static_cast<int64_t>(lo)) +
               ", not '" + v + "'");
  *out = static_cast<int64_t>(d);
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

namespace {

// --disaggregation's value: modes separated by commas, without repeats.
Status DisaggregationModes(const std::string& list, std::vector<scheduler::Disaggregation>* modes) {
  modes->clear();
  for (const std::string& name : SplitList(list)) {
    if (name.empty()) return Bad("--disaggregation has an empty mode in '" + list + "'");
    Result<scheduler::Disaggregation> mode = scheduler::ParseDisaggregation(name);
    if (!mode.ok()) return Bad("--disaggregation: " + mode.status().message());
    if (std::find(modes->begin(), modes->end(), *mode) == modes->end()) modes->push_back(*mode);
  }
  if (modes->empty()) return Bad("--disaggregation needs colocated, always or auto");  // ""
  return Status::OK();
}

}  // namespace

Result<std::vector<std::string>> ParsePolicyList(const std::string& list) {
  std::vector<std::string> out;
  for (const std::string& p : SplitList(list)) {
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
  Status st = Walk(args,
                   {"--trace", "--policy", "--cluster", "--seed", "--out", "--rate",
                    "--shared-prefix", "--disaggregation"},
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
                     } else if (a == "--shared-prefix") {
                       if (v == "on") {
                         r.shared_prefix_modes = {true};
                       } else if (v == "off") {
                         r.shared_prefix_modes = {false};
                       } else if (v == "both") {
                         r.shared_prefix_modes = {true, false};
                       } else {
                         return Bad("--shared-prefix needs on, off or both, not '" + v + "'");
                       }
                     } else if (a == "--no-shared-prefix") {
                       r.shared_prefix_modes = {false};
                     } else if (a == "--disaggregation") {
                       return DisaggregationModes(v, &r.disaggregation_modes);
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

namespace {

// The value of --rates: "auto", or numbers > 0 separated by commas (sorted, duplicates
// dropped).
Status TakeRates(const std::string& v, SweepArgs* s) {
  s->rates.clear();
  s->rates_auto = v == "auto";
  if (s->rates_auto) return Status::OK();
  for (const std::string& r : SplitList(v)) {
    double d = 0;
    if (!ParseNumber(r, &d) || !(d > 0) || !std::isfinite(d))
      return Bad("--rates needs numbers > 0 separated by commas (or auto), not '" + r + "'");
    s->rates.push_back(d);
  }
  std::sort(s->rates.begin(), s->rates.end());
  s->rates.erase(std::unique(s->rates.begin(), s->rates.end()), s->rates.end());
  return Status::OK();
}

// One SLO flag that needs --slo-capacity (--slo-k, --slo-target, --warmup-frac,
// --drain-frac, --seeds) into `s`, its name appended to `given`; nullopt when `a` is not one.
std::optional<Status> TakeSloFlag(const std::string& a, const std::string& v, SweepArgs* s,
                                  std::vector<std::string>* given) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (a == "--slo-k") {
    given->push_back(a);
    return Number(a, v, 1, false, kInf, true, ">= 1", &s->slo_k);
  } else if (a == "--slo-target") {
    given->push_back(a);
    return Number(a, v, 0, true, 1, false, "in (0, 1]", &s->slo_target);
  } else if (a == "--warmup-frac") {
    given->push_back(a);
    return Number(a, v, 0, false, 1, true, "in [0, 1)", &s->warmup_frac);
  } else if (a == "--drain-frac") {
    given->push_back(a);
    return Number(a, v, 0, false, 1, true, "in [0, 1)", &s->drain_frac);
  } else if (a == "--seeds") {
    given->push_back(a);
    int64_t n = 0;
    SY_RETURN_IF_ERROR(Count(a, v, 1, &n));
    if (n > 10000) return Bad("--seeds needs a whole number <= 10000, not '" + v + "'");
    s->seeds = static_cast<int>(n);
    return Status::OK();
  }
  return std::nullopt;
}

// The checks that span sweep flags, and the defaults of those not given.
Status FinishSweepArgs(bool rates_given, const std::vector<std::string>& slo_flags, SweepArgs* s) {
  if (s->trace.empty()) return Bad("--trace is required");
  if (!rates_given) s->rates_auto = true;
  if (!s->slo_capacity && !slo_flags.empty())
    return Bad(slo_flags.front() + " needs --slo-capacity");
  if (s->slo_capacity) {
    if (s->arrivals == "scale")
      return Bad(
          "--arrivals scale: --slo-capacity re-times with synthesised arrivals (one draw per "
          "seed): poisson or gamma:CV");
    if (!(s->warmup_frac + s->drain_frac < 1))
      return Bad("--warmup-frac + --drain-frac must be < 1, not " +
                 std::to_string(s->warmup_frac + s->drain_frac));
  }
  if (s->policies.empty()) s->policies = AllPolicies();
  return Status::OK();
}

}  // namespace

Result<SweepArgs> ParseSweepArgs(const std::vector<std::string>& args) {
  SweepArgs s;
  std::vector<std::string> slo_flags;  // given SLO flags other than --slo-capacity
  bool rates_given = false;
  Status st = Walk(
      args,
      {"--trace", "--policy", "--cluster", "--seed", "--out", "--rates", "--arrivals", "--name",
       "--slo-k", "--slo-target", "--seeds", "--warmup-frac", "--drain-frac", "--disaggregation"},
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
          if (v.rfind("gamma:", 0) == 0) {
            s.arrivals = "gamma";
            return GammaCv(a, v, &s.arrival_cv);
          }
          if (v != "poisson" && v != "scale")
            return Bad("--arrivals must be poisson, gamma:CV or scale, not '" + v + "'");
          s.arrivals = v;
        } else if (a == "--rates") {
          rates_given = true;
          return TakeRates(v, &s);
        } else if (a == "--slo-capacity") {
          s.slo_capacity = true;
        } else if (a == "--disaggregation") {
          Result<scheduler::Disaggregation> mode = scheduler::ParseDisaggregation(v);
          if (!mode.ok()) return Bad("--disaggregation: " + mode.status().message());
          s.disaggregation = *mode;
        } else if (std::optional<Status> slo = TakeSloFlag(a, v, &s, &slo_flags)) {
          return *slo;
        } else {
          return Bad("unexpected argument '" + a + "'");
        }
        return Status::OK();
      });
  if (!st.ok()) return st;
  if (s.help) return s;
  SY_RETURN_IF_ERROR(FinishSweepArgs(rates_given, slo_flags, &s));
  return s;
}

namespace {

// What the deadline flags of `convert` set, for the checks that span them.
struct DeadlineFlags {
  bool classes_given = false;       // --deadline-class, or --deadline classes
  bool tenant_class_given = false;  // --tenant-class
  std::string text;                 // what set a non-class rule, for errors
};

// One flag that shapes the converted workload (arrivals, sizes, tokens, model, times) into
// `o`; nullopt when `a` is not one.
std::optional<Status> TakeWorkloadFlag(const std::string& a, const std::string& v,
                                       ConvertOptions* o) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  int64_t n = 0;
  if (a == "--arrival") {
    if (v == "poisson")
      o->arrival = ArrivalProcess::kPoisson;
    else if (v == "bursty")
      o->arrival = ArrivalProcess::kBursty;
    else if (v.rfind("gamma:", 0) == 0) {
      o->arrival = ArrivalProcess::kGamma;
      return GammaCv(a, v, &o->arrival_cv);
    } else
      return Bad("--arrival must be poisson, bursty or gamma:CV, not '" + v + "'");
  } else if (a == "--model") {
    if (v.empty()) return Bad("--model needs a model id");
    o->model_id = v;
  } else if (a == "--rate") {
    return Number(a, v, 0, true, kInf, true, "> 0", &o->rate_per_s);
  } else if (a == "--token-scale") {
    return Number(a, v, 0, true, kInf, true, "> 0", &o->token_scale);
  } else if (a == "--output-cap") {
    if (v == "recorded") {
      o->output_cap = 0;
    } else {
      SY_RETURN_IF_ERROR(Count(a, v, 1, &o->output_cap));
    }
  } else if (a == "--context-reuse") {
    if (v != "prefix" && v != "exact")
      return Bad("--context-reuse must be prefix or exact, not '" + v + "'");
    o->prefix_reuse = v == "prefix";
  } else if (a == "--time-scale") {
    return Number(a, v, 0, true, kInf, true, "> 0", &o->time_scale);
  } else if (a == "--burst-factor") {
    return Number(a, v, 0, true, kInf, true, "> 0", &o->burst_factor);
  } else if (a == "--seed") {
    return Seed(v, &o->seed);
  } else if (a == "--tenants") {
    SY_RETURN_IF_ERROR(Count(a, v, 1, &n));
    if (n > 1'000'000) return Bad("--tenants needs a whole number <= 1000000, not '" + v + "'");
    o->tenants = static_cast<int>(n);
  } else if (a == "--repeat") {
    SY_RETURN_IF_ERROR(Count(a, v, 1, &n));
    if (n > 1'000'000) return Bad("--repeat needs a whole number <= 1000000, not '" + v + "'");
    o->repeat = static_cast<int>(n);
  } else if (a == "--limit") {
    SY_RETURN_IF_ERROR(Count(a, v, 0, &o->limit));
  } else if (a == "--think-time") {
    const size_t colon = v.find(':');
    SY_RETURN_IF_ERROR(
        Number(a, v.substr(0, colon), 0, true, 86400, false, "> 0 and <= 86400", &o->think_time_s));
    if (colon != std::string::npos)
      return Number(a + " sigma", v.substr(colon + 1), 0, true, 4, false, "> 0 and <= 4",
                    &o->think_sigma);
  } else if (a == "--shared-preamble") {
    SY_RETURN_IF_ERROR(Count(a, v, 1, &o->shared_preamble_tokens));
  } else if (a == "--think-every") {
    return Number(a, v, 1, false, 1e6, false, ">= 1", &o->think_every);
  } else {
    return std::nullopt;
  }
  return Status::OK();
}

// One deadline flag (--deadline, --deadline-factor, --deadline-class, --tenant-class) into
// `o`, noted in `d`; nullopt when `a` is not one.
std::optional<Status> TakeDeadlineFlag(const std::string& a, const std::string& v,
                                       ConvertOptions* o, DeadlineFlags* d) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (a == "--deadline") {
    SY_RETURN_IF_ERROR(ParseDeadlineOption(v, o));
    d->text = o->deadline == DeadlineRule::kClasses ? "" : "--deadline " + v;
    d->classes_given = d->classes_given || o->deadline == DeadlineRule::kClasses;
  } else if (a == "--deadline-factor") {
    SY_RETURN_IF_ERROR(Number(a, v, 0, false, kInf, true, ">= 0", &o->deadline_factor));
    o->deadline = o->deadline_factor > 0 ? DeadlineRule::kOracleSpan : DeadlineRule::kNone;
    d->text = "--deadline-factor " + v;
  } else if (a == "--deadline-class") {
    SY_ASSIGN_OR_RETURN(o->deadline_classes, ParseDeadlineClasses(v));
    d->classes_given = true;
  } else if (a == "--tenant-class") {
    SY_ASSIGN_OR_RETURN(o->tenant_class, ParseTenantClasses(v));
    d->tenant_class_given = true;
  } else {
    return std::nullopt;
  }
  return Status::OK();
}

// The required arguments of `convert` and the checks that span its deadline flags.
Status CheckConvertArgs(const ConvertArgs& c, const DeadlineFlags& d) {
  const ConvertOptions& o = c.options;
  if (c.from.empty()) return Bad("--from is required");
  if (c.input.empty()) return Bad("INPUT is required");
  if (c.output.empty()) return Bad("-o is required");
  if (o.deadline != DeadlineRule::kClasses && (d.classes_given || d.tenant_class_given)) {
    return Bad(std::string(d.tenant_class_given ? "--tenant-class" : "--deadline-class") +
               " sets class deadlines, which " + d.text + " replaces");
  }
  if (o.deadline == DeadlineRule::kClasses) {
    for (const auto& [tenant, cls] : o.tenant_class) {
      Result<size_t> k = DeadlineClassFor(tenant, o);
      if (!k.ok()) return k.status();
    }
  }
  return Status::OK();
}

}  // namespace

Result<ConvertArgs> ParseConvertArgs(const std::vector<std::string>& args) {
  ConvertArgs c;
  DeadlineFlags deadline;
  Status st =
      Walk(args,
           {"--from",
            "-o",
            "--out",
            "--arrival",
            "--rate",
            "--seed",
            "--burst-factor",
            "--tenants",
            "--repeat",
            "--limit",
            "--model",
            "--deadline",
            "--deadline-class",
            "--tenant-class",
            "--deadline-factor",
            "--token-scale",
            "--time-scale",
            "--context-reuse",
            "--output-cap",
            "--think-time",
            "--shared-preamble",
            "--think-every"},
           [&](const std::string& a, const std::string& v) -> Status {
             if (a == "-h" || a == "--help") {
               c.help = true;
             } else if (a == "--from") {
               if (v != "agent-sessions" && v != "mooncake" && v != "azure")
                 return Bad("--from must be agent-sessions, mooncake or azure, not '" + v + "'");
               c.from = v;
             } else if (a == "-o" || a == "--out") {
               c.output = v;
             } else if (std::optional<Status> w = TakeWorkloadFlag(a, v, &c.options)) {
               return *w;
             } else if (std::optional<Status> d = TakeDeadlineFlag(a, v, &c.options, &deadline)) {
               return *d;
             } else if (!a.empty() && a[0] != '-' && c.input.empty()) {
               c.input = a;
             } else {
               return Bad("unexpected argument '" + a + "'");
             }
             return Status::OK();
           });
  if (!st.ok()) return st;
  if (c.help) return c;
  SY_RETURN_IF_ERROR(CheckConvertArgs(c, deadline));
  return c;
}

}  // namespace switchyard::replay
