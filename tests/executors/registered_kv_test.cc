// RegisteredKvPool: registration checks, the engine's block table, and a demotion and a
// prefetch of the caller's own memory through TieredKvMover (bytes compared, commit rule).
#include "executors/registered_kv.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "base/virtual_event_loop.h"
#include "executors/tiered_mover.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/tier_registry.h"
#include "tests/kv_tiers/test_util.h"

namespace switchyard::executors {
namespace {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Location;
using scheduler::Tier;

using kv_tiers::testing::kBlock;
using kv_tiers::testing::SmallLayout;

RegisteredKvPool::Options PoolOver(std::vector<char>& mem) {
  RegisteredKvPool::Options o;
  o.name = "test engine pool";
  o.block_bytes = kBlock;
  o.regions.push_back({mem.data(), mem.size(), "cpu"});
  return o;
}

TEST(RegisteredKvPoolTest, RefusesBadRegistrationsNamingTheRegion) {
  std::vector<char> mem(8 * kBlock);
  RegisteredKvPool::Options o = PoolOver(mem);
  o.regions.push_back({nullptr, kBlock, "cpu"});
  auto r = RegisteredKvPool::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("region 1: address is null"), std::string::npos)
      << r.status();

  o = PoolOver(mem);
  o.regions[0].length = kBlock - 1;
  r = RegisteredKvPool::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("region 0"), std::string::npos) << r.status();

  o = PoolOver(mem);
  o.regions[0].device = "gpu0";
  r = RegisteredKvPool::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("device 'gpu0'"), std::string::npos) << r.status();

  o = PoolOver(mem);
  o.regions.push_back({mem.data() + kBlock, 2 * kBlock, "cpu"});
  r = RegisteredKvPool::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("region 1 overlaps region 0"), std::string::npos)
      << r.status();

  o = PoolOver(mem);
  o.block_bytes = 0;
  EXPECT_EQ(RegisteredKvPool::Create(o).status().code(), StatusCode::kInvalidArgument);
}

// Device memory: refused outside a CUDA build, and in one when the device does not answer.
// (A CUDA build on a machine with a device accepts it; this address is not device memory,
// so that case only checks that the registration is not refused for the device's sake.)
TEST(RegisteredKvPoolTest, CudaMemoryNeedsACudaBuildAndADevice) {
  std::vector<char> mem(8 * kBlock);
  RegisteredKvPool::Options o = PoolOver(mem);
  o.regions[0].device = "cuda:7";
  auto r = RegisteredKvPool::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("region 0: device 'cuda:7'"), std::string::npos)
      << r.status();
}

TEST(RegisteredKvPoolTest, BlockTableLivesInTheRegisteredMemory) {
  std::vector<char> a(3 * kBlock + 100), b(2 * kBlock);
  RegisteredKvPool::Options o = PoolOver(a);
  o.regions.push_back({b.data(), b.size(), "cpu"});
  auto pool = RegisteredKvPool::Create(o);
  ASSERT_TRUE(pool.ok()) << pool.status();
  RegisteredKvPool& p = **pool;
  EXPECT_EQ(p.num_blocks(), 5);            // the 100-byte tail holds no block
  ASSERT_TRUE(p.Resize("wf/x", 40).ok());  // 3 blocks of 16 tokens
  EXPECT_EQ(p.free_blocks(), 2);
  std::vector<void*> blocks = p.Blocks("wf/x");
  ASSERT_EQ(blocks.size(), 3u);
  for (void* blk : blocks) {
    char* c = static_cast<char*>(blk);
    bool in_a = c >= a.data() && c + kBlock <= a.data() + a.size();
    bool in_b = c >= b.data() && c + kBlock <= b.data() + b.size();
    EXPECT_TRUE(in_a || in_b);
  }
  Status full = p.Resize("wf/y", 48);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("wf/y needs 3 more blocks, 2 free"), std::string::npos) << full;
  EXPECT_EQ(p.tokens("wf/y"), -1);  // left as it was
  ASSERT_TRUE(p.Resize("wf/x", 16).ok());
  EXPECT_EQ(p.free_blocks(), 4);
  ASSERT_TRUE(p.SetValid("wf/x", 99).ok());
  EXPECT_EQ(p.valid_tokens("wf/x"), 16);  // clamped to its tokens
  EXPECT_EQ(p.SetValid("wf/none", 1).code(), StatusCode::kNotFound);
  p.SetBusy("wf/x", true);
  EXPECT_EQ(p.ExportKv("wf/x").status().code(), StatusCode::kFailedPrecondition);
  p.SetBusy("wf/x", false);
  EXPECT_TRUE(p.ExportKv("wf/x").ok());
  ASSERT_TRUE(p.Resize("wf/x", 0).ok());
  EXPECT_EQ(p.free_blocks(), 5);
  EXPECT_EQ(p.ExportKv("wf/x").status().code(), StatusCode::kNotFound);
}

class RegisteredKvMoveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kv_tiers::TierOptions o;
    o.slot_bytes = kBlock;
    o.capacity_bytes = 64 * kBlock;
    host_ = kv_tiers::TierRegistry::Global().CreateNamed("host", o).value();
    kv_tiers::MoverEnv env;
    env.loop = &loop_;
    kv_tiers::MoverSet movers;
    movers.Add(std::make_shared<kv_tiers::LocalMover>(env), 10);
    kv_tiers::BlockManagerOptions bo;
    bo.reclaim_on_high_watermark = false;
    mgr_ = std::make_unique<kv_tiers::BlockManager>(SmallLayout(), &loop_, std::move(movers),
                                                    nullptr, bo);
    ASSERT_TRUE(mgr_->AddTier(host_.get()).ok());
    mem_.assign(8 * kBlock, 0);
    auto pool = RegisteredKvPool::Create(PoolOver(mem_));
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = std::move(*pool);
    TieredKvMover::Options mo;
    mo.tier_of = [](const Location& l) -> Result<std::string> {
      if (l.tier == Tier::kHost) return std::string("host");
      return Status::NotSupported("no such tier in this test");
    };
    mo.engine_kv = [this](const Location& l) -> EngineKv* {
      return l.tier == Tier::kHbm ? pool_.get() : nullptr;
    };
    mover_ = std::make_unique<TieredKvMover>(&loop_, mgr_.get(), mo);
  }
  Status RunMove(const Command& c) {
    std::optional<Status> result;
    mover_->Move(c, [&](Status st) { result = st; });
    auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!result && std::chrono::steady_clock::now() < limit)
      if (loop_.Run() == 0) std::this_thread::yield();
    return result.value_or(Status::DeadlineExceeded("move never reported"));
  }
  static Command Move(CommandKind kind, uint64_t id) {
    Command c{.kind = kind,
              .workflow_id = "wf",
              .context = "wf/main",
              .src = {Tier::kHbm, 0},
              .dst = {Tier::kHost, 0},
              .bytes = 3 * kBlock,
              .transfer_id = id};
    if (kind == CommandKind::kPrefetch) std::swap(c.src, c.dst);
    return c;
  }

  VirtualEventLoop loop_;
  std::unique_ptr<kv_tiers::Tier> host_;
  std::unique_ptr<kv_tiers::BlockManager> mgr_;
  std::vector<char> mem_;
  std::unique_ptr<RegisteredKvPool> pool_;
  std::unique_ptr<TieredKvMover> mover_;
};

TEST_F(RegisteredKvMoveTest, DemoteAndPrefetchRestoreTheCallersBytes) {
  ASSERT_TRUE(pool_->Resize("wf/main", 40).ok());
  ASSERT_TRUE(pool_->SetValid("wf/main", 39).ok());
  std::vector<void*> blocks = pool_->Blocks("wf/main");
  for (size_t b = 0; b < blocks.size(); ++b)
    for (uint64_t i = 0; i < kBlock; ++i)
      static_cast<unsigned char*>(blocks[b])[i] = static_cast<unsigned char>(b * 31 + i * 7);
  std::vector<char> before;
  for (void* blk : blocks)
    before.insert(before.end(), static_cast<char*>(blk), static_cast<char*>(blk) + kBlock);

  Status demoted = RunMove(Move(CommandKind::kDemote, 1));
  ASSERT_TRUE(demoted.ok()) << demoted;
  EXPECT_EQ(mover_->TierOf("wf/main"), "host");
  EXPECT_EQ(mover_->real_bytes_by_destination().at("host"), 3 * kBlock);
  // The engine frees its blocks (the runtime Releases them once the demotion committed) and
  // another context overwrites them.
  ASSERT_TRUE(pool_->Resize("wf/main", 0).ok());
  std::fill(mem_.begin(), mem_.end(), 0x5a);

  // The prefetch: the runtime Imports (the engine reserves blocks), the mover fills them.
  ASSERT_TRUE(pool_->Resize("wf/main", 40).ok());
  ASSERT_TRUE(RunMove(Move(CommandKind::kPrefetch, 2)).ok());
  EXPECT_EQ(pool_->valid_tokens("wf/main"), 39);  // carried with the bytes
  std::vector<char> after;
  for (void* blk : pool_->Blocks("wf/main"))
    after.insert(after.end(), static_cast<char*>(blk), static_cast<char*>(blk) + kBlock);
  EXPECT_EQ(after, before);
  EXPECT_EQ(mover_->TierOf("wf/main"), "");  // the host copy is gone
}

TEST_F(RegisteredKvMoveTest, ImportIsUnreadableUntilCommittedAndStaleEpochFails) {
  ASSERT_TRUE(pool_->Resize("wf/main", 40).ok());
  ASSERT_TRUE(pool_->SetValid("wf/main", 40).ok());
  ASSERT_TRUE(RunMove(Move(CommandKind::kDemote, 1)).ok());
  ASSERT_TRUE(pool_->Resize("wf/main", 0).ok());
  ASSERT_TRUE(pool_->Resize("wf/main", 40).ok());
  ASSERT_TRUE(pool_->ImportTargets("wf/main").ok());
  EXPECT_EQ(pool_->valid_tokens("wf/main"), 0);  // reserved, not readable
  // A model epoch change invalidates the host copy: the prefetch fails, nothing commits.
  mgr_->BumpModelEpoch();
  Status st = RunMove(Move(CommandKind::kPrefetch, 2));
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(pool_->valid_tokens("wf/main"), 0);
}

}  // namespace
}  // namespace switchyard::executors
