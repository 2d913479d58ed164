#include "cpu_engine/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace switchyard::cpu_engine {
namespace {

uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

int32_t Argmax(std::span<const float> logits) {
  int32_t best = -1;
  for (size_t i = 0; i < logits.size(); ++i)
    if (!std::isnan(logits[i]) && (best < 0 || logits[i] > logits[static_cast<size_t>(best)]))
      best = static_cast<int32_t>(i);
  if (best < 0 && !logits.empty()) best = 0;
  return best;
}

uint64_t MixSeed(uint64_t seed, uint64_t step) { return SplitMix64(SplitMix64(seed) ^ step); }

int32_t Sample(std::span<const float> logits, double temperature, double top_p, uint64_t seed) {
  if (temperature <= 0 || logits.empty()) return Argmax(logits);
  const int32_t top = Argmax(logits);
  const double max = logits[static_cast<size_t>(top)];
  std::vector<double> p(logits.size());
  for (size_t i = 0; i < p.size(); ++i)
    p[i] = std::isnan(logits[i]) ? 0.0 : std::exp((logits[i] - max) / temperature);
  std::vector<int32_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  double total = std::accumulate(p.begin(), p.end(), 0.0);
  size_t kept = order.size();
  if (top_p > 0 && top_p < 1) {
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
    double cum = 0;
    for (kept = 0; kept < order.size();) {
      cum += p[static_cast<size_t>(order[kept++])];
      if (cum >= top_p * total) break;
    }
    total = cum;
  }
  const double u = static_cast<double>(SplitMix64(seed) >> 11) * 0x1.0p-53 * total;
  double cum = 0;
  for (size_t k = 0; k < kept; ++k) {
    cum += p[static_cast<size_t>(order[k])];
    if (u < cum) return order[k];
  }
  return order[kept - 1];
}

}  // namespace switchyard::cpu_engine
