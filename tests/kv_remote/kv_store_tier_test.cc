// KvStoreTier, the kv_tiers PeerTier backed by a KV store: blocks live in another process's
// KV store (`switchyard worker`, over TCP loopback) and move with the commit rule end to end.
// Without the switchyard binary the worker runs in this process on its own thread (and
// the test says so); the protocol and transport are the same.
#include "kv_tiers/remote/kv_store_tier.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <thread>

#include "kv_store/kv_store_server.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/prefix_hash.h"
#include "tests/kv_store/worker_process.h"
#include "tests/kv_tiers/test_util.h"

namespace switchyard::kv_tiers::remote {
namespace {

using kv_tiers::testing::kBlock;

kv_store::KvStoreClientOptions TcpClient() {
  kv_store::KvStoreClientOptions o;
  o.transport_config.params["TLS"] = "tcp";
  o.ack_timeout = std::chrono::seconds(20);
  return o;
}

// A worker with room for `blocks` blocks: a child process when the binary is built, else
// an in-process KvStoreServer.
class Worker {
 public:
  bool Start(uint64_t blocks) {
    if (kv_store::testing::HaveSwitchyardBinary()) {
      return process_.Start("127.0.0.1:0", "tcp", "", std::to_string(blocks * kBlock));
    }
    std::fprintf(stderr, "note: %s not built; the worker runs in this process\n",
                 kv_store::testing::SwitchyardBinary().c_str());
    kv_store::KvStoreServerOptions o;
    o.transport_config.params["TLS"] = "tcp";
    o.capacity_bytes = blocks * kBlock;
    auto w = kv_store::KvStoreServer::Start(o);
    if (!w.ok()) return false;
    in_process_ = std::move(*w);
    thread_ = std::thread([this] { in_process_->Run(); });
    return true;
  }
  std::string address() const { return in_process_ ? in_process_->address() : process_.address(); }
  ~Worker() {
    if (in_process_) in_process_->Stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  kv_store::testing::WorkerProcess process_;
  std::unique_ptr<kv_store::KvStoreServer> in_process_;
  std::thread thread_;
};

class KvStoreTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(worker_.Start(4)) << "worker did not start";
    TierOptions o;
    o.capacity_bytes = 4 * kBlock;
    o.slot_bytes = kBlock;
    auto t = KvStoreTier::Connect(worker_.address(), o, TcpClient());
    ASSERT_TRUE(t.ok()) << t.status();
    tier_ = std::move(*t);
  }
  Status WriteBlock(const Extent& e, const std::vector<char>& data,
                    std::optional<uint64_t> checksum = std::nullopt) {
    BlockWrite w{e, data.data(), data.size(), checksum};
    return tier_->Write(std::span<const BlockWrite>(&w, 1));
  }
  Result<std::vector<char>> ReadBlock(const Extent& e) {
    std::vector<char> out(e.bytes);
    BlockRead r{e, out.data(), out.size()};
    SY_RETURN_IF_ERROR(tier_->Read(std::span<const BlockRead>(&r, 1)));
    return out;
  }
  Worker worker_;
  std::unique_ptr<KvStoreTier> tier_;
};

TEST_F(KvStoreTierTest, IsARemotePeerTierOfHostMemory) {
  EXPECT_EQ(tier_->kind(), v1::TIER_PEER);
  EXPECT_TRUE(tier_->capabilities().remote);
  EXPECT_FALSE(tier_->capabilities().addressable);
  EXPECT_EQ(tier_->remote_kind(), v1::TIER_HOST);
  EXPECT_EQ(tier_->name(), "peer:" + worker_.address());
  TierOptions big;
  big.capacity_bytes = 1ull << 40;
  EXPECT_TRUE(
      KvStoreTier::Connect(worker_.address(), big, TcpClient()).status().IsInvalidArgument());
}

TEST_F(KvStoreTierTest, WriteCommitsAtTheWorkerAndRewriteSupersedesTheOldGeneration) {
  Extent e = tier_->Allocate("tenant-a", kBlock).value();
  EXPECT_TRUE(ReadBlock(e).status().IsDataLoss());  // nothing stored yet
  auto a = kv_tiers::testing::Pattern(kBlock, 1), b = kv_tiers::testing::Pattern(kBlock, 2);
  ASSERT_TRUE(WriteBlock(e, a).ok());
  auto ev = tier_->LastEvents(e.slot).value();
  EXPECT_TRUE(ev.posted && ev.transport_complete && ev.receiver_transport_complete);
  EXPECT_TRUE(ev.validated && ev.committed && !ev.rejected);
  EXPECT_EQ(ReadBlock(e).value(), a);
  ASSERT_TRUE(WriteBlock(e, b).ok());
  EXPECT_EQ(ReadBlock(e).value(), b);
  EXPECT_TRUE(tier_->LastEvents(e.slot)->validated);
}

// A write that carries the block's stored checksum sends it unhashed; the worker checks
// the bytes against it, so a stale or wrong checksum is refused and nothing commits.
TEST_F(KvStoreTierTest, WriteWithTheBlocksChecksumIsVerifiedByTheWorker) {
  EXPECT_TRUE(tier_->capabilities().verifies_writes);
  Extent e = tier_->Allocate("tenant-a", kBlock).value();
  auto a = kv_tiers::testing::Pattern(kBlock, 4);
  uint64_t sum = BlockChecksum(a.data(), a.size());
  Status bad = WriteBlock(e, a, sum ^ 1);
  EXPECT_TRUE(bad.IsDataLoss()) << bad;
  EXPECT_NE(bad.message().find("bad_checksum"), std::string::npos) << bad;
  EXPECT_TRUE(ReadBlock(e).status().IsDataLoss());  // nothing was committed
  ASSERT_TRUE(WriteBlock(e, a, sum).ok());
  EXPECT_EQ(ReadBlock(e).value(), a);
}

// The worker restarts (a new process, an empty store): Reconnect points the tier at it.
// A block committed at the old one reads as DataLoss, never as the new worker's bytes;
// its free drops the accounting only; a rewrite and a new block commit at the new worker.
TEST_F(KvStoreTierTest, AReconnectToANewWorkerNeverServesTheOldOnesBlocks) {
  Extent old_block = tier_->Allocate("tenant-a", kBlock).value();
  Extent kept = tier_->Allocate("tenant-a", kBlock).value();
  auto a = kv_tiers::testing::Pattern(kBlock, 7), b = kv_tiers::testing::Pattern(kBlock, 8);
  ASSERT_TRUE(WriteBlock(old_block, a).ok());
  ASSERT_TRUE(WriteBlock(kept, a).ok());
  Worker second;
  ASSERT_TRUE(second.Start(4));
  kv_store::KvStoreClientOptions small = TcpClient();
  Worker tiny;
  ASSERT_TRUE(tiny.Start(1));
  Status refused = tier_->Reconnect(tiny.address(), small);
  EXPECT_TRUE(refused.IsInvalidArgument()) << refused;
  EXPECT_EQ(tier_->incarnation(), 0u) << "a refused reconnect keeps the current worker";
  ASSERT_TRUE(tier_->Reconnect(second.address(), TcpClient()).ok());
  EXPECT_EQ(tier_->incarnation(), 1u);
  EXPECT_EQ(tier_->endpoint(), second.address());
  EXPECT_EQ(tier_->name(), "peer:" + worker_.address()) << "the name it is known by";
  auto lost = ReadBlock(old_block);
  EXPECT_TRUE(lost.status().IsDataLoss()) << lost.status();
  EXPECT_NE(lost.status().message().find("earlier incarnation"), std::string::npos);
  EXPECT_TRUE(tier_->Free(old_block).ok());
  ASSERT_TRUE(WriteBlock(kept, b).ok());
  EXPECT_EQ(ReadBlock(kept).value(), b);
  Extent fresh = tier_->Allocate("tenant-a", kBlock).value();
  ASSERT_TRUE(WriteBlock(fresh, a).ok());
  EXPECT_EQ(ReadBlock(fresh).value(), a);
}

// A detached tier (a spare slot's store before any worker took it): a fixed name, every
// transfer Unavailable, a free of an unwritten slot fine; a Reconnect attaches a worker.
TEST_F(KvStoreTierTest, ADetachedTierRefusesTransfersUntilAReconnectNamesAWorker) {
  TierOptions o;
  o.capacity_bytes = 4 * kBlock;
  o.slot_bytes = kBlock;
  KvStoreTierOptions ro;
  ro.context = "hbm-w3";
  std::unique_ptr<KvStoreTier> t = KvStoreTier::Detached(o, ro);
  EXPECT_EQ(t->name(), "peer:detached-hbm-w3");
  EXPECT_EQ(t->endpoint(), "");
  EXPECT_EQ(t->client(), nullptr);
  Extent e = t->Allocate("tenant-a", kBlock).value();
  auto a = kv_tiers::testing::Pattern(kBlock, 5);
  BlockWrite w{e, a.data(), a.size(), std::nullopt};
  Status st = t->Write(std::span<const BlockWrite>(&w, 1));
  EXPECT_TRUE(st.IsUnavailable()) << st;
  EXPECT_TRUE(t->DirectDestination(e, kBlock).status().IsUnavailable());
  EXPECT_TRUE(t->Free(e).ok());
  e = t->Allocate("tenant-a", kBlock).value();
  w.extent = e;
  ASSERT_TRUE(t->Reconnect(worker_.address(), TcpClient()).ok());
  EXPECT_EQ(t->endpoint(), worker_.address());
  EXPECT_EQ(t->name(), "peer:detached-hbm-w3") << "the name it is known by";
  ASSERT_TRUE(t->Write(std::span<const BlockWrite>(&w, 1)).ok());
  std::vector<char> out(kBlock);
  BlockRead r{e, out.data(), out.size()};
  ASSERT_TRUE(t->Read(std::span<const BlockRead>(&r, 1)).ok());
  EXPECT_EQ(out, a);
}

TEST_F(KvStoreTierTest, FreeReleasesTheWorkersCapacity) {
  // The worker holds 4 blocks: without the remote free the second round would be refused.
  auto data = kv_tiers::testing::Pattern(kBlock, 3);
  for (int round = 0; round < 2; ++round) {
    std::vector<Extent> extents;
    for (int i = 0; i < 4; ++i) {
      extents.push_back(tier_->Allocate("t", kBlock).value());
      ASSERT_TRUE(WriteBlock(extents.back(), data).ok()) << "round " << round << " block " << i;
    }
    EXPECT_TRUE(tier_->Allocate("t", kBlock).status().IsResourceExhausted());
    for (const auto& e : extents) ASSERT_TRUE(tier_->Free(e).ok());
    EXPECT_EQ(tier_->used_bytes(), 0u);
  }
}

// A BlockManager over an 8-block host arena and the peer tier, with the local and peer
// movers, on a virtual event loop.
struct ManagerWithPeer {
  explicit ManagerWithPeer(Tier* peer)
      : host(kv_tiers::testing::MakeTier("host", kv_tiers::testing::Opts(8))) {
    MoverEnv env;
    env.loop = &loop;
    MoverSet movers = kv_tiers::testing::HostAndPeerMovers(env);
    BlockManagerOptions mo;
    mo.reclaim_on_high_watermark = false;
    mgr = std::make_unique<BlockManager>(kv_tiers::testing::SmallLayout(), &loop, std::move(movers),
                                         nullptr, mo);
    added = mgr->AddTier(host.get()).ok() && mgr->AddTier(peer).ok();
  }
  bool AddPeer(Tier* other) { return mgr->AddTier(other).ok(); }
  // Commits a host block of (workflow "wf", context "ctx") holding `data`, flips one of
  // its stored bits when `corrupt` (after its checksum was stored), moves it to the peer
  // tier demoting, and waits for the transfer's final state.
  Result<TransferRecord> CommitAndDemote(const std::vector<char>& data, Tier* peer,
                                         bool corrupt = false) {
    BlockSpec spec{"t", "wf", "ctx", 0, 0, 16, 0};
    SY_ASSIGN_OR_RETURN(BlockId id, mgr->Allocate(spec, "host"));
    SY_RETURN_IF_ERROR(mgr->BeginWrite(id));
    SY_RETURN_IF_ERROR(mgr->WriteBytes(id, data.data(), data.size()));
    SY_RETURN_IF_ERROR(mgr->FinishWrite(id));
    SY_RETURN_IF_ERROR(mgr->Commit(id));
    if (corrupt) {
      char* stored = nullptr;  // the block's bytes in the host arena
      for (uint64_t slot = 0; slot < 8 && stored == nullptr; ++slot) {
        auto* p = static_cast<char*>(host->Data(Extent{slot, data.size()}));
        if (p != nullptr && std::memcmp(p, data.data(), data.size()) == 0) stored = p;
      }
      if (stored == nullptr) return Status::Internal("block bytes not found in the arena");
      stored[100] ^= 0x20;
    }
    SY_ASSIGN_OR_RETURN(TransferId tid, mgr->Move(id, peer->name(), MoveOptions{}, true));
    return Await(tid);
  }
  // Drains the loop until the transfer leaves its in-flight states.
  TransferRecord Await(TransferId tid) {
    EXPECT_TRUE(kv_tiers::testing::DrainUntil(
        loop, [&] { return kv_tiers::testing::TransferEnded(*mgr, tid); }));
    return mgr->Transfer(tid).value();
  }
  VirtualEventLoop loop;
  std::unique_ptr<Tier> host;
  std::unique_ptr<BlockManager> mgr;
  bool added = false;
};

TEST_F(KvStoreTierTest, BlockManagerMovesBlocksBothWaysWithTheCommitRule) {
  ManagerWithPeer m(tier_.get());
  ASSERT_TRUE(m.added);
  BlockManager& mgr = *m.mgr;
  // Host -> peer, demoting: the sender's copy is freed only after the commit. The move
  // carries the block's stored checksum, which the worker verified: validation does not
  // read the block back (one put, no get).
  auto data = kv_tiers::testing::Pattern(kBlock, 9);
  auto out = m.CommitAndDemote(data, tier_.get());
  ASSERT_TRUE(out.ok()) << out.status();
  TransferRecord rec = *out;
  ASSERT_EQ(rec.state, v1::COMMITTED) << rec.status;
  EXPECT_EQ(tier_->puts_posted(), 1u);
  EXPECT_EQ(tier_->gets_posted(), 0u);
  EXPECT_TRUE(rec.transport_completed_at && rec.validated_at && rec.committed_at);
  EXPECT_EQ(m.host->used_bytes(), 0u);  // demoted: the host copy is gone
  EXPECT_EQ(tier_->used_bytes(), kBlock);
  ReadRequest reader{"t", "wf", "ctx", mgr.model_epoch(), 1};
  std::vector<char> got(kBlock);
  {
    auto lease = mgr.Read(rec.destination, reader);  // the read pin ends with this scope
    ASSERT_TRUE(lease.ok()) << lease.status();
    ASSERT_TRUE(lease->CopyTo(got.data(), got.size()).ok());
    EXPECT_EQ(got, data);
  }

  // Peer -> host.
  auto back = mgr.Move(rec.destination, "host", MoveOptions{});
  ASSERT_TRUE(back.ok()) << back.status();
  TransferRecord rec2 = m.Await(*back);
  ASSERT_EQ(rec2.state, v1::COMMITTED) << rec2.status;
  auto lease2 = mgr.Read(rec2.destination, reader);
  ASSERT_TRUE(lease2.ok()) << lease2.status();
  ASSERT_TRUE(lease2->CopyTo(got.data(), got.size()).ok());
  EXPECT_EQ(got, data);
}

// The source's bytes changed after their checksum was stored (memory corruption): the
// worker's check against the stored checksum refuses the put, the move fails, and the
// source block stays where it was.
TEST_F(KvStoreTierTest, BlockManagerMoveOfACorruptedSourceIsRefusedAtTheWorker) {
  ManagerWithPeer m(tier_.get());
  ASSERT_TRUE(m.added);
  auto data = kv_tiers::testing::Pattern(kBlock, 5);
  auto out = m.CommitAndDemote(data, tier_.get(), /*corrupt=*/true);
  ASSERT_TRUE(out.ok()) << out.status();
  TransferRecord rec = *out;
  EXPECT_NE(rec.state, v1::COMMITTED);
  EXPECT_TRUE(rec.status.IsDataLoss()) << rec.status;
  EXPECT_NE(rec.status.ToString().find("bad_checksum"), std::string::npos) << rec.status;
  EXPECT_EQ(m.host->used_bytes(), kBlock);  // the source was not demoted
  EXPECT_EQ(tier_->used_bytes(), 0u);
}

// Between two workers' host tiers (two peers): the relay mover stages each block here,
// the destination worker verifies it against the source's checksum, and the move commits
// with the commit rule (the source copy is freed only after).
TEST_F(KvStoreTierTest, BlockManagerMovesBlocksPeerToPeerThroughTheRelay) {
  Worker other;
  ASSERT_TRUE(other.Start(4));
  TierOptions o;
  o.capacity_bytes = 4 * kBlock;
  o.slot_bytes = kBlock;
  auto b = KvStoreTier::Connect(other.address(), o, TcpClient());
  ASSERT_TRUE(b.ok()) << b.status();
  ManagerWithPeer m(tier_.get());
  ASSERT_TRUE(m.added && m.AddPeer(b->get()));
  auto data = kv_tiers::testing::Pattern(kBlock, 11);
  auto out = m.CommitAndDemote(data, tier_.get());
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->state, v1::COMMITTED) << out->status;
  auto moved = m.mgr->Move(out->destination, (*b)->name(), MoveOptions{}, /*demote=*/true);
  ASSERT_TRUE(moved.ok()) << moved.status();
  TransferRecord rec = m.Await(*moved);
  ASSERT_EQ(rec.state, v1::COMMITTED) << rec.status;
  EXPECT_EQ(tier_->used_bytes(), 0u);  // demoted: the first peer's copy is freed
  EXPECT_EQ((*b)->used_bytes(), kBlock);
  EXPECT_EQ(tier_->gets_posted(), 1u);
  EXPECT_EQ((*b)->puts_posted(), 1u);
  ReadRequest reader{"t", "wf", "ctx", m.mgr->model_epoch(), 1};
  std::vector<char> got(kBlock);
  auto lease = m.mgr->Read(rec.destination, reader);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(lease->CopyTo(got.data(), got.size()).ok());
  EXPECT_EQ(got, data);
}

}  // namespace
}  // namespace switchyard::kv_tiers::remote
