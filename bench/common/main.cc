// The shared main() of every benchmark suite: bench_<suite> [--json] [gbench flags].
#include <cstdio>

#include "bench/common/report.h"

#ifndef SY_BENCH_SUITE
#error "SY_BENCH_SUITE must name the suite"
#endif

int main(int argc, char** argv) {
  using namespace switchyard::bench;
  bool json = TakeJsonFlag(&argc, argv);
  auto runs = RunGoogleBenchmarks(&argc, argv);
  Report report(SY_BENCH_SUITE);
  for (const auto& [name, fn] : Reporters()) fn(runs, &report);
  if (report.results().empty()) {
    std::fprintf(stderr, "bench: suite %s produced no results\n", SY_BENCH_SUITE);
    return 1;
  }
  report.Print(json);
  return 0;
}
