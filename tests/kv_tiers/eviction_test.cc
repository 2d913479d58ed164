#include "kv_tiers/eviction.h"

#include <gtest/gtest.h>

namespace switchyard::kv_tiers {
namespace {

EvictionCandidate C(uint64_t id, const std::string& tier, const std::string& tenant,
                    uint64_t bytes = 10) {
  return {BlockId{id}, tier, tenant, "wf" + std::to_string(id), "ctx" + std::to_string(id), bytes};
}

TEST(LruEviction, LeastRecentlyUsedFirstWithinTierAndTenant) {
  LruEvictionPolicy p;
  p.Insert(C(1, "hbm", "a"));
  p.Insert(C(2, "hbm", "b"));
  p.Insert(C(3, "hbm", "a"));
  p.Insert(C(4, "host", "a"));
  p.Touch(BlockId{1});  // 3 is now the LRU of tenant a in hbm
  EXPECT_EQ(p.PickVictims("hbm", "a", 10), (std::vector<BlockId>{BlockId{3}}));
  EXPECT_EQ(p.PickVictims("hbm", "", 25),
            (std::vector<BlockId>{BlockId{2}, BlockId{3}, BlockId{1}}));
  EXPECT_TRUE(p.PickVictims("disk", "", 10).empty());
  p.Remove(BlockId{2});
  p.Remove(BlockId{2});  // idempotent
  EXPECT_EQ(p.size(), 3u);
  EXPECT_EQ(p.PickVictims("hbm", "", 0).size(), 0u);
}

TEST(LruEviction, PriorityHookOrdersFirstAndLruBreaksTies) {
  LruEvictionPolicy p;
  for (uint64_t i = 1; i <= 4; ++i) p.Insert(C(i, "hbm", "a"));
  // Deadline-like priority: blocks 2 and 4 are needed soonest (high value, kept).
  p.SetPriorityFn([](const EvictionCandidate& c) { return c.id.value % 2 == 0 ? 5.0 : 1.0; });
  EXPECT_EQ(p.PickVictims("hbm", "", 40),
            (std::vector<BlockId>{BlockId{1}, BlockId{3}, BlockId{2}, BlockId{4}}));
}

}  // namespace
}  // namespace switchyard::kv_tiers
