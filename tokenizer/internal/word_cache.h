// A bounded cache of BPE results per word (pre-token bytes → token ids), shared by every
// thread that encodes with one tokenizer, and the byte-string hash it and the vocabulary
// index use.
//
// 32 shards, each an open-addressing table under its own mutex, whose keys and ids live in
// two arenas of the shard (no allocation per entry). A shard that reaches its share of the
// capacity is emptied before the next insert: bounded memory, no per-entry bookkeeping.
// Words longer than kMaxWordBytes are never cached.
//
// Thread-safety: Get and Put may run on several threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vector>

namespace switchyard::tokenizer::internal {

// A 64-bit hash of `s` (multiply-xorshift over 8-byte words); never 0.
inline uint64_t HashBytes(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ (s.size() * 0xC2B2AE3D27D4EB4FULL);
  const char* p = s.data();
  size_t n = s.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    h = (h ^ v) * 0xFF51AFD7ED558CCDULL;
    h ^= h >> 32;
  }
  uint64_t v = 0;
  std::memcpy(&v, p, n);
  h = (h ^ v) * 0xC4CEB9FE1A85EC53ULL;
  h ^= h >> 29;
  h *= 0xFF51AFD7ED558CCDULL;
  h ^= h >> 32;
  return h | 1;
}

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 128;
  // At most `capacity` words (rounded to the shards).
  explicit WordCache(size_t capacity = 1 << 15);
  WordCache(const WordCache&) = delete;
  WordCache& operator=(const WordCache&) = delete;

  // Appends the cached ids of `word` (whose HashBytes is `hash`) to *out; false when not
  // cached.
  bool Get(std::string_view word, uint64_t hash, std::vector<int32_t>* out) const;
  void Put(std::string_view word, uint64_t hash, const int32_t* ids, size_t n) const;

 private:
  struct Entry {
    uint64_t hash = 0;  // 0: empty slot
    uint32_t key_at = 0, ids_at = 0;
    uint16_t key_len = 0, n_ids = 0;
  };
  struct Shard {
    std::mutex mu;
    std::vector<Entry> table;
    std::vector<char> keys;
    std::vector<int32_t> ids;
    size_t used = 0;
  };
  static constexpr size_t kShards = 32;
  Shard& ShardOf(uint64_t hash) const { return shards_[(hash >> 40) % kShards]; }
  // The slot of `word` in `s`, or the empty slot where it would go.
  size_t Probe(const Shard& s, std::string_view word, uint64_t hash) const;
  void Clear(Shard* s) const;

  size_t per_shard_;
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace switchyard::tokenizer::internal
