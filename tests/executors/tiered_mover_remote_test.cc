// TieredKvMover with a remote pool (Options::remote_kv): the KV of an engine in another
// process, reached through that worker's KV store. Here the "worker" is a fake
// RemoteEngineKv whose pool is a map of blocks, and its store an arena tier that verifies
// writes (as a joined worker's store does): export, move, import and their failures.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "base/virtual_event_loop.h"
#include "executors/tiered_mover.h"
#include "kv_tiers/arena_tier.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/prefix_hash.h"
#include "tests/kv_tiers/test_util.h"

namespace switchyard::executors {
namespace {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Location;
using scheduler::Tier;

using kv_tiers::testing::kBlock;

// A worker's KV store as serve sees it: its bytes are written by the worker, which
// verifies them (verifies_writes); here an arena the fake worker writes in place.
class StoreTier final : public kv_tiers::Tier {
 public:
  explicit StoreTier(std::unique_ptr<kv_tiers::Tier> inner)
      : Tier(inner->options()), inner_(std::move(inner)) {}
  const kv_tiers::Tier& inner() const { return *inner_; }
  std::string name() const override { return "store"; }
  kv_tiers::TierKind kind() const override { return inner_->kind(); }
  kv_tiers::TierCapabilities capabilities() const override {
    kv_tiers::TierCapabilities c = inner_->capabilities();
    c.verifies_writes = true;
    return c;
  }
  Result<kv_tiers::Extent> Allocate(const std::string& t, uint64_t b) override {
    return inner_->Allocate(t, b);
  }
  Status Free(const kv_tiers::Extent& e) override { return inner_->Free(e); }
  void* Data(const kv_tiers::Extent& e) override { return inner_->Data(e); }
  Status Write(std::span<const kv_tiers::BlockWrite> w) override { return inner_->Write(w); }
  Status Read(std::span<const kv_tiers::BlockRead> r) override { return inner_->Read(r); }

 private:
  std::unique_ptr<kv_tiers::Tier> inner_;
};

// The worker's engine pool: blocks by context; export/import copy them into/out of the
// store's extents and answer on the loop.
class FakePool final : public RemoteEngineKv {
 public:
  FakePool(EventLoop* loop, kv_tiers::Tier* store) : loop_(loop), store_(store) {}
  std::string kv_pool_name() const override { return "fake pool"; }
  int64_t kv_blocks(const std::string& context) const override {
    auto it = blocks_.find(context);
    return it == blocks_.end() ? -1 : static_cast<int64_t>(it->second.size());
  }
  void Export(const std::string& context, std::vector<kv_tiers::Extent> targets,
              std::function<void(Result<Exported>)> done) override {
    Exported out;
    out.valid_tokens = valid_[context];
    std::vector<std::vector<char>>& b = blocks_[context];
    for (size_t i = 0; i < targets.size() && i < b.size(); ++i) {
      std::memcpy(store_->Data(targets[i]), b[i].data(), kBlock);
      out.checksums.push_back(kv_tiers::BlockChecksum(b[i].data(), kBlock));
    }
    Result<Exported> r =
        fail_export ? Result<Exported>(Status::Aborted("export refused")) : Result<Exported>(out);
    loop_->Post([done, r]() { done(r); });
  }
  void Import(const std::string& context, std::vector<kv_tiers::Extent> sources,
              std::vector<uint64_t> checksums, int64_t valid_tokens,
              std::function<void(Status)> done) override {
    Status st = fail_import ? Status::DataLoss("import refused") : Status::OK();
    std::vector<std::vector<char>> got;
    for (size_t i = 0; i < sources.size() && st.ok(); ++i) {
      const char* p = static_cast<const char*>(store_->Data(sources[i]));
      if (kv_tiers::BlockChecksum(p, kBlock) != checksums[i]) st = Status::DataLoss("checksum");
      got.emplace_back(p, p + kBlock);
    }
    if (st.ok()) {
      blocks_[context] = std::move(got);
      valid_[context] = valid_tokens;
    }
    loop_->Post([done, st]() { done(st); });
  }

  void Put(const std::string& context, int blocks, int64_t valid) {
    std::vector<std::vector<char>>& b = blocks_[context];
    for (int i = 0; i < blocks; ++i) b.emplace_back(kBlock, static_cast<char>('a' + i));
    valid_[context] = valid;
  }
  void Drop(const std::string& context) {
    blocks_.erase(context);
    valid_.erase(context);
  }
  std::map<std::string, std::vector<std::vector<char>>> blocks_;
  std::map<std::string, int64_t> valid_;
  bool fail_export = false, fail_import = false;

 private:
  EventLoop* loop_;
  kv_tiers::Tier* store_;
};

class RemotePoolMoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kv_tiers::TierOptions o;
    o.slot_bytes = kBlock;
    o.capacity_bytes = 64 * kBlock;
    store_ = std::make_unique<StoreTier>(
        kv_tiers::ArenaTier::Create(o, kv_tiers::HostBackend()).value());
    kv_tiers::ArenaBackend hb = kv_tiers::HostBackend();
    hb.name = "host";
    host_ = kv_tiers::ArenaTier::Create(o, hb).value();
    kv_tiers::MoverEnv env;
    env.loop = &loop_;
    kv_tiers::MoverSet movers;
    movers.Add(std::make_shared<kv_tiers::LocalMover>(env), 10);
    kv_tiers::BlockManagerOptions bo;
    bo.reclaim_on_high_watermark = false;
    mgr_ = std::make_unique<kv_tiers::BlockManager>(kv_tiers::testing::SmallLayout(), &loop_,
                                                    std::move(movers), nullptr, bo);
    ASSERT_TRUE(mgr_->AddTier(store_.get()).ok());
    ASSERT_TRUE(mgr_->AddTier(host_.get()).ok());
    pool_ = std::make_unique<FakePool>(&loop_, store_.get());
    TieredKvMover::Options mo;
    mo.tier_of = [](const Location& l) -> Result<std::string> {
      return std::string(l.tier == Tier::kHbm ? "store" : "host");
    };
    mo.remote_kv = [this](const Location& l) -> RemoteEngineKv* {
      return l.tier == Tier::kHbm ? pool_.get() : nullptr;
    };
    mover_ = std::make_unique<TieredKvMover>(&loop_, mgr_.get(), mo);
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
  Status Run(const Command& c) {
    std::optional<Status> result;
    mover_->Move(c, [&](Status st) { result = st; });
    kv_tiers::testing::DrainUntil(loop_, [&] { return result.has_value(); });
    return result.value_or(Status::DeadlineExceeded("move never reported"));
  }
  size_t Committed(v1::Tier tier) {
    size_t n = 0;
    for (uint32_t i = 0; i < 8; ++i)
      for (BlockId b : mgr_->FindBlocks("wf/main", i)) {
        auto meta = mgr_->Meta(b);
        if (meta.ok() && meta->tier() == tier && mgr_->State(b).value() == v1::BLOCK_COMMITTED) ++n;
      }
    return n;
  }

  uint64_t Stored() const { return static_cast<const StoreTier&>(*store_).inner().used_bytes(); }

  VirtualEventLoop loop_;
  std::unique_ptr<kv_tiers::Tier> store_, host_;
  std::unique_ptr<kv_tiers::BlockManager> mgr_;
  std::unique_ptr<FakePool> pool_;
  std::unique_ptr<TieredKvMover> mover_;
};

TEST_F(RemotePoolMoverTest, ADemotionExportsIntoTheStoreThenMovesOnAndAPrefetchImports) {
  pool_->Put("wf/main", 3, 40);
  ASSERT_TRUE(Run(Move(CommandKind::kDemote, 1)).ok());
  EXPECT_EQ(mover_->TierOf("wf/main"), "host");
  EXPECT_EQ(Committed(v1::TIER_HOST), 3u);
  EXPECT_EQ(Stored(), 0u) << "the exported store copies went once moved on";
  EXPECT_EQ(mover_->real_bytes_by_destination().at("store"), 3 * kBlock);
  auto original = pool_->blocks_["wf/main"];
  pool_->Drop("wf/main");  // the engine freed its pool blocks

  ASSERT_TRUE(Run(Move(CommandKind::kPrefetch, 2)).ok());
  EXPECT_EQ(pool_->blocks_["wf/main"], original) << "the pool got the same bytes back";
  EXPECT_EQ(pool_->valid_["wf/main"], 40);
  EXPECT_EQ(Committed(v1::TIER_HOST), 0u);
  EXPECT_EQ(Stored(), 0u);
  EXPECT_EQ(mover_->TierOf("wf/main"), "") << "the context lives in the pool only";
  EXPECT_EQ(mover_->real_bytes_by_destination().at("fake pool"), 3 * kBlock);
}

TEST_F(RemotePoolMoverTest, AFailedImportLeavesTheContextWhereItWas) {
  pool_->Put("wf/main", 3, 48);
  ASSERT_TRUE(Run(Move(CommandKind::kDemote, 1)).ok());
  pool_->Drop("wf/main");
  pool_->fail_import = true;
  Status st = Run(Move(CommandKind::kPrefetch, 2));
  EXPECT_TRUE(st.IsDataLoss()) << st;
  EXPECT_EQ(mover_->TierOf("wf/main"), "host");
  EXPECT_EQ(Committed(v1::TIER_HOST), 3u) << "the sources stay until an import committed";
  EXPECT_EQ(Stored(), 0u) << "the landed store copies went";
  pool_->fail_import = false;  // a later prefetch succeeds from the same sources
  ASSERT_TRUE(Run(Move(CommandKind::kPrefetch, 3)).ok());
  EXPECT_EQ(pool_->blocks_["wf/main"].size(), 3u);
  EXPECT_EQ(Committed(v1::TIER_HOST), 0u);
}

TEST_F(RemotePoolMoverTest, AFailedExportCommitsNothingAnywhere) {
  pool_->Put("wf/main", 2, 20);
  pool_->fail_export = true;
  Status st = Run(Move(CommandKind::kDemote, 1));
  EXPECT_TRUE(st.code() == StatusCode::kAborted) << st;
  EXPECT_EQ(Committed(v1::TIER_HOST), 0u);
  EXPECT_EQ(Committed(v1::TIER_HBM), 0u);
  EXPECT_EQ(Stored(), 0u);
  EXPECT_EQ(mover_->TierOf("wf/main"), "");
}

TEST_F(RemotePoolMoverTest, AContextThePoolDoesNotHoldIsNotFound) {
  Status st = Run(Move(CommandKind::kDemote, 1));
  EXPECT_TRUE(st.IsNotFound()) << st;
  // Nor can a context with no real KV anywhere be prefetched into the pool.
  st = Run(Move(CommandKind::kPrefetch, 2));
  EXPECT_TRUE(st.IsNotFound()) << st;
  EXPECT_TRUE(pool_->blocks_.empty());
}

}  // namespace
}  // namespace switchyard::executors
