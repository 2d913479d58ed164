// KvLedger (scheduler/internal/kv_ledger.h) on its own: the HBM, host and disk accounting
// of contexts, moves and shared-prefix copies, and the invariants its header states (a
// move holds its destination and frees its source only when it commits; resident /
// offloaded sets follow the committed location; a dead context goes once no move is in
// flight; prefix holders follow the HBM a context is in).
#include "scheduler/internal/kv_ledger.h"

#include <gtest/gtest.h>

#include "tests/scheduler/test_util.h"

namespace switchyard::scheduler::internal {
namespace {

constexpr uint64_t kBpt = 100;  // KV bytes per token
constexpr int64_t kBlock = 16;  // tokens per block
constexpr uint64_t kCap = 100'000;

CoreOptions Opts() {
  CoreOptions o;
  o.workers = 2;
  o.hbm_bytes_per_worker = kCap;
  o.kv_block_tokens = kBlock;
  o.host_bytes_per_worker = 10'000;
  return o;
}

class KvLedgerTest : public ::testing::Test {
 protected:
  KvLedgerTest() : cost_(kBpt), kv_(Opts(), &cost_, 2) {}

  // A context of `tokens` tokens committed in worker w's HBM, as a placement leaves it.
  CtxRec& Resident(const std::string& key, int64_t tokens, int w) {
    CtxRec& c = kv_.Create(key);
    c.model = "m";
    kv_.Grow(c, tokens, false);
    kv_.CommitInHbm(c, w);
    return c;
  }

  scheduler::testing::FixedRateCost cost_;
  KvLedger kv_;
};

TEST_F(KvLedgerTest, BlockBytesAreWholeBlocks) {
  EXPECT_EQ(kv_.BlockBytes(0, "m"), 0u);
  EXPECT_EQ(kv_.BlockBytes(1, "m"), kBlock * kBpt);
  EXPECT_EQ(kv_.BlockBytes(kBlock + 1, "m"), 2 * kBlock * kBpt);
  EXPECT_EQ(kv_.Capacity(1), kCap);
}

TEST_F(KvLedgerTest, ResidentContextsAreCountedInTheirWorkersHbm) {
  CtxRec& c = Resident("wf/a", 20, 0);  // 2 blocks
  EXPECT_EQ(c.bytes, 2 * kBlock * kBpt);
  EXPECT_EQ(kv_.Used(0), c.bytes);
  EXPECT_EQ(kv_.Free(0), kCap - c.bytes);
  EXPECT_EQ(kv_.Used(1), 0u);
  EXPECT_EQ(kv_.Resident(0).count(&c), 1u);
  kv_.Reserve(0, 500);
  EXPECT_EQ(kv_.Used(0), c.bytes + 500);
  kv_.Unreserve(0, 500);
  EXPECT_EQ(kv_.Used(0), c.bytes);
  // Growing past a block boundary holds one more block; cutting back releases it.
  EXPECT_EQ(kv_.Grow(c, 20, true), kBlock * kBpt);
  EXPECT_EQ(kv_.Used(0), 3 * kBlock * kBpt);
  kv_.Truncate(c, 20, true);
  EXPECT_EQ(kv_.Used(0), 2 * kBlock * kBpt);
}

TEST_F(KvLedgerTest, AMoveFreesItsSourceOnlyWhenItCommits) {
  CtxRec& c = Resident("wf/a", 32, 0);
  uint64_t bytes = c.bytes;
  Location host{Tier::kHost, 0};
  ASSERT_TRUE(kv_.HasRoom(host, bytes));
  uint64_t id = kv_.BeginMove(c, host, /*grant=*/7);
  EXPECT_EQ(c.transfer, id);
  EXPECT_EQ(kv_.Used(0), bytes);                // the source still holds its blocks
  EXPECT_FALSE(kv_.OffloadRoom(host, 10'000));  // the destination is held
  EXPECT_EQ(kv_.BytesLeavingHbm(0), bytes);
  EXPECT_TRUE(kv_.MovesTouchHbm(0));
  std::optional<XferRec> x = kv_.TakeMove(id);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->grant, 7u);
  EXPECT_FALSE(kv_.TakeMove(id));  // taken once
  EXPECT_EQ(kv_.SettleMove(*x, true), &c);
  EXPECT_EQ(c.loc, host);
  EXPECT_EQ(c.transfer, 0u);
  EXPECT_EQ(kv_.Used(0), 0u);
  EXPECT_TRUE(kv_.Resident(0).empty());
  EXPECT_EQ(kv_.Offloaded(0).count(&c), 1u);
}

TEST_F(KvLedgerTest, AFailedMoveReleasesItsDestinationAndCountsTheFailure) {
  CtxRec& c = Resident("wf/a", 32, 0);
  uint64_t id = kv_.BeginMove(c, {Tier::kPeer, 1}, 1);
  EXPECT_EQ(kv_.Used(1), c.bytes);  // a peer copy is held in the peer's HBM
  EXPECT_EQ(kv_.SettleMove(*kv_.TakeMove(id), false), nullptr);
  EXPECT_EQ(kv_.Used(1), 0u);
  EXPECT_EQ(c.loc, (Location{Tier::kHbm, 0}));
  EXPECT_EQ(c.failed_moves, 1);
}

TEST_F(KvLedgerTest, DiscardDuringAMoveDropsTheCopyWhenTheMoveEnds) {
  CtxRec& c = Resident("wf/a", 32, 0);
  uint64_t id = kv_.BeginMove(c, {Tier::kHost, 0}, 1);
  std::optional<Location> was = kv_.Discard(c);
  ASSERT_TRUE(was);
  EXPECT_EQ(*was, (Location{Tier::kHbm, 0}));
  EXPECT_EQ(kv_.SettleMove(*kv_.TakeMove(id), true), nullptr);
  EXPECT_EQ(c.loc.tier, Tier::kNone);
  EXPECT_EQ(kv_.Used(0), 0u);
  EXPECT_TRUE(kv_.OffloadRoom({Tier::kHost, 0}, 10'000));
  EXPECT_FALSE(kv_.Discard(c));  // nothing left to drop
}

TEST_F(KvLedgerTest, ARetiredContextIsErasedOnceItsMoveEnds) {
  CtxRec& moving = Resident("wf/a", 32, 0);
  Resident("wf/b", 32, 0);
  uint64_t id = kv_.BeginMove(moving, {Tier::kHost, 0}, 1);
  kv_.Discard(moving);
  kv_.Retire(moving);
  EXPECT_TRUE(kv_.Has("wf/a"));  // still moving
  kv_.Discard(*kv_.Find("wf/b"));
  kv_.Retire(*kv_.Find("wf/b"));
  EXPECT_FALSE(kv_.Has("wf/b"));
  EXPECT_EQ(kv_.SettleMove(*kv_.TakeMove(id), true), nullptr);
  EXPECT_FALSE(kv_.Has("wf/a"));
  EXPECT_EQ(kv_.Used(0), 0u);
}

TEST_F(KvLedgerTest, EvictionCandidatesCountBytesAlreadyLeaving) {
  CtxRec& leaving = Resident("wf/a", 32, 0);
  CtxRec& idle = Resident("wf/b", 32, 0);
  CtxRec& read = Resident("wf/c", 32, 0);
  CtxRec& kept = Resident("wf/d", 32, 0);
  kv_.AddUser(read);
  kv_.BeginMove(leaving, {Tier::kHost, 0}, 1);
  KvLedger::EvictionView v = kv_.EvictionCandidates(0, {kept.key});
  EXPECT_EQ(v.leaving, leaving.bytes);
  ASSERT_EQ(v.idle.size(), 1u);
  EXPECT_EQ(v.idle[0], &idle);
}

TEST_F(KvLedgerTest, PrefixCopiesAreChargedOnceAndHeldByResidentContexts) {
  PrefixRec& p = kv_.AddPrefix("~prefix/t/m/sys", 32, 0, {"wf", 0}, "m", 0);
  EXPECT_EQ(kv_.Used(0), p.bytes);
  EXPECT_TRUE(kv_.PrefixBuilding(p.key, 0));
  uint64_t changes = kv_.changes();
  kv_.PrefixBuilt(p);
  EXPECT_FALSE(kv_.PrefixBuilding(p.key, 0));
  EXPECT_GT(kv_.changes(), changes);
  CtxRec& c = kv_.Create("wf/a");
  c.model = "m";
  c.prefix = p.key;
  kv_.CommitInHbm(c, 0);
  EXPECT_EQ(c.prefix_worker, 0);
  EXPECT_EQ(p.holders.count(&c), 1u);
  EXPECT_FALSE(p.idle());
  EXPECT_EQ(kv_.IdlePrefixBytes(0), 0u);
  kv_.Discard(c);  // leaves HBM: no longer a holder
  EXPECT_EQ(c.prefix_worker, -1);
  EXPECT_TRUE(p.idle());
  EXPECT_EQ(kv_.IdlePrefixBytes(0), p.bytes);
  ASSERT_EQ(kv_.IdlePrefixesLru(0).size(), 1u);
  kv_.DropPrefix(p);
  EXPECT_EQ(kv_.Used(0), 0u);
  EXPECT_EQ(kv_.PrefixTokensOn("~prefix/t/m/sys", 0), -1);
}

TEST_F(KvLedgerTest, ALostWorkerEndsItsMovesAndForgetsItsKv) {
  CtxRec& c = Resident("wf/a", 32, 0);
  kv_.AddPrefix("~prefix/t/m/sys", 16, 1, {"", -1}, "m", 0);
  kv_.BeginMove(c, {Tier::kPeer, 1}, 9);
  std::vector<XferRec> ended = kv_.AbortMovesTouching(1);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].grant, 9u);
  EXPECT_EQ(c.transfer, 0u);
  EXPECT_EQ(c.loc, (Location{Tier::kHbm, 0}));  // the source copy stays
  kv_.ForgetPrefixesOn(1);
  EXPECT_EQ(kv_.PrefixTokensOn("~prefix/t/m/sys", 1), -1);
  EXPECT_EQ(kv_.ContextsOn(0), std::vector<std::string>{"wf/a"});
  kv_.ClearWorker(1);
  EXPECT_EQ(kv_.Used(1), 0u);
  kv_.ResetWorker(0);
  EXPECT_EQ(kv_.Used(0), 0u);
  EXPECT_TRUE(kv_.Resident(0).empty());
}

}  // namespace
}  // namespace switchyard::scheduler::internal
