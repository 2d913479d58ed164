#include "scheduler/duration_sketch.h"

#include <algorithm>
#include <cmath>

namespace switchyard::scheduler {

DurationSketch::DurationSketch(double relative_accuracy, double min_value)
    : alpha_(std::clamp(relative_accuracy, 1e-4, 0.5)),
      gamma_((1 + alpha_) / (1 - alpha_)),
      log_gamma_(std::log(gamma_)),
      min_value_(min_value > 0 ? min_value : 1e-9) {}

int DurationSketch::BucketOf(double v) const {
  return static_cast<int>(std::ceil(std::log(v) / log_gamma_));
}

// Bucket i holds (gamma^(i-1), gamma^i]; this point is within alpha of both ends.
double DurationSketch::Representative(int index) const {
  return 2.0 * std::pow(gamma_, index) / (gamma_ + 1.0);
}

void DurationSketch::Add(double value, double weight) {
  if (!(weight > 0) || std::isnan(value)) return;
  count_ += weight;
  if (value < min_value_) {
    zero_count_ += weight;
    return;
  }
  int b = BucketOf(value);
  if (counts_.empty()) {
    offset_ = b;
    counts_.assign(1, 0.0);
  } else if (b < offset_) {
    counts_.insert(counts_.begin(), static_cast<size_t>(offset_ - b), 0.0);
    offset_ = b;
  } else if (b >= offset_ + static_cast<int>(counts_.size())) {
    counts_.resize(static_cast<size_t>(b - offset_ + 1), 0.0);
  }
  counts_[static_cast<size_t>(b - offset_)] += weight;
}

std::optional<double> DurationSketch::Quantile(double q) const {
  if (count_ <= 0) return std::nullopt;
  q = std::clamp(q, 0.0, 1.0);
  // Rank of the target value among count_ items (0-based, lower quantile).
  double rank = q * (count_ - 1);
  if (rank < zero_count_) return 0.0;
  double seen = zero_count_;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen > rank) return Representative(offset_ + static_cast<int>(i));
  }
  return Representative(offset_ + static_cast<int>(counts_.size()) - 1);
}

std::optional<double> DurationSketch::Mean() const {
  if (count_ <= 0) return std::nullopt;
  double sum = 0;
  for (size_t i = 0; i < counts_.size(); ++i)
    sum += counts_[i] * Representative(offset_ + static_cast<int>(i));
  return sum / count_;
}

void DurationModel::Observe(const std::string& tenant, const std::string& tool, Duration d) {
  double s = std::max(0.0, ToSeconds(d));
  per_key_[{tenant, tool}].Add(s);
  per_tool_[tool].Add(s);
  samples_ += 1;
}

double DurationModel::ToolSamples(const std::string& tool) const {
  auto it = per_tool_.find(tool);
  return it == per_tool_.end() ? 0 : it->second.count();
}

Duration DurationModel::Predict(const std::string& tenant, const std::string& tool, double q,
                                Duration hint) const {
  auto key = per_key_.find({tenant, tool});
  if (key != per_key_.end() && key->second.count() >= options_.min_samples)
    return Seconds(*key->second.Quantile(q));
  auto tool_it = per_tool_.find(tool);
  const DurationSketch* base = nullptr;
  if (key != per_key_.end()) base = &key->second;
  if (tool_it != per_tool_.end() && tool_it->second.count() >= options_.min_samples)
    base = &tool_it->second;
  if (hint.count() > 0) {
    // Seed: the hint counts as hint_weight samples next to what has been seen.
    DurationSketch seeded = base ? *base : DurationSketch();
    seeded.Add(ToSeconds(hint), options_.hint_weight);
    return Seconds(*seeded.Quantile(q));
  }
  if (base) return Seconds(*base->Quantile(q));
  return options_.default_duration;
}

}  // namespace switchyard::scheduler
