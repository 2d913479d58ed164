#include "api/scheduler_driver.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <future>

#include "api/report_waiter.h"
#include "base/asio_event_loop.h"
#include "base/completion_batch.h"
#include "base/logging.h"
#include "base/thread_name.h"
#include "executors/cpu/cpu_engine.h"
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
#include "scheduler/core.h"
#include "scheduler/link_file.h"
#include "scheduler/net_budget_env.h"
#include "scheduler/policy.h"

namespace switchyard::api {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Event;
using scheduler::EventKind;
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

// The configured link figures over ClusterShape's defaults; a negative figure is an error
// naming its config field (0 keeps the default). `origins` gets the field of each figure
// configured.
Status ApplyLinkFigures(const SchedulerConfig& c, scheduler::ClusterShape* s,
                        scheduler::ShapeFigureOrigins* origins) {
  struct Figure {
    double value;
    const char* field;
    double* into;
    std::string* origin;
  };
  scheduler::ShapeFigureOrigins& o = *origins;
  for (const Figure& f :
       {Figure{c.pcie_bytes_per_s, "links.pcieBytesPerS", &s->pcie_bytes_per_s, &o.pcie_bandwidth},
        Figure{c.pcie_latency_s, "links.pcieLatencyUs", &s->pcie_latency_s, &o.pcie_latency},
        Figure{c.nvlink_bytes_per_s, "links.nvlinkBytesPerS", &s->nvlink_bytes_per_s,
               &o.nvlink_bandwidth},
        Figure{c.nvlink_latency_s, "links.nvlinkLatencyUs", &s->nvlink_latency_s,
               &o.nvlink_latency},
        Figure{c.disk_bytes_per_s, "links.diskBytesPerS", &s->disk_bytes_per_s, &o.disk_bandwidth},
        Figure{c.disk_latency_s, "links.diskLatencyUs", &s->disk_latency_s, &o.disk_latency}}) {
    if (!(f.value >= 0) || !std::isfinite(f.value))
      return Status::InvalidArgument(std::string("service config ") + f.field +
                                     " must be a finite figure >= 0 (0 keeps the default)");
    if (f.value > 0) *f.into = f.value, *f.origin = f.field;
  }
  return Status::OK();
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

// HBM left for KV on one worker: the GPU's HBM less its share of the model's BF16 weights.
Result<uint64_t> KvHbmBytes(const v1::ModelConfig& m, const v1::GpuSpec& g) {
  uint64_t tp = std::max<uint32_t>(1, m.tensor_parallel());
  uint64_t weights = m.num_parameters() * 2 / tp;
  if (g.hbm_bytes() <= weights)
    return Status::InvalidArgument(
        "models[0]: GPU '" + g.name() + "' has " + std::to_string(g.hbm_bytes()) +
        " B of HBM, not more than model '" + m.name() + "''s BF16 weights (" +
        std::to_string(weights) + " B per GPU); set hbmBytesPerWorker or a larger GPU");
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

std::string ContextName(const std::string& key, const std::string& wf) {
  return key.size() > wf.size() ? key.substr(wf.size() + 1) : key;
}

}  // namespace

v1::ModelConfig EmbeddedDefaultModel() { return DefaultModel(); }
v1::GpuSpec EmbeddedDefaultGpu() { return DefaultGpu(); }

SchedulerDriver::SchedulerDriver(SchedulerConfig config, Callbacks callbacks)
    : config_(std::move(config)), callbacks_(std::move(callbacks)) {}

Result<std::unique_ptr<SchedulerDriver>> SchedulerDriver::Start(SchedulerConfig config,
                                                                const std::string& data_dir,
                                                                Callbacks callbacks) {
  if (config.workers < 1) return Status::InvalidArgument("scheduler.workers must be >= 1");
  std::unique_ptr<SchedulerDriver> d(new SchedulerDriver(std::move(config), std::move(callbacks)));
  SchedulerConfig& c = d->config_;
  if (c.kv_bytes_scale == 0)
    return Status::InvalidArgument("scheduler.kv_bytes_scale must be >= 1");
  v1::ModelConfig model = c.model_config ? *c.model_config : DefaultModel();
  SY_RETURN_IF_ERROR(d->LoadModel(&model));
  if (c.model_id.empty()) c.model_id = model.name();
  if (c.hbm_bytes_per_worker == 0) {
    SY_ASSIGN_OR_RETURN(c.hbm_bytes_per_worker, KvHbmBytes(d->cost_->model(), d->cost_->gpu()));
  }
  // Real bytes (the CPU engine, an embedder's engines: scale 1) live in this process's
  // memory and disk, so their defaults follow the pools, capped (see SchedulerConfig).
  const bool real = c.kv_bytes_scale == 1;
  const uint64_t pools = c.hbm_bytes_per_worker * uint64_t(std::max(1, c.workers));
  d->host_bytes_ = c.host_bytes ? c.host_bytes
                   : real       ? std::min(8 * pools, SchedulerConfig::kRealHostBytesCap)
                                : SchedulerConfig::kDefaultHostBytes;
  d->disk_bytes_ = c.disk_bytes ? c.disk_bytes
                   : real       ? std::min(32 * pools, SchedulerConfig::kRealDiskBytesCap)
                                : SchedulerConfig::kDefaultDiskBytes;
  auto policy = scheduler::CreatePolicy(c.policy);
  if (!policy.ok())
    return Status::InvalidArgument("scheduler policy: " + policy.status().message());
  d->policy_ = std::move(*policy);
  d->loop_ = std::make_unique<AsioEventLoop>();

  // Link budgets and the planner over a loopback topology: one node, its workers, their
  // host memory and NVMe (the documented default figures of scheduler::ClusterShape).
  scheduler::ClusterShape shape;
  shape.name = "loopback (one emulated node)";
  shape.workers_per_node = c.workers;
  scheduler::ShapeFigureOrigins origins;
  SY_RETURN_IF_ERROR(ApplyLinkFigures(c, &shape, &origins));
  SY_ASSIGN_OR_RETURN(v1::Topology topo_proto, scheduler::BuildClusterTopology(shape));
  // Every link's name and figure source; measured figures over the configured ones.
  SY_RETURN_IF_ERROR(scheduler::LabelClusterLinks(shape, origins, &topo_proto));
  if (!c.link_file_path.empty())
    SY_RETURN_IF_ERROR(scheduler::ApplyLinkFile(c.link_file, c.link_file_path, &topo_proto));
  SY_ASSIGN_OR_RETURN(net_budget::Topology topo, net_budget::Topology::FromProto(topo_proto));
  d->device_of_ = scheduler::ClusterLocationMap(shape);
  SY_ASSIGN_OR_RETURN(d->env_, scheduler::NetBudgetEnvironment::Create(
                                   std::move(topo), d->device_of_, d->loop_.get()));

  // Emulated tiers: an HBM arena per worker, a host arena, RocksDB under <data-dir>/kv
  // (engine "cpu": the engines' pools instead of the HBM arenas, and real bytes, scale 1).
  SY_ASSIGN_OR_RETURN(kv_tiers::KvLayout layout,
                      kv_tiers::KvLayout::FromModelConfig(
                          model, static_cast<uint32_t>(std::max<int64_t>(1, c.kv_block_tokens))));
  uint64_t bpb = layout.bytes_per_block(), scale = c.kv_bytes_scale;
  auto tier_options = [&](uint64_t bytes) {
    kv_tiers::TierOptions o;
    o.slot_bytes = bpb;
    o.capacity_bytes = ((bytes / scale + bpb - 1) / bpb + kSlackBlocks) * bpb;
    return o;
  };
  for (int w = 0; w < c.workers && c.engine != "cpu"; ++w) {
    std::unique_ptr<kv_tiers::Tier> hbm;
    if (c.hbm_tier_factory) {
      SY_ASSIGN_OR_RETURN(hbm, c.hbm_tier_factory(w, tier_options(c.hbm_bytes_per_worker)));
    }
    if (!hbm) {
      kv_tiers::ArenaBackend b = kv_tiers::EmulatedHbmBackend();
      b.name += "-w" + std::to_string(w);
      SY_ASSIGN_OR_RETURN(hbm,
                          kv_tiers::ArenaTier::Create(tier_options(c.hbm_bytes_per_worker), b));
    }
    d->hbm_view_.push_back(hbm.get());
    d->hbm_tiers_.push_back(std::move(hbm));
  }
  SY_ASSIGN_OR_RETURN(d->host_tier_, kv_tiers::ArenaTier::Create(tier_options(d->host_bytes_),
                                                                 kv_tiers::HostBackend()));
  std::string kv_dir = data_dir + "/kv";
  std::error_code ec;
  std::filesystem::remove_all(kv_dir, ec);  // emulated KV does not survive a restart
  if (ec) return Status::Internal("cannot clear " + kv_dir + ": " + ec.message());
  kv_tiers::TierOptions disk_opts = tier_options(d->disk_bytes_);
  disk_opts.path = kv_dir;
  kv_tiers::DiskTierTuning tuning;
  tuning.write_buffer_bytes = 8ULL << 20;
  tuning.block_cache_bytes = 8ULL << 20;
  SY_ASSIGN_OR_RETURN(d->disk_tier_, kv_tiers::DiskTier::Open(disk_opts, tuning));
  kv_tiers::MoverEnv menv;
  menv.loop = d->loop_.get();
  menv.worker_threads = 1;
  kv_tiers::MoverSet movers;
  movers.Add(std::make_shared<kv_tiers::LocalMover>(menv), 10);
  movers.Add(std::make_shared<kv_tiers::DiskMover>(menv), 5);
  // A joined worker's KV store (hbm_tier_factory's remote tiers) <-> the host tier.
  // and between two of them (a peer move) or one and the disk tier (staged here).
  if (c.hbm_tier_factory) {
    movers.Add(std::make_shared<kv_tiers::PeerMover>(menv), 5);
    movers.Add(std::make_shared<kv_tiers::RelayMover>(menv), 1);
  }
  kv_tiers::BlockManagerOptions bo;
  bo.reclaim_on_high_watermark = false;
  d->blocks_ = std::make_unique<kv_tiers::BlockManager>(
      std::move(layout), d->loop_.get(), std::move(movers), std::make_unique<NoEviction>(), bo);
  for (auto& t : d->hbm_tiers_) SY_RETURN_IF_ERROR(d->blocks_->AddTier(t.get()));
  SY_RETURN_IF_ERROR(d->blocks_->AddTier(d->host_tier_.get()));
  SY_RETURN_IF_ERROR(d->blocks_->AddTier(d->disk_tier_.get()));
  d->ApplyTenantQuotas(bpb);

  scheduler::CoreOptions co;
  co.workers = c.workers;
  co.hbm_bytes_per_worker = c.hbm_bytes_per_worker;
  // The host and disk tiers are shared by the workers: each gets an equal part, so a
  // demotion is never sent to a tier that cannot take it.
  co.host_bytes_per_worker = std::max<uint64_t>(1, d->host_bytes_ / uint64_t(c.workers));
  co.disk_bytes_per_worker = std::max<uint64_t>(1, d->disk_bytes_ / uint64_t(c.workers));
  co.max_num_seqs = c.max_num_seqs;
  co.kv_block_tokens = c.kv_block_tokens;
  co.admission_watermark = 0.01;
  co.tenant_weights = c.tenant_weights;
  co.use_peer = c.workers > 1;
  // The CPU engine attends within each context of a sequence, so a context could not read
  // a shared prefix held as a context of its own: sharing is off there (exact outputs).
  co.share_prefixes = c.engine != "cpu";
  d->core_ = std::make_unique<scheduler::Core>(co, d->policy_.get(), d->env_.get(), d->env_.get(),
                                               d->cost_.get());
  executors::EngineLimits limits;
  limits.max_num_seqs = c.max_num_seqs;
  limits.max_num_batched_tokens = c.max_num_batched_tokens;
  limits.block_tokens = c.kv_block_tokens;
  limits.pool_blocks =
      static_cast<int64_t>(c.hbm_bytes_per_worker / (static_cast<uint64_t>(c.kv_block_tokens) *
                                                     d->cost_->KvBytesPerToken()));
  SY_RETURN_IF_ERROR(d->MakeEngines(limits));
  std::vector<executors::Engine*> engines;
  for (auto& e : d->engines_) engines.push_back(e.get());
  d->tools_ = std::make_unique<ReportedToolWaiter>(d->loop_.get());
  executors::TieredKvMover::Options mo;
  mo.tier_of = [d = d.get()](const Location& l) -> Result<std::string> {
    std::string name = d->TierName(l);
    if (name.empty())
      return Status::NotFound("no emulated tier for " + scheduler::LocationString(l));
    return name;
  };
  mo.bytes_scale = scale;
  // Joined workers' stores: the fill is staged in the host arena and moved there off the
  // scheduler's thread.
  if (c.hbm_tier_factory) mo.fill_staging_tier = d->host_tier_->name();
  mo.tenant_of = [d = d.get()](const std::string& wf) -> std::string {
    auto it = d->tenant_of_.find(wf);
    return it == d->tenant_of_.end() ? std::string() : it->second;
  };
  if (!d->engine_kv_.empty()) {  // the embedder's engines: their registered KV pools
    mo.engine_kv = [d = d.get()](const Location& l) -> executors::EngineKv* {
      bool pool = l.tier == Tier::kHbm || l.tier == Tier::kPeer;
      return pool && l.worker >= 0 && l.worker < static_cast<int>(d->engine_kv_.size())
                 ? d->engine_kv_[l.worker]
                 : nullptr;
    };
  } else if (!d->cpu_engines_.empty()) {
    mo.engine_kv = [d = d.get()](const Location& l) -> executors::EngineKv* {
      bool pool = l.tier == Tier::kHbm || l.tier == Tier::kPeer;
      return pool && l.worker >= 0 && l.worker < static_cast<int>(d->cpu_engines_.size())
                 ? d->cpu_engines_[l.worker]
                 : nullptr;
    };
  }
  d->mover_ = std::make_unique<executors::TieredKvMover>(d->loop_.get(), d->blocks_.get(), mo);
  d->runtime_ = std::make_unique<executors::Runtime>(d->loop_.get(), d->core_.get(), engines,
                                                     d->tools_.get(), d->mover_.get());
  SchedulerDriver* self = d.get();
  d->runtime_->SetObserver([self](const Event& e, const scheduler::Commands& out, Time now) {
    self->Observe(e, out, now);
    self->EndWatchers(e, out);
  });
  d->runtime_->SetStepObserver([self](const executors::StepReport& r) { self->OnStep(r); });
  d->runtime_->SetSpecHook(
      [self](const std::string& wf, const v1::ProgramNode& n, executors::SequenceSpec* seq) {
        auto it = self->inputs_.find(wf + "/" + n.id());
        if (it == self->inputs_.end()) return;
        const NodeInput& in = it->second;
        int64_t rebuilt = 0;
        for (const auto& c : seq->contexts)
          if (!c.resident) rebuilt += c.tokens;
        // The new tokens still to compute: the end of the node's (a preempted attempt's
        // prefill stays in its context).
        int64_t fresh = std::max<int64_t>(0, seq->prefill_tokens - rebuilt);
        const auto& ids = in.prompt_token_ids;
        if (fresh <= static_cast<int64_t>(ids.size()))
          seq->prompt_token_ids.assign(ids.end() - fresh, ids.end());
        seq->temperature = in.temperature;
        seq->top_p = in.top_p;
        seq->sampling_seed = in.seed;
        seq->stop_at_eos = in.stop_at_eos;
        seq->token_mask = in.token_mask;
      });
  d->thread_ = std::thread([self]() {
    SetThreadName("sy-sched");
    self->loop_->Run();
  });
  // Returns once the loop runs: a Stop() before Run() would be undone by Run()'s restart.
  d->Sync();
  Log(LogLevel::kInfo, "scheduler started",
      LogKeys()
          .With("workers", std::to_string(c.workers))
          .With("policy", std::string(d->policy_->name()))
          .With("model_executor", d->model_executor_name())
          .With("kv_mover", c.engine == "cpu"
                                ? std::string("tiered kv mover: the cpu engines' real KV blocks "
                                              "through kv_tiers")
                                : "tiered kv mover over emulated kv_tiers (1/" +
                                      std::to_string(c.kv_bytes_scale) + " of the bytes)")
          .With("planner", "net_budget over a loopback topology")
          .With("hbm_bytes_per_worker", std::to_string(c.hbm_bytes_per_worker))
          .With("host_bytes", std::to_string(d->host_bytes_))
          .With("disk_bytes", std::to_string(d->disk_bytes_))
          .With("kv_dir", kv_dir));
  return d;
}

// Each tenant's quotas on the tiers, scaled like the tiers (whole blocks, at least one).
void SchedulerDriver::ApplyTenantQuotas(uint64_t bytes_per_block) {
  const uint64_t scale = config_.kv_bytes_scale, bpb = bytes_per_block;
  auto scaled = [&](uint64_t b) {
    return b == 0 ? 0 : std::max<uint64_t>(1, b / scale / bpb) * bpb;
  };
  for (const auto& [tenant, q] : config_.tenant_quotas) {
    for (kv_tiers::Tier* hbm : hbm_view_) hbm->SetTenantQuota(tenant, scaled(q.hbm));
    if (q.hbm && config_.engine == "cpu")
      Log(LogLevel::kWarn, "tenant HBM quota not enforced on the cpu engines' own pools",
          LogKeys().With("tenant", tenant));
    host_tier_->SetTenantQuota(tenant, scaled(q.host));
    disk_tier_->SetTenantQuota(tenant, scaled(q.disk));
  }
}

SchedulerDriver::~SchedulerDriver() {
  if (loop_) loop_->Stop();
  if (thread_.joinable()) thread_.join();
  runtime_.reset();  // before the executors it borrows
}

// The byte tokenizer's output sets (NodeInput::token_mask): kTextMask, printable ASCII,
// newline, tab and EOS (valid UTF-8 a client echoes unchanged); kJsonStringMask, printable
// ASCII but '"' and '\\' (text a JSON string holds unescaped: generated tool arguments).
static std::vector<std::vector<bool>> ByteTextMasks(const executors::cpu::Model& m) {
  const int64_t vocab = m.shape().vocab_size;
  std::vector<bool> text(vocab, false);
  for (int t = 32; t < 127 && t < vocab; ++t) text[t] = true;
  if (vocab > '\n') text['\n'] = text['\t'] = true;
  std::vector<bool> json = text;
  if (vocab > '\\') json['\n'] = json['\t'] = json['"'] = json['\\'] = false;
  if (m.shape().eos_id >= 0 && m.shape().eos_id < vocab) text[m.shape().eos_id] = true;
  return {text, json};
}

Status SchedulerDriver::LoadModel(v1::ModelConfig* model) {
  SchedulerConfig& c = config_;
  if (c.engine == "cpu") {
    auto m = executors::cpu::Model::Load(c.model_path);
    if (!m.ok()) return m.status().Annotate("--model " + c.model_path);
    cpu_model_ = std::move(*m);
    token_log_ = std::make_unique<executors::cpu::TokenLog>();
    *model = executors::cpu::ToModelConfig(cpu_model_->shape());
    if (c.model_id.empty()) c.model_id = cpu_model_->shape().name;  // without "(random ...)"
    auto tok = executors::cpu::LoadTokenizer(c.model_path, cpu_model_->shape());
    if (!tok.ok()) return tok.status().Annotate("--model " + c.model_path);
    tokenizer_ = std::move(*tok);
    c.kv_bytes_scale = 1;  // real bytes
    c.hbm_bytes_per_worker = c.kv_pool_bytes;
    SY_ASSIGN_OR_RETURN(auto cost,
                        executors::RooflineCostModel::Create(*model, CpuSpec(c.kv_pool_bytes)));
    cost_ = std::make_unique<executors::RooflineCostModel>(std::move(cost));
    return Status::OK();
  }
  SY_ASSIGN_OR_RETURN(auto cost,
                      executors::RooflineCostModel::Create(*model, c.gpu ? *c.gpu : DefaultGpu()));
  cost_ = std::make_unique<executors::RooflineCostModel>(std::move(cost));
  return Status::OK();
}

Status SchedulerDriver::MakeEngines(const executors::EngineLimits& limits) {
  const SchedulerConfig& c = config_;
  if (c.simulated_llm && c.engine != "cpu") {
    SY_ASSIGN_OR_RETURN(executors::RooflineStepCost step,
                        executors::RooflineStepCost::Create(cost_->model(), cost_->gpu()));
    step_cost_ = std::make_unique<executors::RooflineStepCost>(std::move(step));
  }
  auto early = std::make_shared<ReportedEngine::EarlyReports>();
  for (int w = 0; w < c.workers; ++w) {
    if (c.engine_factory) {  // the embedder's own engines
      SY_ASSIGN_OR_RETURN(WorkerEngine we, c.engine_factory(loop_.get(), w, limits));
      if (we.kv) engine_kv_.resize(static_cast<size_t>(c.workers), nullptr);
      if (we.kv) engine_kv_[static_cast<size_t>(w)] = we.kv;
      if (we.engine) {
        engines_.push_back(std::move(we.engine));
        continue;
      }  // no engine: the driver's own for this worker (below)
    }
    if (!c.simulated_llm) {
      auto e = std::make_unique<ReportedEngine>(loop_.get(), w, limits, early);
      reported_.push_back(e.get());
      engines_.push_back(std::move(e));
    } else if (c.engine == "cpu") {
      executors::cpu::CpuEngine::Options o;
      o.model = cpu_model_.get();
      o.tokens = token_log_.get();
      if (tokenizer_ && tokenizer_->name() == "byte") o.token_masks = ByteTextMasks(*cpu_model_);
      SY_ASSIGN_OR_RETURN(auto e, executors::cpu::CpuEngine::Create(loop_.get(), w, limits, o));
      cpu_engines_.push_back(e.get());
      hbm_view_.push_back(&e->pool());
      engines_.push_back(std::move(e));
    } else {
      engines_.push_back(std::make_unique<executors::SimulatedEngine>(
          loop_.get(), w, limits, step_cost_.get(), executors::SimulatedEngine::Options{}));
    }
  }
  return Status::OK();
}

void SchedulerDriver::SetNodeInput(const std::string& wf, const std::string& node,
                                   NodeInput input) {
  loop_->Post([this, key = wf + "/" + node, input = std::move(input)]() mutable {
    inputs_[key] = std::move(input);
  });
}

void SchedulerDriver::Watch(const std::string& wf, const std::string& node, TokenWatcher watcher) {
  loop_->Post([this, key = wf + "/" + node, watcher = std::move(watcher)]() mutable {
    watchers_[key] = Watcher{std::move(watcher), 0};
  });
}

void SchedulerDriver::WatchPlacement(const std::string& wf, const std::string& node,
                                     std::function<void(int)> fn) {
  loop_->Post([this, key = wf + "/" + node, fn = std::move(fn)]() mutable {
    placements_[key] = std::move(fn);
  });
}

void SchedulerDriver::OnStep(const executors::StepReport& r) {
  metrics_.OnStep(r);
  for (const executors::SeqProgress& p : r.seqs) {  // time to first token, per node
    if (p.output_done != 1) continue;
    size_t slash = p.key.find('/');
    if (slash == std::string::npos) continue;
    std::lock_guard<std::mutex> lock(mu_);
    auto wf = wfs_.find(p.key.substr(0, slash));
    if (wf != wfs_.end() &&
        wf->second.first_token_ms.emplace(p.key.substr(slash + 1), r.end.millis()).second)
      wf->second.timeline.OnFirstToken(p.key.substr(slash + 1), r.end);
  }
  if (watchers_.empty()) return;
  for (const executors::SeqProgress& p : r.seqs) {
    if (p.token < 0) continue;
    auto it = watchers_.find(p.key);
    if (it == watchers_.end()) continue;
    const int64_t index = p.output_done - 1;  // a retried attempt re-emits nothing twice
    if (index < it->second.next) continue;
    it->second.next = index + 1;
    TokenEvent t;
    t.token = p.token;
    t.index = index;
    it->second.fn(t);
  }
}

void SchedulerDriver::EndWatchers(const Event& e, const scheduler::Commands& out) {
  if (e.kind == EventKind::kLlmFinished && e.status.ok())
    inputs_.erase(e.workflow_id + "/" + e.node_id);  // a failed attempt may be retried
  for (const Command& c : out.list) {
    if (placements_.empty()) break;
    bool place = c.kind == CommandKind::kPlace;
    if (!place && c.kind != CommandKind::kFail && c.kind != CommandKind::kComplete) continue;
    std::vector<std::string> keys;
    if (place) {
      keys.push_back(c.workflow_id + "/" + c.node_id);
    } else {
      const std::string prefix = c.workflow_id + "/";
      for (const auto& [key, fn] : placements_)
        if (key.compare(0, prefix.size(), prefix) == 0) keys.push_back(key);
    }
    for (const std::string& key : keys) {
      auto it = placements_.find(key);
      if (it == placements_.end()) continue;
      auto fn = std::move(it->second);
      placements_.erase(it);
      fn(place ? c.worker : -1);
    }
  }
  if (watchers_.empty()) return;
  auto finish = [this](const std::string& key, Status st, int64_t tokens) {
    auto it = watchers_.find(key);
    if (it == watchers_.end()) return;
    TokenWatcher fn = std::move(it->second.fn);
    watchers_.erase(it);
    TokenEvent t;
    t.finished = true;
    t.status = std::move(st);
    t.output_tokens = tokens;
    fn(t);
  };
  if (e.kind == EventKind::kLlmFinished && e.status.ok())
    finish(e.workflow_id + "/" + e.node_id, Status::OK(), e.output_tokens);
  for (const Command& c : out.list) {
    if (c.kind != CommandKind::kFail && c.kind != CommandKind::kComplete) continue;
    const std::string prefix = c.workflow_id + "/";
    std::vector<std::string> keys;
    for (const auto& [key, w] : watchers_)
      if (key.compare(0, prefix.size(), prefix) == 0) keys.push_back(key);
    for (const std::string& key : keys)
      finish(key, Status::Aborted("workflow " + c.workflow_id + " ended: " + c.reason), 0);
    for (auto it = inputs_.begin(); it != inputs_.end();)
      it = it->first.compare(0, prefix.size(), prefix) == 0 ? inputs_.erase(it) : std::next(it);
  }
}

std::string SchedulerDriver::model_name() const { return config_.model_id; }

Result<std::string> SchedulerDriver::ResolveModel(const std::string& model_id) const {
  if (model_id.empty() || model_id == config_.model_id) return config_.model_id;
  for (const auto& a : config_.model_aliases)
    if (model_id == a) return config_.model_id;
  std::string served = "'" + config_.model_id + "'";
  for (const auto& a : config_.model_aliases) served += ", '" + a + "'";
  return Status::InvalidArgument("modelId '" + model_id +
                                 "' is not served here (served: " + served + ")");
}

std::string SchedulerDriver::model_executor_name() const {
  return engines_.empty() ? std::string("none") : std::string(engines_.front()->name());
}

void SchedulerDriver::Submit(const v1::Workflow& workflow) {
  // Posted before the runtime's own post, so the tenant is known before any move of it.
  loop_->Post([this, id = workflow.id(), t = workflow.tenant()]() { tenant_of_[id] = t; });
  runtime_->Submit(workflow);
}

void SchedulerDriver::Append(const std::string& workflow_id, const v1::ProgramNode& node) {
  runtime_->Append(workflow_id, node);
}

void SchedulerDriver::Close(const std::string& workflow_id) { runtime_->Close(workflow_id); }

void SchedulerDriver::Cancel(const std::string& workflow_id) { runtime_->Cancel(workflow_id); }

void SchedulerDriver::Fail(const std::string& workflow_id, const std::string& node_id,
                           const std::string& reason) {
  Event e;
  e.kind = EventKind::kCancel;  // with a status: the core ends the workflow with `fail`
  e.workflow_id = workflow_id;
  e.node_id = node_id;
  e.status = Status::Aborted(reason.empty() ? "workflow failed" : reason);
  runtime_->Inject(std::move(e));
}

void SchedulerDriver::Report(const std::string& workflow_id, const v1::NodeEvent& event) {
  NodeReport r{event.type(), event.error(), event.output_tokens()};
  std::string key = workflow_id + "/" + event.node_id();
  loop_->Post([this, key, r = std::move(r)]() mutable {
    bool tool =
        r.type == v1::TOOL_STARTED || r.type == v1::TOOL_FINISHED || r.type == v1::TOOL_FAILED;
    if (r.type == v1::TOOL_FINISHED) ScheduleDurationsSave();  // runs after the report
    if (tool)
      tools_->Report(key, std::move(r));
    else if (!reported_.empty()) {
      ReportedEngine* at = reported_.front();  // none running: kept for the placement
      for (ReportedEngine* e : reported_)
        if (e->Has(key)) at = e;
      at->Report(key, std::move(r));
    }
  });
}

void SchedulerDriver::ScheduleDurationsSave() {
  if (durations_save_pending_ || !callbacks_.durations_learned) return;
  durations_save_pending_ = true;
  loop_->PostAt(loop_->Now() + kDurationsSaveDelay, [this]() { SaveDurations(); });
}

void SchedulerDriver::SaveDurations() {
  durations_save_pending_ = false;
  if (callbacks_.durations_learned) callbacks_.durations_learned(core_->durations().Export());
}

void SchedulerDriver::SaveDurationsNow() {
  Sync([this]() {
    if (durations_save_pending_) SaveDurations();
  });
}

Status SchedulerDriver::RestoreDurations(const v1::LearnedDurations& saved) {
  Status st;
  Sync([&]() { st = core_->RestoreDurations(saved); });
  return st;
}

v1::LearnedDurations SchedulerDriver::LearnedDurations() {
  v1::LearnedDurations d;
  Sync([&]() { d = core_->durations().Export(); });
  return d;
}

bool SchedulerDriver::Placed(const std::string& workflow_id, const std::string& node_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = placed_.find(workflow_id);
  return it != placed_.end() && it->second.count(node_id) > 0;
}

void SchedulerDriver::PeerLost(int worker, std::string reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    loss_reason_[worker] = reason.empty() ? std::string("lost") : std::move(reason);
  }
  runtime_->PeerLost(worker);
}

uint64_t SchedulerDriver::BumpModelEpoch(const std::string& model_id) {
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    epoch = ++epochs_[model_id];
  }
  loop_->Post([this, model_id, epoch]() {
    (void)blocks_->BumpModelEpoch();  // the tiers' blocks: stale copies are never read
    runtime_->ModelEpochChanged(model_id, epoch);
  });
  return epoch;
}

void SchedulerDriver::Forget(const std::string& workflow_id) {
  loop_->Post([this, workflow_id]() {
    if (!core_->Forget(workflow_id)) return;  // still running in the core: keep its view
    tenant_of_.erase(workflow_id);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = wfs_.find(workflow_id);
    if (it == wfs_.end()) return;
    for (const std::string& key : it->second.contexts) {
      ctxs_.erase(key);
      if (token_log_) token_log_->Forget(key);
    }
    wfs_.erase(it);
  });
}

size_t SchedulerDriver::mirrored_workflows() const {
  std::lock_guard<std::mutex> lock(mu_);
  return wfs_.size();
}

void SchedulerDriver::Sync(std::function<void()> fn) {
  std::promise<void> done;
  CompletionBatch::Pause unbatched;  // posted now, not when this thread's batch closes
  loop_->Post([&]() {
    if (fn) fn();
    done.set_value();
  });
  done.get_future().wait();
}

void SchedulerDriver::Record(const Command& c, Time now, std::vector<v1::Decision>* emitted) {
  ++decisions_by_kind_[scheduler::DecisionKindName(c)];  // "cancel" for a cancelled end
  metrics_.OnCommand(c);
  if (c.workflow_id.empty()) return;
  v1::Decision d;
  d.set_time_ms(now.millis());
  d.set_kind(scheduler::DecisionKindName(c));
  d.set_node_id(c.node_id);
  if (!c.context.empty()) d.set_context(ContextName(c.context, c.workflow_id));
  if (c.kind == CommandKind::kDemote || c.kind == CommandKind::kPrefetch) {
    metrics_.OnTransferIssued(c.transfer_id, now);
    d.set_src(scheduler::LocationString(c.src));
    d.set_dst(scheduler::LocationString(c.dst));
    d.set_traffic_class(scheduler::TrafficClassName(c.grant.traffic_class));
    xfers_[c.transfer_id] = XferView{c.context,
                                     c.workflow_id,
                                     c.src,
                                     c.dst,
                                     c.bytes,
                                     static_cast<int>(c.grant.traffic_class),
                                     LinksOf(c.src, c.dst)};
  }
  d.set_bytes(c.bytes);
  d.set_transfer_id(c.transfer_id);
  d.set_worker(c.worker);
  d.set_reason(c.reason);
  d.set_line(scheduler::ToString(c));
  NoteDecision(c, d, now);
  WfView& w = wfs_[c.workflow_id];
  if (emitted) emitted->push_back(d);
  w.decisions.push_back(std::move(d));
  while (w.decisions.size() > config_.max_decisions_per_workflow) {
    w.decisions.pop_front();
    ++w.dropped;
  }
}

void SchedulerDriver::Refresh(const std::string& wf) {
  auto it = wfs_.find(wf);
  if (it == wfs_.end()) return;
  for (const std::string& key : it->second.contexts) {
    CtxView& v = ctxs_[key];
    v.wf = wf;
    v.name = ContextName(key, wf);
    auto loc = core_->ContextLocation(key);
    v.known = loc.has_value();
    v.loc = loc.value_or(Location{});
    v.tokens = core_->ContextTokens(key);
    v.bytes = uint64_t(std::max<int64_t>(0, v.tokens)) * cost_->KvBytesPerToken();
    v.in_flight = false;
    for (const auto& [id, x] : xfers_) {
      if (x.ctx == key) {
        v.in_flight = true;
        v.to = x.dst;
      }
    }
  }
}

void SchedulerDriver::Observe(const Event& e, const scheduler::Commands& out, Time now) {
  std::vector<std::string> touched;  // usually one workflow: deduplicated below
  std::vector<v1::Decision> emitted;
  std::vector<v1::Decision>* want = callbacks_.decision ? &emitted : nullptr;
  std::vector<std::pair<std::string, v1::WorkerLoss>> losses;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++events_;
    NoteEvent(e, now);
    auto add_contexts = [&](const std::string& wf, const v1::ProgramNode& n) {
      for (const v1::CacheRef& r : n.cache_refs())
        wfs_[wf].contexts.insert(scheduler::ContextKey(wf, r.context()));
    };
    if (e.kind == EventKind::kWorkflowSubmitted) {
      wfs_[e.workflow.id()];
      for (const v1::ProgramNode& n : e.workflow.nodes()) add_contexts(e.workflow.id(), n);
      touched.push_back(e.workflow.id());
    } else if (e.kind == EventKind::kNodeAppended) {
      add_contexts(e.workflow_id, e.node);
    }
    if (!e.workflow_id.empty()) touched.push_back(e.workflow_id);
    if (e.kind == EventKind::kTransferCompleted || e.kind == EventKind::kTransferFailed) {
      auto x = xfers_.find(e.transfer_id);
      if (x != xfers_.end()) {
        if (e.kind == EventKind::kTransferCompleted)
          bytes_moved_by_tier_[scheduler::TierName(x->second.dst.tier)] += x->second.bytes;
        touched.push_back(x->second.wf);
        metrics_.OnTransferEnded(e.transfer_id, x->second.links, x->second.cls, x->second.bytes,
                                 e.kind == EventKind::kTransferCompleted, now);
        EndTransfer(e, x->second, now);
        xfers_.erase(x);
      }
    }
    if (e.kind == EventKind::kPeerLost) {
      losses = NoteWorkerLoss(e, out, now);
      for (const auto& [wf, loss] : losses) touched.push_back(wf);
    }
    if (e.kind == EventKind::kLlmFinished) {
      auto p = placed_.find(e.workflow_id);
      if (p != placed_.end()) p->second.erase(e.node_id);
    }
    for (const Command& c : out.list) {
      Record(c, now, want);
      if (!c.workflow_id.empty()) touched.push_back(c.workflow_id);
      if (c.kind == CommandKind::kPlace) placed_[c.workflow_id][c.node_id] = c.worker;
      if (c.kind == CommandKind::kPreempt) placed_[c.workflow_id].erase(c.node_id);
      if (c.kind == CommandKind::kFail || c.kind == CommandKind::kComplete)
        placed_.erase(c.workflow_id);
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (const std::string& wf : touched) Refresh(wf);
    for (int w = 0; w < config_.workers; ++w) hbm_used_[w] = core_->hbm_used(w);
    metrics_.SetQueuedNodes(core_->queued_nodes());
    if (!cpu_engines_.empty()) real_bytes_moved_ = mover_->real_bytes_by_destination();
  }
  // Callbacks run without the mirror lock (they write durable state); a loss's evidence
  // first, before the failures it caused.
  if (callbacks_.worker_lost)
    for (const auto& [wf, loss] : losses) callbacks_.worker_lost(wf, loss);
  bool simulated = reported_.empty();
  if (simulated && e.kind == EventKind::kLlmFinished && callbacks_.llm_done)
    callbacks_.llm_done(e.workflow_id, e.node_id, e.status, e.output_tokens);
  for (const Command& c : out.list) {
    if (c.kind == CommandKind::kPlace && simulated && callbacks_.llm_placed)
      callbacks_.llm_placed(c.workflow_id, c.node_id);
    if (c.kind == CommandKind::kFail && callbacks_.workflow_failed)
      callbacks_.workflow_failed(c.workflow_id, c.node_id, c.reason);
    if (c.kind == CommandKind::kFail || c.kind == CommandKind::kComplete) {
      tools_->Forget(c.workflow_id);
      for (ReportedEngine* r : reported_) r->Forget(c.workflow_id);  // idempotent
    }
  }
  size_t k = 0;
  for (const Command& c : out.list)
    if (!c.workflow_id.empty() && k < emitted.size())
      callbacks_.decision(c.workflow_id, emitted[k++]);
}

void SchedulerDriver::Fill(const std::string& workflow_id, v1::WorkflowStatus* status) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = wfs_.find(workflow_id);
  if (it == wfs_.end()) return;
  for (const std::string& key : it->second.contexts) {
    auto c = ctxs_.find(key);
    if (c == ctxs_.end()) continue;
    const CtxView& v = c->second;
    auto* p = status->add_kv();
    p->set_context(v.name);
    p->set_tier(v.known ? scheduler::TierName(v.loc.tier) : "none");
    p->set_worker(v.known ? v.loc.worker : -1);
    p->set_bytes(v.known && v.loc.tier != Tier::kNone ? v.bytes : 0);
    p->set_tokens(v.tokens);
    p->set_in_flight(v.in_flight);
    if (v.in_flight) p->set_in_flight_to(scheduler::LocationString(v.to));
  }
  for (const v1::Decision& d : it->second.decisions) *status->add_decisions() = d;
  status->set_decisions_dropped(it->second.dropped);
  for (auto& n : *status->mutable_nodes()) {
    auto t = it->second.first_token_ms.find(n.id());
    if (t != it->second.first_token_ms.end()) n.set_first_token_ms(t->second);
  }
}

std::string SchedulerDriver::TierName(const Location& l) const {
  switch (l.tier) {
    case Tier::kHbm:
    case Tier::kPeer:  // another worker's HBM, in this process
      return l.worker >= 0 && l.worker < static_cast<int>(hbm_view_.size())
                 ? hbm_view_[l.worker]->name()
                 : "";
    case Tier::kHost:
      return host_tier_->name();
    case Tier::kDisk:
      return disk_tier_->name();
    default:
      return "";
  }
}

// The topology links a move between two locations crosses (the route net_budget debits).
std::vector<uint32_t> SchedulerDriver::LinksOf(const Location& src, const Location& dst) const {
  std::vector<uint32_t> out;
  auto a = device_of_(src), b = device_of_(dst);
  if (!a.ok() || !b.ok()) return out;
  auto path = env_->topology().FindPath(*a, *b);
  if (!path.ok()) return out;
  for (const net_budget::Hop& h : path->hops) out.push_back(h.link);
  return out;
}

}  // namespace switchyard::api
