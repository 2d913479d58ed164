// Replay and sweep reports: one JSON line per policy, report.json, and a self-contained
// report.html with inline SVG charts (no scripts, no external files).
//
// report.json holds only what the simulation determines (virtual-time metrics, series,
// counts), so the same trace, cluster, policies and seed give a byte-identical file;
// wall-clock figures (wall_s, events_per_s) appear only in the JSON lines printed per
// policy. Numbers are printed with a fixed format ("%.6g"; the times of
// policies[].workflow_records[] — arrival_s, end_s, deadline_s — with "%.10g", i.e. to the
// millisecond over long traces, and null for end_s of a workflow that did not end and
// deadline_s of one without a deadline). `workflows` stays the count.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "replay/replay.h"

namespace switchyard::replay {

struct ReportMeta {
  std::string trace;  // path or description of the trace
  std::string cluster;
  std::string cluster_description;
  uint64_t seed = 1;
  std::string command;  // the command line, for reproduction
};

// {"policy":..., "workflows":..., "jct_mean_s":..., ..., "events_per_s":...}
std::string SummaryJsonLine(const PolicyReport& r);
std::string ReportJson(const ReportMeta& meta, const std::vector<PolicyReport>& runs);
std::string ReportHtml(const ReportMeta& meta, const std::vector<PolicyReport>& runs);

// One cell of a sweep: a policy at one load.
struct SweepCell {
  double rate_per_s = 0;  // arrival rate the trace was re-synthesised at
  PolicyReport report;
};
struct SweepResult {
  std::string name;  // e.g. "agent-sessions on h200x8-llama8b"
  std::vector<double> rates;
  std::vector<std::string> policies;
  std::vector<SweepCell> cells;  // rates × policies, rate-major
};
// Fixed-width text table: rate, policy, P99/mean JCT, miss rate, ...
std::string SweepTable(const SweepResult& s);
std::string SweepJson(const SweepResult& s);
std::string SweepHtml(const std::vector<SweepResult>& sweeps, const std::string& command);

// Formatting helpers shared by the writers.
std::string Num(double v);
std::string JsonString(const std::string& s);
// [v0,v1,...], each as Num writes it.
std::string JsonArray(const std::vector<double>& v);

// An SVG line chart (inline, self-contained).
struct ChartLine {
  std::string name;
  std::vector<double> x, y;
};
std::string SvgLineChart(const std::string& title, const std::string& x_label,
                         const std::string& y_label, const std::vector<ChartLine>& lines,
                         bool log_x = false);

}  // namespace switchyard::replay
