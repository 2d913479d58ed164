// bench_fidelity: replay against a real run of the same workload (fidelity.h).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "bench/common/process.h"
#include "bench/common/report.h"
#include "bench/fidelity/fidelity.h"
#include "proto/json.h"
#include "replay/cluster.h"
#include "replay/convert.h"
#include "replay/replay.h"

namespace switchyard::bench::fidelity {
namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

struct Setup {
  std::string bin, src, dir, model, log;
  double token_scale = 0.02, time_scale = 0.1, rate = 0.05, poll = 0.01;
  double call_overhead = -1;  // < 0: measured from the real run
  // 6 MiB: the sessions' contexts (reused across calls since keepTokens) then outgrow the
  // pool at most waits, so KV moves are part of what is compared; at 32 MiB nothing moves.
  int pool_mib = 6, repeat = 1;
  int real_runs = 3;  // the real half is a noisy sample: replay is compared with their mean
};

Setup MakeSetup() {
  Setup s;
  s.bin = SwitchyardBinary();
  s.src = SY_SOURCE_DIR;
  s.model = s.src + "/configs/models/tiny-llama-4l.json";
  s.token_scale = EnvDouble("SY_BENCH_FIDELITY_TOKEN_SCALE", 0.02);
  s.time_scale = EnvDouble("SY_BENCH_FIDELITY_TIME_SCALE", 0.1);
  s.rate = EnvDouble("SY_BENCH_FIDELITY_RATE", 0.05);
  s.poll = EnvDouble("SY_BENCH_FIDELITY_POLL", 0.01);
  s.call_overhead = EnvDouble("SY_BENCH_FIDELITY_CALL_OVERHEAD", -1);
  s.pool_mib = static_cast<int>(EnvDouble("SY_BENCH_FIDELITY_POOL_MIB", 6));
  s.repeat = static_cast<int>(EnvDouble("SY_BENCH_FIDELITY_REPEAT", 1));
  s.real_runs = std::max(1, static_cast<int>(EnvDouble("SY_BENCH_FIDELITY_REAL_RUNS", 3)));
  std::random_device rd;
  s.dir = (std::filesystem::temp_directory_path() /
           ("sy_bench_fidelity_" + std::to_string(rd() % 1000000)))
              .string();
  std::filesystem::create_directories(s.dir);
  s.log = s.dir + "/commands.log";
  return s;
}

// Steps 1 and 2: the step table and the trace.
Status Prepare(const Setup& s) {
  SY_RETURN_IF_ERROR(RunCommand(s.bin + " calibrate --engine cpu --model " + s.model + " -o " +
                                    s.dir + "/step_table.csv",
                                s.log)
                         .status());
  return RunCommand(s.bin + " convert --from agent-sessions " + s.src +
                        "/tests/fixtures/agent_sessions_sample.jsonl -o " + s.dir +
                        "/trace.jsonl --model tiny-llama-4l --token-scale " + Num(s.token_scale) +
                        " --time-scale " + Num(s.time_scale) +
                        " --deadline none --tenants 1 --seed 1 --rate " + Num(s.rate) +
                        " --repeat " + std::to_string(s.repeat) +
                        // The CPU engine decodes to the cap (random weights seldom emit EOS):
                        // the recorded lengths, on both halves.
                        " --output-cap recorded",
                    s.log)
      .status();
}

// Step 5: the committed cluster with this run's pool, table (relative to the folder, as a
// committed cluster's is to its own) and call overhead, written as `name` in the folder,
// loaded back as the CLI loads it, and replayed.
::switchyard::Result<replay::PolicyReport> Replay(const Setup& s, const std::string& name,
                                                  double call_overhead_s, double tool_overhead_s) {
  SY_ASSIGN_OR_RETURN(v1::ReplayCluster c,
                      replay::LoadCluster(s.src + "/replay/clusters/cpu-tiny-llama-4l.json"));
  c.set_step_table("step_table.csv");
  uint64_t pool = static_cast<uint64_t>(s.pool_mib) << 20;
  c.mutable_gpu()->set_hbm_bytes(pool + 2 * c.model().num_parameters());
  c.set_hbm_reserved_fraction(0);
  c.set_call_overhead_s(call_overhead_s);
  c.set_tool_overhead_s(tool_overhead_s);
  proto::JsonPrintOptions po;
  po.pretty = true;
  SY_ASSIGN_OR_RETURN(std::string json, proto::ToJson(c, po));
  const std::string path = s.dir + "/" + name;
  std::ofstream(path) << json << "\n";
  std::ofstream(s.log, std::ios::app)
      << "# replay (in process, as): switchyard replay --trace " << s.dir
      << "/trace.jsonl --cluster " << path << " --policy switchyard\n";
  SY_ASSIGN_OR_RETURN(v1::ReplayCluster loaded, replay::LoadCluster(path));
  SY_ASSIGN_OR_RETURN(std::string text, proto::ReadFile(s.dir + "/trace.jsonl"));
  SY_ASSIGN_OR_RETURN(std::vector<v1::TraceRecord> trace, replay::ParseTrace(text));
  return replay::RunReplay(trace, loaded, "switchyard", replay::ReplayOptions{});
}

// Step 3: the same trace on `switchyard serve --engine cpu`, a fresh server in `dir`.
::switchyard::Result<RealRun> Real(const Setup& s, const std::string& dir) {
  std::filesystem::create_directories(dir);
  ServeProcess serve;
  SY_RETURN_IF_ERROR(serve.Start(
      s.bin, {"--engine", "cpu", "--model", s.model, "--kv-pool-mib", std::to_string(s.pool_mib)},
      dir));
  std::string out = dir + "/real.json";
  SY_RETURN_IF_ERROR(RunCommand("python3 " + s.src + "/bench/fidelity/play_trace.py --url " +
                                    "http://127.0.0.1:" + std::to_string(serve.port()) +
                                    " --token " + serve.token() + " --trace " + s.dir +
                                    "/trace.jsonl --poll " + Num(s.poll) + " --out " + out,
                                s.log)
                         .status());
  return ReadRealRun(out);
}

// The real runs as one: per workflow the mean JCT over the runs that completed it, the
// mean decisions and bytes per kind or tier, the per-call samples pooled.
RealRun Merge(const std::vector<RealRun>& runs) {
  RealRun m;
  std::map<std::string, int> completed;
  const double n = static_cast<double>(runs.size());
  for (const RealRun& r : runs) {
    for (const auto& [id, v] : r.jct_s) m.jct_s[id] += v, ++completed[id];
    for (const auto& [id, st] : r.states)
      if (!m.states.count(id) || st != "WORKFLOW_COMPLETED") m.states[id] = st;
    for (const auto& [k, v] : r.decisions_by_kind) m.decisions_by_kind[k] += v / n;
    for (const auto& [k, v] : r.bytes_moved_by_tier) m.bytes_moved_by_tier[k] += v / n;
    m.wall_s += r.wall_s / n;
    for (auto [to, from] : {std::pair{&m.ttft_s, &r.ttft_s},
                            {&m.started_to_first_token_s, &r.started_to_first_token_s},
                            {&m.call_overhead_s, &r.call_overhead_s},
                            {&m.tool_overhead_s, &r.tool_overhead_s}})
      to->insert(to->end(), from->begin(), from->end());
  }
  for (auto& [id, v] : m.jct_s) v /= completed[id];
  for (auto* v : {&m.ttft_s, &m.started_to_first_token_s, &m.call_overhead_s, &m.tool_overhead_s})
    std::sort(v->begin(), v->end());
  return m;
}

double Sum(const std::map<std::string, double>& m) {
  double t = 0;
  for (const auto& [k, v] : m) t += v;
  return t;
}

double Get(const std::map<std::string, double>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

// One replay/real pair: ratio = replay / real (higher_is_better marks the ratio's direction
// only; for fidelity 1.0 is the goal).
void Pair(Report* report, const std::string& name, double replay, double real,
          const std::string& unit, const std::string& note) {
  report->Add({name, replay, unit, true, "real (switchyard serve --engine cpu)", real,
               "replay value; ratio = replay/real" + (note.empty() ? "" : "; " + note)});
}

// min–max over the runs of f(run), for the notes.
template <typename F>
std::string Spread(const std::vector<RealRun>& runs, F f) {
  double lo = 1e300, hi = -1e300;
  for (const RealRun& r : runs) lo = std::min(lo, f(r)), hi = std::max(hi, f(r));
  return "real runs " + Num(lo) + "–" + Num(hi);
}

double MeanJct(const RealRun& r) {
  return r.jct_s.empty() ? 0 : Sum(r.jct_s) / static_cast<double>(r.jct_s.size());
}

// What the results compare: the setup, the replay (`rp`; `rp0` without call overhead), the
// real runs and their merge, the real JCTs sorted and their mean.
struct Compared {
  const Setup& s;
  const replay::PolicyReport& rp;
  const replay::PolicyReport& rp0;
  const std::vector<RealRun>& runs;
  RealRun real;
  std::vector<double> jct;
  double real_mean = 0;
  std::string goal = "goal within 10 %";
  std::string of;  // "real: mean of N runs (", the notes' opening
};

// JCT mean and percentiles (with and without call overhead) and time to first token.
void AddLatencies(const Compared& c, Report* report) {
  const replay::PolicyReport& rp = c.rp;
  const replay::PolicyReport& rp0 = c.rp0;
  Pair(report, "jct_mean_s", rp.jct_mean_s, c.real_mean, "s",
       c.of + Spread(c.runs, MeanJct) + "); " + c.goal);
  Pair(report, "jct_p90_s", replay::Percentile(rp.jct_s, 90), replay::Percentile(c.jct, 90), "s",
       "nearest rank; " + c.goal);
  Pair(report, "jct_p50_s", replay::Percentile(rp.jct_s, 50), replay::Percentile(c.jct, 50), "s",
       "nearest rank");
  Pair(report, "jct_mean_s_no_overhead", rp0.jct_mean_s, c.real_mean, "s",
       "replay with callOverheadS 0");
  Pair(report, "jct_p90_s_no_overhead", replay::Percentile(rp0.jct_s, 90),
       replay::Percentile(c.jct, 90), "s", "replay with callOverheadS 0; nearest rank");
  Pair(report, "ttft_p50_s", rp.ttft_p50_s, Median(c.real.ttft_s), "s",
       "first token - max(arrival, dependencies' ends); real over " +
           std::to_string(c.real.ttft_s.size()) + " calls, replay over " +
           std::to_string(rp.ttft_s.size()));
  report->Add({"ttft_p50_s_no_overhead", rp0.ttft_p50_s, "s", false, "", std::nullopt,
               "replay with callOverheadS 0"});
  report->Add({"real_started_to_first_token_p50_s", Median(c.real.started_to_first_token_s), "s",
               false, "", std::nullopt, "real: node startedMs to firstTokenMs"});
}

// The call and tool overheads replay was given, and how they were measured.
void AddOverheads(const Compared& c, double call_overhead_s, double tool_overhead_s,
                  Report* report) {
  const RealRun& real = c.real;
  report->Add(
      {"call_overhead_s", call_overhead_s, "s", false, "", std::nullopt,
       std::string(c.s.call_overhead >= 0
                       ? "set by SY_BENCH_FIDELITY_CALL_OVERHEAD"
                       : "measured: median over " + std::to_string(real.call_overhead_s.size()) +
                             " revealed calls") +
           " (P10 " + Num(replay::Percentile(real.call_overhead_s, 10)) + ", P90 " +
           Num(replay::Percentile(real.call_overhead_s, 90)) + " s)"});
  report->Add({"tool_overhead_s", tool_overhead_s, "s", false, "", std::nullopt,
               "measured: median over " + std::to_string(real.tool_overhead_s.size()) +
                   " tools of (finishedMs - startedMs - recorded duration) (P10 " +
                   Num(replay::Percentile(real.tool_overhead_s, 10)) + ", P90 " +
                   Num(replay::Percentile(real.tool_overhead_s, 90)) + " s)"});
}

// Bytes moved (by class in replay, by tier in the real runs), the decisions by kind and the
// workflows completed.
void AddDecisions(const Compared& c, Report* report) {
  const replay::PolicyReport& rp = c.rp;
  const RealRun& real = c.real;
  double replay_bytes = 0;
  for (const auto& [cls, b] : rp.bytes_moved_by_class) {
    replay_bytes += static_cast<double>(b);
    report->Add({"replay_bytes_moved_class_" + cls, static_cast<double>(b), "B", false, "",
                 std::nullopt, "replay, by traffic class"});
  }
  for (const auto& [tier, b] : real.bytes_moved_by_tier)
    report->Add({"real_bytes_moved_to_" + tier, b, "B", false, "", std::nullopt,
                 "real, by destination tier"});
  Pair(report, "bytes_moved_total", replay_bytes, Sum(real.bytes_moved_by_tier), "B",
       c.of + Spread(c.runs, [](const RealRun& r) { return Sum(r.bytes_moved_by_tier); }) +
           " B); " + c.goal);
  Pair(report, "decisions_keep", static_cast<double>(rp.keeps), Get(real.decisions_by_kind, "keep"),
       "decisions", "");
  Pair(report, "decisions_demote", static_cast<double>(rp.demotions),
       Get(real.decisions_by_kind, "demote"), "decisions", "");
  Pair(report, "decisions_prefetch", static_cast<double>(rp.prefetches),
       Get(real.decisions_by_kind, "prefetch"), "decisions", "");
  Pair(report, "decisions_discard", static_cast<double>(rp.discards),
       Get(real.decisions_by_kind, "discard"), "decisions", "");
  Pair(report, "decisions_preempt", static_cast<double>(rp.preemptions),
       Get(real.decisions_by_kind, "preempt"), "decisions", "");
  Pair(report, "completed", static_cast<double>(rp.completed), static_cast<double>(c.jct.size()),
       "workflows", "of " + std::to_string(rp.workflows));
}

// The real runs one by one (wall time, bytes, decisions, JCT), and each workflow's JCT in
// replay and real on stderr.
void AddRuns(const Compared& c, Report* report) {
  const Setup& s = c.s;
  const RealRun& real = c.real;
  report->Add({"real_wall_s", real.wall_s, "s", false, "", std::nullopt,
               "mean of " + std::to_string(c.runs.size()) + " runs; token scale " +
                   Num(s.token_scale) + ", time scale " + Num(s.time_scale) + ", pool " +
                   std::to_string(s.pool_mib) + " MiB, tiny-llama-4l (random weights)"});
  for (size_t i = 0; i < c.runs.size(); ++i) {
    const RealRun& r = c.runs[i];
    report->Add({"real_run_" + std::to_string(i + 1) + "_bytes_moved_total",
                 Sum(r.bytes_moved_by_tier), "B", false, "", std::nullopt,
                 "demotions " + Num(Get(r.decisions_by_kind, "demote")) + ", prefetches " +
                     Num(Get(r.decisions_by_kind, "prefetch")) + ", JCT mean " + Num(MeanJct(r)) +
                     " s"});
  }
  for (const replay::WorkflowRecord& w : c.rp.workflow_records) {
    double r = w.end_s >= 0 ? w.end_s - w.arrival_s : -1;
    std::fprintf(stderr, "bench fidelity: %s JCT replay %.3f s, real %.3f s (%s)\n", w.id.c_str(),
                 r, Get(real.jct_s, w.id),
                 real.states.count(w.id) ? real.states.at(w.id).c_str() : "not played");
  }
}

void AddResults(const Setup& s, const replay::PolicyReport& rp, const replay::PolicyReport& rp0,
                double call_overhead_s, double tool_overhead_s, const std::vector<RealRun>& runs,
                Report* report) {
  Compared c{s, rp, rp0, runs, Merge(runs)};
  for (const auto& [id, v] : c.real.jct_s) c.jct.push_back(v);
  std::sort(c.jct.begin(), c.jct.end());
  c.real_mean = c.jct.empty() ? 0 : Sum(c.real.jct_s) / static_cast<double>(c.jct.size());
  c.of = "real: mean of " + std::to_string(runs.size()) + " runs (";
  AddLatencies(c, report);
  AddOverheads(c, call_overhead_s, tool_overhead_s, report);
  AddDecisions(c, report);
  AddRuns(c, report);
}

void ReportFidelity(const std::map<std::string, Measured>&, Report* report) {
  Setup s = MakeSetup();
  std::fprintf(stderr, "bench fidelity: working in %s (commands in %s)\n", s.dir.c_str(),
               s.log.c_str());
  Status st = Prepare(s);
  std::vector<RealRun> runs;
  for (int i = 0; st.ok() && i < s.real_runs; ++i) {
    ::switchyard::Result<RealRun> r = Real(s, s.dir + "/real-" + std::to_string(i + 1));
    if (r.ok()) runs.push_back(std::move(*r));
    st = r.status();
  }
  if (!st.ok()) {
    std::fprintf(stderr, "bench fidelity: real half failed: %s\n", st.ToString().c_str());
    return;
  }
  const RealRun pooled = Merge(runs);
  double overhead =
      s.call_overhead >= 0 ? s.call_overhead : std::max(0.0, Median(pooled.call_overhead_s));
  const double tool_overhead = std::max(0.0, Median(pooled.tool_overhead_s));
  std::fprintf(stderr,
               "bench fidelity: call overhead %.4f s (%zu revealed calls measured), tool "
               "overhead %.4f s (%zu tools)\n",
               overhead, pooled.call_overhead_s.size(), tool_overhead,
               pooled.tool_overhead_s.size());
  ::switchyard::Result<replay::PolicyReport> rp =
      Replay(s, "cluster.json", overhead, tool_overhead);
  ::switchyard::Result<replay::PolicyReport> rp0 =
      rp.ok() ? Replay(s, "cluster-no-overhead.json", 0, 0) : rp;
  if (!rp.ok() || !rp0.ok()) {
    std::fprintf(stderr, "bench fidelity: replay half failed: %s\n",
                 (rp.ok() ? rp0 : rp).status().ToString().c_str());
    return;
  }
  AddResults(s, *rp, *rp0, overhead, tool_overhead, runs, report);
  if (EnvDouble("SY_BENCH_FIDELITY_KEEP", 0) == 0) {
    std::error_code ec;
    std::filesystem::remove_all(s.dir, ec);
  } else {
    std::fprintf(stderr, "bench fidelity: kept %s\n", s.dir.c_str());
  }
}

SY_BENCH_REPORT(fidelity, ReportFidelity);

}  // namespace
}  // namespace switchyard::bench::fidelity
