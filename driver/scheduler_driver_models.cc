// SchedulerDriver's served models: one group per model — its cost model, KV layout, tiers,
// block manager, engines and mover — and the names nodes use for them.
#include <algorithm>
#include <filesystem>
#include <set>

#include "base/asio_event_loop.h"
#include "base/logging.h"
#include "cpu_engine/cpu_engine.h"
#include "cpu_engine/cpu_step_runner.h"
#include "cpu_engine/tokenizer.h"
#include "driver/report_waiter.h"
#include "driver/scheduler_driver.h"
#include "executors/model_cost.h"
#include "executors/runtime.h"
#include "executors/simulated_engine.h"
#include "executors/step_cost.h"
#include "executors/tiered_mover.h"
#include "kv_tiers/arena_tier.h"
#include "kv_tiers/block_manager.h"
#include "kv_tiers/disk_tier.h"
#include "kv_tiers/eviction.h"
#include "kv_tiers/local_mover.h"

namespace switchyard::driver {

using scheduler::Command;
using scheduler::Location;
using scheduler::Tier;

namespace {

// The BlockManager never evicts on its own: the scheduler decides what leaves a tier, and
// a block evicted behind the TieredKvMover's back would fail that context's next move. A
// full emulated tier fails the move instead (the core handles the failure).
class NoEviction final : public kv_tiers::EvictionPolicy {
 public:
  void Insert(const kv_tiers::EvictionCandidate&) override {}
  void Touch(BlockId) override {}
  void Remove(BlockId) override {}
  std::vector<BlockId> PickVictims(const std::string&, const std::string&, uint64_t) override {
    return {};
  }
  void SetPriorityFn(kv_tiers::PriorityFn) override {}
};

// Slots an emulated tier gets beyond its scaled capacity: each context's copy is rounded up
// to whole blocks, at most one block more than its scaled bytes.
constexpr uint64_t kSlackBlocks = 64;

// The runtime's one KvMover: each move goes to the mover of its workers' model (a context's
// KV stays on its model's workers, so a move's source and destination are in one group).
class GroupMover final : public executors::KvMover {
 public:
  GroupMover(std::function<executors::TieredKvMover*(int worker)> of,
             std::vector<executors::TieredKvMover*> all)
      : of_(std::move(of)), all_(std::move(all)) {}
  void Move(const Command& move, std::function<void(Status)> done) override {
    executors::TieredKvMover* m = of_(move.src.worker >= 0 ? move.src.worker : move.dst.worker);
    if (!m) {
      done(Status::NotFound("no model's workers hold " + scheduler::LocationString(move.src)));
      return;
    }
    m->Move(move, std::move(done));
  }
  bool Cancel(uint64_t transfer_id) override {
    for (executors::TieredKvMover* m : all_)
      if (m->Cancel(transfer_id)) return true;
    return false;
  }
  void Discard(const std::string& context) override {
    for (executors::TieredKvMover* m : all_) m->Discard(context);
  }

 private:
  std::function<executors::TieredKvMover*(int)> of_;
  std::vector<executors::TieredKvMover*> all_;
};

std::string ModelField(size_t i) { return "models[" + std::to_string(i) + "]"; }

}  // namespace

SchedulerDriver::Group::Group() = default;
SchedulerDriver::Group::~Group() = default;

Status SchedulerDriver::MakeGroups() {
  SchedulerConfig& c = config_;
  std::vector<ServedModelSpec> specs(1);
  ServedModelSpec& first = specs[0];
  first.id = c.model_id;
  first.aliases = c.model_aliases;
  first.engine = c.engine;
  first.model_path = c.model_path;
  first.weight_dtype = c.cpu_weight_dtype;
  first.kv_dtype = c.cpu_kv_dtype;
  first.kv_pool_bytes = c.kv_pool_bytes;
  first.kv_offload_bytes = c.kv_offload_bytes;
  first.prefix_caching = c.cpu_prefix_caching;
  first.step_table = c.step_table;
  first.model_config = c.model_config;
  first.gpu = c.gpu;
  first.workers = c.workers;
  first.hbm_bytes_per_worker = c.hbm_bytes_per_worker;
  specs.insert(specs.end(), c.extra_models.begin(), c.extra_models.end());
  std::map<std::string, size_t> names;  // every id and alias -> its model
  int next = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto g = std::make_unique<Group>();
    g->spec = specs[i];
    g->first = next;
    g->kv_bytes_scale = c.kv_bytes_scale;
    if (g->spec.workers < 1)
      return Status::InvalidArgument(ModelField(i) + ".workers must be >= 1");
    SY_ASSIGN_OR_RETURN(g->impl,
                        EngineRegistry::Builtin().Find(g->spec.engine, ModelField(i) + ".engine"));
    g->kind = g->impl->kind;
    // The first model's engines share the token log of what engine_factory makes.
    std::shared_ptr<cpu_engine::TokenLog> log = i == 0 ? c.cpu_token_log : nullptr;
    SY_RETURN_IF_ERROR(g->impl->load(&g->spec, log, g.get()).Annotate(ModelField(i)));
    std::vector<std::string> own = {g->spec.id};
    own.insert(own.end(), g->spec.aliases.begin(), g->spec.aliases.end());
    for (const std::string& n : own) {
      auto [it, fresh] = names.emplace(n, i);
      if (!fresh && it->second != i)
        return Status::InvalidArgument(ModelField(i) + ": the name '" + n + "' is also " +
                                       ModelField(it->second) + "'s");
    }
    next += g->spec.workers;
    group_of_.insert(group_of_.end(), static_cast<size_t>(g->spec.workers), static_cast<int>(i));
    any_computes_ |= g->computes();
    groups_.push_back(std::move(g));
  }
  // The first model's resolved figures, for readers of config().
  const Group& g0 = *groups_[0];
  c.model_id = g0.spec.id;
  c.hbm_bytes_per_worker = g0.spec.hbm_bytes_per_worker;
  c.kv_bytes_scale = g0.kv_bytes_scale;
  return Status::OK();
}

Status SchedulerDriver::MakeGroupTiers(Group& g, const std::string& kv_dir) {
  const SchedulerConfig& c = config_;
  SY_ASSIGN_OR_RETURN(kv_tiers::KvLayout layout,
                      kv_tiers::KvLayout::FromModelConfig(
                          g.model, static_cast<uint32_t>(std::max<int64_t>(1, c.kv_block_tokens))));
  const uint64_t bpb = layout.bytes_per_block(), scale = g.kv_bytes_scale;
  auto tier_options = [&](uint64_t bytes) {
    kv_tiers::TierOptions o;
    o.slot_bytes = bpb;
    o.capacity_bytes = ((bytes / scale + bpb - 1) / bpb + kSlackBlocks) * bpb;
    return o;
  };
  const bool first = &g == groups_[0].get();
  std::vector<kv_tiers::Tier*> mine;
  for (int w = g.first; w < g.first + g.spec.workers; ++w) {
    std::unique_ptr<kv_tiers::Tier> hbm;
    if (c.hbm_tier_factory && first) {
      SY_ASSIGN_OR_RETURN(hbm, c.hbm_tier_factory(w, tier_options(g.spec.hbm_bytes_per_worker)));
    }
    if (!hbm && g.computes()) continue;  // its computing engine's own pool (MakeEngines)
    if (!hbm) {
      kv_tiers::ArenaBackend b = kv_tiers::EmulatedHbmBackend();
      b.name += "-w" + std::to_string(w);
      SY_ASSIGN_OR_RETURN(
          hbm, kv_tiers::ArenaTier::Create(tier_options(g.spec.hbm_bytes_per_worker), b));
    }
    workers_[static_cast<size_t>(w)].hbm = hbm.get();
    mine.push_back(hbm.get());
    hbm_tiers_.push_back(std::move(hbm));
  }
  SY_ASSIGN_OR_RETURN(g.host_tier, kv_tiers::ArenaTier::Create(tier_options(g.host_bytes),
                                                               kv_tiers::HostBackend()));
  std::error_code ec;
  std::filesystem::remove_all(kv_dir, ec);  // emulated KV does not survive a restart
  if (ec) return Status::Internal("cannot clear " + kv_dir + ": " + ec.message());
  kv_tiers::TierOptions disk_opts = tier_options(g.disk_bytes);
  disk_opts.path = kv_dir;
  kv_tiers::DiskTierTuning tuning;
  tuning.write_buffer_bytes = 8ULL << 20;
  tuning.block_cache_bytes = 8ULL << 20;
  SY_ASSIGN_OR_RETURN(g.disk_tier, kv_tiers::DiskTier::Open(disk_opts, tuning));
  kv_tiers::MoverEnv menv;
  menv.loop = loop_;
  menv.worker_threads = 1;
  kv_tiers::MoverSet movers;
  movers.Add(std::make_shared<kv_tiers::LocalMover>(menv), 10);
  movers.Add(std::make_shared<kv_tiers::DiskMover>(menv), 5);
  // A joined worker's KV store (hbm_tier_factory's remote tiers) <-> the host tier,
  // and between two of them (a peer move: ordered directly when add_movers gives a mover
  // for it, else staged here) or one and the disk tier (staged here).
  if (c.hbm_tier_factory && first) {
    movers.Add(std::make_shared<kv_tiers::PeerMover>(menv), 5);
    movers.Add(std::make_shared<kv_tiers::RelayMover>(menv), 1);
    if (c.add_movers) c.add_movers(menv, &movers);
  }
  kv_tiers::BlockManagerOptions bo;
  bo.reclaim_on_high_watermark = false;
  g.blocks = std::make_unique<kv_tiers::BlockManager>(std::move(layout), loop_, std::move(movers),
                                                      std::make_unique<NoEviction>(), bo);
  for (kv_tiers::Tier* t : mine) SY_RETURN_IF_ERROR(g.blocks->AddTier(t));
  SY_RETURN_IF_ERROR(g.blocks->AddTier(g.host_tier.get()));
  SY_RETURN_IF_ERROR(g.blocks->AddTier(g.disk_tier.get()));
  ApplyTenantQuotas(g);
  return Status::OK();
}

// Each tenant's quotas on the group's tiers, scaled like the tiers (whole blocks, at least
// one). Quotas are per tier: each model's tiers get the configured quota.
void SchedulerDriver::ApplyTenantQuotas(Group& g) {
  const uint64_t scale = g.kv_bytes_scale, bpb = g.blocks->layout().bytes_per_block();
  auto scaled = [&](uint64_t b) {
    return b == 0 ? 0 : std::max<uint64_t>(1, b / scale / bpb) * bpb;
  };
  for (const auto& [tenant, q] : config_.tenant_quotas) {
    for (int w = g.first; w < g.first + g.spec.workers; ++w)
      if (kv_tiers::Tier* hbm = HbmOf(w)) hbm->SetTenantQuota(tenant, scaled(q.hbm));
    if (q.hbm && g.computes())
      Log(LogLevel::kWarn, "tenant HBM quota not enforced on the cpu engines' own pools",
          LogKeys().With("tenant", tenant).With("model_id", g.spec.id));
    g.host_tier->SetTenantQuota(tenant, scaled(q.host));
    g.disk_tier->SetTenantQuota(tenant, scaled(q.disk));
  }
}

executors::EngineLimits SchedulerDriver::LimitsOf(const Group& g) const {
  const SchedulerConfig& c = config_;
  executors::EngineLimits limits;
  limits.max_num_seqs = c.max_num_seqs;
  limits.max_num_batched_tokens = c.max_num_batched_tokens;
  limits.block_tokens = c.kv_block_tokens;
  limits.pool_blocks =
      static_cast<int64_t>(g.spec.hbm_bytes_per_worker /
                           (static_cast<uint64_t>(c.kv_block_tokens) * g.cost->KvBytesPerToken()));
  return limits;
}

Status SchedulerDriver::MakeEngines() {
  const SchedulerConfig& c = config_;
  auto early = std::make_shared<ReportedEngine::EarlyReports>();
  for (auto& gp : groups_) {
    Group& g = *gp;
    const bool first = &g == groups_[0].get();
    const executors::EngineLimits limits = LimitsOf(g);
    for (int w = g.first; w < g.first + g.spec.workers; ++w) {
      EngineWorker& slot = workers_[static_cast<size_t>(w)];
      if (c.engine_factory && first) {  // the embedder's own engines (the first model's)
        SY_ASSIGN_OR_RETURN(WorkerEngine we, c.engine_factory(loop_, w, limits));
        slot.kv = we.kv;
        slot.remote_kv = we.remote_kv;
        if (we.engine) {
          slot.engine = std::move(we.engine);
          continue;
        }  // no engine: the driver's own for this worker (below)
      }
      if (!c.engines_run_llm) {
        auto e = std::make_unique<ReportedEngine>(loop_, w, limits, early);
        slot.reported = e.get();
        reported_.push_back(e.get());
        slot.engine = std::move(e);
        continue;
      }
      SY_ASSIGN_OR_RETURN(EngineWorker made, g.impl->make(loop_, w, limits, g));
      slot.engine = std::move(made.engine);
      if (made.hbm) slot.hbm = made.hbm;
      if (made.kv) slot.kv = made.kv;
    }
  }
  return Status::OK();
}

Status SchedulerDriver::MakeMover() {
  const SchedulerConfig& c = config_;
  std::vector<executors::TieredKvMover*> all;
  for (auto& gp : groups_) {
    Group& g = *gp;
    executors::TieredKvMover::Options mo;
    mo.tier_of = [this](const Location& l) -> Result<std::string> {
      std::string name = TierName(l);
      if (name.empty())
        return Status::NotFound("no emulated tier for " + scheduler::LocationString(l));
      return name;
    };
    mo.bytes_scale = g.kv_bytes_scale;
    // Joined workers' stores: the fill is staged in the host arena and moved there off the
    // scheduler's thread.
    if (c.hbm_tier_factory && &g == groups_[0].get()) mo.fill_staging_tier = g.host_tier->name();
    mo.tenant_of = [this](const std::string& wf) -> std::string {
      auto it = tenant_of_.find(wf);
      return it == tenant_of_.end() ? std::string() : it->second;
    };
    // A worker's pool, for moves to and from its HBM (or a peer's): the embedder's
    // registered pools and computing engines' pools in this process; joined computing
    // workers' pools through their KV stores.
    auto slot_of = [this](const Location& l) -> const EngineWorker* {
      bool pool = l.tier == Tier::kHbm || l.tier == Tier::kPeer;
      return pool && l.worker >= 0 && l.worker < total_workers()
                 ? &workers_[static_cast<size_t>(l.worker)]
                 : nullptr;
    };
    mo.engine_kv = [slot_of](const Location& l) -> executors::EngineKv* {
      const EngineWorker* s = slot_of(l);
      return s ? s->kv : nullptr;
    };
    mo.remote_kv = [slot_of](const Location& l) -> executors::RemoteEngineKv* {
      const EngineWorker* s = slot_of(l);
      return s ? s->remote_kv.get() : nullptr;
    };
    g.mover = std::make_unique<executors::TieredKvMover>(loop_, g.blocks.get(), mo);
    all.push_back(g.mover.get());
  }
  mover_ = std::make_unique<GroupMover>(
      [this](int w) -> executors::TieredKvMover* {
        return w >= 0 && w < total_workers() ? GroupOf(w).mover.get() : nullptr;
      },
      std::move(all));
  return Status::OK();
}

SchedulerDriver::Group& SchedulerDriver::GroupOf(int worker) const {
  return *groups_[static_cast<size_t>(group_of_[static_cast<size_t>(worker)])];
}

const SchedulerDriver::Group* SchedulerDriver::FindGroup(const std::string& model_id) const {
  if (model_id.empty()) return groups_.empty() ? nullptr : groups_[0].get();
  for (const auto& g : groups_) {
    if (g->spec.id == model_id) return g.get();
    for (const auto& a : g->spec.aliases)
      if (a == model_id) return g.get();
  }
  return nullptr;
}

std::string SchedulerDriver::model_name() const { return config_.model_id; }

std::vector<std::string> SchedulerDriver::model_ids() const {
  std::vector<std::string> out;
  for (const auto& g : groups_) out.push_back(g->spec.id);
  return out;
}

Result<std::string> SchedulerDriver::ResolveModel(const std::string& model_id) const {
  if (const Group* g = FindGroup(model_id)) return g->spec.id;
  std::string served;
  for (const auto& g : groups_) {
    served += (served.empty() ? "'" : ", '") + g->spec.id + "'";
    for (const auto& a : g->spec.aliases) served += ", '" + a + "'";
  }
  return Status::InvalidArgument("modelId '" + model_id +
                                 "' is not served here (served: " + served + ")");
}

const cpu_engine::Model* SchedulerDriver::cpu_model(const std::string& model_id) const {
  const Group* g = FindGroup(model_id);
  return g ? g->cpu_model.get() : nullptr;
}

const cpu_engine::Tokenizer* SchedulerDriver::tokenizer(const std::string& model_id) const {
  const Group* g = FindGroup(model_id);
  return g ? g->tokenizer.get() : nullptr;
}

}  // namespace switchyard::driver
