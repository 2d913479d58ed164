#include "tokenizer/internal/word_cache.h"

namespace switchyard::tokenizer::internal {

WordCache::WordCache(size_t capacity) {
  per_shard_ = capacity / kShards > 16 ? capacity / kShards : 16;
  size_t slots = 1;
  while (slots < 2 * per_shard_) slots <<= 1;
  for (Shard& s : shards_) s.table.resize(slots);
}

size_t WordCache::Probe(const Shard& s, std::string_view word, uint64_t hash) const {
  const size_t mask = s.table.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Entry& e = s.table[i];
    if (e.hash == 0) return i;
    if (e.hash == hash && e.key_len == word.size() &&
        (word.empty() || std::memcmp(s.keys.data() + e.key_at, word.data(), word.size()) == 0)) {
      return i;
    }
  }
}

bool WordCache::Get(std::string_view word, uint64_t hash, std::vector<int32_t>* out) const {
  if (word.size() > kMaxWordBytes) return false;
  Shard& s = ShardOf(hash);
  std::lock_guard<std::mutex> lock(s.mu);
  const Entry& e = s.table[Probe(s, word, hash)];
  if (e.hash == 0) return false;
  const int32_t* ids = s.ids.data() + e.ids_at;
  out->insert(out->end(), ids, ids + e.n_ids);
  return true;
}

void WordCache::Clear(Shard* s) const {
  std::fill(s->table.begin(), s->table.end(), Entry{});
  s->keys.clear();
  s->ids.clear();
  s->used = 0;
}

void WordCache::Put(std::string_view word, uint64_t hash, const int32_t* ids, size_t n) const {
  if (word.size() > kMaxWordBytes || n > UINT16_MAX) return;
  Shard& s = ShardOf(hash);
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.used >= per_shard_) Clear(&s);
  Entry& e = s.table[Probe(s, word, hash)];
  if (e.hash != 0) return;  // another thread put it first
  e = Entry{hash, static_cast<uint32_t>(s.keys.size()), static_cast<uint32_t>(s.ids.size()),
            static_cast<uint16_t>(word.size()), static_cast<uint16_t>(n)};
  s.keys.insert(s.keys.end(), word.begin(), word.end());
  s.ids.insert(s.ids.end(), ids, ids + n);
  ++s.used;
}

}  // namespace switchyard::tokenizer::internal
