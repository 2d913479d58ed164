// SteadyStateOf and the steady-state section of SloTable (slo.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string>

#include "replay/slo.h"

namespace switchyard::replay {
namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

std::string RateText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

// The rates (indices) each seed's λ* of `p` was read between: the last rate meeting the
// target and the first missing it.
std::set<size_t> CapacityBrackets(const SloPolicyResult& p, double target) {
  std::set<size_t> out;
  for (const SloSeedCurve& c : p.seeds) {
    size_t j = 0;
    while (j < c.attainment.size() && c.attainment[j].fraction >= target) ++j;
    if (j < c.attainment.size()) out.insert(j);
    if (j > 0) out.insert(j - 1);
  }
  return out;
}

// The steady-state check of every point (SteadyState): per policy and rate, the span and
// the warm-up over the mean JCT (the worst seed) and the workflows counted over the seeds;
// then a note for each policy whose λ* was read between rates that are not steady, and
// for points counting fewer than 2,000 workflows.
}  // namespace

std::string SteadyStateTable(const SloResult& r, int w) {
  std::string s =
      "\nsteady state per point (span >= 10x and warm-up >= 2x the mean JCT, worst seed; "
      "workflows counted over the seeds, >= 2000 wanted)\n";
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%-*s %9s %9s %11s %8s %7s\n", w, "policy", "rate/s", "span/JCT",
                "warmup/JCT", "counted", "steady");
  s += buf;
  int64_t fewest = -1;
  std::string notes;
  for (const SloPolicyResult& p : r.policies) {
    std::set<size_t> unsteady;
    for (size_t i = 0; i < r.rates.size(); ++i) {
      double span = kUnbounded, warm = kUnbounded;
      int64_t counted = 0;
      bool ok = true;
      for (const SloSeedCurve& c : p.seeds) {
        if (i >= c.steady.size() || i >= c.attainment.size()) continue;
        const SteadyState& st = c.steady[i];
        span = std::min(span, st.span_s / st.mean_jct_s);
        warm = std::min(warm, st.warmup_s / st.mean_jct_s);
        counted += c.attainment[i].counted;
        ok = ok && st.ok();
      }
      if (!ok) unsteady.insert(i);
      fewest = fewest < 0 ? counted : std::min(fewest, counted);
      std::snprintf(buf, sizeof(buf), "%-*s %9.4g %9.2f %11.2f %8lld %7s\n", w, p.policy.c_str(),
                    r.rates[i], span, warm, static_cast<long long>(counted), ok ? "yes" : "no");
      s += buf;
    }
    std::string at;
    for (size_t i : CapacityBrackets(p, r.target))
      if (unsteady.count(i)) at += (at.empty() ? "" : ", ") + RateText(r.rates[i]);
    if (!at.empty()) {
      notes += "note: " + p.policy + "'s capacity was read between rates that are not in steady " +
               "state (" + at + "/s): a transient, not a capacity; a longer trace (--repeat) " +
               "or lower rates settle it\n";
    }
  }
  if (fewest >= 0 && fewest < 2000) {
    notes += "note: as few as " + std::to_string(fewest) +
             " workflows counted at a point (< 2,000 " +
             "wanted): more --repeat or --seeds narrow the capacity\n";
  }
  return s + notes;
}

SteadyState SteadyStateOf(const std::vector<WorkflowRecord>& records, double warmup_frac) {
  SteadyState st;
  if (records.empty()) return st;
  const SloWindow whole = MiddleWindow(records, 0, 0);  // [first, last] arrival
  double jct = 0;
  int64_t done = 0;
  for (const WorkflowRecord& r : records)
    if (r.state == "completed" && r.end_s >= 0) jct += r.end_s - r.arrival_s, ++done;
  st.span_s = whole.end_s - whole.begin_s;
  st.warmup_s = warmup_frac * st.span_s;
  st.mean_jct_s = done > 0 ? jct / static_cast<double>(done) : kUnbounded;
  return st;
}

}  // namespace switchyard::replay
