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

v1::DurationSketchState DurationSketch::ToProto() const {
  v1::DurationSketchState p;
  p.set_relative_accuracy(alpha_);
  p.set_min_value(min_value_);
  p.set_zero_count(zero_count_);
  p.set_offset(offset_);
  for (double c : counts_) p.add_counts(c);
  p.set_count(count_);
  return p;
}

Result<DurationSketch> DurationSketch::FromProto(const v1::DurationSketchState& p) {
  if (!(p.relative_accuracy() > 0 && p.relative_accuracy() < 1))
    return Status::InvalidArgument("duration sketch: relative_accuracy must be in (0, 1), got " +
                                   std::to_string(p.relative_accuracy()));
  if (!(p.min_value() > 0))
    return Status::InvalidArgument("duration sketch: min_value must be > 0");
  double total = p.zero_count();
  for (double c : p.counts()) {
    if (!(c >= 0)) return Status::InvalidArgument("duration sketch: a bucket count is negative");
    total += c;
  }
  if (!(p.zero_count() >= 0) || std::abs(total - p.count()) > 1e-6 * std::max(1.0, total))
    return Status::InvalidArgument("duration sketch: count " + std::to_string(p.count()) +
                                   " is not the sum of its buckets (" + std::to_string(total) +
                                   ")");
  DurationSketch s(p.relative_accuracy(), p.min_value());
  s.zero_count_ = p.zero_count();
  s.offset_ = p.offset();
  s.counts_.assign(p.counts().begin(), p.counts().end());
  s.count_ = p.count();
  return s;
}

v1::LearnedDurations DurationModel::Export() const {
  v1::LearnedDurations out;
  for (const auto& [key, sketch] : per_key_) {
    auto* e = out.add_entries();
    e->set_tenant(key.first);
    e->set_tool(key.second);
    *e->mutable_sketch() = sketch.ToProto();
  }
  for (const auto& [tool, sketch] : per_tool_) {
    auto* e = out.add_entries();
    e->set_tool(tool);
    *e->mutable_sketch() = sketch.ToProto();
  }
  out.set_samples(samples_);
  return out;
}

Status DurationModel::Restore(const v1::LearnedDurations& saved) {
  std::map<std::pair<std::string, std::string>, DurationSketch> per_key;
  std::map<std::string, DurationSketch> per_tool;
  for (int i = 0; i < saved.entries_size(); ++i) {
    const auto& e = saved.entries(i);
    Result<DurationSketch> s = DurationSketch::FromProto(e.sketch());
    if (!s.ok())
      return s.status().Annotate("learned durations entry " + std::to_string(i) + " (tenant '" +
                                 e.tenant() + "', tool '" + e.tool() + "')");
    if (e.tenant().empty())
      per_tool.insert_or_assign(e.tool(), std::move(*s));
    else
      per_key.insert_or_assign({e.tenant(), e.tool()}, std::move(*s));
  }
  per_key_ = std::move(per_key);
  per_tool_ = std::move(per_tool);
  samples_ = saved.samples();
  return Status::OK();
}

}  // namespace switchyard::scheduler
