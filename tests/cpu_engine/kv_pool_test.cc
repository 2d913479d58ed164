// KvPool (cpu_engine/kv_pool.h): a kept block is free in the accounting and keeps its
// bytes; allocation reuses kept blocks only when no other slot is left, the least important
// first and among equals the least recently kept; one kept copy per hash.
#include "cpu_engine/kv_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace switchyard::cpu_engine {
namespace {

constexpr uint64_t kSlot = 64;

std::unique_ptr<KvPool> Pool(uint64_t slots) {
  kv_tiers::TierOptions o;
  o.slot_bytes = kSlot;
  o.capacity_bytes = kSlot * slots;
  kv_tiers::ArenaBackend b = kv_tiers::HostBackend();
  b.name = "test pool";
  auto p = KvPool::Create(o, b);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(*p) : nullptr;
}

kv_tiers::Extent Take(KvPool& p, const std::string& tenant = "t") {
  auto e = p.Allocate(tenant, kSlot);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? *e : kv_tiers::Extent{};
}

TEST(KvPoolTest, AKeptBlockIsFreeInTheAccountingAndKeepsItsBytes) {
  auto p = Pool(4);
  kv_tiers::Extent a = Take(*p), b = Take(*p);
  std::memset(p->Data(a), 7, kSlot);
  EXPECT_EQ(p->used_bytes(), 2 * kSlot);
  ASSERT_TRUE(p->Keep(a, 11, 0).ok());
  EXPECT_EQ(p->used_bytes(), kSlot) << "kept: free";
  EXPECT_EQ(p->tenant_used_bytes("t"), kSlot);
  EXPECT_EQ(p->kept_blocks(), 1u);
  const void* kept = p->FindKept(11);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(static_cast<const char*>(kept)[kSlot - 1], 7);
  EXPECT_EQ(p->FindKept(12), nullptr);
  std::optional<kv_tiers::Extent> back = p->TakeKept(11, "u");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->slot, a.slot) << "adopted as it is";
  EXPECT_EQ(p->used_bytes(), 2 * kSlot);
  EXPECT_EQ(p->tenant_used_bytes("u"), kSlot);
  EXPECT_EQ(p->kept_blocks(), 0u);
  EXPECT_FALSE(p->TakeKept(11, "u").has_value());
  ASSERT_TRUE(p->Free(*back).ok());
  ASSERT_TRUE(p->Free(b).ok());
  EXPECT_EQ(p->used_bytes(), 0u);
  EXPECT_EQ(p->Free(b).code(), StatusCode::kNotFound);
  EXPECT_EQ(p->Keep(b, 3, 0).code(), StatusCode::kNotFound);
}

TEST(KvPoolTest, AllocationReusesKeptBlocksLastLeastImportantFirstThenLeastRecentlyKept) {
  auto p = Pool(5);
  std::vector<kv_tiers::Extent> e;
  for (int i = 0; i < 5; ++i) e.push_back(Take(*p));
  ASSERT_TRUE(p->Free(e[4]).ok());  // a plain free slot: used before any kept block
  ASSERT_TRUE(p->Keep(e[0], 1, /*priority=*/0).ok());
  ASSERT_TRUE(p->Keep(e[1], 2, /*priority=*/5).ok());
  ASSERT_TRUE(p->Keep(e[2], 3, /*priority=*/0).ok());
  ASSERT_TRUE(p->Keep(e[3], 4, /*priority=*/5).ok());
  EXPECT_EQ(p->used_bytes(), 0u);
  Take(*p);
  EXPECT_EQ(p->kept_blocks(), 4u) << "the free slot first";
  const std::vector<uint64_t> order = {2, 4, 1, 3};  // priority 5 before 0, then LRU
  for (size_t i = 0; i < order.size(); ++i) {
    Take(*p);
    EXPECT_EQ(p->FindKept(order[i]), nullptr) << "reuse " << i << " takes hash " << order[i];
    for (size_t j = i + 1; j < order.size(); ++j) EXPECT_NE(p->FindKept(order[j]), nullptr);
  }
  EXPECT_EQ(p->kept_reused(), 4u);
  EXPECT_EQ(p->Allocate("t", kSlot).status().code(), StatusCode::kResourceExhausted);
}

TEST(KvPoolTest, OneKeptCopyPerHashAndDropKeptFreesThemAll) {
  auto p = Pool(3);
  kv_tiers::Extent a = Take(*p), b = Take(*p), c = Take(*p);
  ASSERT_TRUE(p->Keep(a, 9, 0).ok());
  ASSERT_TRUE(p->Keep(b, 9, 0).ok());  // the same content again: the older slot is freed
  EXPECT_EQ(p->kept_blocks(), 1u);
  EXPECT_EQ(p->FindKept(9), p->Data(b));
  Take(*p);
  EXPECT_EQ(p->kept_reused(), 0u) << "the freed older copy's slot, not the kept block";
  ASSERT_TRUE(p->Keep(c, 10, 0).ok());
  p->DropKept();
  EXPECT_EQ(p->kept_blocks(), 0u);
  EXPECT_EQ(p->FindKept(9), nullptr);
  Take(*p);
  Take(*p);
  EXPECT_EQ(p->kept_reused(), 0u) << "dropped blocks are plain free slots";
}

}  // namespace
}  // namespace switchyard::cpu_engine
