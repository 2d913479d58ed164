#include <gtest/gtest.h>

#include "manager_fixture.h"

namespace switchyard::kv_tiers {
namespace {

using testing::ManagerTest;
using testing::Pattern;

MoveOptions Opt() {
  MoveOptions o;
  o.traffic_class = v1::BACKGROUND;
  return o;
}

TEST_F(ManagerTest, MoveCommitsAndRecordsTheFourEventsSeparately) {
  BlockId src = Committed(Spec("c", 0), "emulated-hbm", 4);
  auto tid = mgr_->Move(src, "host", Opt());
  ASSERT_TRUE(tid.ok()) << tid.status();
  EXPECT_EQ(mgr_->Transfer(*tid)->state, v1::POSTED);
  TransferRecord rec = Await(*tid);
  EXPECT_EQ(rec.state, v1::COMMITTED) << rec.status;
  EXPECT_TRUE(rec.transport_completed_at.has_value());
  EXPECT_TRUE(rec.validated_at.has_value());
  EXPECT_TRUE(rec.committed_at.has_value());
  EXPECT_FALSE(rec.consumed_at.has_value());  // committed is not consumed
  EXPECT_EQ(rec.traffic_class, v1::BACKGROUND);
  ASSERT_TRUE(mgr_->MarkConsumed(*tid).ok());
  EXPECT_TRUE(mgr_->Transfer(*tid)->consumed_at.has_value());
  EXPECT_EQ(StateOf(src), v1::BLOCK_COMMITTED);  // a copy, not a demotion
  EXPECT_EQ(ReadAll(rec.destination, Reader("c")), Pattern(4096, 4));
  EXPECT_EQ(mgr_->Meta(rec.destination)->tier(), v1::TIER_HOST);
}

TEST_F(ManagerTest, SourceIsPinnedWhileItsMoveIsInFlight) {
  FaultSpec slow;
  slow.delay = Millis(50);  // completion arrives 50 ms later in virtual time
  Build(&slow);
  BlockId src = Committed(Spec("c", 0));
  auto tid = mgr_->Move(src, "host", Opt());
  ASSERT_TRUE(tid.ok());
  EXPECT_EQ(StateOf(src), v1::BLOCK_DEMOTING);
  EXPECT_TRUE(mgr_->Read(src, Reader("c")).ok());  // still readable while demoting
  EXPECT_TRUE(mgr_->Evict(src).IsFailedPrecondition());
  EXPECT_TRUE(mgr_->Rewrite(src).status().IsFailedPrecondition());
  EXPECT_TRUE(mgr_->Reclaim("emulated-hbm", "", 8 * 4096).IsResourceExhausted());
  // Releasing the last reference while in flight does not free the source under the
  // mover: it goes when the move ends.
  ASSERT_TRUE(mgr_->Release(src).ok());
  EXPECT_EQ(StateOf(src), v1::BLOCK_EVICTING);
  EXPECT_EQ(hbm_->used_bytes(), 4096u);
  TransferRecord rec = Await(*tid);
  EXPECT_GE(loop_.Now(), Time{0} + Millis(50));
  EXPECT_EQ(StateOf(src), v1::BLOCK_FREE);
  EXPECT_EQ(hbm_->used_bytes(), 0u);
  (void)rec;
}

TEST_F(ManagerTest, FailedPartialMoveIsNeverReadable) {
  FaultSpec fail;
  fail.fail_after = 0;  // every move fails after copying half
  Build(&fail);
  BlockId src = Committed(Spec("c", 0));
  auto tid = mgr_->Move(src, "host", Opt());
  ASSERT_TRUE(tid.ok());
  BlockId dst = mgr_->Transfer(*tid)->destination;
  EXPECT_EQ(StateOf(dst), v1::BLOCK_TRANSFERRING);
  EXPECT_FALSE(mgr_->Read(dst, Reader("c")).ok());
  TransferRecord rec = Await(*tid);
  EXPECT_EQ(rec.state, v1::FAILED);
  EXPECT_FALSE(rec.transport_completed_at.has_value());
  EXPECT_FALSE(rec.committed_at.has_value());
  EXPECT_EQ(StateOf(dst), v1::BLOCK_FREE);
  EXPECT_EQ(StateOf(src), v1::BLOCK_COMMITTED);
  EXPECT_EQ(host_->used_bytes(), 0u);
  EXPECT_TRUE(mgr_->MarkConsumed(*tid).IsFailedPrecondition());
  EXPECT_EQ(faulty_local_->injected_failures(), 1u);
}

TEST_F(ManagerTest, CorruptedMoveIsRejectedAtValidation) {
  FaultSpec corrupt;
  corrupt.corrupt_rate = 1.0;
  Build(&corrupt);
  BlockId src = Committed(Spec("c", 0));
  auto tid = mgr_->Move(src, "host", Opt());
  ASSERT_TRUE(tid.ok());
  TransferRecord rec = Await(*tid);
  EXPECT_EQ(rec.state, v1::REJECTED);
  EXPECT_TRUE(rec.status.IsDataLoss()) << rec.status;
  EXPECT_TRUE(rec.transport_completed_at.has_value());  // sent is not usable
  EXPECT_FALSE(rec.validated_at.has_value());
  EXPECT_EQ(StateOf(rec.destination), v1::BLOCK_FREE);
  EXPECT_EQ(faulty_local_->injected_corruptions(), 1u);
}

TEST_F(ManagerTest, EpochChangeWhileInFlightMakesTheResultUnreadable) {
  FaultSpec slow;
  slow.delay = Millis(10);
  Build(&slow);
  BlockId src = Committed(Spec("c", 0));
  auto tid = mgr_->Move(src, "host", Opt());
  ASSERT_TRUE(tid.ok());
  BlockId dst = mgr_->Transfer(*tid)->destination;
  mgr_->BumpModelEpoch();
  TransferRecord rec = Await(*tid);
  EXPECT_EQ(rec.state, v1::REJECTED);
  EXPECT_FALSE(rec.committed_at.has_value());
  EXPECT_EQ(StateOf(dst), v1::BLOCK_FREE);
  EXPECT_EQ(StateOf(src), v1::BLOCK_FREE);
  EXPECT_FALSE(mgr_->Read(dst, Reader("c")).ok());
  EXPECT_EQ(host_->used_bytes() + hbm_->used_bytes(), 0u);
}

TEST_F(ManagerTest, RewriteDuringAnotherCopysMoveSupersedesIt) {
  FaultSpec slow;
  slow.delay = Millis(10);
  Build(&slow);
  BlockId a = Committed(Spec("c", 0), "host", 1);
  auto first = mgr_->Move(a, "emulated-hbm", Opt());
  BlockId copy = Await(*first).destination;    // gen 1 copy in hbm
  auto tid = mgr_->Move(copy, "host", Opt());  // in flight, reading the hbm copy
  ASSERT_TRUE(tid.ok());
  ASSERT_TRUE(mgr_->Rewrite(a).ok());  // generation 2 of (c, 0)
  TransferRecord rec = Await(*tid);
  EXPECT_NE(rec.state, v1::COMMITTED);
  EXPECT_EQ(StateOf(rec.destination), v1::BLOCK_FREE);
  EXPECT_EQ(StateOf(copy), v1::BLOCK_FREE);  // the old generation's copy is gone
}

TEST_F(ManagerTest, CancelledMoveIsNeverReadable) {
  FaultSpec slow;
  slow.delay = Millis(10);
  Build(&slow);
  BlockId src = Committed(Spec("c", 0));
  auto tid = mgr_->Move(src, "host", Opt());
  ASSERT_TRUE(mgr_->CancelTransfer(*tid).ok());
  TransferRecord rec = Await(*tid);
  EXPECT_EQ(rec.state, v1::CANCELLED);
  EXPECT_EQ(StateOf(rec.destination), v1::BLOCK_FREE);
  EXPECT_TRUE(mgr_->CancelTransfer(*tid).IsNotFound());
}

TEST_F(ManagerTest, DemoteToDiskAndBringBack) {
  BlockId src = Committed(Spec("c", 0), "emulated-hbm", 8);
  auto down = mgr_->Move(src, "disk", Opt(), /*demote=*/true);
  ASSERT_TRUE(down.ok()) << down.status();
  TransferRecord rec = Await(*down);
  ASSERT_EQ(rec.state, v1::COMMITTED) << rec.status;
  EXPECT_EQ(StateOf(src), v1::BLOCK_FREE);
  EXPECT_EQ(hbm_->used_bytes(), 0u);
  BlockId on_disk = rec.destination;
  auto lease = mgr_->Read(on_disk, Reader("c"));
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->data(), nullptr);  // not addressable; CopyTo works
  lease->Release();
  EXPECT_EQ(ReadAll(on_disk, Reader("c")), Pattern(4096, 8));
  auto up = mgr_->Move(on_disk, "emulated-hbm", Opt(), true);
  ASSERT_TRUE(up.ok());
  TransferRecord back = Await(*up);
  ASSERT_EQ(back.state, v1::COMMITTED) << back.status;
  EXPECT_EQ(ReadAll(back.destination, Reader("c")), Pattern(4096, 8));
  EXPECT_EQ(disk_->used_bytes(), 0u);
}

TEST_F(ManagerTest, DiskBlockSurvivesReopenAndIsRevalidated) {
  Committed(Spec("a", 0), "disk", 21);
  Committed(Spec("b", 0), "disk", 22);
  Committed(Spec("", 0, "t", 0x77), "disk", 23);
  auto reopen = [&](uint64_t epoch) {
    mgr_.reset();  // persistent blocks are left in place for the next process
    disk_.reset();
    Build(nullptr, epoch);
    auto ids = mgr_->Recover("disk");
    EXPECT_TRUE(ids.ok()) << ids.status();
    return ids.ok() ? *ids : std::vector<BlockId>{};
  };
  // 1. A clean reopen: every block is re-validated and served again.
  auto ids = reopen(1);
  ASSERT_EQ(ids.size(), 3u);
  for (BlockId id : ids) {
    auto meta = mgr_->Meta(id).value();
    EXPECT_EQ(meta.state(), v1::BLOCK_COMMITTED);
    if (meta.context_id() == "a") {
      EXPECT_EQ(ReadAll(id, Reader("a")), Pattern(4096, 21));
    }
    if (meta.context_id() == "b") {
      EXPECT_EQ(ReadAll(id, Reader("b")), Pattern(4096, 22));
    }
  }
  EXPECT_EQ(mgr_->FindPrefix("t", 0x77).value().valid(), true);
  ASSERT_TRUE(mgr_->Release(mgr_->FindPrefix("t", 0x77).value()).ok());
  // 2. b's bytes rot on disk while the process is down: b is rejected, a still served.
  mgr_.reset();
  disk_.reset();
  {
    TierOptions o = testing::Opts(64);
    o.path = disk_dir_;
    auto raw = DiskTier::Open(o).value();  // a raw look at the store, as a repair tool would
    auto listed = raw->Recover();
    ASSERT_TRUE(listed.ok());
    for (auto& [extent, meta] : *listed) {
      if (meta.context_id() == "b") {
        ASSERT_TRUE(CorruptOneByte(*raw, extent, 99).ok());
      }
    }
  }
  ids = reopen(1);
  ASSERT_EQ(ids.size(), 2u);
  for (BlockId id : ids) EXPECT_NE(mgr_->Meta(id)->context_id(), "b");
  EXPECT_TRUE(mgr_->FindBlocks("b", 0).empty());
  // 3. The model epoch moved on while down: nothing old is served.
  ids = reopen(2);
  EXPECT_TRUE(ids.empty());
  EXPECT_EQ(disk_->used_bytes(), 0u);
}

}  // namespace
}  // namespace switchyard::kv_tiers
