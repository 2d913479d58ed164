// DirectPutMover: a BlockManager moves a block between two workers' stores (two
// KvStoreTiers to KvStoreServers in this process, TCP loopback) by ordering the source's
// worker to put it straight into the destination; here the order is carried out in
// process by that worker's DirectPutter (serve carries it over the control connection,
// tests/workers). The BlockManager commits the destination only on a report that the
// destination committed it with the source's checksum; serve's own transport moves none of
// the bytes; a failed, unknown or inconsistent report fails the move with the source kept;
// an unreachable destination is relayed, and so are later moves between the pair.
#include "kv_tiers/remote/direct_put_mover.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "kv_store/direct_put.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/prefix_hash.h"
#include "tests/kv_store/stores.h"
#include "tests/kv_tiers/test_util.h"

namespace switchyard::kv_tiers::remote {
namespace {

using kv_tiers::testing::kBlock;

using kv_store::testing::Store;

// Orders go to the DirectPutter of the worker holding the source store, or, when set,
// `answer` makes up the report instead (a failed, unknown or unreachable outcome).
class InProcessOrderer final : public PutOrderer {
 public:
  void Add(const KvStoreTier* tier, kv_store::DirectPutter* putter) { putters_[tier] = putter; }
  bool Reaches(const KvStoreTier& src, const KvStoreTier& dst) const override {
    return putters_.count(&src) && putters_.count(&dst) && &src != &dst;
  }
  Status Order(const KvStoreTier& src, const KvStoreTier&, kv_store::DirectPutOrder order,
               Done done) override {
    ++orders;
    last = order;
    if (answer) {
      kv_store::DirectPutOutcome o = answer(order);
      o.order_id = order.order_id;
      done(std::move(o));
      return Status::OK();
    }
    putters_.at(&src)->Submit(std::move(order), std::move(done));
    return Status::OK();
  }
  bool Abandon(uint64_t, const Status&) override { return false; }

  std::function<kv_store::DirectPutOutcome(const kv_store::DirectPutOrder&)> answer;
  int orders = 0;
  kv_store::DirectPutOrder last;

 private:
  std::map<const KvStoreTier*, kv_store::DirectPutter*> putters_;
};

class DirectPutMoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = std::make_unique<Store>();
    b_ = std::make_unique<Store>();
    TierOptions o;
    o.capacity_bytes = 4 * kBlock;
    o.slot_bytes = kBlock;
    KvStoreTierOptions ra, rb;
    ra.context = "hbm-w0";
    rb.context = "hbm-w1";
    ta_ = KvStoreTier::Connect(a_->address(), o, kv_store::testing::TcpClient(), ra).value();
    tb_ = KvStoreTier::Connect(b_->address(), o, kv_store::testing::TcpClient(), rb).value();
    putter_a_ = std::make_unique<kv_store::DirectPutter>(a_->worker.get());
    putter_b_ = std::make_unique<kv_store::DirectPutter>(b_->worker.get());
    orderer_ = std::make_shared<InProcessOrderer>();
    orderer_->Add(ta_.get(), putter_a_.get());
    orderer_->Add(tb_.get(), putter_b_.get());
    host_ = kv_tiers::testing::MakeTier("host", kv_tiers::testing::Opts(8));
    MoverEnv env;
    env.loop = &loop_;
    MoverSet movers = kv_tiers::testing::HostAndPeerMovers(env);
    DirectPutMover::Options mo;
    mo.watchdog = false;  // a virtual loop: its time would jump to the timer
    direct_ =
        std::make_shared<DirectPutMover>(env, orderer_, mo, std::make_shared<RelayMover>(env));
    movers.Add(direct_, 3);
    BlockManagerOptions bo;
    bo.reclaim_on_high_watermark = false;
    mgr_ = std::make_unique<BlockManager>(kv_tiers::testing::SmallLayout(), &loop_,
                                          std::move(movers), nullptr, bo);
    ASSERT_TRUE(mgr_->AddTier(host_.get()).ok());
    ASSERT_TRUE(mgr_->AddTier(ta_.get()).ok());
    ASSERT_TRUE(mgr_->AddTier(tb_.get()).ok());
  }
  void TearDown() override {
    mgr_.reset();
    putter_a_.reset();
    putter_b_.reset();
  }
  // A committed block of `data` in A's store, moved there from the host tier as serve's
  // fill is (the peer mover: one put by serve).
  BlockId InA(const std::vector<char>& data) {
    BlockSpec spec{"t", "wf", "ctx", 0, 0, 16, 0};
    BlockId id = mgr_->Allocate(spec, "host").value();
    EXPECT_TRUE(mgr_->BeginWrite(id).ok());
    EXPECT_TRUE(mgr_->WriteBytes(id, data.data(), data.size()).ok());
    EXPECT_TRUE(mgr_->FinishWrite(id).ok());
    EXPECT_TRUE(mgr_->Commit(id).ok());
    TransferRecord r = Await(mgr_->Move(id, ta_->name(), MoveOptions{}, true).value());
    EXPECT_EQ(r.state, v1::COMMITTED) << r.status;
    return r.destination;
  }
  TransferRecord Await(TransferId tid) {
    EXPECT_TRUE(kv_tiers::testing::DrainUntil(
        loop_, [&] { return kv_tiers::testing::TransferEnded(*mgr_, tid); }));
    return mgr_->Transfer(tid).value();
  }
  std::vector<char> ReadBack(BlockId id) {
    return kv_tiers::testing::ReadBytes(*mgr_, id, {"t", "wf", "ctx", mgr_->model_epoch(), 1},
                                        kBlock);
  }

  VirtualEventLoop loop_;
  std::unique_ptr<Store> a_, b_;
  std::unique_ptr<KvStoreTier> ta_, tb_;
  std::unique_ptr<kv_store::DirectPutter> putter_a_, putter_b_;
  std::shared_ptr<InProcessOrderer> orderer_;
  std::unique_ptr<Tier> host_;
  std::shared_ptr<DirectPutMover> direct_;
  std::unique_ptr<BlockManager> mgr_;
};

TEST_F(DirectPutMoverTest, MovesBetweenTwoStoresWithNoByteThroughThisProcess) {
  auto data = kv_tiers::testing::Pattern(kBlock, 3);
  BlockId in_a = InA(data);
  ASSERT_EQ(ta_->puts_posted(), 1u);  // the fill
  TransferRecord r = Await(mgr_->Move(in_a, tb_->name(), MoveOptions{}, /*demote=*/true).value());
  ASSERT_EQ(r.state, v1::COMMITTED) << r.status;
  EXPECT_EQ(orderer_->orders, 1);
  EXPECT_TRUE(r.transport_completed_at && r.validated_at && r.committed_at);
  // Serve's own transport moved none of it: no get from A, no put into B (the relay
  // would have done one of each).
  EXPECT_EQ(ta_->gets_posted(), 0u);
  EXPECT_EQ(tb_->puts_posted(), 0u);
  EXPECT_EQ(b_->worker->stats().puts_committed, 1u);  // the direct put, committed at B
  EXPECT_EQ(putter_a_->stats().puts_committed, 1u);
  // The order named the block as the BlockManager knows it.
  ASSERT_EQ(orderer_->last.blocks.size(), 1u);
  EXPECT_EQ(orderer_->last.blocks[0].meta.context_id(), "ctx");
  EXPECT_EQ(orderer_->last.blocks[0].checksum, BlockChecksum(data.data(), data.size()));
  EXPECT_EQ(orderer_->last.destination.context_id, "hbm-w1");
  // Demoted: A's copy is gone after the commit; B's reads back intact (a validated get).
  EXPECT_EQ(ta_->used_bytes(), 0u);
  EXPECT_EQ(tb_->used_bytes(), kBlock);
  EXPECT_EQ(ReadBack(r.destination), data);
  EXPECT_EQ(tb_->gets_posted(), 1u);
  EXPECT_EQ(direct_->stats().committed, 1u);
  // And back: B's worker puts it into A.
  TransferRecord back = Await(mgr_->Move(r.destination, ta_->name(), MoveOptions{}, true).value());
  ASSERT_EQ(back.state, v1::COMMITTED) << back.status;
  EXPECT_EQ(putter_b_->stats().puts_committed, 1u);
  EXPECT_EQ(ReadBack(back.destination), data);
  EXPECT_EQ(ta_->puts_posted(), 1u);
}

// A report the BlockManager must not commit on: a failure whose outcome at the
// destination is unknown (the source's worker lost mid-put), and a success whose checksum
// is not the source's. The move fails, the source stays committed and readable where it
// was, and the destination is dropped.
TEST_F(DirectPutMoverTest, AFailedUnknownOrInconsistentReportNeverCommits) {
  auto data = kv_tiers::testing::Pattern(kBlock, 5);
  BlockId in_a = InA(data);
  auto lost = [](const kv_store::DirectPutOrder&) {
    kv_store::DirectPutOutcome o;
    o.status = Status::Unavailable("worker w0 (source) lost mid-move", ErrorScope::kRemote);
    o.events.posted = true;
    return o;
  };
  auto wrong_checksum = [](const kv_store::DirectPutOrder& order) {
    kv_store::DirectPutOutcome o;
    o.events.posted = o.events.transport_complete = true;
    o.events.receiver_transport_complete = o.events.validated = o.events.committed = true;
    for (const kv_store::DirectBlock& b : order.blocks) {
      o.blocks.push_back({b.block_id, b.bytes, b.checksum.value_or(0) ^ 1});
      o.bytes += b.bytes;
    }
    return o;
  };
  for (const auto& answer :
       {std::function<kv_store::DirectPutOutcome(const kv_store::DirectPutOrder&)>(lost),
        std::function<kv_store::DirectPutOutcome(const kv_store::DirectPutOrder&)>(
            wrong_checksum)}) {
    orderer_->answer = answer;
    TransferRecord r = Await(mgr_->Move(in_a, tb_->name(), MoveOptions{}, true).value());
    EXPECT_NE(r.state, v1::COMMITTED);
    EXPECT_FALSE(r.committed_at);
    EXPECT_FALSE(r.status.ok());
    EXPECT_EQ(mgr_->State(in_a).value(), v1::BLOCK_COMMITTED);
    EXPECT_EQ(ReadBack(in_a), data);
    EXPECT_EQ(tb_->used_bytes(), 0u) << "the failed destination was not dropped";
  }
  EXPECT_EQ(direct_->stats().failed, 2u);
  EXPECT_EQ(b_->worker->stats().puts_committed, 0u);
}

// The source's worker cannot reach the destination store: nothing was sent, so the move
// is relayed through this process instead, and later moves between the pair go straight
// to the relay.
TEST_F(DirectPutMoverTest, AnUnreachableDestinationIsRelayed) {
  auto data = kv_tiers::testing::Pattern(kBlock, 7);
  BlockId in_a = InA(data);
  orderer_->answer = [](const kv_store::DirectPutOrder&) {
    kv_store::DirectPutOutcome o;
    o.status = Status::Unavailable("direct put: cannot reach the destination store");
    o.unreachable = true;
    return o;
  };
  TransferRecord r = Await(mgr_->Move(in_a, tb_->name(), MoveOptions{}, false).value());
  ASSERT_EQ(r.state, v1::COMMITTED) << r.status;
  EXPECT_EQ(ta_->gets_posted(), 1u);  // staged through this process
  EXPECT_EQ(tb_->puts_posted(), 1u);
  EXPECT_EQ(ReadBack(r.destination), data);
  EXPECT_EQ(direct_->stats().fell_back, 1u);
  EXPECT_FALSE(direct_->Supports(*ta_, *tb_));
  EXPECT_TRUE(direct_->Supports(*tb_, *ta_)) << "only the pair that failed";
  orderer_->answer = nullptr;
  TransferRecord again = Await(mgr_->Move(in_a, tb_->name(), MoveOptions{}, false).value());
  ASSERT_EQ(again.state, v1::COMMITTED) << again.status;
  EXPECT_EQ(orderer_->orders, 1) << "the pair was ordered again";
  EXPECT_EQ(ta_->gets_posted(), 2u);
  EXPECT_EQ(tb_->puts_posted(), 2u);
}

}  // namespace
}  // namespace switchyard::kv_tiers::remote
