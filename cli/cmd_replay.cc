// `switchyard replay`: runs policies over a Switchyard trace on a simulated cluster (the
// real scheduler core and runtime on virtual time) and reports per-policy metrics.
// Options and rules: replay/cli_options.h, replay/README.md.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/command.h"
#include "proto/json.h"
#include "replay/cli_options.h"
#include "replay/cluster.h"
#include "replay/convert.h"
#include "replay/replay.h"
#include "replay/report.h"
#include "replay/sweep.h"

namespace {

using namespace switchyard;          // NOLINT
using namespace switchyard::replay;  // NOLINT

int FailReplay(const std::string& why) {
  std::fprintf(stderr, "switchyard replay: %s\n", why.c_str());
  return 1;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  return static_cast<bool>(f);
}

// A progress bar on stderr, only on a terminal and only once a run takes > 2 s.
struct Progress {
  bool tty = isatty(STDERR_FILENO) != 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  bool shown = false;
  void Update(const std::string& label, double fraction) {
    if (!tty) return;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (el < 2.0) return;
    int filled = static_cast<int>(fraction * 30);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(30, ' ');
    std::fprintf(stderr, "\r%-40s [%s] %3d%% %5.0fs", label.c_str(), bar.c_str(),
                 static_cast<int>(fraction * 100), el);
    std::fflush(stderr);
    shown = true;
  }
  void Done() {
    if (shown) std::fprintf(stderr, "\r%80s\r", "");
    shown = false;
  }
};

}  // namespace

namespace {

int RunReplayCommand(const std::vector<std::string>& argv) {
  Result<ReplayArgs> parsed = ParseReplayArgs(argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "switchyard replay: %s\n%s", parsed.status().message().c_str(),
                 kReplayUsage);
    return 2;
  }
  const ReplayArgs& a = *parsed;
  if (a.help) {
    std::printf("%s", kReplayUsage);
    return 0;
  }
  Result<std::string> text = proto::ReadFile(a.trace);
  if (!text.ok()) return FailReplay(text.status().ToString());
  Result<std::vector<v1::TraceRecord>> trace = ParseTrace(*text);
  if (!trace.ok()) return FailReplay(a.trace + ": " + trace.status().ToString());
  if (a.rate > 0) *trace = Retime(*trace, a.rate, RetimeMode::kPoisson, a.seed);
  Result<v1::ReplayCluster> cluster = ClusterFromArg(a.cluster);
  if (!cluster.ok()) return FailReplay(cluster.status().ToString());

  std::vector<PolicyReport> runs;
  Progress bar;
  for (const std::string& policy : a.policies)
    for (bool shared : a.shared_prefix_modes)
      for (scheduler::Disaggregation mode : a.disaggregation_modes) {
        // The runs without shared prefixes, and those of each disaggregation mode, are named
        // apart when several are replayed.
        std::string p =
            shared || a.shared_prefix_modes.size() == 1 ? policy : policy + "/no-shared-prefix";
        if (a.disaggregation_modes.size() > 1) p += std::string("/") + DisaggregationName(mode);
        ReplayOptions o;
        o.seed = a.seed;
        o.shared_prefixes = shared;
        o.disaggregation = mode;
        o.progress = [&](double f) { bar.Update("replay " + p, f); };
        Result<PolicyReport> r = RunReplay(*trace, *cluster, policy, o);
        bar.Done();
        if (!r.ok()) return FailReplay(p + ": " + r.status().ToString());
        r->policy = p;
        if (a.json) {
          std::printf("%s\n", SummaryJsonLine(*r).c_str());
        } else {
          std::printf(
              "%-17s wf=%lld done=%lld jct mean %.1f s p50 %.1f p99 %.1f | ttft p50 %.3f p99 %.2f "
              "s | miss %.3f | hbm %.2f | recompute %llu tok | prefill %llu tok, %llu saved | "
              "%.0f events/s\n",
              p.c_str(), static_cast<long long>(r->workflows), static_cast<long long>(r->completed),
              r->jct_mean_s, r->jct_p50_s, r->jct_p99_s, r->ttft_p50_s, r->ttft_p99_s,
              r->deadline_miss_rate, r->hbm_util_mean,
              static_cast<unsigned long long>(r->recompute_tokens),
              static_cast<unsigned long long>(r->prefill_tokens),
              static_cast<unsigned long long>(r->prefill_tokens_saved), r->events_per_s);
        }
        std::fflush(stdout);
        runs.push_back(std::move(*r));
      }
  if (!a.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out, ec);
    if (ec) return FailReplay("cannot create " + a.out + ": " + ec.message());
    ReportMeta meta{a.trace, cluster->name(), cluster->description(), a.seed, ""};
    if (!WriteFile(a.out + "/report.json", ReportJson(meta, runs)) ||
        !WriteFile(a.out + "/report.html", ReportHtml(meta, runs)))
      return FailReplay("cannot write the report under " + a.out);
    if (!a.json)
      std::printf("report: %s/report.json, %s/report.html\n", a.out.c_str(), a.out.c_str());
  }
  return 0;
}

}  // namespace

SY_REGISTER_COMMAND(replay, "replay",
                    "replay a workflow trace on a simulated cluster under one or more policies",
                    RunReplayCommand);
