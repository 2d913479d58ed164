// PrefixCache (prefix_cache.h).
#include "cpu_engine/prefix_cache.h"

#include <vector>

#include "kv_tiers/prefix_hash.h"

namespace switchyard::cpu_engine {

void PrefixCache::SetEpoch(uint64_t epoch) {
  epoch_ = epoch;
  // The model's description and the epoch as one "block" of ids under the root hash.
  std::vector<int32_t> words;
  for (unsigned char c : model_id_) words.push_back(c);
  words.push_back(static_cast<int32_t>(epoch & 0xffffffffu));
  words.push_back(static_cast<int32_t>(epoch >> 32));
  seed_ = kv_tiers::ChainedBlockHash(kv_tiers::kPrefixRootHash, words);
  live_.clear();
}

uint64_t PrefixCache::Hash(uint64_t parent, std::span<const int32_t> ids) const {
  return kv_tiers::ChainedBlockHash(parent, ids);
}

void PrefixCache::AddLive(uint64_t hash, const Live& block) { live_.emplace(hash, block); }

void PrefixCache::RemoveLive(uint64_t hash, const void* owner, size_t index) {
  auto [b, e] = live_.equal_range(hash);
  for (auto it = b; it != e; ++it)
    if (it->second.owner == owner && it->second.index == index) {
      live_.erase(it);
      return;
    }
}

PrefixCache::Live PrefixCache::FindLive(uint64_t hash) const {
  auto it = live_.find(hash);
  return it == live_.end() ? Live{} : it->second;
}

}  // namespace switchyard::cpu_engine
