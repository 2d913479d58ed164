// vLLM's KV cache events as proxy mode reads them, and the index of the prompt prefixes an
// upstream holds that they build (docs/design.md "Upstreams").
//
// vLLM (`--kv-events-config '{"enable_kv_cache_events": true, "publisher": "zmq",
// "endpoint": "tcp://*:5557"}'`) publishes on a ZeroMQ PUB socket one message of three
// frames per batch: the topic, an 8-byte big-endian sequence number, and the batch in
// msgpack. A batch holds its time, its events and the data-parallel rank. Releases up to
// 0.10 write structs as arrays (a batch [ts, events, rank]; an event ["BlockStored",
// block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium]); later ones as
// maps ({"ts": .., "events": [..]}; {"type": "BlockStored", "block_hashes": [..], ..}).
// Block hashes are integers in older releases and 32-byte digests in newer ones: both are
// opaque keys here. DecodeKvEventBatch reads either form.
//
// KvBlockIndex applies the events: each stored block is keyed by Switchyard's own chained
// hash of its tokens (kv_tiers::ChainedBlockHash over its parent's), so that a prompt's
// tokens tell at once how many of its leading blocks the engine holds (HeldPrefixTokens),
// per medium ("GPU" for the engine's KV cache, "CPU" for vLLM's offload tier). A block
// whose parent the index never saw (stored before the subscription began, or lost in a
// gap) cannot be chained: it is counted, not indexed. Removing an unknown block does
// nothing.
//
// Thread-safety: DecodeKvEventBatch is pure; a KvBlockIndex is not thread-safe (its owner
// locks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"

namespace switchyard::upstream {

struct KvEvent {
  enum class Kind { kStored, kRemoved, kCleared };
  Kind kind = Kind::kStored;
  std::vector<std::string> block_hashes;  // the engine's hashes, as opaque keys
  std::string parent;                     // kStored: the first block's parent ("" none)
  std::vector<int32_t> token_ids;         // kStored: every block's tokens, in order
  int64_t block_size = 0;                 // kStored: tokens per block
  std::string medium;                     // "GPU", "CPU", or "" (not said: the GPU)
};

struct KvEventBatch {
  double ts = 0;
  std::vector<KvEvent> events;
  int64_t data_parallel_rank = -1;  // -1: not said
};

// InvalidArgument naming what in `payload` is not a batch (an event of an unknown type is
// skipped, so that a newer engine's events do not stop the rest).
Result<KvEventBatch> DecodeKvEventBatch(std::string_view payload);

class KvBlockIndex {
 public:
  void Apply(const KvEvent& e);
  // Leading tokens of `tokens` (whole blocks) whose blocks the engine holds on `medium`.
  int64_t HeldPrefixTokens(std::span<const int32_t> tokens, std::string_view medium = "GPU") const;
  size_t blocks(std::string_view medium = "GPU") const;
  int64_t block_size() const { return block_size_; }
  uint64_t unchained() const { return unchained_; }  // stored blocks with an unknown parent

 private:
  struct Medium {
    std::unordered_map<std::string, uint64_t> chain_of;  // engine hash -> chained hash
    std::unordered_map<uint64_t, uint32_t> held;         // chained hash -> copies
  };
  Medium& Of(const std::string& medium);
  std::map<std::string, Medium, std::less<>> media_;
  int64_t block_size_ = 0;
  uint64_t unchained_ = 0;
};

}  // namespace switchyard::upstream
