#include "cpu_engine/cpu_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "base/virtual_event_loop.h"
#include "executors/tiered_mover.h"
#include "kv_tiers/disk_tier.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/remote/kv_store_tier.h"
#include "tests/common/wait_until.h"
#include "tests/cpu_engine/cpu_test_util.h"
#include "tests/kv_store/worker_process.h"

namespace switchyard::cpu_engine {
namespace {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Location;
using testing::TinyModel;

constexpr int64_t kBlockTokens = 16;

// One scenario: a loop, a token log, engines, and what their reports said.
class EngineHarness {
 public:
  explicit EngineHarness(int workers = 1, int64_t budget = 64, int64_t pool_blocks = 256,
                         const Model* model = &TinyModel()) {
    for (int w = 0; w < workers; ++w) {
      executors::EngineLimits l;
      l.block_tokens = kBlockTokens;
      l.pool_blocks = pool_blocks;
      l.max_num_seqs = 16;
      l.max_num_batched_tokens = budget;
      CpuEngine::Options o;
      o.model = model;
      o.tokens = &log_;
      auto e = CpuEngine::Create(&loop_, w, l, o);
      EXPECT_TRUE(e.ok()) << e.status().ToString();
      (*e)->SetListener([this](const executors::StepReport& r) { OnReport(r); });
      engines_.push_back(std::move(*e));
    }
  }

  CpuEngine& engine(int w = 0) { return *engines_[w]; }
  VirtualEventLoop& loop() { return loop_; }
  TokenLog& log() { return log_; }
  const std::vector<int32_t>& out(const std::string& key) { return out_[key]; }

  // Runs the loop (the engines compute on their own threads) until `done`
  // (testing::WaitUntil's bound): between two runs, what the engines post arrives.
  bool RunUntil(const std::function<bool()>& done) {
    return ::switchyard::testing::WaitUntil(
        [&] {
          loop_.Run();  // runs what is pending (Run returns when the loop is idle)
          return done();
        },
        ::switchyard::testing::kWaitSeconds, std::chrono::microseconds(200));
  }
  bool Finish(const std::set<std::string>& keys) {
    return RunUntil([&] {
      for (const std::string& k : keys)
        if (!finished_.count(k)) return false;
      return true;
    });
  }
  Status status(const std::string& key) { return status_[key]; }

 private:
  void OnReport(const executors::StepReport& r) {
    for (const executors::SeqProgress& p : r.seqs) {
      if (p.token >= 0) out_[p.key].push_back(p.token);
      if (p.finished) {
        finished_.insert(p.key);
        status_[p.key] = p.status;
      }
    }
  }

  VirtualEventLoop loop_;
  TokenLog log_;
  std::vector<std::unique_ptr<CpuEngine>> engines_;
  std::map<std::string, std::vector<int32_t>> out_;
  std::map<std::string, Status> status_;
  std::set<std::string> finished_;
};

executors::SequenceSpec Call(const std::string& key, const std::string& ctx, int64_t held,
                             bool resident, int64_t fresh, int64_t max_out) {
  executors::SequenceSpec s;
  s.key = key;
  resident = resident && held > 0;  // a new context is built by the prefill
  if (!ctx.empty()) s.contexts.push_back(executors::SeqContext{ctx, held, resident});
  s.prefill_tokens = fresh + (resident ? 0 : held);
  s.max_output_tokens = max_out;
  s.stop_at_eos = false;
  return s;
}

// First call of the two-call conversation every restore test continues.
int64_t FirstCall(EngineHarness& h, int w = 0) {
  EXPECT_TRUE(h.engine(w).Admit(Call("wf/n1", "wf/c", 0, true, 70, 9)).ok());
  EXPECT_TRUE(h.Finish({"wf/n1"}));
  EXPECT_EQ(h.out("wf/n1").size(), 9u);
  return h.engine(w).context_tokens("wf/c");  // 70 + 9
}

std::vector<int32_t> SecondCall(EngineHarness& h, int64_t held, bool resident, int w = 0) {
  Status st = h.engine(w).Admit(Call("wf/n2", "wf/c", held, resident, 30, 12));
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(h.Finish({"wf/n2"}));
  EXPECT_TRUE(h.status("wf/n2").ok()) << h.status("wf/n2").ToString();
  return h.out("wf/n2");
}

// Another conversation takes the pool's free blocks and writes its own KV into them, so a
// context that comes back cannot find its old bytes where they were.
void Scribble(EngineHarness& h, int w = 0) {
  ASSERT_TRUE(h.engine(w).Admit(Call("x/n", "x/c", 0, true, 200, 1)).ok());
  ASSERT_TRUE(h.Finish({"x/n"}));
  ASSERT_TRUE(h.engine(w).Release("x/c").ok());
}

// The bytes of every block of a context in an engine's pool.
std::vector<char> KvBytes(CpuEngine& e, const std::string& ctx) {
  auto v = e.ExportKv(ctx);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  std::vector<char> out;
  if (!v.ok()) return out;
  for (const void* b : v->blocks) {
    const char* p = static_cast<const char*>(b);
    out.insert(out.end(), p, p + e.kv_block_bytes());
  }
  return out;
}

// The reference: both calls on one engine, the context kept in its pool.
std::vector<int32_t> ReferenceTokens() {
  EngineHarness h;
  int64_t held = FirstCall(h);
  return SecondCall(h, held, true);
}

TEST(CpuEngineTest, PoolIsARealKvTierSizedByTheAccounting) {
  EngineHarness h;
  CpuEngine& e = h.engine();
  EXPECT_EQ(e.name(), "cpu engine");
  EXPECT_NE(e.kv_pool_name().find("cpu engine KV pool"), std::string::npos);
  EXPECT_EQ(e.pool().kind(), v1::TIER_HBM);
  EXPECT_EQ(e.kv_block_bytes(), kBlockTokens * TinyModel().shape().kv_bytes_per_token());
  FirstCall(h);
  EXPECT_EQ(e.blocks_used(), executors::BlocksFor(79, kBlockTokens));
  EXPECT_EQ(e.pool_used_bytes(), static_cast<uint64_t>(e.blocks_used()) * e.kv_block_bytes());
  // The last output token's KV is computed by the next call.
  EXPECT_EQ(e.valid_tokens("wf/c"), 78);
  EXPECT_EQ(h.log().Find("wf/c")->size(), 79u);
  ASSERT_TRUE(e.Release("wf/c").ok());
  EXPECT_EQ(e.pool_used_bytes(), 0u);
  EXPECT_EQ(h.log().Find("wf/c")->size(), 79u) << "a discard keeps the token ids (recompute)";
}

TEST(CpuEngineTest, OutputIsTheSameAloneAndInABatchOfMixedSequences) {
  std::vector<int32_t> alone;
  {
    EngineHarness h(1, 64);
    ASSERT_TRUE(h.engine().Admit(Call("wf/n1", "wf/c", 0, true, 100, 16)).ok());
    ASSERT_TRUE(h.Finish({"wf/n1"}));
    alone = h.out("wf/n1");
  }
  ASSERT_EQ(alone.size(), 16u);
  EngineHarness h(1, 40);  // a smaller budget: other chunk boundaries too
  std::set<std::string> keys{"wf/n1"};
  for (int i = 0; i < 7; ++i) {
    std::string k = "other/n" + std::to_string(i);
    ASSERT_TRUE(
        h.engine().Admit(Call(k, "other/c" + std::to_string(i), 0, true, 5 + 23 * i, 20)).ok());
    keys.insert(k);
  }
  ASSERT_TRUE(h.engine().Admit(Call("wf/n1", "wf/c", 0, true, 100, 16)).ok());
  ASSERT_TRUE(h.Finish(keys));
  EXPECT_EQ(h.out("wf/n1"), alone);
}

// CacheRef.keep_tokens on this engine: a call that continues its context from the first
// 70 tokens (dropping the 9 tokens the first call decoded) gives exactly what one call
// over the same 100 tokens gives from scratch: the KV of the kept positions is reused, the
// dropped blocks go back to the pool, and the token log is cut with them.
TEST(CpuEngineTest, ContinuingFromAKeptPrefixEqualsComputingThatTextFromScratch) {
  std::vector<int32_t> fresh;
  {
    EngineHarness h;
    ASSERT_TRUE(h.engine().Admit(Call("wf/all", "wf/c", 0, true, 100, 12)).ok());
    ASSERT_TRUE(h.Finish({"wf/all"}));
    fresh = h.out("wf/all");
  }
  ASSERT_EQ(fresh.size(), 12u);
  EngineHarness h;
  int64_t held = FirstCall(h);  // 70 + 9
  ASSERT_EQ(held, 79);
  executors::SequenceSpec cut = Call("wf/n2", "wf/c", 70, true, 30, 12);
  cut.contexts[0].keep_only = true;
  ASSERT_TRUE(h.engine().Admit(cut).ok());
  EXPECT_EQ(h.engine().context_tokens("wf/c"), 100);
  ASSERT_TRUE(h.Finish({"wf/n2"}));
  EXPECT_TRUE(h.status("wf/n2").ok()) << h.status("wf/n2").ToString();
  EXPECT_EQ(h.out("wf/n2"), fresh);
}

TEST(CpuEngineTest, DiscardThenRecomputeContinuesIdentically) {
  std::vector<int32_t> ref = ReferenceTokens();
  ASSERT_EQ(ref.size(), 12u);
  EngineHarness h;
  int64_t held = FirstCall(h);
  ASSERT_TRUE(h.engine().Release("wf/c").ok());
  Scribble(h);
  EXPECT_EQ(SecondCall(h, held, /*resident=*/false), ref);
}

// A BlockManager with a host arena and a RocksDB disk tier, and a TieredKvMover whose HBM
// locations are the harness's engines.
class MoverRig {
 public:
  // `remote`: a tier in another process (Location{kHost, worker 1} maps to it).
  explicit MoverRig(EngineHarness& h, std::unique_ptr<kv_tiers::Tier> remote = nullptr)
      : h_(h), remote_(std::move(remote)) {
    kv_tiers::TierOptions o;
    o.slot_bytes = layout_.bytes_per_block();
    o.capacity_bytes = 256 * o.slot_bytes;
    host_ = kv_tiers::ArenaTier::Create(o, kv_tiers::HostBackend()).value();
    dir_ = std::filesystem::temp_directory_path() /
           ("sy_cpu_engine_disk_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    o.path = dir_.string();
    disk_ = kv_tiers::DiskTier::Open(o, kv_tiers::DiskTierTuning{}).value();
    kv_tiers::MoverEnv env;
    env.loop = &h.loop();
    kv_tiers::MoverSet movers;
    movers.Add(std::make_shared<kv_tiers::LocalMover>(env), 10);
    kv_tiers::BlockManagerOptions bo;
    bo.reclaim_on_high_watermark = false;
    mgr_ = std::make_unique<kv_tiers::BlockManager>(layout_, &h.loop(), std::move(movers), nullptr,
                                                    bo);
    EXPECT_TRUE(mgr_->AddTier(host_.get()).ok());
    EXPECT_TRUE(mgr_->AddTier(disk_.get()).ok());
    if (remote_) {
      EXPECT_TRUE(mgr_->AddTier(remote_.get()).ok());
    }
    executors::TieredKvMover::Options mo;
    mo.tier_of = [this](const Location& l) -> Result<std::string> {
      if (l.tier == scheduler::Tier::kHost && l.worker == 1 && remote_) return remote_->name();
      if (l.tier == scheduler::Tier::kHost) return host_->name();
      if (l.tier == scheduler::Tier::kDisk) return disk_->name();
      return Status::NotFound("no tier for " + scheduler::LocationString(l));
    };
    mo.engine_kv = [this](const Location& l) -> executors::EngineKv* {
      bool pool = l.tier == scheduler::Tier::kHbm || l.tier == scheduler::Tier::kPeer;
      return pool ? &h_.engine(l.worker) : nullptr;
    };
    mover_ = std::make_unique<executors::TieredKvMover>(&h.loop(), mgr_.get(), mo);
  }
  ~MoverRig() {
    mover_.reset();
    mgr_.reset();
    disk_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Carries out a move as the runtime does: the destination engine reserves its blocks,
  // then the mover copies; the source engine's blocks go once it committed.
  Status Move(Location src, Location dst) {
    Command c{
        .kind = dst.tier == scheduler::Tier::kHbm ? CommandKind::kPrefetch : CommandKind::kDemote,
        .workflow_id = "wf",
        .context = "wf/c",
        .src = src,
        .dst = dst,
        .bytes = 1,
        .transfer_id = ++id_};
    bool to_pool = dst.tier == scheduler::Tier::kHbm;
    if (to_pool) {
      EXPECT_TRUE(h_.engine(dst.worker).Import("wf/c", tokens_).ok());
    }
    std::optional<Status> result;
    mover_->Move(c, [&](Status st) { result = st; });
    h_.RunUntil([&] { return result.has_value(); });
    Status st = result.value_or(Status::DeadlineExceeded("move never reported"));
    if (st.ok() && src.tier == scheduler::Tier::kHbm) {
      EXPECT_TRUE(h_.engine(src.worker).Release("wf/c").ok());
    }
    if (!st.ok() && to_pool) {
      EXPECT_TRUE(h_.engine(dst.worker).Release("wf/c").ok());
    }
    return st;
  }
  void set_tokens(int64_t t) { tokens_ = t; }
  kv_tiers::BlockManager& manager() { return *mgr_; }
  executors::TieredKvMover& mover() { return *mover_; }

 private:
  EngineHarness& h_;
  kv_tiers::KvLayout layout_ =
      kv_tiers::KvLayout::FromModelConfig(ToModelConfig(TinyModel().shape()), kBlockTokens).value();
  std::unique_ptr<kv_tiers::Tier> remote_, host_, disk_;
  std::filesystem::path dir_;
  std::unique_ptr<kv_tiers::BlockManager> mgr_;
  std::unique_ptr<executors::TieredKvMover> mover_;
  uint64_t id_ = 0;
  int64_t tokens_ = 0;
};

const Location kPool0{scheduler::Tier::kHbm, 0};
const Location kPool1{scheduler::Tier::kHbm, 1};
const Location kHost{scheduler::Tier::kHost, 0};
const Location kDisk{scheduler::Tier::kDisk, 0};

TEST(CpuEngineTest, DemoteToHostThenPrefetchContinuesIdentically) {
  std::vector<int32_t> ref = ReferenceTokens();
  EngineHarness h;
  MoverRig rig(h);
  int64_t held = FirstCall(h);
  std::vector<char> before = KvBytes(h.engine(), "wf/c");
  rig.set_tokens(held);
  ASSERT_TRUE(rig.Move(kPool0, kHost).ok());
  EXPECT_EQ(h.engine().context_tokens("wf/c"), -1) << "demoted: the pool freed it";
  EXPECT_EQ(h.engine().pool_used_bytes(), 0u);
  EXPECT_GT(rig.mover().real_bytes_by_destination().at(rig.mover().TierOf("wf/c")), 0u);
  Scribble(h);
  ASSERT_TRUE(rig.Move(kHost, kPool0).ok());
  EXPECT_EQ(h.engine().valid_tokens("wf/c"), held - 1);
  EXPECT_TRUE(KvBytes(h.engine(), "wf/c") == before) << "the restored KV differs";
  EXPECT_EQ(SecondCall(h, held, true), ref);
}

TEST(CpuEngineTest, DemoteToDiskThenPrefetchContinuesIdentically) {
  std::vector<int32_t> ref = ReferenceTokens();
  EngineHarness h;
  MoverRig rig(h);
  int64_t held = FirstCall(h);
  std::vector<char> before = KvBytes(h.engine(), "wf/c");
  rig.set_tokens(held);
  ASSERT_TRUE(rig.Move(kPool0, kDisk).ok());
  EXPECT_EQ(rig.mover().TierOf("wf/c"), "disk");
  Scribble(h);
  ASSERT_TRUE(rig.Move(kDisk, kPool0).ok());
  EXPECT_TRUE(KvBytes(h.engine(), "wf/c") == before) << "the restored KV differs";
  EXPECT_EQ(SecondCall(h, held, true), ref);
}

// A KV store in a worker process (`switchyard worker`): the blocks cross a socket (UCX over TCP
// loopback) into another process's memory, committed there under the commit rule.
TEST(CpuEngineTest, DemoteToAPeerWorkerProcessThenPrefetchContinuesIdentically) {
  namespace kv_store = kv_store;
  if (!kv_store::testing::HaveSwitchyardBinary())
    GTEST_SKIP() << kv_store::testing::SwitchyardBinary() << " is not built";
  std::vector<int32_t> ref = ReferenceTokens();
  const uint64_t bpb = kBlockTokens * TinyModel().shape().kv_bytes_per_token();  // one KV block
  kv_store::testing::WorkerProcess worker;
  ASSERT_TRUE(worker.Start("127.0.0.1:0", "tcp", "", std::to_string(64 * bpb)));
  kv_tiers::TierOptions o;
  o.capacity_bytes = 64 * bpb;
  o.slot_bytes = bpb;
  kv_store::KvStoreClientOptions client;
  client.transport_config.params["TLS"] = "tcp";
  auto remote = kv_tiers::remote::KvStoreTier::Connect(worker.address(), o, client);
  ASSERT_TRUE(remote.ok()) << remote.status();
  EngineHarness h;
  MoverRig rig(h, std::move(*remote));
  int64_t held = FirstCall(h);
  std::vector<char> before = KvBytes(h.engine(), "wf/c");
  rig.set_tokens(held);
  const Location peer{scheduler::Tier::kHost, 1};
  ASSERT_TRUE(rig.Move(kPool0, peer).ok());
  EXPECT_EQ(rig.mover().TierOf("wf/c").rfind("peer:", 0), 0u) << rig.mover().TierOf("wf/c");
  Scribble(h);
  ASSERT_TRUE(rig.Move(peer, kPool0).ok());
  EXPECT_TRUE(KvBytes(h.engine(), "wf/c") == before) << "the KV back from the peer differs";
  EXPECT_EQ(SecondCall(h, held, true), ref);
}

TEST(CpuEngineTest, MoveToAnotherWorkersPoolContinuesIdentically) {
  std::vector<int32_t> ref = ReferenceTokens();
  EngineHarness h(2);
  MoverRig rig(h);
  int64_t held = FirstCall(h, 0);
  std::vector<char> before = KvBytes(h.engine(0), "wf/c");
  rig.set_tokens(held);
  Scribble(h, 1);
  ASSERT_TRUE(rig.Move(kPool0, kPool1).ok());
  EXPECT_EQ(h.engine(0).context_tokens("wf/c"), -1);
  EXPECT_TRUE(KvBytes(h.engine(1), "wf/c") == before) << "the moved KV differs";
  EXPECT_EQ(SecondCall(h, held, true, /*worker=*/1), ref);
}

TEST(CpuEngineTest, AnEpochBumpMakesMovedBlocksUnreadableAndForcesRecompute) {
  std::vector<int32_t> ref = ReferenceTokens();
  EngineHarness h;
  MoverRig rig(h);
  int64_t held = FirstCall(h);
  rig.set_tokens(held);
  ASSERT_TRUE(rig.Move(kPool0, kHost).ok());
  rig.manager().BumpModelEpoch();
  Scribble(h);
  Status st = rig.Move(kHost, kPool0);
  EXPECT_FALSE(st.ok()) << "a block of the old epoch must not be read";
  EXPECT_EQ(h.engine().context_tokens("wf/c"), -1) << "the failed prefetch released its blocks";
  EXPECT_EQ(SecondCall(h, held, /*resident=*/false), ref);
}

TEST(CpuEngineTest, PromptTokenIdsAreUsedAndChecked) {
  EngineHarness h;
  executors::SequenceSpec s = Call("wf/n1", "wf/c", 0, true, 4, 3);
  s.prompt_token_ids = {1, 2, 3};
  Status st = h.engine().Admit(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("3 prompt token ids for 4 new tokens"), std::string::npos);
  s.prompt_token_ids = {1, 2, 3, 100000};
  st = h.engine().Admit(s);
  EXPECT_NE(st.message().find("outside the model's vocabulary"), std::string::npos);
  EXPECT_EQ(h.engine().blocks_used(), 0) << "a refused admission allocates nothing";
  s.prompt_token_ids = {72, 105, 33, 10};
  ASSERT_TRUE(h.engine().Admit(s).ok());
  ASSERT_TRUE(h.Finish({"wf/n1"}));
  const std::vector<int32_t>& l = *h.log().Find("wf/c");
  ASSERT_EQ(l.size(), 7u);
  EXPECT_EQ(std::vector<int32_t>(l.begin(), l.begin() + 4), s.prompt_token_ids);
  EXPECT_EQ(std::vector<int32_t>(l.begin() + 4, l.end()), h.out("wf/n1"));
}

// The restore tests compare continuations: they mean something only if a continuation
// depends on the whole context, not just the last token (random weights included).
TEST(CpuEngineTest, ContinuationsDependOnTheEarlierContext) {
  auto run = [](int32_t first) {
    EngineHarness h;
    executors::SequenceSpec s = Call("wf/n1", "wf/c", 0, true, 40, 12);
    for (int i = 0; i < 40; ++i) s.prompt_token_ids.push_back(i < 30 ? first + i : 100 + i);
    EXPECT_TRUE(h.engine().Admit(s).ok());
    EXPECT_TRUE(h.Finish({"wf/n1"}));
    return h.out("wf/n1");
  };
  EXPECT_NE(run(10), run(50));
}

TEST(CpuEngineTest, SeededSamplingIsReproducibleAndGreedyIsNotSampling) {
  auto run = [](double temperature, uint64_t seed) {
    EngineHarness h;
    executors::SequenceSpec s = Call("wf/n1", "wf/c", 0, true, 20, 16);
    s.temperature = temperature;
    s.sampling_seed = seed;
    EXPECT_TRUE(h.engine().Admit(s).ok());
    EXPECT_TRUE(h.Finish({"wf/n1"}));
    return h.out("wf/n1");
  };
  EXPECT_EQ(run(1.0, 7), run(1.0, 7));
  EXPECT_NE(run(1.5, 7), run(1.5, 8));
  EXPECT_EQ(run(0.0, 7), run(0.0, 8));
}

// A model with several stop ids ends a sequence at whichever of them it emits first.
TEST(CpuEngineTest, StopsAtAnyOfTheModelsEosIds) {
  auto run = [](const Model* m, bool stop) {
    EngineHarness h(1, 64, 256, m);
    executors::SequenceSpec s = Call("wf/n1", "wf/c", 0, true, 20, 16);
    s.stop_at_eos = stop;
    EXPECT_TRUE(h.engine().Admit(s).ok());
    EXPECT_TRUE(h.Finish({"wf/n1"}));
    return h.out("wf/n1");
  };
  const std::vector<int32_t> free_run = run(&TinyModel(), false);
  ASSERT_EQ(free_run.size(), 16u);
  // The first token from the third on that did not occur before: a second stop id.
  size_t k = 2;
  while (k < free_run.size() &&
         std::find(free_run.begin(), free_run.begin() + k, free_run[k]) != free_run.begin() + k)
    ++k;
  ASSERT_LT(k, free_run.size()) << "greedy output repeats itself from the start";
  ModelShape s = TinyModel().shape();
  ASSERT_FALSE(s.IsEos(free_run[k]));
  s.eos_ids = {s.eos_id, free_run[k]};
  auto m = Model::Random(s);  // the same seed: the same weights
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(run(m->get(), false), free_run) << "stop ids do not change the computation";
  const std::vector<int32_t> stopped = run(m->get(), true);
  EXPECT_EQ(stopped, std::vector<int32_t>(free_run.begin(), free_run.begin() + k + 1));
}

}  // namespace
}  // namespace switchyard::cpu_engine
