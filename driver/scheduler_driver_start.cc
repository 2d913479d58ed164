// SchedulerDriver's start: the served models, the tiers' sizes, the stack (policy, link
// budgets, core: executors/stack.h, as replay builds it), the tiers, engines and mover of
// each model, the runtime, and the loop thread.
#include <algorithm>
#include <cmath>
#include <thread>

#include "base/asio_event_loop.h"
#include "base/logging.h"
#include "base/thread_name.h"
#include "driver/report_waiter.h"
#include "driver/scheduler_driver.h"
#include "executors/model_cost.h"
#include "executors/runtime.h"
#include "executors/tiered_mover.h"
#include "kv_tiers/block_manager.h"
#include "kv_tiers/tier.h"
#include "scheduler/link_file.h"
#include "scheduler/net_budget_env.h"

namespace switchyard::driver {

using scheduler::Event;

namespace {

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

}  // namespace

Result<std::unique_ptr<SchedulerDriver>> SchedulerDriver::Start(SchedulerConfig config,
                                                                const std::string& data_dir,
                                                                Callbacks callbacks,
                                                                EventLoop* loop) {
  if (config.workers < 1) return Status::InvalidArgument("scheduler.workers must be >= 1");
  std::unique_ptr<SchedulerDriver> d(new SchedulerDriver(std::move(config), std::move(callbacks)));
  if (d->config_.kv_bytes_scale == 0)
    return Status::InvalidArgument("scheduler.kv_bytes_scale must be >= 1");
  SY_RETURN_IF_ERROR(d->MakeGroups());
  d->SizeSharedTiers();
  if (loop == nullptr) {
    d->own_loop_ = std::make_unique<AsioEventLoop>();
    loop = d->own_loop_.get();
  }
  d->loop_ = loop;
  SY_RETURN_IF_ERROR(d->BuildCoreStack());
  // Each model's tiers: an HBM arena per worker (engines that compute: their pools, real
  // bytes), a host arena, RocksDB under <data-dir>/kv (later models: kv-m<i>).
  d->workers_.resize(static_cast<size_t>(d->total_workers()));
  const std::string kv_dir = data_dir + "/kv";
  for (size_t i = 0; i < d->groups_.size(); ++i)
    SY_RETURN_IF_ERROR(d->MakeGroupTiers(*d->groups_[i],
                                         i == 0 ? kv_dir : data_dir + "/kv-m" + std::to_string(i)));
  SY_RETURN_IF_ERROR(d->MakeEngines());
  d->tools_ = std::make_unique<ReportedToolWaiter>(d->loop_);
  SY_RETURN_IF_ERROR(d->MakeMover());
  d->StartRuntime();
  if (d->own_loop_) {
    d->thread_ = std::thread([self = d.get()]() {
      SetThreadName("sy-sched");
      self->own_loop_->Run();
    });
    // Returns once the loop runs: a Stop() before Run() would be undone by Run()'s restart.
    d->Sync();
  }
  d->LogStarted(kv_dir);
  return d;
}

void SchedulerDriver::SizeSharedTiers() {
  const SchedulerConfig& c = config_;
  const int total = total_workers();
  // Real bytes (engines that compute, an embedder's engines: scale 1) live in this
  // process's memory and disk, so their defaults follow the pools, capped (SchedulerConfig).
  bool real = false;
  uint64_t pools = 0;
  for (const auto& g : groups_) {
    real |= g->kv_bytes_scale == 1;
    pools += g->spec.hbm_bytes_per_worker * uint64_t(g->spec.workers);
  }
  host_bytes_ = c.host_bytes ? c.host_bytes
                : real       ? std::min(8 * pools, SchedulerConfig::kRealHostBytesCap)
                             : SchedulerConfig::kDefaultHostBytes;
  disk_bytes_ = c.disk_bytes ? c.disk_bytes
                : real       ? std::min(32 * pools, SchedulerConfig::kRealDiskBytesCap)
                             : SchedulerConfig::kDefaultDiskBytes;
  // Each model's part of the host and disk tiers: its share of the workers.
  for (auto& g : groups_) {
    g->host_bytes = std::max<uint64_t>(1, host_bytes_ / uint64_t(total) * g->spec.workers);
    g->disk_bytes = std::max<uint64_t>(1, disk_bytes_ / uint64_t(total) * g->spec.workers);
  }
}

Status SchedulerDriver::BuildCoreStack() {
  const SchedulerConfig& c = config_;
  const int total = total_workers();
  executors::StackSpec spec;
  spec.policy = c.policy;
  // Link budgets and the planner over a loopback topology: one node, its workers, their
  // host memory and NVMe: the link bandwidths of the first model's GPU spec (the CPU
  // engine's rough figures for a cpu model), by the rule replay uses for a cluster file,
  // else the documented defaults of scheduler::ClusterShape; configured figures over both.
  spec.shape.name = "loopback (one emulated node)";
  spec.shape.workers_per_node = total;
  auto origins = std::make_shared<scheduler::ShapeFigureOrigins>();
  scheduler::ApplyGpuSpecLinks(groups_[0]->cost->gpu(), &spec.shape, origins.get());
  SY_RETURN_IF_ERROR(ApplyLinkFigures(c, &spec.shape, origins.get()));
  // Every link's name and figure source; measured figures over the configured ones.
  // Joined workers on other hosts: where they reported they run.
  auto placed = std::make_shared<scheduler::LocationMap>(scheduler::ClusterLocationMap(spec.shape));
  spec.edit_topology = [this, &c, shape = spec.shape, origins, placed](v1::Topology* topo) {
    SY_RETURN_IF_ERROR(scheduler::LabelClusterLinks(shape, *origins, topo));
    if (c.joined_hosts) {
      SY_ASSIGN_OR_RETURN(*placed, scheduler::ApplyJoinedHosts(*c.joined_hosts, shape, topo));
    }
    if (!c.link_file_path.empty())
      SY_RETURN_IF_ERROR(scheduler::ApplyLinkFile(c.link_file, c.link_file_path, topo));
    topology_conflicts_ = scheduler::FindTopologyConflicts(*topo);
    return Status::OK();
  };
  spec.device_of = [placed](const scheduler::Location& l) { return (*placed)(l); };
  scheduler::CoreOptions& co = spec.core;
  co.workers = total;
  co.hbm_bytes_per_worker = c.hbm_bytes_per_worker;
  // The host and disk tiers are shared by a model's workers: each gets an equal part, so a
  // demotion is never sent to a tier that cannot take it.
  co.host_bytes_per_worker = std::max<uint64_t>(1, host_bytes_ / uint64_t(total));
  co.disk_bytes_per_worker = std::max<uint64_t>(1, disk_bytes_ / uint64_t(total));
  if (groups_.size() > 1) {
    for (const auto& g : groups_) {
      co.model_costs[g->spec.id] = g->core_cost();
      for (int w = 0; w < g->spec.workers; ++w) {
        co.worker_models.push_back(g->spec.id);
        co.worker_hbm_bytes.push_back(g->spec.hbm_bytes_per_worker);
      }
    }
  }
  co.max_num_seqs = c.max_num_seqs;
  co.kv_block_tokens = c.kv_block_tokens;
  co.tenant_weights = c.tenant_weights;
  co.use_peer = total > 1 && c.kv_between_workers;
  co.kv_between_workers = c.kv_between_workers;
  // The CPU engine attends within each context of a sequence, so a context could not read
  // a shared prefix held as a context of its own: sharing is off there (exact outputs).
  co.share_prefixes = !any_computes_;
  co.disaggregation = c.disaggregation;
  if (!c.worker_roles.empty()) {
    co.worker_roles = c.worker_roles;
    co.worker_roles.resize(static_cast<size_t>(total), scheduler::WorkerRole::kMixed);
  }
  spec.cost = groups_[0]->core_cost();
  SY_ASSIGN_OR_RETURN(stack_, executors::BuildStack(std::move(spec), loop_));
  return Status::OK();
}

void SchedulerDriver::StartRuntime() {
  std::vector<executors::Engine*> engines;
  for (EngineWorker& w : workers_) engines.push_back(w.engine.get());
  executors::Runtime* rt =
      stack_.StartRuntime(loop_, std::move(engines), tools_.get(), mover_.get());
  rt->SetObserver([this](const Event& e, const scheduler::Commands& out, Time now) {
    Observe(e, out, now);
    EndWatchers(e, out);
    ReportKvDecisions(out);
  });
  rt->SetStepObserver([this](const executors::StepReport& r) { OnStep(r); });
  rt->SetSpecHook([this](const std::string& wf, const v1::ProgramNode& n,
                         executors::SequenceSpec* seq) { ApplyNodeInput(wf, n, seq); });
}

void SchedulerDriver::ApplyNodeInput(const std::string& wf, const v1::ProgramNode& n,
                                     executors::SequenceSpec* seq) const {
  auto it = inputs_.find(wf + "/" + n.id());
  if (it == inputs_.end()) return;
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
  seq->json_schema = in.json_schema;
  seq->logit_bias = in.logit_bias;
  seq->choices = in.choices;
  seq->priority = in.priority;
  seq->kv_transfer = in.kv_transfer;
}

void SchedulerDriver::LogStarted(const std::string& kv_dir) const {
  std::string models;
  for (const auto& g : groups_)
    models += (models.empty() ? "" : ", ") + g->spec.id + " x" + std::to_string(g->spec.workers) +
              " (" + g->spec.engine + ")";
  Log(LogLevel::kInfo, "scheduler started",
      LogKeys()
          .With("workers", std::to_string(total_workers()))
          .With("models", models)
          .With("policy", std::string(stack_.policy->name()))
          .With("model_executor", model_executor_name())
          .With("kv_mover", kv_mover_description())
          .With("planner", "net_budget over the topology: " + stack_.env->topology().name())
          .With("hbm_bytes_per_worker",
                std::to_string(config_.hbm_bytes_per_worker))  // the first model's
          .With("host_bytes", std::to_string(host_bytes_))
          .With("disk_bytes", std::to_string(disk_bytes_))
          .With("kv_dir", kv_dir));
}

SchedulerDriver::~SchedulerDriver() {
  if (own_loop_) own_loop_->Stop();
  if (thread_.joinable()) thread_.join();
  stack_.runtime.reset();  // before the executors it borrows
  mover_.reset();
  for (auto& g : groups_) g->mover.reset();   // before the block managers they move through
  for (auto& g : groups_) g->blocks.reset();  // before the tiers they hold
}

}  // namespace switchyard::driver
