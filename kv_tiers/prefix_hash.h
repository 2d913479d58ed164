// Content hashes for KV blocks: the chained prefix hash and the block checksum.
//
// A prefix block is identified by hash(parent block's hash, this block's token ids), so
// two contexts that share a token prefix share its blocks (as vLLM, SGLang and Dynamo
// do). The prefix hash is xxHash64 (libxxhash). The chain starts from a root seed; hash 0 is
// reserved for "private block" and never returned. The block checksum is XXH3-64, the
// same function as the KV-store protocol's per-block checksum (kv_store/), so a
// block's stored checksum travels with it to a KV store without hashing it again.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace switchyard::kv_tiers {

using TokenId = int32_t;

constexpr uint64_t kPrefixRootHash = 0x53594B5650524546ULL;  // "SYKVPREF"

// Hash of one block given its parent's hash (kPrefixRootHash for the first block).
uint64_t ChainedBlockHash(uint64_t parent_hash, std::span<const TokenId> tokens);

// Hashes of every *full* block of `tokens` (a trailing partial block is private and
// has no prefix hash).
std::vector<uint64_t> PrefixHashes(std::span<const TokenId> tokens, uint32_t tokens_per_block);

// XXH3-64 of block bytes (seed 0): the checksum verified at validation.
uint64_t BlockChecksum(const void* data, size_t bytes);

// BlockChecksum of a block given in consecutive pieces: Update() with each, then Digest()
// equals BlockChecksum of the whole. Lets a writer hash each chunk right after copying it,
// while it is still in cache (one pass over memory instead of a copy and then a hash).
class BlockChecksummer {
 public:
  static constexpr size_t kChunkBytes = 32 << 10;  // a copy chunk that stays in L1/L2
  BlockChecksummer();
  ~BlockChecksummer();
  BlockChecksummer(const BlockChecksummer&) = delete;
  BlockChecksummer& operator=(const BlockChecksummer&) = delete;
  void Update(const void* data, size_t bytes);
  uint64_t Digest() const;

 private:
  void* state_;  // XXH3_state_t
};

}  // namespace switchyard::kv_tiers
