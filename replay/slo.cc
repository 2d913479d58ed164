#include "replay/slo.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "replay/report.h"
#include "replay/sweep.h"

namespace switchyard::replay {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The record alone: arrival moved to 0, deadlines kept relative to it.
v1::TraceRecord Alone(const v1::TraceRecord& r) {
  v1::TraceRecord a = r;
  int64_t delta = -r.arrival_ms();
  a.set_arrival_ms(0);
  v1::Workflow* w = a.mutable_workflow();
  w->set_arrival_ms(0);
  if (w->deadline_ms() > 0) w->set_deadline_ms(w->deadline_ms() + delta);
  for (v1::ProgramNode& n : *w->mutable_nodes())
    if (n.deadline_ms() > 0) n.set_deadline_ms(n.deadline_ms() + delta);
  return a;
}

// What decides a workflow's JCT alone: its nodes, actuals and relative deadline (not its
// id, source, tenant or labels).
std::string ContentKey(const v1::TraceRecord& alone) {
  v1::TraceRecord k = alone;
  k.clear_source();
  k.mutable_workflow()->clear_id();
  k.mutable_workflow()->clear_tenant();
  k.mutable_workflow()->clear_labels();
  return k.SerializeAsString();
}

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

// λ* over seeds as text: "< lowest" / ">= highest" when every seed is censored alike,
// else the mean ("*" when some seeds are censored).
std::string CapacitySummary(const SloPolicyResult& p) {
  int n = static_cast<int>(p.seeds.size());
  if (n > 0 && p.below_lowest == n) return "< " + Fmt("%.4g", p.capacity.mean);
  if (n > 0 && p.at_least_highest == n) return ">= " + Fmt("%.4g", p.capacity.mean);
  return Fmt("%.4g", p.capacity.mean) + (p.below_lowest + p.at_least_highest > 0 ? "*" : "");
}

std::string IntArray(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

double LlmSlowdown(const WorkflowRecord& r, double jct0_s) {
  if (r.state != "completed" || r.end_s < 0 || !(jct0_s > 0)) return kInf;
  const double jct = r.end_s - r.arrival_s;
  const double llm0 = jct0_s - r.tool_s;
  if (!(r.tool_s > 0) || llm0 < 1e-3) return jct / jct0_s;
  return std::max(0.0, jct - r.tool_s) / llm0;
}

SloWindow MiddleWindow(const std::vector<WorkflowRecord>& records, double warmup_frac,
                       double drain_frac) {
  SloWindow w;
  if (records.empty()) return w;
  double lo = records.front().arrival_s, hi = lo;
  for (const WorkflowRecord& r : records) {
    lo = std::min(lo, r.arrival_s);
    hi = std::max(hi, r.arrival_s);
  }
  double span = hi - lo;
  w.begin_s = lo + warmup_frac * span;
  w.end_s = hi - drain_frac * span;
  return w;
}

AttainmentResult Attainment(const std::vector<WorkflowRecord>& records, const Jct0Map& jct0_by_id,
                            double k, const SloWindow& window) {
  AttainmentResult a;
  for (const WorkflowRecord& r : records) {
    if (!window.Contains(r.arrival_s)) continue;
    auto it = jct0_by_id.find(r.id);
    if (it == jct0_by_id.end()) continue;
    ++a.counted;
    if (LlmSlowdown(r, it->second) <= k + 1e-9) ++a.attained;
  }
  a.fraction = a.counted > 0 ? static_cast<double>(a.attained) / static_cast<double>(a.counted) : 0;
  return a;
}

const char* BoundName(CapacityBound b) {
  switch (b) {
    case CapacityBound::kBelowLowest:
      return "below_lowest";
    case CapacityBound::kAtLeastHighest:
      return "at_least_highest";
    case CapacityBound::kInterpolated:
      break;
  }
  return "interpolated";
}

std::string CapacityText(const SloCapacity& c) {
  std::string v = Fmt("%.4g", c.rate_per_s);
  if (c.bound == CapacityBound::kBelowLowest) return "< " + v;
  if (c.bound == CapacityBound::kAtLeastHighest) return ">= " + v;
  return v;
}

Result<SloCapacity> CapacityFromCurve(const std::vector<double>& rates,
                                      const std::vector<double>& attainment, double target) {
  if (rates.empty()) return Status::InvalidArgument("rates is empty");
  if (rates.size() != attainment.size()) {
    return Status::InvalidArgument("attainment has " + std::to_string(attainment.size()) +
                                   " values for " + std::to_string(rates.size()) + " rates");
  }
  if (!(target > 0 && target <= 1))
    return Status::InvalidArgument("target must be in (0, 1], not " + Num(target));
  for (size_t i = 0; i < rates.size(); ++i) {
    if (!(rates[i] > 0) || (i > 0 && !(rates[i] > rates[i - 1]))) {
      return Status::InvalidArgument("rates must be > 0 and strictly ascending (rates[" +
                                     std::to_string(i) + "] = " + Num(rates[i]) + ")");
    }
  }
  SloCapacity c;
  size_t j = 0;
  while (j < rates.size() && attainment[j] >= target) ++j;
  if (j == rates.size()) {
    c.rate_per_s = rates.back();
    c.bound = CapacityBound::kAtLeastHighest;
  } else if (j == 0) {
    c.rate_per_s = rates.front();
    c.bound = CapacityBound::kBelowLowest;
  } else {
    double r0 = rates[j - 1], r1 = rates[j], a0 = attainment[j - 1], a1 = attainment[j];
    c.rate_per_s = r0 + (a0 - target) / (a0 - a1) * (r1 - r0);
  }
  return c;
}

SlowdownStats SlowdownPercentiles(const std::vector<WorkflowRecord>& records,
                                  const Jct0Map& jct0_by_id, const SloWindow& window) {
  std::vector<double> v;
  for (const WorkflowRecord& r : records) {
    if (!window.Contains(r.arrival_s)) continue;
    auto it = jct0_by_id.find(r.id);
    if (it == jct0_by_id.end() || !(it->second > 0)) continue;
    v.push_back(LlmSlowdown(r, it->second));
  }
  std::sort(v.begin(), v.end());
  SlowdownStats s;
  s.counted = static_cast<int64_t>(v.size());
  s.p50 = Percentile(v, 50);
  s.p90 = Percentile(v, 90);
  s.p99 = Percentile(v, 99);
  return s;
}

std::vector<double> AutoRates(double natural_rate) {
  std::vector<double> out;
  if (!(natural_rate > 0) || !std::isfinite(natural_rate)) return out;
  for (int i = -4; i <= 4; ++i) {
    double r = std::strtod(Fmt("%.4g", natural_rate * std::pow(2.0, i / 2.0)).c_str(), nullptr);
    if (out.empty() || r > out.back()) out.push_back(r);
  }
  return out;
}

Spread SpreadOf(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  if (values.size() > 1) {
    double sq = 0;
    for (double v : values) sq += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(values.size() - 1));
  }
  return s;
}

namespace {

// Poisson re-timing, or gamma gaps when the options ask for a coefficient of variation.
RetimeMode Mode(const SloOptions& o) {
  return o.arrival_cv == 1.0 ? RetimeMode::kPoisson : RetimeMode::kGamma;
}

// The options' ranges and the trace's ids, checked before anything is replayed.
Status CheckSloInputs(const std::vector<v1::TraceRecord>& trace,
                      const std::vector<std::string>& policies, const SloOptions& o) {
  if (trace.empty()) return Status::InvalidArgument("trace has no workflows");
  if (policies.empty()) return Status::InvalidArgument("--policy: no policies");
  if (!(o.k >= 1) || !std::isfinite(o.k))
    return Status::InvalidArgument("--slo-k must be >= 1, not " + Num(o.k));
  if (!(o.target > 0 && o.target <= 1)) {
    return Status::InvalidArgument("--slo-target must be in (0, 1], not " + Num(o.target));
  }
  if (o.seeds < 1)
    return Status::InvalidArgument("--seeds must be >= 1, not " + std::to_string(o.seeds));
  if (!(o.warmup_frac >= 0 && o.warmup_frac < 1)) {
    return Status::InvalidArgument("--warmup-frac must be in [0, 1), not " + Num(o.warmup_frac));
  }
  if (!(o.drain_frac >= 0 && o.drain_frac < 1)) {
    return Status::InvalidArgument("--drain-frac must be in [0, 1), not " + Num(o.drain_frac));
  }
  if (!(o.warmup_frac + o.drain_frac < 1)) {
    return Status::InvalidArgument(
        "--warmup-frac + --drain-frac must be < 1 (nothing left to count)");
  }
  std::set<std::string> ids;
  for (const v1::TraceRecord& r : trace) {
    if (!ids.insert(r.workflow().id()).second)
      return Status::InvalidArgument("trace: workflow id '" + r.workflow().id() +
                                     "' appears twice");
  }
  return Status::OK();
}

// The result's header: the options echoed, the trace's rate and size, the rates (given or
// AutoRates, checked ascending) and the seeds.
Result<SloResult> SloHeader(const std::vector<v1::TraceRecord>& trace, const SloOptions& o) {
  SloResult res;
  res.name = o.name;
  res.k = o.k;
  res.target = o.target;
  res.warmup_frac = o.warmup_frac;
  res.drain_frac = o.drain_frac;
  res.jct0_policy = o.jct0_policy;
  res.natural_rate_per_s = TraceRate(trace);
  res.workflows = static_cast<int64_t>(trace.size());
  res.rates = o.rates.empty() ? AutoRates(res.natural_rate_per_s) : o.rates;
  if (res.rates.empty()) {
    return Status::InvalidArgument(
        "--rates auto needs a trace with arrivals spread over time (give --rates)");
  }
  for (size_t i = 0; i < res.rates.size(); ++i) {
    if (!(res.rates[i] > 0) || (i > 0 && !(res.rates[i] > res.rates[i - 1])))
      return Status::InvalidArgument("--rates must be > 0 and strictly ascending");
  }
  for (int s = 0; s < o.seeds; ++s) res.seeds.push_back(o.seed + static_cast<uint64_t>(s));
  return res;
}

// JCT⁰: each distinct workflow alone under the reference policy, into res.jct0_s (and
// res.jct0_missing for those that do not complete alone).
Status MeasureJct0(const std::vector<v1::TraceRecord>& trace, const v1::ReplayCluster& cluster,
                   const SloOptions& o, SloResult& res) {
  ReplayOptions ro;
  ro.drain_limit_s = o.drain_limit_s;
  std::vector<std::string> keys;
  std::map<std::string, std::vector<size_t>> by_key;
  std::map<std::string, v1::TraceRecord> alone;
  for (size_t i = 0; i < trace.size(); ++i) {
    v1::TraceRecord a = Alone(trace[i]);
    std::string key = ContentKey(a);
    auto [it, fresh] = by_key.try_emplace(key);
    it->second.push_back(i);
    if (fresh) {
      keys.push_back(key);
      alone.emplace(key, std::move(a));
    }
  }
  for (size_t n = 0; n < keys.size(); ++n) {
    if (o.progress) o.progress("jct0", n, keys.size());
    ro.seed = o.seed;
    SY_ASSIGN_OR_RETURN(PolicyReport r, RunReplay({alone.at(keys[n])}, cluster, o.jct0_policy, ro));
    const std::vector<size_t>& members = by_key.at(keys[n]);
    if (r.workflow_records.size() != 1 || r.workflow_records[0].state != "completed" ||
        r.workflow_records[0].end_s < 0) {
      res.jct0_missing += static_cast<int64_t>(members.size());
      continue;
    }
    double jct0 = r.workflow_records[0].end_s - r.workflow_records[0].arrival_s;
    for (size_t i : members) res.jct0_s[trace[i].workflow().id()] = jct0;
  }
  if (res.jct0_s.empty()) {
    return Status::InvalidArgument("no workflow completes alone under " + o.jct0_policy +
                                   " (no JCT0 to measure by)");
  }
  return Status::OK();
}

// Attainment curves: every seed × rate × policy replayed, into res.policies[p].seeds.
Status MeasureCurves(const std::vector<v1::TraceRecord>& trace, const v1::ReplayCluster& cluster,
                     const std::vector<std::string>& policies, const SloOptions& o,
                     SloResult& res) {
  ReplayOptions ro;
  ro.drain_limit_s = o.drain_limit_s;
  ro.disaggregation = o.disaggregation;
  res.policies.resize(policies.size());
  for (size_t p = 0; p < policies.size(); ++p) {
    res.policies[p].policy = policies[p];
    for (uint64_t seed : res.seeds) res.policies[p].seeds.push_back({seed, {}, {}});
  }
  size_t total = res.seeds.size() * res.rates.size() * policies.size(), done = 0;
  for (size_t s = 0; s < res.seeds.size(); ++s) {
    for (double rate : res.rates) {
      std::vector<v1::TraceRecord> t = Retime(trace, rate, Mode(o), res.seeds[s], o.arrival_cv);
      for (size_t p = 0; p < policies.size(); ++p) {
        if (o.progress) o.progress("curve", done++, total);
        ro.seed = res.seeds[s];
        SY_ASSIGN_OR_RETURN(PolicyReport r, RunReplay(t, cluster, policies[p], ro));
        SloWindow w = MiddleWindow(r.workflow_records, o.warmup_frac, o.drain_frac);
        res.policies[p].seeds[s].attainment.push_back(
            Attainment(r.workflow_records, res.jct0_s, o.k, w));
        res.policies[p].seeds[s].steady.push_back(SteadyStateOf(r.workflow_records, o.warmup_frac));
      }
    }
  }
  return Status::OK();
}

// Each policy's λ* per seed (from its curve), their spread and censoring, and the mean
// attainment per rate.
Status SummarizeCurves(const std::vector<double>& rates, double target, SloPolicyResult& pr) {
  std::vector<double> lambdas;
  pr.attainment_mean.assign(rates.size(), 0);
  for (SloSeedCurve& c : pr.seeds) {
    std::vector<double> a;
    for (size_t i = 0; i < c.attainment.size(); ++i) {
      a.push_back(c.attainment[i].fraction);
      pr.attainment_mean[i] += c.attainment[i].fraction / static_cast<double>(pr.seeds.size());
    }
    SY_ASSIGN_OR_RETURN(c.capacity, CapacityFromCurve(rates, a, target));
    lambdas.push_back(c.capacity.rate_per_s);
    pr.below_lowest += c.capacity.bound == CapacityBound::kBelowLowest ? 1 : 0;
    pr.at_least_highest += c.capacity.bound == CapacityBound::kAtLeastHighest ? 1 : 0;
  }
  pr.capacity = SpreadOf(lambdas);
  return Status::OK();
}

// Slowdowns at fractions of each policy's mean λ*, into res.policies[p].slowdown.
Status MeasureSlowdowns(const std::vector<v1::TraceRecord>& trace, const v1::ReplayCluster& cluster,
                        const SloOptions& o, SloResult& res) {
  ReplayOptions ro;
  ro.drain_limit_s = o.drain_limit_s;
  ro.disaggregation = o.disaggregation;
  size_t total = res.policies.size() * o.load_fractions.size() * res.seeds.size(), done = 0;
  for (SloPolicyResult& pr : res.policies) {
    for (double f : o.load_fractions) {
      SloSlowdown sd;
      sd.load_fraction = f;
      sd.rate_per_s = f * pr.capacity.mean;
      double n = static_cast<double>(res.seeds.size());
      for (uint64_t seed : res.seeds) {
        if (o.progress) o.progress("slowdown", done++, total);
        std::vector<v1::TraceRecord> t = Retime(trace, sd.rate_per_s, Mode(o), seed, o.arrival_cv);
        ro.seed = seed;
        SY_ASSIGN_OR_RETURN(PolicyReport r, RunReplay(t, cluster, pr.policy, ro));
        SloWindow w = MiddleWindow(r.workflow_records, o.warmup_frac, o.drain_frac);
        SlowdownStats st = SlowdownPercentiles(r.workflow_records, res.jct0_s, w);
        sd.stats.counted += st.counted;
        sd.stats.p50 += st.p50 / n;
        sd.stats.p90 += st.p90 / n;
        sd.stats.p99 += st.p99 / n;
      }
      pr.slowdown.push_back(sd);
    }
  }
  return Status::OK();
}

}  // namespace

Result<SloResult> RunSloCapacity(const std::vector<v1::TraceRecord>& trace,
                                 const v1::ReplayCluster& cluster,
                                 const std::vector<std::string>& policies, const SloOptions& o) {
  SY_RETURN_IF_ERROR(CheckSloInputs(trace, policies, o));
  SY_ASSIGN_OR_RETURN(SloResult res, SloHeader(trace, o));
  SY_RETURN_IF_ERROR(MeasureJct0(trace, cluster, o, res));
  SY_RETURN_IF_ERROR(MeasureCurves(trace, cluster, policies, o, res));
  for (SloPolicyResult& pr : res.policies) {
    SY_RETURN_IF_ERROR(SummarizeCurves(res.rates, o.target, pr));
  }
  SY_RETURN_IF_ERROR(MeasureSlowdowns(trace, cluster, o, res));
  return res;
}

std::string SloTable(const SloResult& r) {
  size_t pw = 17;
  for (const SloPolicyResult& p : r.policies) pw = std::max(pw, p.policy.size());
  int w = static_cast<int>(pw);
  char buf[512];
  std::string s = "# SLO capacity: " + r.name + "\n";
  std::snprintf(buf, sizeof(buf),
                "# SLO: JCT - tool <= %g x (JCT0 - tool), the LLM part (JCT0: each workflow "
                "alone under %s); capacity = "
                "highest rate with attainment >= %g%%\n",
                r.k, r.jct0_policy.c_str(), r.target * 100);
  s += buf;
  std::snprintf(buf, sizeof(buf),
                "# counted: arrivals in the middle of the arrival span (first %g%% and last %g%% "
                "dropped); %zu seed(s) from %llu (Poisson re-timing)\n",
                r.warmup_frac * 100, r.drain_frac * 100, r.seeds.size(),
                static_cast<unsigned long long>(r.seeds.empty() ? 0 : r.seeds.front()));
  s += buf;
  std::snprintf(buf, sizeof(buf),
                "# workflows: %lld (%lld without JCT0, left out); natural rate %.4g/s\n\n",
                static_cast<long long>(r.workflows), static_cast<long long>(r.jct0_missing),
                r.natural_rate_per_s);
  s += buf;
  s += "attainment (mean over seeds)\n";
  std::snprintf(buf, sizeof(buf), "%-9s", "rate/s");
  s += buf;
  for (const SloPolicyResult& p : r.policies) {
    std::snprintf(buf, sizeof(buf), " %*s", w, p.policy.c_str());
    s += buf;
  }
  s += "\n";
  for (size_t i = 0; i < r.rates.size(); ++i) {
    std::snprintf(buf, sizeof(buf), "%-9.4g", r.rates[i]);
    s += buf;
    for (const SloPolicyResult& p : r.policies) {
      std::snprintf(buf, sizeof(buf), " %*.3f", w, p.attainment_mean[i]);
      s += buf;
    }
    s += "\n";
  }
  s += "\nSLO capacity (workflows/s; * = some seeds censored at a bound)\n";
  std::snprintf(buf, sizeof(buf), "%-*s %12s %10s %10s %10s %9s %9s\n", w, "policy", "capacity",
                "stddev", "min", "max", "< lowest", ">= high");
  s += buf;
  for (const SloPolicyResult& p : r.policies) {
    std::snprintf(buf, sizeof(buf), "%-*s %12s %10.4g %10.4g %10.4g %9d %9d\n", w, p.policy.c_str(),
                  CapacitySummary(p).c_str(), p.capacity.stddev, p.capacity.min, p.capacity.max,
                  p.below_lowest, p.at_least_highest);
    s += buf;
  }
  for (const SloPolicyResult& p : r.policies) {
    int n = static_cast<int>(p.seeds.size());
    if (n > 0 && p.below_lowest == n) {
      s += "note: " + p.policy + " misses the target at the lowest rate in every seed: add lower " +
           "--rates\n";
    } else if (n > 0 && p.at_least_highest == n) {
      s += "note: " + p.policy + " meets the target at the highest rate in every seed: add " +
           "higher --rates\n";
    }
  }
  s += SteadyStateTable(r, w);
  s += "\nslowdown of the LLM part, (JCT - tool) / (JCT0 - tool), at fractions of each "
       "policy's mean capacity (mean over seeds)\n";
  std::snprintf(buf, sizeof(buf), "%-*s %6s %10s %9s %9s %9s %8s\n", w, "policy", "load", "rate/s",
                "p50", "p90", "p99", "counted");
  s += buf;
  for (const SloPolicyResult& p : r.policies) {
    for (const SloSlowdown& d : p.slowdown) {
      std::snprintf(buf, sizeof(buf), "%-*s %5.0f%% %10.4g %9.3f %9.3f %9.3f %8lld\n", w,
                    p.policy.c_str(), d.load_fraction * 100, d.rate_per_s, d.stats.p50, d.stats.p90,
                    d.stats.p99, static_cast<long long>(d.stats.counted));
      s += buf;
    }
  }
  return s;
}

std::string SloJson(const SloResult& r) {
  auto steady_json = [](const SloSeedCurve& c) {
    std::string out = "[";
    for (size_t i = 0; i < c.steady.size(); ++i) {
      const SteadyState& st = c.steady[i];
      out += std::string(i ? "," : "") + "{\"span_s\":" + Num(st.span_s) +
             ",\"warmup_s\":" + Num(st.warmup_s) + ",\"mean_jct_s\":" +
             (std::isfinite(st.mean_jct_s) ? Num(st.mean_jct_s) : std::string("null")) +
             ",\"ok\":" + (st.ok() ? "true" : "false") + "}";
    }
    return out + "]";
  };
  std::string s = "{\n";
  s += "\"name\":" + JsonString(r.name) + ",\n";
  s += "\"k\":" + Num(r.k) + ",\"target\":" + Num(r.target) +
       ",\"warmup_frac\":" + Num(r.warmup_frac) + ",\"drain_frac\":" + Num(r.drain_frac) +
       ",\"jct0_policy\":" + JsonString(r.jct0_policy) + ",\n";
  s += "\"natural_rate_per_s\":" + Num(r.natural_rate_per_s) + ",\"rates\":" + JsonArray(r.rates) +
       ",\"seeds\":[";
  for (size_t i = 0; i < r.seeds.size(); ++i) s += (i ? "," : "") + std::to_string(r.seeds[i]);
  s += "],\n\"workflows\":" + std::to_string(r.workflows) +
       ",\"jct0_missing\":" + std::to_string(r.jct0_missing) + ",\n";
  s += "\"policies\":[\n";
  for (size_t p = 0; p < r.policies.size(); ++p) {
    const SloPolicyResult& pr = r.policies[p];
    s += "{\"policy\":" + JsonString(pr.policy) +
         ",\"attainment_mean\":" + JsonArray(pr.attainment_mean);
    s += ",\"capacity\":{\"text\":" + JsonString(CapacitySummary(pr)) +
         ",\"mean_per_s\":" + Num(pr.capacity.mean) + ",\"min_per_s\":" + Num(pr.capacity.min) +
         ",\"max_per_s\":" + Num(pr.capacity.max) + ",\"stddev_per_s\":" + Num(pr.capacity.stddev) +
         ",\"below_lowest\":" + std::to_string(pr.below_lowest) +
         ",\"at_least_highest\":" + std::to_string(pr.at_least_highest) + "}";
    s += ",\n \"seeds\":[";
    for (size_t i = 0; i < pr.seeds.size(); ++i) {
      const SloSeedCurve& c = pr.seeds[i];
      std::vector<double> frac;
      std::vector<int64_t> counted, attained;
      for (const AttainmentResult& a : c.attainment) {
        frac.push_back(a.fraction);
        counted.push_back(a.counted);
        attained.push_back(a.attained);
      }
      s += std::string(i ? "," : "") + "{\"seed\":" + std::to_string(c.seed) +
           ",\"attainment\":" + JsonArray(frac) + ",\"counted\":" + IntArray(counted) +
           ",\"attained\":" + IntArray(attained) + ",\"steady\":" + steady_json(c) +
           ",\"capacity_per_s\":" + Num(c.capacity.rate_per_s) + ",\"bound\":\"" +
           BoundName(c.capacity.bound) + "\"}";
    }
    s += "],\n \"slowdown\":[";
    for (size_t i = 0; i < pr.slowdown.size(); ++i) {
      const SloSlowdown& d = pr.slowdown[i];
      s += std::string(i ? "," : "") + "{\"load_fraction\":" + Num(d.load_fraction) +
           ",\"rate_per_s\":" + Num(d.rate_per_s) +
           ",\"counted\":" + std::to_string(d.stats.counted) + ",\"p50\":" + Num(d.stats.p50) +
           ",\"p90\":" + Num(d.stats.p90) + ",\"p99\":" + Num(d.stats.p99) + "}";
    }
    s += "]}";
    s += p + 1 < r.policies.size() ? ",\n" : "\n";
  }
  s += "],\n\"jct0_s\":{";
  bool first = true;
  for (const auto& [id, v] : r.jct0_s) {
    s += (first ? "" : ",") + JsonString(id) + ":" + Num(v);
    first = false;
  }
  s += "}\n}\n";
  return s;
}

}  // namespace switchyard::replay
