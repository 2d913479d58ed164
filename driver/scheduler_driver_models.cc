// SchedulerDriver's served models: one group per model — its cost model, KV layout, tiers,
// block manager, engines and mover — and the names nodes use for them.
#include <algorithm>
#include <filesystem>
#include <set>

#include "base/asio_event_loop.h"
#include "base/logging.h"
#include "driver/report_waiter.h"
#include "driver/scheduler_driver.h"
#include "executors/cpu/cpu_engine.h"
#include "executors/cpu/cpu_step_runner.h"
#include "executors/cpu/tokenizer.h"
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

// Embedded default model: Llama-3.1-8B (configs/models/llama-3.1-8b.json) on an H100-SXM
// (configs/gpus/h100.json), priced by the roofline of executors/model_cost.h; the KV
// layout of the emulated tiers is the same model's.
v1::ModelConfig DefaultModel() {
  v1::ModelConfig m;
  m.set_name("Llama-3.1-8B");
  m.set_num_layers(32);
  m.set_num_kv_heads(8);
  m.set_head_dim(128);
  m.set_kv_dtype(v1::BF16);
  m.set_hidden_size(4096);
  m.set_num_attention_heads(32);
  m.set_intermediate_size(14336);
  m.set_vocab_size(128256);
  m.set_num_parameters(8030261248ULL);
  m.set_tensor_parallel(1);
  return m;
}

// The embedded default GPU: an H100-SXM (configs/gpus/h100.json).
v1::GpuSpec DefaultGpu() {
  v1::GpuSpec g;
  g.set_name("H100-SXM");
  g.set_hbm_bytes(80000000000ULL);
  g.set_hbm_bandwidth_bytes_per_s(3.35e12);
  g.set_bf16_flops(9.89e14);
  g.set_pcie_bandwidth_bytes_per_s(5.0e10);
  g.set_nvlink_bandwidth_bytes_per_s(9.0e11);
  g.set_nic_bandwidth_bits_per_s(4.0e11);
  g.set_compute_efficiency(0.6);
  g.set_memory_efficiency(0.8);
  return g;
}

// What the core's estimates assume of this machine's CPU when the CPU engine runs the
// model (rough figures of a 2-core VM: the core only ranks choices with them).
v1::GpuSpec CpuSpec(uint64_t pool_bytes) {
  v1::GpuSpec g;
  g.set_name("cpu (this machine, rough figures for the scheduler's estimates)");
  g.set_hbm_bytes(pool_bytes);
  g.set_hbm_bandwidth_bytes_per_s(1.0e10);
  g.set_bf16_flops(5.0e10);
  g.set_pcie_bandwidth_bytes_per_s(5.0e9);
  g.set_nvlink_bandwidth_bytes_per_s(5.0e9);
  g.set_nic_bandwidth_bits_per_s(1.0e10);
  g.set_compute_efficiency(0.5);
  g.set_memory_efficiency(0.5);
  return g;
}

// HBM left for KV on one worker: the GPU's HBM less its share of the model's BF16 weights.
Result<uint64_t> KvHbmBytes(const v1::ModelConfig& m, const v1::GpuSpec& g) {
  uint64_t tp = std::max<uint32_t>(1, m.tensor_parallel());
  uint64_t weights = m.num_parameters() * 2 / tp;
  if (g.hbm_bytes() <= weights)
    return Status::InvalidArgument("GPU '" + g.name() + "' has " + std::to_string(g.hbm_bytes()) +
                                   " B of HBM, not more than model '" + m.name() +
                                   "''s BF16 weights (" + std::to_string(weights) +
                                   " B per GPU); set hbmBytesPerWorker or a larger GPU");
  return g.hbm_bytes() - weights;
}

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

v1::ModelConfig EmbeddedDefaultModel() { return DefaultModel(); }
v1::GpuSpec EmbeddedDefaultGpu() { return DefaultGpu(); }

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
  first.kv_pool_bytes = c.kv_pool_bytes;
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
    if (g->spec.engine != "simulated" && g->spec.engine != "cpu")
      return Status::InvalidArgument(ModelField(i) + ".engine must be 'simulated' or 'cpu', got '" +
                                     g->spec.engine + "'");
    SY_RETURN_IF_ERROR(LoadModel(*g).Annotate(ModelField(i)));
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
    any_cpu_ |= g->cpu();
    groups_.push_back(std::move(g));
  }
  // The first model's resolved figures, for readers of config().
  const Group& g0 = *groups_[0];
  c.model_id = g0.spec.id;
  c.hbm_bytes_per_worker = g0.spec.hbm_bytes_per_worker;
  c.kv_bytes_scale = g0.kv_bytes_scale;
  return Status::OK();
}

Status SchedulerDriver::LoadModel(Group& g) {
  ServedModelSpec& s = g.spec;
  if (g.cpu()) {
    auto m = executors::cpu::Model::Load(s.model_path);
    if (!m.ok()) return m.status().Annotate("--model " + s.model_path);
    g.cpu_model = std::move(*m);
    const bool first = groups_.empty();  // LoadModel runs before the group joins groups_
    g.token_log = first && config_.cpu_token_log ? config_.cpu_token_log
                                                 : std::make_shared<executors::cpu::TokenLog>();
    g.model = executors::cpu::ToModelConfig(g.cpu_model->shape());
    if (s.id.empty()) s.id = g.cpu_model->shape().name;  // without "(random ...)"
    auto tok = executors::cpu::LoadTokenizer(s.model_path, g.cpu_model->shape());
    if (!tok.ok()) return tok.status().Annotate("--model " + s.model_path);
    g.tokenizer = std::move(*tok);
    g.kv_bytes_scale = 1;  // real bytes
    s.hbm_bytes_per_worker = s.kv_pool_bytes;
    SY_ASSIGN_OR_RETURN(auto cost,
                        executors::RooflineCostModel::Create(g.model, CpuSpec(s.kv_pool_bytes)));
    g.cost = std::make_unique<executors::RooflineCostModel>(std::move(cost));
    return Status::OK();
  }
  g.model = s.model_config ? *s.model_config : DefaultModel();
  if (s.id.empty()) s.id = g.model.name();
  v1::GpuSpec gpu = s.gpu ? *s.gpu : DefaultGpu();
  SY_ASSIGN_OR_RETURN(auto cost, executors::RooflineCostModel::Create(g.model, gpu));
  g.cost = std::make_unique<executors::RooflineCostModel>(std::move(cost));
  if (s.hbm_bytes_per_worker == 0) {
    SY_ASSIGN_OR_RETURN(s.hbm_bytes_per_worker, KvHbmBytes(g.model, gpu));
  }
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
    if (!hbm && g.cpu()) continue;  // its CPU engine's own pool (MakeEngines)
    if (!hbm) {
      kv_tiers::ArenaBackend b = kv_tiers::EmulatedHbmBackend();
      b.name += "-w" + std::to_string(w);
      SY_ASSIGN_OR_RETURN(
          hbm, kv_tiers::ArenaTier::Create(tier_options(g.spec.hbm_bytes_per_worker), b));
    }
    hbm_view_[static_cast<size_t>(w)] = hbm.get();
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
  menv.loop = loop_.get();
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
  g.blocks = std::make_unique<kv_tiers::BlockManager>(
      std::move(layout), loop_.get(), std::move(movers), std::make_unique<NoEviction>(), bo);
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
      if (kv_tiers::Tier* hbm = hbm_view_[static_cast<size_t>(w)])
        hbm->SetTenantQuota(tenant, scaled(q.hbm));
    if (q.hbm && g.cpu())
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
  cpu_engines_.assign(static_cast<size_t>(total_workers()), nullptr);
  for (auto& gp : groups_) {
    Group& g = *gp;
    const bool first = &g == groups_[0].get();
    if (c.engines_run_llm && !g.cpu()) {
      SY_ASSIGN_OR_RETURN(executors::RooflineStepCost step,
                          executors::RooflineStepCost::Create(g.cost->model(), g.cost->gpu()));
      g.step_cost = std::make_unique<executors::RooflineStepCost>(std::move(step));
    }
    const executors::EngineLimits limits = LimitsOf(g);
    for (int w = g.first; w < g.first + g.spec.workers; ++w) {
      if (c.engine_factory && first) {  // the embedder's own engines (the first model's)
        SY_ASSIGN_OR_RETURN(WorkerEngine we, c.engine_factory(loop_.get(), w, limits));
        if (we.kv) engine_kv_.resize(static_cast<size_t>(total_workers()), nullptr);
        if (we.kv) engine_kv_[static_cast<size_t>(w)] = we.kv;
        if (we.remote_kv) remote_kv_.resize(static_cast<size_t>(total_workers()));
        if (we.remote_kv) remote_kv_[static_cast<size_t>(w)] = we.remote_kv;
        if (we.engine) {
          engines_.push_back(std::move(we.engine));
          continue;
        }  // no engine: the driver's own for this worker (below)
      }
      if (!c.engines_run_llm) {
        auto e = std::make_unique<ReportedEngine>(loop_.get(), w, limits, early);
        reported_.push_back(e.get());
        engines_.push_back(std::move(e));
      } else if (g.cpu()) {
        executors::cpu::CpuEngine::Options o;
        o.model = g.cpu_model.get();
        o.tokens = g.token_log.get();
        if (g.tokenizer && g.tokenizer->name() == "byte")
          o.token_masks = executors::cpu::ByteTextMasks(g.cpu_model->shape());
        SY_ASSIGN_OR_RETURN(auto e, executors::cpu::CpuEngine::Create(loop_.get(), w, limits, o));
        cpu_engines_[static_cast<size_t>(w)] = e.get();
        hbm_view_[static_cast<size_t>(w)] = &e->pool();
        engines_.push_back(std::move(e));
      } else {
        engines_.push_back(std::make_unique<executors::SimulatedEngine>(
            loop_.get(), w, limits, g.step_cost.get(), executors::SimulatedEngine::Options{}));
      }
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
    auto pool_of = [](const std::vector<executors::EngineKv*>& pools, const Location& l) {
      bool pool = l.tier == Tier::kHbm || l.tier == Tier::kPeer;
      return pool && l.worker >= 0 && l.worker < static_cast<int>(pools.size()) ? pools[l.worker]
                                                                                : nullptr;
    };
    if (!engine_kv_.empty()) {  // the embedder's engines: their registered KV pools
      mo.engine_kv = [this, pool_of](const Location& l) { return pool_of(engine_kv_, l); };
    } else if (g.cpu()) {
      mo.engine_kv = [this](const Location& l) -> executors::EngineKv* {
        bool pool = l.tier == Tier::kHbm || l.tier == Tier::kPeer;
        return pool && l.worker >= 0 && l.worker < total_workers()
                   ? cpu_engines_[static_cast<size_t>(l.worker)]
                   : nullptr;
      };
    }
    if (!remote_kv_.empty())  // joined computing workers: their pools through their stores
      mo.remote_kv = [this](const Location& l) -> executors::RemoteEngineKv* {
        bool pool = l.tier == Tier::kHbm || l.tier == Tier::kPeer;
        return pool && l.worker >= 0 && l.worker < static_cast<int>(remote_kv_.size())
                   ? remote_kv_[static_cast<size_t>(l.worker)].get()
                   : nullptr;
      };
    g.mover = std::make_unique<executors::TieredKvMover>(loop_.get(), g.blocks.get(), mo);
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

const executors::cpu::Model* SchedulerDriver::cpu_model(const std::string& model_id) const {
  const Group* g = FindGroup(model_id);
  return g ? g->cpu_model.get() : nullptr;
}

const executors::cpu::Tokenizer* SchedulerDriver::tokenizer(const std::string& model_id) const {
  const Group* g = FindGroup(model_id);
  return g ? g->tokenizer.get() : nullptr;
}

}  // namespace switchyard::driver
