#include "driver/scheduler_driver.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <future>

#include "base/asio_event_loop.h"
#include "base/completion_batch.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "cpu_engine/cpu_engine.h"
#include "cpu_engine/tokenizer.h"
#include "driver/report_waiter.h"
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

std::string ContextName(const std::string& key, const std::string& wf) {
  return key.size() > wf.size() ? key.substr(wf.size() + 1) : key;
}

}  // namespace

SchedulerDriver::SchedulerDriver(SchedulerConfig config, Callbacks callbacks)
    : config_(std::move(config)), callbacks_(std::move(callbacks)) {}

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
  MutexLock lock(&mu_);
  auto it = placed_.find(workflow_id);
  return it != placed_.end() && it->second.count(node_id) > 0;
}

void SchedulerDriver::WorkerLost(int worker, std::string reason) {
  {
    MutexLock lock(&mu_);
    loss_reason_[worker] = reason.empty() ? std::string("lost") : std::move(reason);
  }
  stack_.runtime->WorkerLost(worker);
}

void SchedulerDriver::WorkerJoined(int worker, std::string reason,
                                   std::optional<scheduler::WorkerRole> role) {
  Log(LogLevel::kInfo, "worker rejoined",
      LogKeys().With("worker", std::to_string(worker)).With("reason", reason));
  stack_.runtime->WorkerJoined(worker, role);
}

void SchedulerDriver::ReportLoad(int worker, const scheduler::ReportedLoad& load) {
  if (worker < 0 || worker >= total_workers()) return;
  stack_.runtime->ReportLoad(worker, load);
}

void SchedulerDriver::ReportContextEvicted(const std::string& context, int worker) {
  if (worker < 0 || worker >= total_workers()) return;
  stack_.runtime->ReportContextEvicted(context, worker);
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
    MutexLock lock(&mu_);
    epoch = ++epochs_[model_id];
  }
  loop_->Post([this, model_id, epoch]() {
    // The model's tiers' blocks: stale copies are never read; its engines' prefix caches
    // never match KV of the old weights.
    if (const Group* g = FindGroup(model_id)) {
      (void)g->blocks->BumpModelEpoch();
      for (int w = g->first; w < g->first + g->spec.workers; ++w)
        if (executors::Engine* e = workers_[static_cast<size_t>(w)].engine.get())
          e->SetModelEpoch(epoch);
    }
    stack_.runtime->ModelEpochChanged(model_id, epoch);
  });
  return epoch;
}

void SchedulerDriver::Forget(const std::string& workflow_id) {
  loop_->Post([this, workflow_id]() {
    if (!stack_.core->Forget(workflow_id)) return;  // still running in the core: keep its view
    tenant_of_.erase(workflow_id);
    MutexLock lock(&mu_);
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
  MutexLock lock(&mu_);
  return wfs_.size();
}

void SchedulerDriver::Sync(std::function<void()> fn) {
  if (!own_loop_) {  // an injected loop: this thread runs it (see Start)
    bool ran = false;
    loop_->Post([&]() {
      if (fn) fn();
      ran = true;
    });
    while (!ran) loop_->RunUntil(loop_->Now());
    return;
  }
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
    MutexLock lock(&mu_);
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
  auto add_contexts = [&](const std::string& wf, const v1::ProgramNode& n) REQUIRES(mu_) {
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
  if (e.kind == EventKind::kWorkerLost) {
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
    worker_role_[w] = core.role(w);
  }
  pd_stats_ = core.pd_stats();
  metrics_.SetQueuedNodes(core.queued_nodes());
  metrics_.SetRunningNodes(core.running_nodes());
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
  MutexLock lock(&mu_);
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
