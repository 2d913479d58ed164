// `switchyard sweep`: policies × loads over one trace and cluster; a table, JSON and an
// HTML page with P99 JCT and deadline-miss rate against load; with --slo-capacity, SLO
// attainment per load and each policy's SLO capacity (replay/slo.h) instead. See
// replay/README.md.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

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

int Fail(const std::string& why) {
  std::fprintf(stderr, "switchyard sweep: %s\n", why.c_str());
  return 1;
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
  if (!text.ok()) return Fail(text.status().ToString());
  Result<std::vector<v1::TraceRecord>> trace = ParseTrace(*text);
  if (!trace.ok()) return Fail(a.trace + ": " + trace.status().ToString());
  Result<v1::ReplayCluster> cluster = ClusterFromArg(a.cluster);
  if (!cluster.ok()) return Fail(cluster.status().ToString());
  std::string name =
      a.name.empty() ? std::filesystem::path(a.trace).filename().string() + " on " + cluster->name()
                     : a.name;
  std::string cmd = "switchyard sweep";
  for (const std::string& x : argv) cmd += " " + x;
  bool tty = isatty(STDERR_FILENO) != 0;
  auto start = std::chrono::steady_clock::now();
  std::vector<double> rates = a.rates;
  if (a.rates_auto) {
    rates = AutoRates(TraceRate(*trace));
    if (rates.empty()) return Fail("--rates auto: the trace's arrivals span no time; give --rates");
    std::string list;
    for (double r : rates) list += (list.empty() ? "" : ",") + Num(r);
    std::fprintf(stderr, "switchyard sweep: --rates auto: %s (natural rate %s/s)\n", list.c_str(),
                 Num(TraceRate(*trace)).c_str());
  }
  if (a.slo_capacity) {
    SloOptions so;
    so.name = name;
    so.rates = rates;
    so.k = a.slo_k;
    so.target = a.slo_target;
    so.seed = a.seed;
    so.seeds = a.seeds;
    so.warmup_frac = a.warmup_frac;
    so.drain_frac = a.drain_frac;
    so.progress = [&](const std::string& stage, size_t k, size_t n) {
      if (!tty) return;
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\rslo %-8s %zu/%zu %5.0fs   ", stage.c_str(), k + 1, n, el);
      std::fflush(stderr);
    };
    Result<SloResult> r = RunSloCapacity(*trace, *cluster, a.policies, so);
    if (tty) std::fprintf(stderr, "\r%80s\r", "");
    if (!r.ok()) return Fail(r.status().ToString());
    std::string table = SloTable(*r), json = SloJson(*r);
    std::printf("%s", a.json ? json.c_str() : table.c_str());
    if (!a.out.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(a.out, ec);
      if (ec) return Fail("cannot create " + a.out + ": " + ec.message());
      std::ofstream(a.out + "/slo.txt") << table;
      std::ofstream(a.out + "/slo.json") << json;
      std::ofstream(a.out + "/slo.html") << SloHtml(*r, cmd);
    }
    return 0;
  }
  SweepOptions o;
  o.mode = a.arrivals == "scale" ? RetimeMode::kScale : RetimeMode::kPoisson;
  o.seed = a.seed;
  o.on_cell = [&](size_t k, size_t n, const std::string& p, double rate) {
    if (!tty) return;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "\rsweep %zu/%zu: %-17s rate %-8.4g %5.0fs   ", k + 1, n, p.c_str(), rate,
                 el);
    std::fflush(stderr);
  };
  Result<SweepResult> s = RunSweep(*trace, *cluster, rates, a.policies, o, name);
  if (tty) std::fprintf(stderr, "\r%80s\r", "");
  if (!s.ok()) return Fail(s.status().ToString());
  std::string table = SweepTable(*s) + GoalVerdict(*s);
  if (a.json) {
    for (const SweepCell& c : s->cells)
      std::printf("{\"rate_per_s\":%s,%s\n", Num(c.rate_per_s).c_str(),
                  SummaryJsonLine(c.report).substr(1).c_str());
  } else {
    std::printf("%s", table.c_str());
  }
  if (!a.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out, ec);
    if (ec) return Fail("cannot create " + a.out + ": " + ec.message());
    std::ofstream(a.out + "/sweep.txt") << table;
    std::ofstream(a.out + "/sweep.json") << SweepJson(*s);
    std::ofstream(a.out + "/sweep.html") << SweepHtml({*s}, cmd);
  }
  return 0;
}

}  // namespace

SY_REGISTER_COMMAND(sweep, "sweep",
                    "replay a trace at several loads under several policies (table + chart)",
                    RunSweepCommand);
