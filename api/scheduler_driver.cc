#include "api/scheduler_driver.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <future>

#include "api/report_waiter.h"
#include "base/asio_event_loop.h"
#include "base/logging.h"
#include "executors/model_cost.h"
#include "executors/runtime.h"
#include "scheduler/core.h"
#include "scheduler/policy.h"
#include "scheduler/simulated_fabric.h"

namespace switchyard::api {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Event;
using scheduler::EventKind;
using scheduler::Location;
using scheduler::Tier;

namespace {

// Embedded default cost model: Llama-3.1-8B (configs/models/llama-3.1-8b.json) on an
// H100-SXM (configs/gpus/h100.json), priced by the roofline of executors/model_cost.h.
Result<executors::RooflineCostModel> DefaultCostModel() {
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
  return executors::RooflineCostModel::Create(m, g);
}

uint64_t PhysicalMemory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : (16ULL << 30);
}

uint64_t FreeDisk(const std::string& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0) return 64ULL << 30;
  return uint64_t(s.f_bavail) * uint64_t(s.f_frsize);
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
  SchedulerConfig& c = d->config_;
  uint64_t ram = PhysicalMemory();
  if (c.hbm_bytes_per_worker == 0)
    c.hbm_bytes_per_worker = std::clamp<uint64_t>(ram / 2, 8ULL << 30, 64ULL << 30);
  d->host_bytes_ = c.host_bytes ? c.host_bytes : ram / 4;
  d->disk_bytes_ = c.disk_bytes ? c.disk_bytes : FreeDisk(data_dir) / 2;
  SY_ASSIGN_OR_RETURN(auto cost, DefaultCostModel());
  d->cost_ = std::make_unique<executors::RooflineCostModel>(std::move(cost));
  d->policy_ = scheduler::MakePolicy(c.policy);
  if (!d->policy_) return Status::InvalidArgument("unknown scheduler policy '" + c.policy + "'");
  scheduler::SimulatedFabric::Options fo;
  fo.workers = c.workers;
  d->fabric_ = std::make_unique<scheduler::SimulatedFabric>(fo);
  scheduler::CoreOptions co;
  co.workers = c.workers;
  co.hbm_bytes_per_worker = c.hbm_bytes_per_worker;
  co.slots_per_worker = c.slots_per_worker;
  co.tenant_weights = c.tenant_weights;
  co.use_peer = c.workers > 1;
  d->core_ = std::make_unique<scheduler::Core>(co, d->policy_.get(), d->fabric_.get(),
                                               d->fabric_.get(), d->cost_.get());
  d->loop_ = std::make_unique<AsioEventLoop>();
  executors::ModelExecutor* model = nullptr;
  if (c.simulated_llm) {
    d->sim_model_ = std::make_unique<executors::SimulatedModelExecutor>(
        d->loop_.get(), d->cost_.get(), executors::SimulatedModelExecutor::Options{});
    model = d->sim_model_.get();
  } else {
    d->engine_model_ = std::make_unique<ReportedModelExecutor>(d->loop_.get());
    model = d->engine_model_.get();
  }
  d->tools_ = std::make_unique<ReportedToolWaiter>(d->loop_.get());
  d->mover_ = std::make_unique<executors::SimulatedKvMover>(d->loop_.get(), d->fabric_.get());
  d->runtime_ = std::make_unique<executors::Runtime>(d->loop_.get(), d->core_.get(), model,
                                                     d->tools_.get(), d->mover_.get());
  SchedulerDriver* self = d.get();
  d->runtime_->SetObserver([self](const Event& e, const scheduler::Commands& out, Time now) {
    self->Observe(e, out, now);
  });
  d->thread_ = std::thread([self]() { self->loop_->Run(); });
  // Returns once the loop runs: a Stop() before Run() would be undone by Run()'s restart.
  d->Sync();
  Log(LogLevel::kInfo, "scheduler started",
      LogKeys()
          .With("workers", std::to_string(c.workers))
          .With("policy", std::string(d->policy_->name()))
          .With("model_executor", d->model_executor_name())
          .With("kv_mover", "simulated kv mover over simulated fabric")
          .With("hbm_bytes_per_worker", std::to_string(c.hbm_bytes_per_worker)));
  return d;
}

SchedulerDriver::~SchedulerDriver() {
  if (loop_) loop_->Stop();
  if (thread_.joinable()) thread_.join();
  runtime_.reset();  // before the executors it borrows
}

std::string SchedulerDriver::model_executor_name() const {
  return sim_model_ ? std::string(sim_model_->name()) : std::string(engine_model_->name());
}

void SchedulerDriver::Submit(const v1::Workflow& workflow) { runtime_->Submit(workflow); }

void SchedulerDriver::Append(const std::string& workflow_id, const v1::ProgramNode& node) {
  runtime_->Append(workflow_id, node);
}

void SchedulerDriver::Close(const std::string& workflow_id) { runtime_->Close(workflow_id); }

void SchedulerDriver::Cancel(const std::string& workflow_id) { runtime_->Cancel(workflow_id); }

void SchedulerDriver::Report(const std::string& workflow_id, const v1::NodeEvent& event) {
  NodeReport r{event.type(), event.error(), event.output_tokens()};
  std::string key = workflow_id + "/" + event.node_id();
  loop_->Post([this, key, r = std::move(r)]() mutable {
    bool tool =
        r.type == v1::TOOL_STARTED || r.type == v1::TOOL_FINISHED || r.type == v1::TOOL_FAILED;
    if (tool)
      tools_->Report(key, std::move(r));
    else if (engine_model_)
      engine_model_->Report(key, std::move(r));
  });
}

void SchedulerDriver::Sync(std::function<void()> fn) {
  std::promise<void> done;
  loop_->Post([&]() {
    if (fn) fn();
    done.set_value();
  });
  done.get_future().wait();
}

void SchedulerDriver::Record(const Command& c, Time now, std::vector<v1::Decision>* emitted) {
  ++decisions_by_kind_[scheduler::CommandKindName(c.kind)];
  if (c.workflow_id.empty()) return;
  v1::Decision d;
  d.set_time_ms(now.millis());
  d.set_kind(scheduler::CommandKindName(c.kind));
  d.set_node_id(c.node_id);
  if (!c.context.empty()) d.set_context(ContextName(c.context, c.workflow_id));
  if (c.kind == CommandKind::kDemote || c.kind == CommandKind::kPrefetch) {
    d.set_src(scheduler::LocationString(c.src));
    d.set_dst(scheduler::LocationString(c.dst));
    d.set_traffic_class(scheduler::TrafficClassName(c.grant.traffic_class));
    xfers_[c.transfer_id] = XferView{
        c.context, c.workflow_id, c.src, c.dst, c.bytes, static_cast<int>(c.grant.traffic_class)};
  }
  d.set_bytes(c.bytes);
  d.set_transfer_id(c.transfer_id);
  d.set_worker(c.worker);
  d.set_reason(c.reason);
  d.set_line(scheduler::ToString(c));
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
  std::set<std::string> touched;
  std::vector<v1::Decision> emitted;
  std::vector<v1::Decision>* want = callbacks_.decision ? &emitted : nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++events_;
    auto add_contexts = [&](const std::string& wf, const v1::ProgramNode& n) {
      for (const v1::CacheRef& r : n.cache_refs())
        wfs_[wf].contexts.insert(scheduler::ContextKey(wf, r.context()));
    };
    if (e.kind == EventKind::kWorkflowSubmitted) {
      wfs_[e.workflow.id()];
      for (const v1::ProgramNode& n : e.workflow.nodes()) add_contexts(e.workflow.id(), n);
      touched.insert(e.workflow.id());
    } else if (e.kind == EventKind::kNodeAppended) {
      add_contexts(e.workflow_id, e.node);
    }
    if (!e.workflow_id.empty()) touched.insert(e.workflow_id);
    if (e.kind == EventKind::kTransferCompleted || e.kind == EventKind::kTransferFailed) {
      auto x = xfers_.find(e.transfer_id);
      if (x != xfers_.end()) {
        if (e.kind == EventKind::kTransferCompleted)
          bytes_moved_by_tier_[scheduler::TierName(x->second.dst.tier)] += x->second.bytes;
        touched.insert(x->second.wf);
        xfers_.erase(x);
      }
    }
    if (e.kind == EventKind::kPeerLost) {
      for (const auto& [key, v] : ctxs_)
        if (v.loc.worker == e.worker) touched.insert(v.wf);
    }
    for (const Command& c : out.list) {
      Record(c, now, want);
      if (!c.workflow_id.empty()) touched.insert(c.workflow_id);
    }
    for (const std::string& wf : touched) Refresh(wf);
    for (int w = 0; w < config_.workers; ++w) hbm_used_[w] = core_->hbm_used(w);
  }
  // Callbacks run without the mirror lock (they write durable state).
  if (sim_model_ && e.kind == EventKind::kLlmFinished && callbacks_.llm_done)
    callbacks_.llm_done(e.workflow_id, e.node_id, e.status, e.output_tokens);
  for (const Command& c : out.list) {
    if (c.kind == CommandKind::kPlace && sim_model_ && callbacks_.llm_placed)
      callbacks_.llm_placed(c.workflow_id, c.node_id);
    if (c.kind == CommandKind::kFail && callbacks_.workflow_failed)
      callbacks_.workflow_failed(c.workflow_id, c.node_id, c.reason);
    if (c.kind == CommandKind::kFail || c.kind == CommandKind::kComplete) {
      tools_->Forget(c.workflow_id);
      if (engine_model_) engine_model_->Forget(c.workflow_id);
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
}

std::vector<std::string> SchedulerDriver::LinksOf(const Location& src, const Location& dst) const {
  auto level = [](Tier t) { return t == Tier::kPeer ? Tier::kHbm : t; };
  Tier s = level(src.tier), d = level(dst.tier);
  std::vector<std::string> path;
  auto w = [](int i) { return std::to_string(i); };
  if (s == Tier::kDisk) path.push_back("disk" + w(src.worker));
  if (s == Tier::kDisk || s == Tier::kHost) path.push_back("pcie" + w(src.worker));
  if (src.worker != dst.worker)
    path.push_back("peer" + w(std::min(src.worker, dst.worker)) + "-" +
                   w(std::max(src.worker, dst.worker)));
  if (d == Tier::kDisk || d == Tier::kHost) path.push_back("pcie" + w(dst.worker));
  if (d == Tier::kDisk) path.push_back("disk" + w(dst.worker));
  if (path.empty() && s != d) path.push_back("pcie" + w(src.worker));
  return path;
}

void SchedulerDriver::FillCluster(v1::ClusterState* out) const {
  scheduler::SimulatedFabric::Options fo;  // the fabric's link figures (defaults)
  std::lock_guard<std::mutex> lock(mu_);
  out->set_workers(config_.workers);
  out->set_model_executor(model_executor_name());
  out->set_kv_mover("simulated kv mover (move times from the simulated fabric)");
  out->set_planner("simulated fabric (loopback topology)");
  out->set_policy(std::string(policy_->name()));
  out->set_hbm_capacity_bytes_per_worker(config_.hbm_bytes_per_worker);
  out->set_scheduler_events(events_);
  std::map<std::pair<std::string, int>, std::pair<uint64_t, int>> used;  // (tier, worker)
  for (const auto& [key, v] : ctxs_) {
    if (!v.known || v.loc.tier == Tier::kNone) continue;
    auto& u = used[{scheduler::TierName(v.loc.tier), v.loc.worker}];
    u.first += v.bytes;
    ++u.second;
  }
  for (int w = 0; w < config_.workers; ++w) {
    for (const char* tier : {"hbm", "host", "disk"}) {
      auto* t = out->add_tiers();
      t->set_tier(tier);
      t->set_worker(w);
      auto u = used[{tier, w}];
      t->set_contexts(u.second);
      std::string t_name = tier;
      if (t_name == "hbm") {
        t->set_capacity_bytes(config_.hbm_bytes_per_worker);
        auto h = hbm_used_.find(w);
        t->set_used_bytes(h == hbm_used_.end() ? 0 : h->second);
        t->set_backing("emulated HBM (scheduler accounting, committed + reserved)");
      } else {
        t->set_capacity_bytes(t_name == "host" ? host_bytes_ : disk_bytes_);
        t->set_used_bytes(u.first);
        t->set_backing(t_name == "host" ? "emulated host memory tier" : "emulated disk tier");
      }
    }
  }
  std::map<std::string, std::map<int, std::pair<int, uint64_t>>> active;  // link -> class
  for (const auto& [id, x] : xfers_) {
    for (const std::string& l : LinksOf(x.src, x.dst)) {
      auto& a = active[l][x.cls];
      ++a.first;
      a.second += x.bytes;
    }
  }
  auto add_link = [&](const std::string& name, const char* kind, double bw, Duration alpha) {
    auto* l = out->add_links();
    l->set_name(name);
    l->set_kind(kind);
    l->set_bandwidth_bytes_per_s(bw);
    l->set_alpha_s(ToSeconds(alpha));
    for (int c = 0; c < 4; ++c) {
      auto* b = l->add_classes();
      b->set_traffic_class(scheduler::TrafficClassName(static_cast<scheduler::TrafficClass>(c)));
      b->set_floor_share(fo.class_floor[c]);
      b->set_max_grants(fo.max_grants[c]);
      auto a = active[name][c];
      b->set_active_grants(a.first);
      b->set_active_bytes(a.second);
    }
  };
  for (int w = 0; w < config_.workers; ++w) {
    add_link("pcie" + std::to_string(w), "pcie", fo.pcie_bandwidth, fo.pcie_alpha);
    add_link("disk" + std::to_string(w), "disk", fo.disk_bandwidth, fo.disk_alpha);
  }
  for (int a = 0; a < config_.workers; ++a)
    for (int b = a + 1; b < config_.workers; ++b)
      add_link("peer" + std::to_string(a) + "-" + std::to_string(b), "peer", fo.peer_bandwidth,
               fo.peer_alpha);
  for (const auto& [k, n] : decisions_by_kind_) (*out->mutable_decisions_by_kind())[k] = n;
  for (const auto& [k, n] : bytes_moved_by_tier_) (*out->mutable_bytes_moved_by_tier())[k] = n;
}

}  // namespace switchyard::api
