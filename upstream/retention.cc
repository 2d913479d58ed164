#include "upstream/retention.h"

#include <algorithm>
#include <vector>

namespace switchyard::upstream {

void RetentionModel::AddWritten(int64_t tokens) {
  if (tokens > 0) churn_ += static_cast<uint64_t>(tokens);
}

void RetentionModel::Observe(uint64_t churn, int64_t prefix, int64_t cached) {
  if (prefix <= 0) return;
  seen_.push_back({churn, cached * 2 >= prefix});
  while (seen_.size() > kMaxObservations) seen_.pop_front();
}

std::optional<uint64_t> RetentionModel::Capacity() const {
  if (seen_.size() < kMinObservations) return std::nullopt;
  std::vector<Observation> sorted(seen_.begin(), seen_.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const Observation& a, const Observation& b) { return a.churn < b.churn; });
  const auto lost =
      std::count_if(sorted.begin(), sorted.end(), [](const Observation& o) { return !o.held; });
  if (lost == 0) return std::nullopt;
  // A threshold after the first i observations: held ones past it and lost ones within it
  // are its errors. i = 0 predicts every prefix lost; a threshold past the last one would
  // predict losses where none was seen, and is no prediction.
  int64_t held_past = static_cast<int64_t>(sorted.size()) - lost, lost_within = 0;
  int64_t best_errors = held_past;
  uint64_t best = sorted.front().churn / 2, best_gap = sorted.front().churn;
  for (size_t i = 0; i + 1 < sorted.size(); ++i) {
    sorted[i].held ? --held_past : ++lost_within;
    const uint64_t gap = sorted[i + 1].churn - sorted[i].churn;
    if (gap == 0) continue;  // a threshold falls between distinct figures
    const int64_t errors = held_past + lost_within;
    if (errors < best_errors || (errors == best_errors && gap > best_gap)) {
      best_errors = errors;
      best_gap = gap;
      best = sorted[i].churn + gap / 2;
    }
  }
  if (best_errors >= lost) return std::nullopt;  // no better than "every prefix held"
  return best;
}

std::optional<bool> RetentionModel::Held(uint64_t churn) const {
  const std::optional<uint64_t> capacity = Capacity();
  if (!capacity) return std::nullopt;
  return churn <= *capacity;
}

RetentionModel::Figures RetentionModel::figures() const {
  Figures f;
  f.observations = seen_.size();
  f.held = static_cast<uint64_t>(
      std::count_if(seen_.begin(), seen_.end(), [](const Observation& o) { return o.held; }));
  f.churn = churn_;
  f.capacity = Capacity();
  return f;
}

}  // namespace switchyard::upstream
