#include "base/ids.h"

#include <gtest/gtest.h>

#include <set>
#include <unordered_set>

namespace switchyard {
namespace {

TEST(IdsTest, NextIsUniqueAndNonZero) {
  IdGenerator gen;
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    TransferId id = gen.NextId<TransferId>();
    EXPECT_TRUE(id.valid());
    EXPECT_TRUE(seen.insert(id.value).second);
  }
}

TEST(IdsTest, StringIdsArePrefixedHexAndDeterministicPerSeed) {
  IdGenerator a(42), b(42), c(43);
  std::string x = a.NextString("wf");
  EXPECT_EQ(x.size(), 3u + 16u);
  EXPECT_EQ(x.substr(0, 3), "wf_");
  EXPECT_EQ(x, b.NextString("wf"));
  EXPECT_NE(x, c.NextString("wf"));
  EXPECT_EQ(HexId(0xabc), "0000000000000abc");
}

TEST(IdsTest, StrongIdsHashAndCompare) {
  std::unordered_set<BlockId> s{BlockId{1}, BlockId{2}, BlockId{1}};
  EXPECT_EQ(s.size(), 2u);
  EXPECT_LT(BlockId{1}, BlockId{2});
  EXPECT_FALSE(BlockId{}.valid());
}

}  // namespace
}  // namespace switchyard
