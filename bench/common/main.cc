// The shared main() of every benchmark suite: bench_<suite> [--json] [gbench flags].
// SY_BENCH_REPORTERS=name[,name...] runs only those reporters (SY_BENCH_REPORT names, e.g.
// net_budget_direct_put; pass --benchmark_filter=NONE to skip the Google Benchmarks too).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/common/report.h"

#ifndef SY_BENCH_SUITE
#error "SY_BENCH_SUITE must name the suite"
#endif

int main(int argc, char** argv) {
  using namespace switchyard::bench;
  bool json = TakeJsonFlag(&argc, argv);
  auto runs = RunGoogleBenchmarks(&argc, argv);
  Report report(SY_BENCH_SUITE);
  const char* only = std::getenv("SY_BENCH_REPORTERS");
  for (const auto& [name, fn] : Reporters()) {
    if (only != nullptr &&
        ("," + std::string(only) + ",").find("," + name + ",") == std::string::npos)
      continue;
    fn(runs, &report);
  }
  if (report.results().empty()) {
    std::fprintf(stderr, "bench: suite %s produced no results\n", SY_BENCH_SUITE);
    return 1;
  }
  report.Print(json);
  return 0;
}
