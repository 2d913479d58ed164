#include "replay/sweep.h"

#include <algorithm>
#include <cstdio>

#include "replay/convert.h"

namespace switchyard::replay {

double TraceRate(const std::vector<v1::TraceRecord>& trace) {
  if (trace.size() < 2) return 0;
  int64_t lo = trace.front().arrival_ms(), hi = lo;
  for (const v1::TraceRecord& r : trace) {
    lo = std::min(lo, r.arrival_ms());
    hi = std::max(hi, r.arrival_ms());
  }
  return hi > lo ? static_cast<double>(trace.size() - 1) / (static_cast<double>(hi - lo) / 1e3) : 0;
}

std::vector<v1::TraceRecord> Retime(const std::vector<v1::TraceRecord>& trace, double rate_per_s,
                                    RetimeMode mode, uint64_t seed, double cv) {
  std::vector<v1::TraceRecord> out = trace;
  std::vector<int64_t> at;
  if (mode != RetimeMode::kScale) {
    ConvertOptions o;
    o.arrival = mode == RetimeMode::kGamma ? ArrivalProcess::kGamma : ArrivalProcess::kPoisson;
    o.arrival_cv = cv;
    o.rate_per_s = rate_per_s;
    o.seed = seed;
    at = SynthesiseArrivals(out.size(), o);
  } else {
    double natural = TraceRate(trace);
    double stretch = natural > 0 && rate_per_s > 0 ? natural / rate_per_s : 1;
    int64_t first = trace.empty() ? 0 : trace.front().arrival_ms();
    for (const v1::TraceRecord& r : trace) first = std::min(first, r.arrival_ms());
    for (const v1::TraceRecord& r : trace)
      at.push_back(static_cast<int64_t>(static_cast<double>(r.arrival_ms() - first) * stretch));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    v1::TraceRecord& r = out[i];
    int64_t delta = at[i] - r.arrival_ms();
    r.set_arrival_ms(at[i]);
    v1::Workflow* w = r.mutable_workflow();
    w->set_arrival_ms(at[i]);
    if (w->deadline_ms() > 0) w->set_deadline_ms(w->deadline_ms() + delta);
    for (v1::ProgramNode& n : *w->mutable_nodes())
      if (n.deadline_ms() > 0) n.set_deadline_ms(n.deadline_ms() + delta);
  }
  std::stable_sort(out.begin(), out.end(), [](const v1::TraceRecord& a, const v1::TraceRecord& b) {
    return a.arrival_ms() < b.arrival_ms();
  });
  return out;
}

Result<SweepResult> RunSweep(const std::vector<v1::TraceRecord>& trace,
                             const v1::ReplayCluster& cluster, const std::vector<double>& rates,
                             const std::vector<std::string>& policies, const SweepOptions& o,
                             const std::string& name) {
  SweepResult s;
  s.name = name;
  s.rates = rates;
  s.policies = policies;
  size_t total = rates.size() * policies.size(), k = 0;
  for (double rate : rates) {
    std::vector<v1::TraceRecord> t = Retime(trace, rate, o.mode, o.seed, o.arrival_cv);
    for (const std::string& p : policies) {
      if (o.on_cell) o.on_cell(k++, total, p, rate);
      ReplayOptions ro;
      ro.seed = o.seed;
      ro.disaggregation = o.disaggregation;
      SY_ASSIGN_OR_RETURN(PolicyReport r, RunReplay(t, cluster, p, ro));
      r.jct_s.clear();  // the sweep keeps summaries only
      r.ttft_s.clear();
      r.hbm_util.values.clear();
      r.link_bytes.clear();
      r.workflow_records.clear();
      s.cells.push_back({rate, std::move(r)});
    }
  }
  return s;
}

std::string GoalVerdict(const SweepResult& s) {
  std::string out;
  if (s.rates.empty()) return out;
  auto cell = [&](double rate, const std::string& p) -> const PolicyReport* {
    for (const SweepCell& c : s.cells)
      if (c.rate_per_s == rate && c.report.policy == p) return &c.report;
    return nullptr;
  };
  double unloaded_rate = s.rates.front();
  char buf[512];
  for (double rate : s.rates) {
    const PolicyReport* sy = cell(rate, "switchyard");
    const PolicyReport* best = nullptr;
    for (const std::string& p : s.policies) {
      if (p == "switchyard") continue;
      const PolicyReport* r = cell(rate, p);
      if (r && (!best || r->jct_p99_s < best->jct_p99_s)) best = r;
    }
    if (!sy || !best) continue;
    const PolicyReport* best_unloaded = cell(unloaded_rate, best->policy);
    double loaded = best_unloaded && best_unloaded->jct_p99_s > 0
                        ? best->jct_p99_s / best_unloaded->jct_p99_s
                        : 0;
    bool all = true;
    for (const std::string& p : s.policies) {
      if (p == "switchyard") continue;
      const PolicyReport* r = cell(rate, p);
      if (!r) continue;
      all = all && sy->jct_mean_s < r->jct_mean_s && sy->jct_p99_s < r->jct_p99_s &&
            sy->deadline_miss_rate <= r->deadline_miss_rate && sy->completed >= r->completed;
    }
    double ratio = sy->jct_p99_s > 0 ? best->jct_p99_s / sy->jct_p99_s : 0;
    std::snprintf(buf, sizeof(buf),
                  "rate %-8.4g best reference %-16s P99 %8.1f s (%.2fx unloaded%s); switchyard "
                  "P99 %8.1f s (%.2fx better), beats all on mean/P99/miss: %s, goal: %s\n",
                  rate, best->policy.c_str(), best->jct_p99_s, loaded,
                  loaded >= 2 ? ", loaded" : "", sy->jct_p99_s, ratio, all ? "yes" : "no",
                  loaded < 2 ? "n/a (not loaded)" : (all && ratio >= 1.3 ? "MET" : "NOT MET"));
    out += buf;
  }
  return out;
}

}  // namespace switchyard::replay
