#include "kv_tiers/block_manager.h"

#include <gtest/gtest.h>

#include <random>

#include "kv_tiers/internal/block_records.h"
#include "manager_fixture.h"

namespace switchyard::kv_tiers {
namespace {

using testing::ManagerTest;
using testing::Pattern;

TEST_F(ManagerTest, LifecycleWalksEveryStateToFree) {
  auto id = mgr_->Allocate(Spec("c", 0), "emulated-hbm").value();
  EXPECT_EQ(StateOf(id), v1::BLOCK_ALLOCATED);
  EXPECT_EQ(hbm_->used_bytes(), 4096u);
  ASSERT_TRUE(mgr_->BeginWrite(id).ok());
  EXPECT_EQ(StateOf(id), v1::BLOCK_WRITING);
  auto bytes = mgr_->WritableBytes(id);
  ASSERT_TRUE(bytes.ok());
  auto data = Pattern(4096, 3);
  std::memcpy(bytes->data(), data.data(), 4096);
  ASSERT_TRUE(mgr_->FinishWrite(id).ok());
  EXPECT_EQ(StateOf(id), v1::BLOCK_VALIDATED);
  EXPECT_NE(mgr_->Meta(id)->checksum(), 0u);
  ASSERT_TRUE(mgr_->Commit(id).ok());
  EXPECT_EQ(StateOf(id), v1::BLOCK_COMMITTED);
  EXPECT_EQ(ReadAll(id, Reader("c")), data);
  ASSERT_TRUE(mgr_->Evict(id).ok());
  EXPECT_EQ(StateOf(id), v1::BLOCK_FREE);
  EXPECT_EQ(hbm_->used_bytes(), 0u);
  EXPECT_TRUE(mgr_->State(BlockId{999}).status().IsNotFound());
}

TEST(BlockStateMachine, OnlyTheDesignedEdgesExist) {
  using S = v1::BlockState;
  std::set<std::pair<S, S>> allowed = {
      {v1::BLOCK_FREE, v1::BLOCK_ALLOCATED},         {v1::BLOCK_ALLOCATED, v1::BLOCK_WRITING},
      {v1::BLOCK_ALLOCATED, v1::BLOCK_TRANSFERRING}, {v1::BLOCK_ALLOCATED, v1::BLOCK_EVICTING},
      {v1::BLOCK_WRITING, v1::BLOCK_VALIDATED},      {v1::BLOCK_WRITING, v1::BLOCK_ALLOCATED},
      {v1::BLOCK_WRITING, v1::BLOCK_EVICTING},       {v1::BLOCK_TRANSFERRING, v1::BLOCK_VALIDATED},
      {v1::BLOCK_TRANSFERRING, v1::BLOCK_EVICTING},  {v1::BLOCK_VALIDATED, v1::BLOCK_COMMITTED},
      {v1::BLOCK_VALIDATED, v1::BLOCK_EVICTING},     {v1::BLOCK_COMMITTED, v1::BLOCK_DEMOTING},
      {v1::BLOCK_COMMITTED, v1::BLOCK_EVICTING},     {v1::BLOCK_COMMITTED, v1::BLOCK_WRITING},
      {v1::BLOCK_DEMOTING, v1::BLOCK_COMMITTED},     {v1::BLOCK_DEMOTING, v1::BLOCK_EVICTING},
      {v1::BLOCK_EVICTING, v1::BLOCK_FREE},
  };
  for (int a = v1::BLOCK_FREE; a <= v1::BLOCK_EVICTING; ++a) {
    for (int b = v1::BLOCK_FREE; b <= v1::BLOCK_EVICTING; ++b) {
      EXPECT_EQ(AllowedTransition(S(a), S(b)), allowed.count({S(a), S(b)}) == 1)
          << v1::BlockState_Name(a) << " -> " << v1::BlockState_Name(b);
    }
  }
}

TEST_F(ManagerTest, OutOfOrderCallsAreRefused) {
  auto id = mgr_->Allocate(Spec("c", 0), "emulated-hbm").value();
  EXPECT_TRUE(mgr_->Commit(id).IsFailedPrecondition());       // ALLOCATED -> COMMITTED
  EXPECT_TRUE(mgr_->FinishWrite(id).IsFailedPrecondition());  // not WRITING
  EXPECT_TRUE(mgr_->WritableBytes(id).status().IsFailedPrecondition());
  EXPECT_TRUE(mgr_->Read(id, Reader("c")).status().IsFailedPrecondition());
  ASSERT_TRUE(mgr_->BeginWrite(id).ok());
  EXPECT_TRUE(mgr_->BeginWrite(id).IsFailedPrecondition());
  EXPECT_TRUE(mgr_->Read(id, Reader("c")).status().IsFailedPrecondition());  // WRITING
  EXPECT_TRUE(mgr_->WriteBytes(id, "x", 1).IsInvalidArgument());
  ASSERT_TRUE(mgr_->FinishWrite(id).ok());
  EXPECT_TRUE(mgr_->Read(id, Reader("c")).status().IsFailedPrecondition());  // VALIDATED
  ASSERT_TRUE(mgr_->Commit(id).ok());
  EXPECT_TRUE(mgr_->Commit(id).IsFailedPrecondition());
  EXPECT_TRUE(mgr_->BeginWrite(id).IsFailedPrecondition());  // rewrites go through Rewrite
  EXPECT_TRUE(mgr_->Allocate(Spec("c", 0), "nope").status().IsNotFound());
  EXPECT_TRUE(mgr_->Allocate(BlockSpec{}, "host").status().IsInvalidArgument());
}

TEST_F(ManagerTest, ReaderMustMatchOwnerEpochAndGeneration) {
  BlockId id = Committed(Spec("c", 0));
  EXPECT_TRUE(mgr_->Read(id, Reader("c")).ok());
  ReadRequest r = Reader("c");
  r.workflow_id = "someone-else";
  EXPECT_EQ(mgr_->Read(id, r).status().code(), StatusCode::kPermissionDenied);
  r = Reader("c");
  r.context_id = "other-ctx";
  EXPECT_EQ(mgr_->Read(id, r).status().code(), StatusCode::kPermissionDenied);
  r = Reader("c");
  r.model_epoch = 7;
  EXPECT_TRUE(mgr_->Read(id, r).status().IsFailedPrecondition());
  r = Reader("c", /*gen=*/2);
  auto st = mgr_->Read(id, r).status();
  EXPECT_TRUE(st.IsFailedPrecondition());
  EXPECT_NE(st.message().find("generation"), std::string::npos);
}

TEST_F(ManagerTest, CorruptedBytesNeverCommit) {
  auto id = mgr_->Allocate(Spec("c", 0), "host").value();
  auto data = Pattern(4096, 5);
  uint64_t good = BlockChecksum(data.data(), data.size());
  data[17] ^= 1;  // corrupted in flight to the block
  ASSERT_TRUE(mgr_->BeginWrite(id).ok());
  ASSERT_TRUE(mgr_->WriteBytes(id, data.data(), data.size()).ok());
  Status st = mgr_->FinishWrite(id, good);
  EXPECT_TRUE(st.IsDataLoss()) << st;
  EXPECT_EQ(StateOf(id), v1::BLOCK_ALLOCATED);
  EXPECT_TRUE(mgr_->Commit(id).IsFailedPrecondition());
  EXPECT_FALSE(mgr_->Read(id, Reader("c")).ok());
  // A correct rewrite of the bytes then commits.
  data[17] ^= 1;
  ASSERT_TRUE(mgr_->BeginWrite(id).ok());
  ASSERT_TRUE(mgr_->WriteBytes(id, data.data(), data.size()).ok());
  ASSERT_TRUE(mgr_->FinishWrite(id, good).ok());
  ASSERT_TRUE(mgr_->Commit(id).ok());
  EXPECT_EQ(ReadAll(id, Reader("c")), data);
}

// The checksum the tier computed while WriteBytes copied is dropped once the caller takes
// the writable bytes: FinishWrite then hashes what is stored, so a change made through the
// span is what gets validated.
TEST_F(ManagerTest, FinishWriteHashesWhatIsStoredAfterWritableBytes) {
  auto id = mgr_->Allocate(Spec("c", 0), "host").value();
  auto data = Pattern(4096, 7);
  ASSERT_TRUE(mgr_->BeginWrite(id).ok());
  ASSERT_TRUE(mgr_->WriteBytes(id, data.data(), data.size()).ok());
  auto span = mgr_->WritableBytes(id);
  ASSERT_TRUE(span.ok()) << span.status();
  (*span)[9] = std::byte{0x5a};
  data[9] = 0x5a;
  ASSERT_TRUE(mgr_->FinishWrite(id, BlockChecksum(data.data(), data.size())).ok());
  ASSERT_TRUE(mgr_->Commit(id).ok());
  EXPECT_EQ(ReadAll(id, Reader("c")), data);
}

// A write made elsewhere (a worker writing its own store) is accepted only on a tier that
// verifies writes; ExtentOf tells that party where the block lives.
TEST_F(ManagerTest, AcceptWriteNeedsATierThatVerifiesWritesAndExtentOfNamesTheSlot) {
  auto id = mgr_->Allocate(Spec("c", 0), "host").value();
  auto extent = mgr_->ExtentOf(id);
  ASSERT_TRUE(extent.ok()) << extent.status();
  EXPECT_EQ(extent->bytes, 4096u);
  EXPECT_TRUE(mgr_->AcceptWrite(id, 1).IsFailedPrecondition()) << "ALLOCATED, not WRITING";
  ASSERT_TRUE(mgr_->BeginWrite(id).ok());
  Status st = mgr_->AcceptWrite(id, 1);
  EXPECT_TRUE(st.IsFailedPrecondition()) << st;  // the host arena does not verify writes
  EXPECT_NE(st.message().find("does not verify writes"), std::string::npos) << st;
  EXPECT_TRUE(mgr_->ExtentOf(BlockId{987654}).status().IsNotFound());
}

// WriteBytesMany copies and checksums blocks on a pool's threads and the caller's: each
// block then validates against its own bytes' checksum and reads back as written; a block
// not WRITING refuses the whole call before any copy; mismatched lists are refused.
TEST_F(ManagerTest, WriteBytesManySpreadsCopiesAndEachBlockValidatesItsOwnBytes) {
  WorkerPool pool(2);
  std::vector<BlockId> ids;
  std::vector<std::vector<char>> data;
  std::vector<const void*> srcs;
  for (uint32_t i = 0; i < 7; ++i) {
    ids.push_back(mgr_->Allocate(Spec("m", i), "host").value());
    ASSERT_TRUE(mgr_->BeginWrite(ids.back()).ok());
    data.push_back(Pattern(4096, 20 + i));
  }
  for (const auto& d : data) srcs.push_back(d.data());
  ASSERT_TRUE(mgr_->WriteBytesMany(ids, srcs, &pool).ok());
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(mgr_->FinishWrite(ids[i], BlockChecksum(data[i].data(), 4096)).ok()) << i;
    ASSERT_TRUE(mgr_->Commit(ids[i]).ok());
    EXPECT_EQ(ReadAll(ids[i], Reader("m")), data[i]) << i;
  }
  // Committed now, not WRITING: refused, and the blocks keep their bytes.
  auto other = Pattern(4096, 99);
  std::vector<const void*> others(ids.size(), other.data());
  EXPECT_TRUE(mgr_->WriteBytesMany(ids, others, &pool).IsFailedPrecondition());
  EXPECT_EQ(ReadAll(ids[3], Reader("m")), data[3]);
  EXPECT_TRUE(mgr_->WriteBytesMany(ids, std::span<const void* const>(srcs).first(2), nullptr)
                  .IsInvalidArgument());
  // Without a pool, on the caller's thread alone.
  BlockId one = mgr_->Allocate(Spec("n", 0), "host").value();
  ASSERT_TRUE(mgr_->BeginWrite(one).ok());
  const void* src = data[0].data();
  ASSERT_TRUE(mgr_->WriteBytesMany(std::span<const BlockId>(&one, 1),
                                   std::span<const void* const>(&src, 1), nullptr)
                  .ok());
  ASSERT_TRUE(mgr_->FinishWrite(one, BlockChecksum(data[0].data(), 4096)).ok());
}

TEST_F(ManagerTest, EpochBumpInvalidatesEveryOldBlock) {
  BlockId a = Committed(Spec("a", 0));
  BlockId b = Committed(Spec("b", 0), "host");
  auto lease = mgr_->Read(b, Reader("b"));
  ASSERT_TRUE(lease.ok());
  auto writing = mgr_->Allocate(Spec("w", 0), "host").value();
  ASSERT_TRUE(mgr_->BeginWrite(writing).ok());
  uint64_t old_epoch = mgr_->model_epoch();
  EXPECT_EQ(mgr_->BumpModelEpoch(), old_epoch + 1);
  EXPECT_EQ(StateOf(a), v1::BLOCK_FREE);
  EXPECT_EQ(StateOf(writing), v1::BLOCK_FREE);
  // The pinned block is no longer served to anyone, and goes when its reader finishes.
  EXPECT_EQ(StateOf(b), v1::BLOCK_EVICTING);
  ReadRequest old = Reader("b");
  old.model_epoch = old_epoch;
  EXPECT_FALSE(mgr_->Read(b, old).ok());
  EXPECT_FALSE(mgr_->Read(b, Reader("b")).ok());
  lease->Release();
  EXPECT_EQ(StateOf(b), v1::BLOCK_FREE);
  EXPECT_EQ(host_->used_bytes(), 0u);
  EXPECT_EQ(hbm_->used_bytes(), 0u);
}

TEST_F(ManagerTest, RewriteBumpsGenerationAndOldGenerationIsNeverServed) {
  BlockId id = Committed(Spec("c", 0), "emulated-hbm", 1);
  {
    auto lease = mgr_->Read(id, Reader("c"));
    ASSERT_TRUE(lease.ok());
    EXPECT_TRUE(mgr_->Rewrite(id).status().IsFailedPrecondition());  // a reader holds it
  }
  auto gen = mgr_->Rewrite(id);
  ASSERT_TRUE(gen.ok()) << gen.status();
  EXPECT_EQ(*gen, 2u);
  EXPECT_EQ(StateOf(id), v1::BLOCK_WRITING);
  EXPECT_FALSE(mgr_->Read(id, Reader("c", 1)).ok());
  auto data = Pattern(4096, 2);
  ASSERT_TRUE(mgr_->WriteBytes(id, data.data(), data.size()).ok());
  ASSERT_TRUE(mgr_->FinishWrite(id).ok());
  ASSERT_TRUE(mgr_->Commit(id).ok());
  EXPECT_FALSE(mgr_->Read(id, Reader("c", 1)).ok());  // intact bytes, stale generation
  EXPECT_EQ(ReadAll(id, Reader("c", 2)), data);
}

TEST_F(ManagerTest, PrefixBlocksAreSharedWithinATenantAndFreedWithTheLastUser) {
  BlockId p = Committed(Spec("", 0, "acme", 0xabc));
  EXPECT_EQ(mgr_->Allocate(Spec("", 0, "acme", 0xabc), "host").status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(mgr_->FindPrefix("acme", 0xabc).value(), p);
  EXPECT_EQ(mgr_->FindPrefix("acme", 0xabc).value(), p);  // three users now
  EXPECT_TRUE(mgr_->FindPrefix("other-tenant", 0xabc).status().IsNotFound());
  ReadRequest r{"acme", "any-wf", "any-ctx", mgr_->model_epoch(), 1};
  EXPECT_TRUE(mgr_->Read(p, r).ok());
  r.tenant = "other-tenant";
  EXPECT_EQ(mgr_->Read(p, r).status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(mgr_->Evict(p).IsFailedPrecondition());  // shared: only Release frees it
  ASSERT_TRUE(mgr_->Release(p).ok());
  ASSERT_TRUE(mgr_->Release(p).ok());
  EXPECT_EQ(StateOf(p), v1::BLOCK_COMMITTED);
  ASSERT_TRUE(mgr_->Release(p).ok());  // the last user
  EXPECT_EQ(StateOf(p), v1::BLOCK_FREE);
  EXPECT_TRUE(mgr_->FindPrefix("acme", 0xabc).status().IsNotFound());
  EXPECT_EQ(hbm_->used_bytes(), 0u);
}

TEST_F(ManagerTest, QuotaFullEvictsTheTenantsOwnLeastRecentlyUsedBlock) {
  hbm_->SetTenantQuota("t", 2 * 4096);
  BlockId a = Committed(Spec("a", 0));
  BlockId b = Committed(Spec("b", 0));
  ASSERT_TRUE(mgr_->Read(a, Reader("a")).ok());  // a is now more recent than b
  BlockId other = Committed(Spec("o", 0, "u"));
  BlockId c = Committed(Spec("c", 0));
  EXPECT_EQ(StateOf(b), v1::BLOCK_FREE);  // the LRU block of tenant t
  EXPECT_EQ(StateOf(a), v1::BLOCK_COMMITTED);
  EXPECT_EQ(StateOf(other), v1::BLOCK_COMMITTED);
  EXPECT_EQ(StateOf(c), v1::BLOCK_COMMITTED);
  EXPECT_LE(hbm_->tenant_used_bytes("t"), 2u * 4096);
  // With both remaining blocks pinned nothing can be evicted: ResourceExhausted.
  auto la = mgr_->Read(a, Reader("a"));
  auto lc = mgr_->Read(c, Reader("c"));
  auto d = mgr_->Allocate(Spec("d", 0), "emulated-hbm");
  EXPECT_TRUE(d.status().IsResourceExhausted()) << d.status();
}

TEST_F(ManagerTest, PriorityHookOverridesRecency) {
  BlockId soon = Committed(Spec("soon", 0));
  BlockId later = Committed(Spec("later", 0));
  ASSERT_TRUE(mgr_->Read(later, Reader("later")).ok());  // LRU alone would evict `soon`
  // Steps-to-execution: the context that runs later is evicted first.
  mgr_->eviction()->SetPriorityFn(
      [](const EvictionCandidate& c) { return c.context_id == "later" ? 0.0 : 10.0; });
  ASSERT_TRUE(mgr_->Reclaim("emulated-hbm", "", 8 * 4096 - 4096).ok());
  EXPECT_EQ(StateOf(later), v1::BLOCK_FREE);
  EXPECT_EQ(StateOf(soon), v1::BLOCK_COMMITTED);
}

// Property: under a random mix of operations, capacity and quotas are never exceeded
// and nothing but committed blocks is ever read.
TEST_F(ManagerTest, RandomOperationsNeverExceedCapacityOrQuota) {
  hbm_->SetTenantQuota("t0", 3 * 4096);
  std::mt19937 rng(7);
  std::vector<BlockId> live;
  for (int step = 0; step < 400; ++step) {
    std::string tenant = "t" + std::to_string(rng() % 3);
    std::string ctx = "c" + std::to_string(rng() % 20);
    int op = rng() % 4;
    if (op <= 1) {
      auto id = mgr_->Allocate(Spec(ctx, step, tenant), "emulated-hbm");
      if (id.ok()) {
        if (rng() % 2) {
          auto data = Pattern(4096, step);
          ASSERT_TRUE(mgr_->BeginWrite(*id).ok());
          ASSERT_TRUE(mgr_->WriteBytes(*id, data.data(), data.size()).ok());
          ASSERT_TRUE(mgr_->FinishWrite(*id).ok());
          ASSERT_TRUE(mgr_->Commit(*id).ok());
        }
        live.push_back(*id);
      } else {
        ASSERT_TRUE(id.status().IsResourceExhausted()) << id.status();
      }
    } else if (op == 2 && !live.empty()) {
      (void)mgr_->Evict(live[rng() % live.size()]);
    } else if (!live.empty()) {
      BlockId id = live[rng() % live.size()];
      auto meta = mgr_->Meta(id);
      if (meta.ok()) {
        auto lease = mgr_->Read(id, Reader(meta->context_id(), 1, meta->tenant()));
        ASSERT_EQ(lease.ok(), meta->state() == v1::BLOCK_COMMITTED);
      }
    }
    ASSERT_LE(hbm_->used_bytes(), hbm_->capacity_bytes());
    ASSERT_LE(hbm_->tenant_used_bytes("t0"), 3u * 4096);
  }
}

}  // namespace
}  // namespace switchyard::kv_tiers
