// DurationSketch: a streaming quantile sketch for tool durations (log-bucketed histogram).
//
// Values (seconds, >= 0) fall into buckets whose bounds grow geometrically by
// gamma = (1 + a) / (1 - a); any quantile is answered with relative error at most `a`
// (default 1%), in the manner of DDSketch. Memory is one counter per non-empty bucket
// range: ~800 buckets cover 1 ms .. 3 h at 1%. Values below `min_value` share one bucket.
// Weighted adds let a hint seed the distribution before real samples arrive.
//
// DurationModel keeps one sketch per (tenant, tool name), falling back to the tool's
// sketch across tenants and then to the node's hint while a key has few samples.
//
// Thread-safety: none; owned by the (single-threaded) scheduler core.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "proto/switchyard/v1/service_state.pb.h"

namespace switchyard::scheduler {

class DurationSketch {
 public:
  explicit DurationSketch(double relative_accuracy = 0.01, double min_value = 1e-4);

  void Add(double value, double weight = 1.0);
  // q in [0, 1]. nullopt when empty.
  std::optional<double> Quantile(double q) const;
  double count() const { return count_; }
  double relative_accuracy() const { return alpha_; }
  // Mean of the values as the sketch represents them (bucket representatives).
  std::optional<double> Mean() const;

  // Its whole state, and back (InvalidArgument naming the field for a state no sketch
  // could have: accuracy outside (0, 1), negative counts).
  v1::DurationSketchState ToProto() const;
  static Result<DurationSketch> FromProto(const v1::DurationSketchState& state);

 private:
  int BucketOf(double v) const;
  double Representative(int index) const;

  double alpha_;
  double gamma_;
  double log_gamma_;
  double min_value_;
  double zero_count_ = 0;  // values below min_value_
  int offset_ = 0;         // bucket index of counts_[0]
  std::vector<double> counts_;
  double count_ = 0;
};

// Learned tool durations per (tenant, tool). Hints seed a key with `hint_weight`
// pseudo-samples; after `min_samples` real samples the key's own sketch is used alone.
class DurationModel {
 public:
  struct Options {
    double hint_weight = 3.0;
    double min_samples = 5.0;
    Duration default_duration = Seconds(1.0);
  };
  DurationModel() : DurationModel(Options{}) {}
  explicit DurationModel(Options o) : options_(o) {}

  void Observe(const std::string& tenant, const std::string& tool, Duration d);
  // Quantile q of the predicted duration. `hint` (0 = none) is used when the key and the
  // tool have fewer than min_samples samples: it seeds the estimate with hint_weight.
  Duration Predict(const std::string& tenant, const std::string& tool, double q,
                   Duration hint) const;
  size_t keys() const { return per_key_.size(); }
  // Real samples seen of this tool (all tenants), and of every tool.
  double ToolSamples(const std::string& tool) const;
  double samples() const { return samples_; }

  // Everything learned, for persisting (v1::LearnedDurations), and restoring it: Restore
  // replaces what this model holds; an invalid entry fails it whole, naming the entry.
  v1::LearnedDurations Export() const;
  Status Restore(const v1::LearnedDurations& saved);

 private:
  Options options_;
  std::map<std::pair<std::string, std::string>, DurationSketch> per_key_;
  std::map<std::string, DurationSketch> per_tool_;
  double samples_ = 0;
};

}  // namespace switchyard::scheduler
