#include "replay/report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "base/logging.h"

namespace switchyard::replay {
namespace {

std::string U(uint64_t v) { return std::to_string(v); }
std::string I(int64_t v) { return std::to_string(v); }

std::string Map(const std::map<std::string, uint64_t>& m) {
  std::string s = "{";
  for (const auto& [k, v] : m) s += (s.size() > 1 ? "," : "") + JsonString(k) + ":" + U(v);
  return s + "}";
}

// Up to `n` evenly spaced quantiles of a sorted sample (for CDFs in report.json).
std::vector<double> Quantiles(const std::vector<double>& sorted, int n) {
  std::vector<double> out;
  if (sorted.empty()) return out;
  for (int k = 0; k <= n; ++k) out.push_back(Percentile(sorted, 100.0 * k / n));
  return out;
}

// Seconds of virtual time with millisecond resolution up to ~1e7 s; null for < 0 (none).
std::string Seconds(double v) {
  if (v < 0 || !std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

// [{"id":..,"arrival_s":..,"end_s":..|null,"state":..,"deadline_s":..|null,"tool_s":..,
// "llm_calls":..}, ...], one record per line.
std::string Records(const std::vector<WorkflowRecord>& records) {
  std::string s = "[";
  for (size_t i = 0; i < records.size(); ++i) {
    const WorkflowRecord& w = records[i];
    s += (i ? ",\n" : "\n") + std::string("{\"id\":") + JsonString(w.id) +
         ",\"arrival_s\":" + Seconds(w.arrival_s) + ",\"end_s\":" + Seconds(w.end_s) +
         ",\"state\":" + JsonString(w.state) + ",\"deadline_s\":" + Seconds(w.deadline_s) +
         ",\"tool_s\":" + Num(w.tool_s) + ",\"llm_calls\":" + I(w.llm_calls) + "}";
  }
  return s + "]";
}

// The deterministic metric fields shared by the JSON line and report.json.
std::string Metrics(const PolicyReport& r) {
  std::string s;
  s += "\"policy\":" + JsonString(r.policy);
  s += ",\"cluster\":" + JsonString(r.cluster);
  s += ",\"seed\":" + U(r.seed);
  s += ",\"workflows\":" + I(r.workflows);
  s += ",\"completed\":" + I(r.completed);
  s += ",\"failed\":" + I(r.failed);
  s += ",\"unfinished\":" + I(r.unfinished);
  s += ",\"jct_mean_s\":" + Num(r.jct_mean_s);
  s += ",\"jct_p50_s\":" + Num(r.jct_p50_s);
  s += ",\"jct_p95_s\":" + Num(r.jct_p95_s);
  s += ",\"jct_p99_s\":" + Num(r.jct_p99_s);
  s += ",\"ttft_p50_s\":" + Num(r.ttft_p50_s);
  s += ",\"ttft_p99_s\":" + Num(r.ttft_p99_s);
  s += ",\"tbt_p50_s\":" + Num(r.tbt_p50_s);
  s += ",\"tbt_p99_s\":" + Num(r.tbt_p99_s);
  s += ",\"deadline_miss_rate\":" + Num(r.deadline_miss_rate);
  s += ",\"throughput_wf_per_min\":" + Num(r.throughput_wf_per_min);
  s += ",\"hbm_util_mean\":" + Num(r.hbm_util_mean);
  s += ",\"bytes_moved_by_class\":" + Map(r.bytes_moved_by_class);
  s += ",\"transfers\":" + U(r.transfers);
  s += ",\"recompute_tokens\":" + U(r.recompute_tokens);
  s += std::string(",\"shared_prefixes\":") + (r.shared_prefixes ? "true" : "false");
  s += ",\"prefill_tokens\":" + U(r.prefill_tokens);
  s += ",\"prefill_tokens_saved\":" + U(r.prefill_tokens_saved);
  s += ",\"prefix_hits\":" + U(r.prefix_hits);
  s += ",\"prefix_builds\":" + U(r.prefix_builds);
  s += ",\"prefix_evictions\":" + U(r.prefix_evictions);
  s += ",\"preemptions\":" + U(r.preemptions);
  s += ",\"disaggregation\":" + JsonString(r.disaggregation);
  s += ",\"pd_calls\":" + U(r.pd_calls);
  s += ",\"pd_disaggregated\":" + U(r.pd_disaggregated);
  s += ",\"pd_share\":" + Num(r.pd_share);
  s += ",\"pd_handoffs\":" + U(r.pd_handoffs);
  s += ",\"pd_moves\":" + U(r.pd_moves);
  s += ",\"pd_bytes_moved\":" + U(r.pd_bytes_moved);
  s += ",\"pd_recomputed\":" + U(r.pd_recomputed);
  s += ",\"retries\":" + U(r.retries);
  s += ",\"demotions\":" + U(r.demotions);
  s += ",\"prefetches\":" + U(r.prefetches);
  s += ",\"discards\":" + U(r.discards);
  s += ",\"keeps\":" + U(r.keeps);
  s += ",\"discards_by_reason\":" + Map(r.discards_by_reason);
  s += ",\"events\":" + U(r.events);
  s += ",\"makespan_s\":" + Num(r.makespan_s);
  s += std::string(",\"time_monotonic\":") + (r.time_monotonic ? "true" : "false");
  s += std::string(",\"bytes_conserved\":") + (r.bytes_conserved ? "true" : "false");
  s += ",\"ledger_checks\":" + std::to_string(r.ledger_checks);
  s += ",\"ledger_violations\":" + std::to_string(r.ledger_violations);
  if (!r.ledger_first_violation.empty())
    s += ",\"ledger_first_violation\":" + JsonString(r.ledger_first_violation);
  return s;
}

}  // namespace

std::string Num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string JsonString(const std::string& s) { return "\"" + JsonEscape(s) + "\""; }

std::string JsonArray(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + Num(v[i]);
  return s + "]";
}

std::string SummaryJsonLine(const PolicyReport& r) {
  return "{" + Metrics(r) + ",\"wall_s\":" + Num(r.wall_s) +
         ",\"events_per_s\":" + Num(r.events_per_s) + "}";
}

std::string ReportJson(const ReportMeta& meta, const std::vector<PolicyReport>& runs) {
  std::string s = "{\n";
  s += "\"trace\":" + JsonString(meta.trace) + ",\n";
  s += "\"cluster\":" + JsonString(meta.cluster) + ",\n";
  s += "\"cluster_description\":" + JsonString(meta.cluster_description) + ",\n";
  s += "\"seed\":" + U(meta.seed) + ",\n";
  s += "\"policies\":[\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const PolicyReport& r = runs[i];
    s += "{" + Metrics(r);
    s += ",\"bytes_moved_by_link\":" + Map(r.bytes_moved_by_link);
    s += ",\"jct_quantiles_s\":" + JsonArray(Quantiles(r.jct_s, 100));
    s += ",\"ttft_quantiles_s\":" + JsonArray(Quantiles(r.ttft_s, 100));
    s += ",\"hbm_util_series\":{\"bucket_s\":" + Num(r.hbm_util.bucket_s) +
         ",\"values\":" + JsonArray(r.hbm_util.values) + "}";
    s += ",\"link_bytes_series\":{";
    bool first = true;
    for (const auto& [name, series] : r.link_bytes) {
      s += (first ? "" : ",") + JsonString(name) + ":{\"bucket_s\":" + Num(series.bucket_s) +
           ",\"values\":" + JsonArray(series.values) + "}";
      first = false;
    }
    s += "}";
    s += ",\"workflow_records\":" + Records(r.workflow_records);
    s += "}";
    s += i + 1 < runs.size() ? ",\n" : "\n";
  }
  s += "]\n}\n";
  return s;
}

std::string SweepTable(const SweepResult& sw) {
  std::string s = "# " + sw.name + "\n";
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%-9s %-17s %10s %10s %10s %10s %9s %9s %8s\n", "rate/s",
                "policy", "jct_mean", "jct_p50", "jct_p99", "ttft_p99", "miss", "hbm_util", "done");
  s += buf;
  for (const SweepCell& c : sw.cells) {
    const PolicyReport& r = c.report;
    std::snprintf(buf, sizeof(buf), "%-9.4g %-17s %10.1f %10.1f %10.1f %10.2f %9.3f %9.3f %8lld\n",
                  c.rate_per_s, r.policy.c_str(), r.jct_mean_s, r.jct_p50_s, r.jct_p99_s,
                  r.ttft_p99_s, r.deadline_miss_rate, r.hbm_util_mean,
                  static_cast<long long>(r.completed));
    s += buf;
  }
  return s;
}

std::string SweepJson(const SweepResult& sw) {
  std::string s = "{\"name\":" + JsonString(sw.name) + ",\"cells\":[";
  for (size_t i = 0; i < sw.cells.size(); ++i) {
    const SweepCell& c = sw.cells[i];
    s += (i ? ",\n" : "\n") + std::string("{\"rate_per_s\":") + Num(c.rate_per_s) + "," +
         Metrics(c.report) + "}";
  }
  return s + "\n]}\n";
}

}  // namespace switchyard::replay
