#include "kv_tiers/eviction.h"

#include <algorithm>

namespace switchyard::kv_tiers {

void LruEvictionPolicy::Insert(const EvictionCandidate& block) {
  Remove(block.id);
  lru_.push_back(block);
  index_[block.id] = std::prev(lru_.end());
}

void LruEvictionPolicy::Touch(BlockId id) {
  auto it = index_.find(id);
  if (it == index_.end()) return;
  lru_.splice(lru_.end(), lru_, it->second);  // most recently used at the back
}

void LruEvictionPolicy::Remove(BlockId id) {
  auto it = index_.find(id);
  if (it == index_.end()) return;
  lru_.erase(it->second);
  index_.erase(it);
}

std::vector<BlockId> LruEvictionPolicy::PickVictims(const std::string& tier,
                                                    const std::string& tenant, uint64_t bytes) {
  // Candidates in LRU order; with a priority hook, a stable sort by priority keeps LRU
  // order among equal priorities.
  std::vector<const EvictionCandidate*> cands;
  for (const auto& c : lru_) {
    if (c.tier == tier && (tenant.empty() || c.tenant == tenant)) cands.push_back(&c);
  }
  if (priority_) {
    std::vector<std::pair<double, const EvictionCandidate*>> keyed;
    keyed.reserve(cands.size());
    for (const auto* c : cands) keyed.emplace_back(priority_(*c), c);
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < keyed.size(); ++i) cands[i] = keyed[i].second;
  }
  std::vector<BlockId> out;
  uint64_t covered = 0;
  for (const auto* c : cands) {
    if (covered >= bytes) break;
    out.push_back(c->id);
    covered += c->bytes;
  }
  return out;
}

}  // namespace switchyard::kv_tiers
