// A BlockManager over emulated-hbm (8 blocks), host (16 blocks) and disk (RocksDB)
// tiers with 4 KiB blocks, on a virtual event loop (not a test file itself).
#pragma once

#include "kv_tiers/disk_tier.h"
#include "kv_tiers/fault_injection.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/prefix_hash.h"
#include "test_util.h"

namespace switchyard::kv_tiers::testing {

class ManagerTest : public ::testing::Test {
 protected:
  void SetUp() override { Build(nullptr); }

  // (Re)builds the manager; `fault` wraps every mover when given.
  void Build(const FaultSpec* fault, uint64_t epoch = 1) {
    mgr_.reset();
    if (!hbm_) hbm_ = MakeTier("emulated-hbm", Opts(8));
    if (!host_) host_ = MakeTier("host", Opts(16));
    if (!disk_) {
      TierOptions d = Opts(64);
      if (disk_dir_.empty()) {
        disk_dir_ = TempDir(
            "mgr_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
      }
      d.path = disk_dir_;
      disk_ = MakeTier("rocksdb", d);
    }
    MoverEnv env;
    env.loop = &loop_;
    env.chunk_bytes = 1024;
    MoverSet movers;
    std::shared_ptr<Mover> local = std::make_shared<LocalMover>(env);
    std::shared_ptr<Mover> disk = std::make_shared<DiskMover>(env);
    if (fault) {
      faulty_local_ = std::make_shared<FaultyMover>(local, *fault, &loop_);
      local = faulty_local_;
      disk = std::make_shared<FaultyMover>(disk, *fault, &loop_);
    }
    movers.Add(local, 10);
    movers.Add(disk, 5);
    BlockManagerOptions o;
    o.model_epoch = epoch;
    o.reclaim_on_high_watermark = false;
    mgr_ = std::make_unique<BlockManager>(SmallLayout(), &loop_, std::move(movers), nullptr, o);
    ASSERT_TRUE(mgr_->AddTier(hbm_.get()).ok());
    ASSERT_TRUE(mgr_->AddTier(host_.get()).ok());
    ASSERT_TRUE(mgr_->AddTier(disk_.get()).ok());
  }

  static BlockSpec Spec(const std::string& ctx, uint32_t index, const std::string& tenant = "t",
                        uint64_t prefix = 0) {
    BlockSpec s;
    s.tenant = tenant;
    s.workflow_id = "wf-" + ctx;
    s.context_id = ctx;
    s.index = index;
    s.prefix_hash = prefix;
    s.num_tokens = 16;
    return s;
  }

  ReadRequest Reader(const std::string& ctx, uint64_t gen = 1, const std::string& tenant = "t") {
    return ReadRequest{tenant, "wf-" + ctx, ctx, mgr_->model_epoch(), gen};
  }

  // Allocates, writes a pattern, validates and commits a block.
  BlockId Committed(const BlockSpec& spec, const std::string& tier = "emulated-hbm",
                    uint32_t seed = 1) {
    auto id = mgr_->Allocate(spec, tier);
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return BlockId{};
    auto data = Pattern(4096, seed);
    EXPECT_TRUE(mgr_->BeginWrite(*id).ok());
    EXPECT_TRUE(mgr_->WriteBytes(*id, data.data(), data.size()).ok());
    EXPECT_TRUE(mgr_->FinishWrite(*id).ok());
    EXPECT_TRUE(mgr_->Commit(*id).ok());
    return *id;
  }

  std::vector<char> ReadAll(BlockId id, const ReadRequest& r) {
    auto lease = mgr_->Read(id, r);
    EXPECT_TRUE(lease.ok()) << lease.status();
    std::vector<char> out(4096);
    if (lease.ok()) {
      EXPECT_TRUE(lease->CopyTo(out.data(), out.size()).ok());
    }
    return out;
  }

  v1::BlockState StateOf(BlockId id) { return mgr_->State(id).value(); }

  // Runs the loop until the transfer has a final state.
  TransferRecord Await(TransferId tid) {
    auto final_state = [&] {
      auto r = mgr_->Transfer(tid);
      return r.ok() && r->state != v1::POSTED && r->state != v1::TRANSPORT_COMPLETE &&
             r->state != v1::VALIDATED;
    };
    EXPECT_TRUE(DrainUntil(loop_, final_state));
    return mgr_->Transfer(tid).value();
  }

  VirtualEventLoop loop_;
  std::unique_ptr<Tier> hbm_, host_, disk_;
  std::string disk_dir_;
  std::shared_ptr<FaultyMover> faulty_local_;
  std::unique_ptr<BlockManager> mgr_;
};

}  // namespace switchyard::kv_tiers::testing
