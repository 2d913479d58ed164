#include "executors/tiered_mover.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "base/mutex.h"
#include "base/virtual_event_loop.h"
#include "executors/model_cost.h"
#include "executors/runtime.h"
#include "executors/simulated.h"
#include "executors/simulated_engine.h"
#include "executors/step_cost.h"
#include "kv_tiers/disk_tier.h"
#include "kv_tiers/fault_injection.h"
#include "kv_tiers/faulty_tier.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/tier_registry.h"
#include "scheduler/simulated_fabric.h"
#include "tests/kv_tiers/test_util.h"

namespace switchyard::executors {
namespace {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Location;
using scheduler::Tier;

using kv_tiers::testing::SmallLayout;

Result<std::string> TierOf(const Location& l) {
  if (l.tier == Tier::kHbm) return std::string("emulated-hbm");
  if (l.tier == Tier::kHost) return std::string("host");
  return Status::NotSupported("no " + scheduler::LocationString(l) + " tier in this test");
}

class TieredMoverTest : public ::testing::Test {
 protected:
  void Build(const kv_tiers::FaultSpec* fault = nullptr, uint64_t scale = 1) {
    kv_tiers::TierOptions o;
    o.slot_bytes = 4096;
    o.capacity_bytes = 64 * 4096;
    hbm_ = kv_tiers::TierRegistry::Global().CreateNamed("emulated-hbm", o).value();
    host_ = kv_tiers::TierRegistry::Global().CreateNamed("host", o).value();
    kv_tiers::MoverEnv env;
    env.loop = &loop_;
    std::shared_ptr<kv_tiers::Mover> local = std::make_shared<kv_tiers::LocalMover>(env);
    if (fault) local = std::make_shared<kv_tiers::FaultyMover>(local, *fault, &loop_);
    kv_tiers::MoverSet movers;
    movers.Add(local, 10);
    kv_tiers::BlockManagerOptions bo;
    bo.reclaim_on_high_watermark = false;
    mgr_ = std::make_unique<kv_tiers::BlockManager>(SmallLayout(), &loop_, std::move(movers),
                                                    nullptr, bo);
    ASSERT_TRUE(mgr_->AddTier(hbm_.get()).ok());
    ASSERT_TRUE(mgr_->AddTier(host_.get()).ok());
    mover_ = std::make_unique<TieredKvMover>(
        &loop_, mgr_.get(), TieredKvMover::Options{.tier_of = TierOf, .bytes_scale = scale});
  }

  static Command Demote(uint64_t bytes, uint64_t id = 1) {
    return Command{.kind = CommandKind::kDemote,
                   .workflow_id = "wf",
                   .context = "wf/main",
                   .src = {Tier::kHbm, 0},
                   .dst = {Tier::kHost, 0},
                   .bytes = bytes,
                   .transfer_id = id};
  }

  // Runs the loop until the move reported (movers may post from worker threads).
  Status RunMove(const Command& c) {
    std::optional<Status> result;
    mover_->Move(c, [&](Status st) { result = st; });
    auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!result && std::chrono::steady_clock::now() < limit)
      if (loop_.Run() == 0) std::this_thread::yield();
    return result.value_or(Status::DeadlineExceeded("move never reported"));
  }

  size_t CommittedIn(const std::string& tier_name) {
    v1::Tier tier = tier_name == "host" ? v1::TIER_HOST : v1::TIER_HBM;
    size_t n = 0;
    for (uint32_t i = 0; i < 16; ++i)
      for (BlockId b : mgr_->FindBlocks("wf/main", i)) {
        auto meta = mgr_->Meta(b);
        if (meta.ok() && meta->tier() == tier && mgr_->State(b).value() == v1::BLOCK_COMMITTED) ++n;
      }
    return n;
  }

  VirtualEventLoop loop_;
  std::unique_ptr<kv_tiers::Tier> hbm_, host_;
  std::unique_ptr<kv_tiers::BlockManager> mgr_;
  std::unique_ptr<TieredKvMover> mover_;
};

TEST_F(TieredMoverTest, DemoteMovesEveryBlockAndCommitsThemAtTheDestination) {
  Build();
  ASSERT_TRUE(RunMove(Demote(3 * 4096 - 100)).ok());
  EXPECT_EQ(mover_->TierOf("wf/main"), "host");
  EXPECT_EQ(mover_->BlocksOf("wf/main"), 3u);
  EXPECT_EQ(CommittedIn("host"), 3u);
  EXPECT_EQ(CommittedIn("emulated-hbm"), 0u);  // sources evicted after the commit
  EXPECT_EQ(mover_->bytes_moved(), 3 * 4096u);
  // And back (a prefetch), the context having grown by one block in the meantime.
  Command back = Demote(4 * 4096, 2);
  back.kind = CommandKind::kPrefetch;
  std::swap(back.src, back.dst);
  ASSERT_TRUE(RunMove(back).ok());
  EXPECT_EQ(mover_->TierOf("wf/main"), "emulated-hbm");
  EXPECT_EQ(CommittedIn("emulated-hbm"), 4u);
  EXPECT_EQ(CommittedIn("host"), 0u);
}

TEST_F(TieredMoverTest, BytesScaleShrinksTheEmulatedCopy) {
  Build(nullptr, 1024);
  ASSERT_TRUE(RunMove(Demote(8ULL << 20)).ok());  // 8 MiB context -> 8 KiB emulated
  EXPECT_EQ(mover_->BlocksOf("wf/main"), 2u);
}

TEST_F(TieredMoverTest, AFailedBlockLeavesTheSourcesAndExposesNothing) {
  kv_tiers::FaultSpec fault;
  fault.fail_after = 2;  // the third block's move fails
  Build(&fault);
  Status st = RunMove(Demote(4 * 4096));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(mover_->TierOf("wf/main"), "emulated-hbm");
  EXPECT_EQ(CommittedIn("emulated-hbm"), 4u);
  EXPECT_EQ(CommittedIn("host"), 0u);  // the blocks that did arrive were evicted again
}

// Invariant 3: a finished move keeps what kv_tiers recorded of its block transfers (the
// last block's transport completion and validation, blocks and bytes committed) until the
// consuming node's end marks them consumed; a failed move keeps what got that far.
TEST_F(TieredMoverTest, FinishedMoveKeepsItsEventsUntilConsumed) {
  Build();
  EXPECT_FALSE(mover_->TimesOf(1).has_value());
  ASSERT_TRUE(RunMove(Demote(3 * 4096)).ok());
  auto t = mover_->TimesOf(1);
  ASSERT_TRUE(t.has_value());
  ASSERT_TRUE(t->transport_completed.has_value());
  ASSERT_TRUE(t->validated.has_value());
  EXPECT_LE(*t->transport_completed, *t->validated);
  EXPECT_EQ(t->blocks, 3u);
  EXPECT_EQ(t->bytes, 3 * 4096u);
  EXPECT_TRUE(mover_->MarkConsumed(1));
  EXPECT_FALSE(mover_->MarkConsumed(1));  // forgotten once consumed
  EXPECT_FALSE(mover_->TimesOf(1).has_value());
  EXPECT_FALSE(mover_->MarkConsumed(99));
}

TEST_F(TieredMoverTest, FailedMoveKeepsTheEventsItReached) {
  kv_tiers::FaultSpec fault;
  fault.fail_after = 2;
  Build(&fault);
  ASSERT_FALSE(RunMove(Demote(4 * 4096)).ok());
  auto t = mover_->TimesOf(1);
  ASSERT_TRUE(t.has_value());
  EXPECT_LT(t->blocks, 4u);
  EXPECT_TRUE(t->transport_completed.has_value());  // the first blocks did arrive
}

TEST_F(TieredMoverTest, UnknownTierFailsOnTheLoopNotInline) {
  Build();
  Command c = Demote(4096);
  c.dst = {Tier::kDisk, 0};
  bool called = false;
  Status result;
  mover_->Move(c, [&](Status st) {
    called = true;
    result = st;
  });
  EXPECT_FALSE(called);
  loop_.Run();
  ASSERT_TRUE(called);
  EXPECT_EQ(result.code(), StatusCode::kNotSupported);
}

TEST_F(TieredMoverTest, DiscardFreesTheContextsBlocks) {
  Build();
  ASSERT_TRUE(RunMove(Demote(2 * 4096)).ok());
  EXPECT_GT(mgr_->num_blocks(), 0u);
  mover_->Discard("wf/main");
  loop_.Run();
  EXPECT_EQ(mover_->BlocksOf("wf/main"), 0u);
  EXPECT_EQ(CommittedIn("host"), 0u);
}

// The runtime carries out the core's tool-wait demotion through kv_tiers end to end.
TEST_F(TieredMoverTest, RuntimeDemotesThroughKvTiersDuringALongTool) {
  Build(nullptr, 1 << 16);
  auto cost = RooflineCostModel::FromFiles(SY_SOURCE_DIR "/configs/models/llama-3.1-8b.json",
                                           SY_SOURCE_DIR "/configs/gpus/h200.json");
  ASSERT_TRUE(cost.ok()) << cost.status().ToString();
  scheduler::SimulatedFabric::Options fo;
  fo.workers = 1;
  scheduler::SimulatedFabric fabric(fo);
  scheduler::CoreOptions co;
  co.workers = 1;
  co.hbm_bytes_per_worker = 4ULL << 30;
  co.use_disk = co.use_peer = false;
  auto policy = scheduler::MakePolicy("switchyard");
  scheduler::Core core(co, policy.get(), &fabric, &fabric, &*cost);
  auto step = RooflineStepCost::Create(cost->model(), cost->gpu());
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EngineLimits limits;
  limits.block_tokens = 1;  // the core's default block: byte-exact
  limits.pool_blocks = static_cast<int64_t>(co.hbm_bytes_per_worker / cost->KvBytesPerToken());
  SimulatedEngine engine(&loop_, 0, limits, &*step);
  SimulatedToolWaiter tools(&loop_, [](const std::string&, const v1::ProgramNode& n) {
    return ToolOutcome{Millis(n.hints().expected_duration_ms()), Status::OK()};
  });
  Runtime rt(&loop_, &core, {&engine}, &tools, mover_.get());
  int demotes = 0;
  rt.SetObserver([&](const scheduler::Event&, const scheduler::Commands& c, Time) {
    for (const Command& cmd : c.list) demotes += cmd.kind == CommandKind::kDemote;
  });
  v1::Workflow w;
  w.set_id("wf");
  w.set_tenant("t");
  auto* a = w.add_nodes();
  a->set_id("plan");
  a->set_kind(v1::LLM);
  a->set_model_id("llama-3.1-8b");
  a->mutable_hints()->set_prompt_tokens(20000);
  a->mutable_hints()->set_max_output_tokens(16);
  auto* ref = a->add_cache_refs();
  ref->set_context("main");
  ref->set_mode(v1::CacheRef::CREATE);
  auto* t = w.add_nodes();
  t->set_id("build");
  t->set_kind(v1::TOOL);
  t->set_tool_name("compile");
  t->add_deps("plan");
  t->mutable_hints()->set_expected_duration_ms(600'000);  // ten minutes: demote
  auto* b = w.add_nodes();
  b->set_id("fix");
  b->set_kind(v1::LLM);
  b->set_model_id("llama-3.1-8b");
  b->add_deps("build");
  b->mutable_hints()->set_extend_tokens(100);
  b->mutable_hints()->set_max_output_tokens(16);
  auto* ref2 = b->add_cache_refs();
  ref2->set_context("main");
  ref2->set_mode(v1::CacheRef::EXTEND);
  // A second workflow that cannot fit beside the first puts HBM under pressure.
  v1::Workflow other;
  other.set_id("other");
  other.set_tenant("t");
  *other.add_nodes() = *a;
  rt.Submit(w);
  rt.Close("wf");
  rt.Submit(other);
  rt.Close("other");
  auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!rt.outcomes().count("wf") && std::chrono::steady_clock::now() < limit)
    if (loop_.Run() == 0) std::this_thread::yield();
  while (!rt.outcomes().count("other") && std::chrono::steady_clock::now() < limit)
    if (loop_.Run() == 0) std::this_thread::yield();
  ASSERT_TRUE(rt.outcomes().count("wf"));
  ASSERT_TRUE(rt.outcomes().count("other"));
  EXPECT_EQ(rt.outcomes().at("other").kind, CommandKind::kComplete);
  EXPECT_EQ(rt.outcomes().at("wf").kind, CommandKind::kComplete) << rt.outcomes().at("wf").reason;
  EXPECT_GE(demotes, 1);
  EXPECT_GT(mover_->bytes_moved(), 0u);
}

}  // namespace
}  // namespace switchyard::executors

namespace switchyard::executors {
namespace {

// A context whose blocks live in a tier reached only through block I/O (here RocksDB; in
// serve a joined worker's KV store): with a staging tier, the emulated fill is written
// into the host arena and moved into that tier by the disk mover's thread, so no write of
// the far tier runs on the scheduler's (here: this) thread; the move then runs. (The
// BlockManager's validation of a block moved into RocksDB reads it back on the loop, as
// for every disk move; a joined worker's store verifies writes itself: nothing is read.)
TEST(TieredMoverStaging, TheFillOfAFarTierIsStagedOffTheCallersThread) {
  VirtualEventLoop loop;
  kv_tiers::TierOptions o;
  o.slot_bytes = 4096;
  o.capacity_bytes = 64 * 4096;
  auto host = kv_tiers::TierRegistry::Global().CreateNamed("host", o).value();
  kv_tiers::TierOptions d = o;
  d.path = ::testing::TempDir() + "/sy_staging_" + std::to_string(::getpid());
  std::filesystem::remove_all(d.path);
  Mutex mu;
  std::set<std::thread::id> far_threads;
  kv_tiers::FaultSpec spec;  // no faults: the wait only records the calling thread
  spec.delay = std::chrono::microseconds(1);
  auto far = std::make_unique<kv_tiers::FaultyTier>(
      kv_tiers::DiskTier::Open(d, {}).value(), spec, kv_tiers::kFaultWrite, [&](Duration) {
        MutexLock l(&mu);
        far_threads.insert(std::this_thread::get_id());
      });
  ASSERT_FALSE(far->capabilities().addressable);
  kv_tiers::MoverEnv env;
  env.loop = &loop;
  kv_tiers::MoverSet movers;
  movers.Add(std::make_shared<kv_tiers::LocalMover>(env), 10);
  movers.Add(std::make_shared<kv_tiers::DiskMover>(env), 5);
  kv_tiers::BlockManagerOptions bo;
  bo.reclaim_on_high_watermark = false;
  kv_tiers::BlockManager mgr(SmallLayout(), &loop, std::move(movers), nullptr, bo);
  ASSERT_TRUE(mgr.AddTier(host.get()).ok());
  ASSERT_TRUE(mgr.AddTier(far.get()).ok());
  const std::string far_name = far->name();
  TieredKvMover::Options mo;
  mo.tier_of = [far_name](const Location& l) -> Result<std::string> {
    return l.tier == Tier::kHbm ? far_name : std::string("host");
  };
  mo.fill_staging_tier = "host";
  TieredKvMover mover(&loop, &mgr, mo);
  Command demote{.kind = CommandKind::kDemote,
                 .workflow_id = "wf",
                 .context = "wf/main",
                 .src = {Tier::kHbm, 0},
                 .dst = {Tier::kHost, 0},
                 .bytes = 3 * 4096,
                 .transfer_id = 1};
  std::optional<Status> result;
  mover.Move(demote, [&](Status st) { result = st; });
  {
    // The disk mover's thread may already be writing; this thread never does.
    MutexLock l(&mu);
    EXPECT_EQ(far_threads.count(std::this_thread::get_id()), 0u)
        << "the far tier was written on the caller's thread";
  }
  auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!result && std::chrono::steady_clock::now() < limit)
    if (loop.Run() == 0) std::this_thread::yield();
  ASSERT_TRUE(result.has_value());
  ASSERT_TRUE(result->ok()) << *result;
  EXPECT_EQ(mover.TierOf("wf/main"), "host");
  EXPECT_EQ(mover.BlocksOf("wf/main"), 3u);
  EXPECT_EQ(mover.bytes_moved(), 3 * 4096u);  // the move's bytes; the staging is not counted
  EXPECT_EQ(far->used_bytes(), 0u);           // demoted: the far copies are gone
  MutexLock l(&mu);
  ASSERT_FALSE(far_threads.empty()) << "the fill never reached the far tier";
  EXPECT_EQ(far_threads.count(std::this_thread::get_id()), 0u)
      << "a far-tier write ran on the caller's thread";
  std::filesystem::remove_all(d.path);
}

}  // namespace
}  // namespace switchyard::executors
