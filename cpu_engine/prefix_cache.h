// PrefixCache: what the CPU engine's automatic prefix caching (vLLM's APC) knows about the
// KV blocks of its contexts — the content hash of a block, and which held blocks have one.
//
// A whole block of a context (block_tokens positions, all with computed KV) is named by
// kv_tiers::ChainedBlockHash(hash of the block before, its token ids): equal hashes mean
// equal token ids from position 0 up to the block's end, so — the model being batch- and
// chunk-invariant (cpu_engine/README.md) — bit-identical KV. The chain starts from a seed
// made of the model's description and the model epoch (SetEpoch), so blocks computed by
// other weights never match. Hash collisions (64 bits) are not checked, as vLLM's default.
//
// The live index maps a hash to the held blocks that have it (a context's block i, by its
// owner and index, with its bytes); freed blocks kept for reuse are in the KvPool
// (kv_pool.h). CpuStepRunner (cpu_step_runner.h) keeps both up to date and matches
// admissions against them.
//
// Ownership: the index holds pointers into blocks its caller owns; entries are removed
// before those blocks are freed. Thread-safety: loop-thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>

namespace switchyard::cpu_engine {

class PrefixCache {
 public:
  explicit PrefixCache(std::string model_id) : model_id_(std::move(model_id)) { SetEpoch(0); }

  // A new model epoch: a new seed; the live index is emptied (the caller drops its hashes).
  void SetEpoch(uint64_t epoch);
  uint64_t epoch() const { return epoch_; }
  // The hash of a block of `ids` after the block hashed `parent` (seed() for the first).
  uint64_t Hash(uint64_t parent, std::span<const int32_t> ids) const;
  uint64_t seed() const { return seed_; }

  // A held block with this hash: block `index` of `owner`, whose bytes are `data`.
  struct Live {
    const void* owner = nullptr;
    size_t index = 0;
    const float* data = nullptr;
  };
  void AddLive(uint64_t hash, const Live& block);
  void RemoveLive(uint64_t hash, const void* owner, size_t index);
  // One held block with this hash (null data: none).
  Live FindLive(uint64_t hash) const;
  size_t live_blocks() const { return live_.size(); }

 private:
  std::string model_id_;
  uint64_t epoch_ = 0, seed_ = 0;
  std::unordered_multimap<uint64_t, Live> live_;
};

}  // namespace switchyard::cpu_engine
