#include "kv_tiers/prefix_hash.h"

#include <xxhash.h>

namespace switchyard::kv_tiers {

uint64_t ChainedBlockHash(uint64_t parent_hash, std::span<const TokenId> tokens) {
  // Seeding with the parent hash chains the blocks: equal tokens under different
  // prefixes hash differently.
  uint64_t h = XXH64(tokens.data(), tokens.size_bytes(), parent_hash);
  return h == 0 ? 1 : h;  // 0 means "private block"
}

std::vector<uint64_t> PrefixHashes(std::span<const TokenId> tokens, uint32_t tokens_per_block) {
  std::vector<uint64_t> out;
  if (tokens_per_block == 0) return out;
  uint64_t parent = kPrefixRootHash;
  for (size_t start = 0; start + tokens_per_block <= tokens.size(); start += tokens_per_block) {
    parent = ChainedBlockHash(parent, tokens.subspan(start, tokens_per_block));
    out.push_back(parent);
  }
  return out;
}

uint64_t BlockChecksum(const void* data, size_t bytes) { return XXH64(data, bytes, 0); }

}  // namespace switchyard::kv_tiers
