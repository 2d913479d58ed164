// Benchmark reporting shared by every suite (scripts/bench.sh).
//
// A suite measures its subject and, in the same run on the same data, a baseline (raw
// memcpy, raw RocksDB, ucx_perftest, a reference policy). Each figure becomes one result;
// with --json each result is printed as one JSON object per line:
//   {"suite":..,"name":..,"value":..,"unit":..,"baseline":..,"baseline_value":..,"ratio":..}
// ratio = value / baseline_value when higher is better, baseline_value / value when lower
// is better (so ratio > 1 always means "better than the baseline"); null without baseline.
//
// Suites built on Google Benchmark use RunGoogleBenchmarks() to run the registered
// benchmarks and read back each run's rate or time, then pair subject and baseline runs.
//
// Thread-safety: single-threaded use from a bench main().
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace switchyard::bench {

struct Result {
  std::string name;
  double value = 0;
  std::string unit;
  bool higher_is_better = true;
  std::string baseline;  // empty: no baseline
  std::optional<double> baseline_value;
  std::string note;  // printed in text mode only
};

class Report {
 public:
  explicit Report(std::string suite) : suite_(std::move(suite)) {}
  void Add(Result r) { results_.push_back(std::move(r)); }
  const std::vector<Result>& results() const { return results_; }
  // JSON lines (json=true) or an aligned text table on stdout.
  void Print(bool json) const;
  static std::optional<double> Ratio(const Result& r);

 private:
  std::string suite_;
  std::vector<Result> results_;
};

// One Google Benchmark run read back: rates are per second of real time.
struct Measured {
  double real_time_ns = 0;  // per iteration
  double bytes_per_second = 0;
  double items_per_second = 0;
  std::map<std::string, double> counters;
};

// Runs the registered Google Benchmarks (honouring --benchmark_filter etc. in argv, after
// removing --json) and returns runs by their full name ("BM_Copy/2097152").
std::map<std::string, Measured> RunGoogleBenchmarks(int* argc, char** argv);

// True if "--json" is among the arguments (it is removed from argv).
bool TakeJsonFlag(int* argc, char** argv);

// A suite's reporting step: reads the Google Benchmark runs of this binary (possibly none)
// and adds results to the report, measuring extra figures itself if it needs to (e.g. an
// external baseline such as ucx_perftest). Registered with SY_BENCH_REPORT; the shared
// main() (bench/common/main.cc) runs all Google Benchmarks, then every reporter, in
// registration order, then prints.
using Reporter = void (*)(const std::map<std::string, Measured>& runs, Report* report);
struct ReporterRegistrar {
  ReporterRegistrar(const char* name, Reporter fn);
};
std::vector<std::pair<std::string, Reporter>>& Reporters();

// 2^20 bytes: the MB of the suites' MB/s figures (as ucx_perftest counts them).
constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace switchyard::bench

#define SY_BENCH_REPORT(ident, fn) \
  static ::switchyard::bench::ReporterRegistrar sy_bench_reporter_##ident(#ident, fn)

namespace switchyard::bench {}  // namespace switchyard::bench
