// A bounded cache of BPE results per word (pre-token bytes → token ids), shared by every
// thread that encodes with one tokenizer.
//
// 64 shards, each a hash map under its own mutex; a shard that reaches its share of the
// capacity is emptied before the next insert (bounded memory, no per-entry bookkeeping).
// Words longer than kMaxWordBytes are never cached.
//
// Thread-safety: Get and Put may run on several threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace switchyard::tokenizer::internal {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 256;
  explicit WordCache(size_t capacity = 1 << 16);
  WordCache(const WordCache&) = delete;
  WordCache& operator=(const WordCache&) = delete;

  // Appends the cached ids of `word` to *out; false when not cached.
  bool Get(std::string_view word, std::vector<int32_t>* out) const;
  void Put(std::string_view word, const int32_t* ids, size_t n) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> map;
  };
  static constexpr size_t kShards = 64;
  Shard& ShardOf(size_t hash) const { return shards_[(hash >> 7) % kShards]; }

  size_t per_shard_;
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace switchyard::tokenizer::internal
