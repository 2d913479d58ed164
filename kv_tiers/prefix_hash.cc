#include "kv_tiers/prefix_hash.h"

#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif

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

// XXH3-64 through libxxhash's runtime dispatch on x86-64 (the widest vector unit the CPU
// has; every variant gives the same value).
uint64_t BlockChecksum(const void* data, size_t bytes) {
#if defined(__x86_64__)
  return XXH3_64bits_dispatch(data, bytes);
#else
  return XXH3_64bits(data, bytes);
#endif
}

BlockChecksummer::BlockChecksummer() : state_(XXH3_createState()) {
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

BlockChecksummer::~BlockChecksummer() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void BlockChecksummer::Update(const void* data, size_t bytes) {
#if defined(__x86_64__)
  XXH3_64bits_update_dispatch(static_cast<XXH3_state_t*>(state_), data, bytes);
#else
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, bytes);
#endif
}

uint64_t BlockChecksummer::Digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

}  // namespace switchyard::kv_tiers
