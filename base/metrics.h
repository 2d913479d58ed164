// Metrics: a small Prometheus text-format (0.0.4) registry and writer.
//
// Families are registered once with a name, help text and kind:
//   - Counter / Histogram: updated here with Inc() / Observe();
//   - Gauge, CounterCallback, HistogramCallback: read through a callback at render time,
//     for figures kept elsewhere (the store's counters and commit latency histogram, the
//     scheduler's mirror, the service's latency histograms), so they never go stale.
// Render() writes every family with its HELP and TYPE lines; histograms as cumulative
// `_bucket{le}` series (ending with le="+Inf") plus `_sum` and `_count`. Registration
// checks Prometheus' conventions (a valid name, `_total` on counters and only there,
// bounds strictly increasing) and refuses a duplicate name, so a scrape always passes
// `promtool check metrics`.
//
// Samples carry a label string in Prometheus syntax (`route="/v1/workflows",code="201"`);
// build one from untrusted values with Label()/Labels(), which escape \, " and newline.
//
// Why our own writer: it is ~100 lines, reads callbacks at scrape time and adds no
// dependency; Debian's libprometheus-cpp would also do, but brings its own registry and
// threading model for a format this small.
//
// Thread-safety: thread-safe. Callbacks run on the rendering thread without the
// registry's lock held (they may take their own locks; they must not call into this
// registry).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"

namespace switchyard {

// One histogram series: counts per bucket (not cumulative; one per bound, then +Inf),
// the sum and the count of the observations.
struct HistogramValue {
  std::vector<uint64_t> counts;
  double sum = 0;
  uint64_t count = 0;
  // Adds `v` to the bucket of the first bound >= v (the last, +Inf, when none).
  void Observe(const std::vector<double>& bounds, double v);
};

// Histogram series by label string, observed by their owner and read at scrape time
// through Metrics::HistogramCallback. Thread-safe.
class HistogramSeries {
 public:
  explicit HistogramSeries(std::vector<double> bounds) : bounds_(std::move(bounds)) {}
  const std::vector<double>& bounds() const { return bounds_; }
  void Observe(const std::string& labels, double v);
  std::vector<std::pair<std::string, HistogramValue>> Snapshot() const;

 private:
  const std::vector<double> bounds_;
  mutable Mutex mu_;
  std::map<std::string, HistogramValue> series_ GUARDED_BY(mu_);
};

class Metrics {
 public:
  using Samples = std::vector<std::pair<std::string, double>>;  // (labels, value)
  using GaugeFn = std::function<Samples()>;
  using CounterFn = std::function<Samples()>;  // values only ever grow
  using HistogramFn = std::function<std::vector<std::pair<std::string, HistogramValue>>()>;

  // InvalidArgument naming the family: a bad name, a counter without `_total` (or a
  // gauge or histogram with it), bounds not strictly increasing, a name already taken.
  Status Counter(const std::string& name, const std::string& help);
  Status Histogram(const std::string& name, const std::string& help, std::vector<double> bounds);
  Status Gauge(const std::string& name, const std::string& help, GaugeFn fn);
  Status CounterCallback(const std::string& name, const std::string& help, CounterFn fn);
  Status HistogramCallback(const std::string& name, const std::string& help,
                           std::vector<double> bounds, HistogramFn fn);
  // Runs before the callbacks of every Render() (e.g. one consistent snapshot they share).
  void BeforeRender(std::function<void()> fn);

  // Unknown names are ignored (a family that failed to register).
  void Inc(const std::string& name, const std::string& labels = "", double v = 1);
  void Observe(const std::string& name, const std::string& labels, double v);

  std::string Render() const;

  // `key="value"` with the value escaped (\\, \", \n).
  static std::string Label(std::string_view key, std::string_view value);
  static std::string Labels(
      std::initializer_list<std::pair<std::string_view, std::string_view>> kv);
  // A bound or sample value as Prometheus writes it ("0.0005", "+Inf", "NaN").
  static std::string Number(double v);

 private:
  struct Family {
    std::string type, help;
    std::vector<double> bounds;
    std::map<std::string, double> values;  // counters
    std::map<std::string, HistogramValue> hists;
    GaugeFn samples;  // gauges and counter callbacks
    HistogramFn hist_fn;
  };
  Status Add(const std::string& name, Family f);

  mutable Mutex mu_;
  std::map<std::string, Family> families_ GUARDED_BY(mu_);
  std::vector<std::function<void()>> before_render_ GUARDED_BY(mu_);
};

}  // namespace switchyard
