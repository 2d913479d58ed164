// OffloadCache: the CPU engine's host offload tier for prefix-cache blocks, as vLLM's native
// CPU offloading (`--kv-offloading-backend native --kv-offloading-size`) and SGLang's
// HiCache host tier keep them: whole computed KV blocks, named by their chained content
// hash (prefix_cache.h), copied out of the KV pool and kept in host memory of a bounded
// size, least recently used evicted first. An admission whose prefix the pool no longer
// holds (neither a held nor a kept block of that hash) copies the blocks back from here
// instead of computing them (CpuStepRunner::MatchPrefix): same bytes, so the same logits.
//
// A block is stored when its context frees it (write-through at free time: the pool may
// reuse the slot at any moment after), unless the sequence that used it last said not to
// (executors::KvTransferParams::max_offload_tokens). Storing a hash already held refreshes
// its recency. On this engine the pool itself is host memory, so a load is a memcpy; the
// figures that matter here are which blocks were found, not what a load costs.
//
// Thread-safety: none (CpuStepRunner calls it from its loop thread only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

namespace switchyard::cpu_engine {

class OffloadCache {
 public:
  // Room for `capacity_bytes / block_bytes` blocks (at least one when capacity_bytes > 0).
  OffloadCache(uint64_t block_bytes, uint64_t capacity_bytes);

  // Copies `block_bytes` bytes from `data` under `hash` (non-zero): the least recently used
  // block makes room when full; an existing copy is only refreshed.
  void Store(uint64_t hash, const void* data);
  // The bytes stored under `hash` (null: none), marked most recently used.
  const void* Load(uint64_t hash);
  // Whether `hash` is stored (recency unchanged).
  bool Contains(uint64_t hash) const { return index_.count(hash) > 0; }
  // Everything dropped (the model's weights changed).
  void Clear();

  uint64_t capacity_blocks() const { return capacity_; }
  size_t blocks() const { return index_.size(); }
  uint64_t stored() const { return stored_; }    // blocks copied in
  uint64_t loaded() const { return loaded_; }    // blocks found by Load
  uint64_t evicted() const { return evicted_; }  // blocks dropped to make room

 private:
  struct Entry {
    uint64_t hash;
    size_t slot;
  };
  const uint64_t block_bytes_;
  const uint64_t capacity_;
  std::unique_ptr<std::byte[]> bytes_;
  std::vector<size_t> free_;                                        // slots never or no longer used
  std::list<Entry> lru_;                                            // front: most recent
  std::unordered_map<uint64_t, std::list<Entry>::iterator> index_;  // by hash
  uint64_t stored_ = 0, loaded_ = 0, evicted_ = 0;
};

}  // namespace switchyard::cpu_engine
