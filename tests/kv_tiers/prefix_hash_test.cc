#include "kv_tiers/prefix_hash.h"

#include <gtest/gtest.h>

#include <vector>

namespace switchyard::kv_tiers {
namespace {

TEST(PrefixHash, FullBlocksOnlyAndChained) {
  std::vector<TokenId> t(40);
  for (int i = 0; i < 40; ++i) t[i] = i;
  auto h = PrefixHashes(t, 16);
  ASSERT_EQ(h.size(), 2u);  // 40 tokens: two full blocks, a partial one is private
  EXPECT_EQ(h[0], ChainedBlockHash(kPrefixRootHash, std::span<const TokenId>(t).first(16)));
  EXPECT_EQ(h[1], ChainedBlockHash(h[0], std::span<const TokenId>(t).subspan(16, 16)));
}

TEST(PrefixHash, SharedPrefixSharesHashesAndDivergesAfter) {
  std::vector<TokenId> a(48, 7), b(48, 7);
  b[40] = 9;  // differs in the third block
  auto ha = PrefixHashes(a, 16), hb = PrefixHashes(b, 16);
  EXPECT_EQ(ha[0], hb[0]);
  EXPECT_EQ(ha[1], hb[1]);
  EXPECT_NE(ha[2], hb[2]);
  // Same tokens under a different parent hash differently (the chain matters).
  std::vector<TokenId> c(16, 7);
  EXPECT_NE(ChainedBlockHash(kPrefixRootHash, c), ChainedBlockHash(ha[0], c));
}

// The streaming checksum over any split of a block equals the one-shot BlockChecksum
// (writers hash each chunk as it lands and FinishWrite trusts the digest).
TEST(PrefixHash, StreamingChecksumEqualsOneShotForAnySplit) {
  std::vector<char> v(3 * BlockChecksummer::kChunkBytes + 4099);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>(i * 131 + (i >> 7));
  for (size_t size : {size_t{0}, size_t{1}, size_t{240}, BlockChecksummer::kChunkBytes - 1,
                      BlockChecksummer::kChunkBytes, v.size()}) {
    for (size_t piece : {size_t{1} << 20, BlockChecksummer::kChunkBytes, size_t{4093}}) {
      BlockChecksummer s;
      for (size_t off = 0; off < size; off += piece)
        s.Update(v.data() + off, std::min(piece, size - off));
      EXPECT_EQ(s.Digest(), BlockChecksum(v.data(), size)) << size << " in pieces of " << piece;
    }
  }
}

TEST(PrefixHash, ChecksumDetectsAFlippedByte) {
  std::vector<char> v(4096, 3);
  uint64_t a = BlockChecksum(v.data(), v.size());
  v[100] ^= 1;
  EXPECT_NE(a, BlockChecksum(v.data(), v.size()));
  EXPECT_TRUE(PrefixHashes(std::vector<TokenId>{}, 16).empty());
  EXPECT_TRUE(PrefixHashes(std::vector<TokenId>(15, 1), 16).empty());
}

}  // namespace
}  // namespace switchyard::kv_tiers
