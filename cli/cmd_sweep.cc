// `switchyard sweep`: policies × loads over one trace and cluster; a table, JSON and an
// HTML page with P99 JCT and deadline-miss rate against load; with --slo-capacity, SLO
// attainment per load and each policy's SLO capacity (replay/slo.h) instead. See
// replay/README.md.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "proto/json.h"
#include "replay/cli_options.h"
#include "replay/cluster.h"
#include "replay/convert.h"
#include "replay/slo.h"
#include "replay/sweep.h"

namespace {

using namespace switchyard;          // NOLINT
using namespace switchyard::replay;  // NOLINT

int FailSweep(const std::string& why) {
  std::fprintf(stderr, "switchyard sweep: %s\n", why.c_str());
  return 1;
}

// What a sweep runs on: the trace and cluster, the title, the command line (for the HTML
// pages), the rates, and whether and since when to show progress.
struct SweepInputs {
  std::vector<v1::TraceRecord> trace;
  v1::ReplayCluster cluster;
  std::string name;
  std::string cmd;
  std::vector<double> rates;
  bool tty = false;
  std::chrono::steady_clock::time_point start;
};

double ElapsedSeconds(const SweepInputs& in) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - in.start).count();
}

// AutoRates of the trace, announced on stderr; empty when the arrivals span no time.
std::vector<double> AnnouncedAutoRates(const std::vector<v1::TraceRecord>& trace) {
  std::vector<double> rates = AutoRates(TraceRate(trace));
  if (rates.empty()) return rates;
  std::string list;
  for (double r : rates) list += (list.empty() ? "" : ",") + Num(r);
  std::fprintf(stderr, "switchyard sweep: --rates auto: %s (natural rate %s/s)\n", list.c_str(),
               Num(TraceRate(trace)).c_str());
  return rates;
}

// The files (name, contents) written into directory `out`, made first; 0, or FailSweep's code.
int WriteOut(const std::string& out,
             const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return FailSweep("cannot create " + out + ": " + ec.message());
  for (const auto& [file, contents] : files) std::ofstream(out + "/" + file) << contents;
  return 0;
}

// --slo-capacity: attainment per rate and each policy's SLO capacity.
int RunSloSweep(const SweepArgs& a, const SweepInputs& in) {
  SloOptions so;
  so.name = in.name;
  so.rates = in.rates;
  so.k = a.slo_k;
  so.target = a.slo_target;
  so.seed = a.seed;
  so.arrival_cv = a.arrivals == "gamma" ? a.arrival_cv : 1.0;
  so.seeds = a.seeds;
  so.warmup_frac = a.warmup_frac;
  so.drain_frac = a.drain_frac;
  so.disaggregation = a.disaggregation;
  so.progress = [&](const std::string& stage, size_t k, size_t n) {
    if (!in.tty) return;
    std::fprintf(stderr, "\rslo %-8s %zu/%zu %5.0fs   ", stage.c_str(), k + 1, n,
                 ElapsedSeconds(in));
    std::fflush(stderr);
  };
  Result<SloResult> r = RunSloCapacity(in.trace, in.cluster, a.policies, so);
  if (in.tty) std::fprintf(stderr, "\r%80s\r", "");
  if (!r.ok()) return FailSweep(r.status().ToString());
  std::string table = SloTable(*r), json = SloJson(*r);
  std::printf("%s", a.json ? json.c_str() : table.c_str());
  if (a.out.empty()) return 0;
  return WriteOut(a.out,
                  {{"slo.txt", table}, {"slo.json", json}, {"slo.html", SloHtml(*r, in.cmd)}});
}

// Policies × rates: P99 JCT and deadline misses against load.
int RunLoadSweep(const SweepArgs& a, const SweepInputs& in) {
  SweepOptions o;
  o.mode = a.arrivals == "scale"   ? RetimeMode::kScale
           : a.arrivals == "gamma" ? RetimeMode::kGamma
                                   : RetimeMode::kPoisson;
  o.arrival_cv = a.arrival_cv;
  o.seed = a.seed;
  o.disaggregation = a.disaggregation;
  o.on_cell = [&](size_t k, size_t n, const std::string& p, double rate) {
    if (!in.tty) return;
    std::fprintf(stderr, "\rsweep %zu/%zu: %-17s rate %-8.4g %5.0fs   ", k + 1, n, p.c_str(), rate,
                 ElapsedSeconds(in));
    std::fflush(stderr);
  };
  Result<SweepResult> s = RunSweep(in.trace, in.cluster, in.rates, a.policies, o, in.name);
  if (in.tty) std::fprintf(stderr, "\r%80s\r", "");
  if (!s.ok()) return FailSweep(s.status().ToString());
  std::string table = SweepTable(*s) + GoalVerdict(*s);
  if (a.json) {
    for (const SweepCell& c : s->cells)
      std::printf("{\"rate_per_s\":%s,%s\n", Num(c.rate_per_s).c_str(),
                  SummaryJsonLine(c.report).substr(1).c_str());
  } else {
    std::printf("%s", table.c_str());
  }
  if (a.out.empty()) return 0;
  return WriteOut(a.out, {{"sweep.txt", table},
                          {"sweep.json", SweepJson(*s)},
                          {"sweep.html", SweepHtml({*s}, in.cmd)}});
}

int RunSweepCommand(const std::vector<std::string>& argv) {
  Result<SweepArgs> parsed = ParseSweepArgs(argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "switchyard sweep: %s\n%s", parsed.status().message().c_str(),
                 kSweepUsage);
    return 2;
  }
  const SweepArgs& a = *parsed;
  if (a.help) {
    std::printf("%s", kSweepUsage);
    return 0;
  }
  Result<std::string> text = proto::ReadFile(a.trace);
  if (!text.ok()) return FailSweep(text.status().ToString());
  Result<std::vector<v1::TraceRecord>> trace = ParseTrace(*text);
  if (!trace.ok()) return FailSweep(a.trace + ": " + trace.status().ToString());
  Result<v1::ReplayCluster> cluster = ClusterFromArg(a.cluster);
  if (!cluster.ok()) return FailSweep(cluster.status().ToString());
  SweepInputs in;
  in.name = a.name.empty()
                ? std::filesystem::path(a.trace).filename().string() + " on " + cluster->name()
                : a.name;
  in.cmd = "switchyard sweep";
  for (const std::string& x : argv) in.cmd += " " + x;
  in.tty = isatty(STDERR_FILENO) != 0;
  in.start = std::chrono::steady_clock::now();
  in.rates = a.rates;
  if (a.rates_auto) {
    in.rates = AnnouncedAutoRates(*trace);
    if (in.rates.empty())
      return FailSweep("--rates auto: the trace's arrivals span no time; give --rates");
  }
  in.trace = std::move(*trace);
  in.cluster = std::move(*cluster);
  return a.slo_capacity ? RunSloSweep(a, in) : RunLoadSweep(a, in);
}

}  // namespace

SY_REGISTER_COMMAND(sweep, "sweep",
                    "replay a trace at several loads under several policies (table + chart)",
                    RunSweepCommand);
