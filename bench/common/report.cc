#include "bench/common/report.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <iostream>

namespace switchyard::bench {
namespace {

std::string JsonStr(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

class CaptureReporter : public benchmark::ConsoleReporter {
 public:
  explicit CaptureReporter(std::map<std::string, Measured>* out) : out_(out) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      Measured m;
      m.real_time_ns = run.GetAdjustedRealTime();  // default unit is ns
      for (const auto& [name, counter] : run.counters) {
        double v = counter.value;
        if (name == "bytes_per_second")
          m.bytes_per_second = v;
        else if (name == "items_per_second")
          m.items_per_second = v;
        else
          m.counters[name] = v;
      }
      (*out_)[run.benchmark_name()] = m;
    }
  }

 private:
  std::map<std::string, Measured>* out_;
};

}  // namespace

std::vector<std::pair<std::string, Reporter>>& Reporters() {
  static std::vector<std::pair<std::string, Reporter>> reporters;
  return reporters;
}

ReporterRegistrar::ReporterRegistrar(const char* name, Reporter fn) {
  Reporters().emplace_back(name, fn);
}

std::optional<double> Report::Ratio(const Result& r) {
  if (!r.baseline_value || *r.baseline_value == 0 || r.value == 0) return std::nullopt;
  return r.higher_is_better ? r.value / *r.baseline_value : *r.baseline_value / r.value;
}

void Report::Print(bool json) const {
  for (const Result& r : results_) {
    auto ratio = Ratio(r);
    if (json) {
      std::printf(
          "{\"suite\":%s,\"name\":%s,\"value\":%s,\"unit\":%s,\"baseline\":%s,"
          "\"baseline_value\":%s,\"ratio\":%s}\n",
          JsonStr(suite_).c_str(), JsonStr(r.name).c_str(), Num(r.value).c_str(),
          JsonStr(r.unit).c_str(), r.baseline.empty() ? "null" : JsonStr(r.baseline).c_str(),
          r.baseline_value ? Num(*r.baseline_value).c_str() : "null",
          ratio ? Num(*ratio).c_str() : "null");
    } else {
      std::printf("%-12s %-44s %14s %-10s", suite_.c_str(), r.name.c_str(), Num(r.value).c_str(),
                  r.unit.c_str());
      if (r.baseline_value) {
        std::printf("  vs %s %s", r.baseline.c_str(), Num(*r.baseline_value).c_str());
        if (ratio) std::printf("  ratio %.3f", *ratio);
      }
      if (!r.note.empty()) std::printf("  (%s)", r.note.c_str());
      std::printf("\n");
    }
  }
  std::fflush(stdout);
}

bool TakeJsonFlag(int* argc, char** argv) {
  bool found = false;
  int w = 1;
  for (int i = 1; i < *argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      found = true;
    } else {
      argv[w++] = argv[i];
    }
  }
  *argc = w;
  return found;
}

std::map<std::string, Measured> RunGoogleBenchmarks(int* argc, char** argv) {
  std::map<std::string, Measured> out;
  benchmark::Initialize(argc, argv);
  CaptureReporter reporter(&out);
  // Console output of Google Benchmark goes to stderr so stdout stays JSON lines.
  reporter.SetOutputStream(&std::cerr);
  reporter.SetErrorStream(&std::cerr);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return out;
}

}  // namespace switchyard::bench
