// Metrics: a small Prometheus text-format registry (counters, gauges, histograms).
//
// Families are registered once with a name and help text; samples carry a label string
// in Prometheus syntax ("route=\"/v1/workflows\",code=\"201\""). Gauges are read through
// callbacks at render time so they never go stale.
//
// Thread-safety: thread-safe.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace switchyard::api {

class Metrics {
 public:
  using GaugeFn = std::function<std::vector<std::pair<std::string, double>>()>;

  void Counter(const std::string& name, const std::string& help);
  void Histogram(const std::string& name, const std::string& help, std::vector<double> bounds);
  void Gauge(const std::string& name, const std::string& help, GaugeFn fn);

  void Inc(const std::string& name, const std::string& labels = "", double v = 1);
  void Observe(const std::string& name, const std::string& labels, double v);

  std::string Render() const;

 private:
  struct Hist {
    std::vector<uint64_t> counts;  // per bound, plus +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  struct Family {
    std::string type, help;
    std::vector<double> bounds;
    std::map<std::string, double> values;  // counters
    std::map<std::string, Hist> hists;
    GaugeFn gauge;
  };
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace switchyard::api
