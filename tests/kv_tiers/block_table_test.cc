#include "kv_tiers/block_table.h"

#include <gtest/gtest.h>

namespace switchyard::kv_tiers {
namespace {

TEST(BlockTable, AppendGetSetTruncate) {
  BlockTable t("ctx", "tenant", "wf");
  for (uint64_t i = 1; i <= 4; ++i) t.Append({BlockId{i}, 1, i * 10, 16});
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.num_tokens(), 64u);
  EXPECT_EQ(t.Get(2)->block, BlockId{3});
  auto bad = t.Get(9);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(bad.status().message().find("ctx"), std::string::npos);
  ASSERT_TRUE(t.Set(1, {BlockId{42}, 2, 0, 16}).ok());
  EXPECT_EQ(t.Get(1)->generation, 2u);
  EXPECT_FALSE(t.Set(7, {}).ok());
  auto dropped = t.Truncate(2);
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0].block, BlockId{3});
  EXPECT_EQ(t.size(), 2u);
  EXPECT_TRUE(t.Truncate(5).empty());
}

TEST(BlockTable, MatchPrefixStopsAtFirstDifferenceOrPrivateBlock) {
  BlockTable t("ctx", "tenant", "wf");
  t.Append({BlockId{1}, 1, 11, 16});
  t.Append({BlockId{2}, 1, 22, 16});
  t.Append({BlockId{3}, 1, 0, 5});  // private tail
  EXPECT_EQ(t.MatchPrefix({11, 22, 33}), 2u);
  EXPECT_EQ(t.MatchPrefix({11, 99}), 1u);
  EXPECT_EQ(t.MatchPrefix({}), 0u);
}

TEST(BlockTables, CreateFindRemove) {
  BlockTables tables;
  auto t = tables.Create("c1", "tenant", "wf");
  ASSERT_TRUE(t.ok());
  (*t)->Append({BlockId{5}, 1, 0, 16});
  EXPECT_EQ(tables.Create("c1", "tenant", "wf").status().code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(tables.Create("", "tenant", "wf").status().IsInvalidArgument());
  EXPECT_EQ(tables.Find("c1"), *t);
  EXPECT_EQ(tables.Find("nope"), nullptr);
  auto removed = tables.Remove("c1");
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->size(), 1u);
  EXPECT_TRUE(tables.Remove("c1").status().IsNotFound());
  EXPECT_EQ(tables.size(), 0u);
}

}  // namespace
}  // namespace switchyard::kv_tiers
