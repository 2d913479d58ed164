#include "tokenizer/internal/word_cache.h"

namespace switchyard::tokenizer::internal {

WordCache::WordCache(size_t capacity)
    : per_shard_(capacity / kShards > 0 ? capacity / kShards : 1) {}

bool WordCache::Get(std::string_view word, std::vector<int32_t>* out) const {
  if (word.size() > kMaxWordBytes) return false;
  Shard& s = ShardOf(Hash{}(word));
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.map.find(word);
  if (it == s.map.end()) return false;
  out->insert(out->end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::Put(std::string_view word, const int32_t* ids, size_t n) const {
  if (word.size() > kMaxWordBytes) return;
  Shard& s = ShardOf(Hash{}(word));
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.map.size() >= per_shard_) s.map.clear();
  s.map.try_emplace(std::string(word), ids, ids + n);
}

}  // namespace switchyard::tokenizer::internal
