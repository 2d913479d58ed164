#include "driver/scheduler_driver.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <future>

#include "base/asio_event_loop.h"
#include "base/completion_batch.h"
#include "base/logging.h"
#include "base/thread_name.h"
#include "driver/report_waiter.h"
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

namespace switchyard::driver {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Event;
using scheduler::EventKind;
using scheduler::Location;
using scheduler::Tier;

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

std::string ContextName(const std::string& key, const std::string& wf) {
  return key.size() > wf.size() ? key.substr(wf.size() + 1) : key;
}

}  // namespace

SchedulerDriver::SchedulerDriver(SchedulerConfig config, Callbacks callbacks)
    : config_(std::move(config)), callbacks_(std::move(callbacks)) {}

Result<std::unique_ptr<SchedulerDriver>> SchedulerDriver::Start(SchedulerConfig config,
                                                                const std::string& data_dir,
                                                                Callbacks callbacks) {
  if (config.workers < 1) return Status::InvalidArgument("scheduler.workers must be >= 1");
  std::unique_ptr<SchedulerDriver> d(new SchedulerDriver(std::move(config), std::move(callbacks)));
  if (d->config_.kv_bytes_scale == 0)
    return Status::InvalidArgument("scheduler.kv_bytes_scale must be >= 1");
  SY_RETURN_IF_ERROR(d->MakeGroups());
  d->SizeSharedTiers();
  d->loop_ = std::make_unique<AsioEventLoop>();
  SY_RETURN_IF_ERROR(d->BuildCoreStack());
  // Each model's tiers: an HBM arena per worker (engines that compute: their pools, real
  // bytes), a host arena, RocksDB under <data-dir>/kv (later models: kv-m<i>).
  d->workers_.resize(static_cast<size_t>(d->total_workers()));
  const std::string kv_dir = data_dir + "/kv";
  for (size_t i = 0; i < d->groups_.size(); ++i)
    SY_RETURN_IF_ERROR(d->MakeGroupTiers(*d->groups_[i],
                                         i == 0 ? kv_dir : data_dir + "/kv-m" + std::to_string(i)));
  SY_RETURN_IF_ERROR(d->MakeEngines());
  d->tools_ = std::make_unique<ReportedToolWaiter>(d->loop_.get());
  SY_RETURN_IF_ERROR(d->MakeMover());
  d->StartRuntime();
  d->thread_ = std::thread([self = d.get()]() {
    SetThreadName("sy-sched");
    self->loop_->Run();
  });
  // Returns once the loop runs: a Stop() before Run() would be undone by Run()'s restart.
  d->Sync();
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
  spec.edit_topology = [&c, shape = spec.shape, origins](v1::Topology* topo) {
    SY_RETURN_IF_ERROR(scheduler::LabelClusterLinks(shape, *origins, topo));
    if (c.link_file_path.empty()) return Status::OK();
    return scheduler::ApplyLinkFile(c.link_file, c.link_file_path, topo);
  };
  scheduler::CoreOptions& co = spec.core;
  co.workers = total;
  co.hbm_bytes_per_worker = c.hbm_bytes_per_worker;
  // The host and disk tiers are shared by a model's workers: each gets an equal part, so a
  // demotion is never sent to a tier that cannot take it.
  co.host_bytes_per_worker = std::max<uint64_t>(1, host_bytes_ / uint64_t(total));
  co.disk_bytes_per_worker = std::max<uint64_t>(1, disk_bytes_ / uint64_t(total));
  if (groups_.size() > 1) {
    for (const auto& g : groups_) {
      co.model_costs[g->spec.id] = g->cost.get();
      for (int w = 0; w < g->spec.workers; ++w) {
        co.worker_models.push_back(g->spec.id);
        co.worker_hbm_bytes.push_back(g->spec.hbm_bytes_per_worker);
      }
    }
  }
  co.max_num_seqs = c.max_num_seqs;
  co.kv_block_tokens = c.kv_block_tokens;
  co.tenant_weights = c.tenant_weights;
  co.use_peer = total > 1;
  // The CPU engine attends within each context of a sequence, so a context could not read
  // a shared prefix held as a context of its own: sharing is off there (exact outputs).
  co.share_prefixes = !any_computes_;
  spec.cost = groups_[0]->cost.get();
  SY_ASSIGN_OR_RETURN(stack_, executors::BuildStack(std::move(spec), loop_.get()));
  return Status::OK();
}

void SchedulerDriver::StartRuntime() {
  std::vector<executors::Engine*> engines;
  for (EngineWorker& w : workers_) engines.push_back(w.engine.get());
  executors::Runtime* rt =
      stack_.StartRuntime(loop_.get(), std::move(engines), tools_.get(), mover_.get());
  rt->SetObserver([this](const Event& e, const scheduler::Commands& out, Time now) {
    Observe(e, out, now);
    EndWatchers(e, out);
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
          .With("planner", "net_budget over a loopback topology")
          .With("hbm_bytes_per_worker",
                std::to_string(config_.hbm_bytes_per_worker))  // the first model's
          .With("host_bytes", std::to_string(host_bytes_))
          .With("disk_bytes", std::to_string(disk_bytes_))
          .With("kv_dir", kv_dir));
}

SchedulerDriver::~SchedulerDriver() {
  if (loop_) loop_->Stop();
  if (thread_.joinable()) thread_.join();
  stack_.runtime.reset();  // before the executors it borrows
  mover_.reset();
  for (auto& g : groups_) g->mover.reset();   // before the block managers they move through
  for (auto& g : groups_) g->blocks.reset();  // before the tiers they hold
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

std::string SchedulerDriver::model_executor_name() const {
  // Distinct engine names in worker order ("simulated engine, cpu engine" with two models).
  std::string out;
  for (const EngineWorker& w : workers_) {
    std::string name(w.engine->name());
    if (out.find(name) == std::string::npos) out += (out.empty() ? "" : ", ") + name;
  }
  return out.empty() ? std::string("none") : out;
}

std::string SchedulerDriver::kv_mover_description() const {
  bool all_cpu = true;
  for (const auto& g : groups_) all_cpu = all_cpu && g->computes();
  const std::string emulated = "emulated kv_tiers (emulated HBM, host arena, RocksDB disk) at 1/" +
                               std::to_string(config_.kv_bytes_scale) + " of the KV bytes";
  const std::string real =
      "the cpu engines' real KV blocks copied through kv_tiers (host arena, RocksDB disk, "
      "engine pools), checksummed and committed";
  if (all_cpu) return "tiered kv mover: " + real;
  if (any_computes_)
    return "tiered kv mover: for cpu models " + real + "; for simulated ones " + emulated;
  return "tiered kv mover: blocks moved through " + emulated;
}

void SchedulerDriver::Submit(const v1::Workflow& workflow) {
  // Posted before the runtime's own post, so the tenant is known before any move of it.
  loop_->Post([this, id = workflow.id(), t = workflow.tenant()]() { tenant_of_[id] = t; });
  stack_.runtime->Submit(workflow);
}

void SchedulerDriver::Append(const std::string& workflow_id, const v1::ProgramNode& node) {
  stack_.runtime->Append(workflow_id, node);
}

void SchedulerDriver::Close(const std::string& workflow_id) { stack_.runtime->Close(workflow_id); }

void SchedulerDriver::Cancel(const std::string& workflow_id) {
  stack_.runtime->Cancel(workflow_id);
}

void SchedulerDriver::Fail(const std::string& workflow_id, const std::string& node_id,
                           const std::string& reason) {
  Event e;
  e.kind = EventKind::kCancel;  // with a status: the core ends the workflow with `fail`
  e.workflow_id = workflow_id;
  e.node_id = node_id;
  e.status = Status::Aborted(reason.empty() ? "workflow failed" : reason);
  stack_.runtime->Inject(std::move(e));
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
  if (callbacks_.durations_learned) callbacks_.durations_learned(stack_.core->durations().Export());
}

void SchedulerDriver::SaveDurationsNow() {
  Sync([this]() {
    if (durations_save_pending_) SaveDurations();
  });
}

Status SchedulerDriver::RestoreDurations(const v1::LearnedDurations& saved) {
  Status st;
  Sync([&]() { st = stack_.core->RestoreDurations(saved); });
  return st;
}

v1::LearnedDurations SchedulerDriver::LearnedDurations() {
  v1::LearnedDurations d;
  Sync([&]() { d = stack_.core->durations().Export(); });
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
  stack_.runtime->PeerLost(worker);
}

void SchedulerDriver::PeerJoined(int worker, std::string reason) {
  Log(LogLevel::kInfo, "worker rejoined",
      LogKeys().With("worker", std::to_string(worker)).With("reason", reason));
  stack_.runtime->PeerJoined(worker);
}

Result<SchedulerDriver::WorkerDrainState> SchedulerDriver::DrainWorker(int worker, bool on) {
  if (worker < 0 || worker >= total_workers())
    return Status::InvalidArgument("worker " + std::to_string(worker) + ": no such worker (0.." +
                                   std::to_string(total_workers() - 1) + ")");
  Status st;
  Sync([&]() {
    if (!stack_.core->alive(worker))
      st = Status::FailedPrecondition("worker " + std::to_string(worker) +
                                      " is lost: it cannot be drained or undrained");
    else
      stack_.runtime->Drain(worker, on);  // handled before the next task on the loop
  });
  if (!st.ok()) return st;
  Log(LogLevel::kInfo, on ? "worker draining" : "worker back in service",
      LogKeys().With("worker", std::to_string(worker)));
  WorkerDrainState out;
  out.worker = worker;
  Sync([&]() {
    out.state = !stack_.core->alive(worker)     ? "lost"
                : stack_.core->draining(worker) ? "draining"
                                                : "alive";
    out.drained = stack_.core->drained(worker);
  });
  return out;
}

uint64_t SchedulerDriver::BumpModelEpoch(const std::string& model_id) {
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    epoch = ++epochs_[model_id];
  }
  loop_->Post([this, model_id, epoch]() {
    // The model's tiers' blocks: stale copies are never read.
    if (const Group* g = FindGroup(model_id)) (void)g->blocks->BumpModelEpoch();
    stack_.runtime->ModelEpochChanged(model_id, epoch);
  });
  return epoch;
}

void SchedulerDriver::Forget(const std::string& workflow_id) {
  loop_->Post([this, workflow_id]() {
    if (!stack_.core->Forget(workflow_id)) return;  // still running in the core: keep its view
    tenant_of_.erase(workflow_id);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = wfs_.find(workflow_id);
    if (it == wfs_.end()) return;
    for (const std::string& key : it->second.contexts) {
      ctxs_.erase(key);
      for (const auto& g : groups_)
        if (g->token_log) g->token_log->Forget(key);
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
    auto loc = stack_.core->ContextLocation(key);
    v.known = loc.has_value();
    v.loc = loc.value_or(Location{});
    v.tokens = stack_.core->ContextTokens(key);
    const Group& g =
        v.loc.worker >= 0 && v.loc.worker < total_workers() ? GroupOf(v.loc.worker) : *groups_[0];
    v.bytes = uint64_t(std::max<int64_t>(0, v.tokens)) * g.cost->KvBytesPerToken();
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
  std::vector<v1::Decision> emitted;
  std::vector<std::pair<std::string, v1::WorkerLoss>> losses;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++events_;
    NoteEvent(e, now);
    std::vector<std::string> touched = MirrorEvent(e, out, now, &losses);
    MirrorCommands(out, now, callbacks_.decision ? &emitted : nullptr, &touched);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (const std::string& wf : touched) Refresh(wf);
    MirrorWorkers();
  }
  // Callbacks run without the mirror lock (they write durable state).
  Notify(e, out, losses, emitted);
}

std::vector<std::string> SchedulerDriver::MirrorEvent(
    const Event& e, const scheduler::Commands& out, Time now,
    std::vector<std::pair<std::string, v1::WorkerLoss>>* losses) {
  std::vector<std::string> touched;  // usually one workflow: deduplicated by the caller
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
    *losses = NoteWorkerLoss(e, out, now);
    for (const auto& [wf, loss] : *losses) touched.push_back(wf);
  }
  if (e.kind == EventKind::kLlmFinished) {
    auto p = placed_.find(e.workflow_id);
    if (p != placed_.end()) p->second.erase(e.node_id);
  }
  return touched;
}

void SchedulerDriver::MirrorCommands(const scheduler::Commands& out, Time now,
                                     std::vector<v1::Decision>* emitted,
                                     std::vector<std::string>* touched) {
  for (const Command& c : out.list) {
    Record(c, now, emitted);
    if (!c.workflow_id.empty()) touched->push_back(c.workflow_id);
    if (c.kind == CommandKind::kPlace) placed_[c.workflow_id][c.node_id] = c.worker;
    if (c.kind == CommandKind::kPreempt) placed_[c.workflow_id].erase(c.node_id);
    if (c.kind == CommandKind::kFail || c.kind == CommandKind::kComplete)
      placed_.erase(c.workflow_id);
  }
}

void SchedulerDriver::MirrorWorkers() {
  const scheduler::Core& core = *stack_.core;
  for (int w = 0; w < total_workers(); ++w) {
    hbm_used_[w] = core.hbm_used(w);
    worker_state_[w] = {!core.alive(w)     ? "lost"
                        : core.draining(w) ? "draining"
                                           : "alive",
                        core.drained(w)};
  }
  metrics_.SetQueuedNodes(core.queued_nodes());
  if (any_computes_) {
    real_bytes_moved_.clear();
    for (const auto& g : groups_)
      for (const auto& [k, n] : g->mover->real_bytes_by_destination()) real_bytes_moved_[k] += n;
  }
}

void SchedulerDriver::Notify(const Event& e, const scheduler::Commands& out,
                             const std::vector<std::pair<std::string, v1::WorkerLoss>>& losses,
                             const std::vector<v1::Decision>& emitted) {
  // A loss's evidence first, before the failures it caused.
  if (callbacks_.worker_lost)
    for (const auto& [wf, loss] : losses) callbacks_.worker_lost(wf, loss);
  bool simulated = reported_.empty();
  if (simulated && e.kind == EventKind::kLlmFinished && callbacks_.llm_done)
    callbacks_.llm_done(e.workflow_id, e.node_id, e.status, e.output_tokens);
  for (const Command& c : out.list) {
    // In order: a retry's record comes before the placement of its next attempt.
    if (c.kind == CommandKind::kRetry && simulated && callbacks_.llm_retried)
      callbacks_.llm_retried(c.workflow_id, c.node_id, c.reason);
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

kv_tiers::Tier* SchedulerDriver::HbmOf(int w) const {
  return w >= 0 && w < static_cast<int>(workers_.size()) ? workers_[static_cast<size_t>(w)].hbm
                                                         : nullptr;
}

std::string SchedulerDriver::TierName(const Location& l) const {
  switch (l.tier) {
    case Tier::kHbm:
    case Tier::kPeer:  // another worker's HBM, in this process
      return HbmOf(l.worker) ? HbmOf(l.worker)->name() : "";
    case Tier::kHost:  // the tiers of the worker's model
      return l.worker >= 0 && l.worker < total_workers() ? GroupOf(l.worker).host_tier->name() : "";
    case Tier::kDisk:
      return l.worker >= 0 && l.worker < total_workers() ? GroupOf(l.worker).disk_tier->name() : "";
    default:
      return "";
  }
}

// The topology links a move between two locations crosses (the route net_budget debits).
std::vector<uint32_t> SchedulerDriver::LinksOf(const Location& src, const Location& dst) const {
  std::vector<uint32_t> out;
  auto a = stack_.device_of(src), b = stack_.device_of(dst);
  if (!a.ok() || !b.ok()) return out;
  auto path = stack_.env->topology().FindPath(*a, *b);
  if (!path.ok()) return out;
  for (const net_budget::Hop& h : path->hops) out.push_back(h.link);
  return out;
}

}  // namespace switchyard::driver
