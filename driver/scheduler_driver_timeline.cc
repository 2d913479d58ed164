// SchedulerDriver's timeline and logs: each workflow's TimelineRecorder in the mirror
// (GET /v1/workflows/{id}/timeline), the debug line of every decision and the line of every
// transfer's end, with the correlation keys of docs/design.md invariant 8.
#include "base/logging.h"
#include "base/mutex.h"
#include "driver/scheduler_driver.h"
#include "executors/tiered_mover.h"
#include "kv_tiers/block_manager.h"
#include "scheduler/net_budget_env.h"

namespace switchyard::driver {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Event;
using scheduler::EventKind;

TimelineRecorder& SchedulerDriver::TimelineOf(WfView& w) const {
  w.timeline.set_limit(config_.max_decisions_per_workflow);
  return w.timeline;
}

void SchedulerDriver::NoteEvent(const Event& e, Time now) {
  if (e.kind == EventKind::kWorkflowSubmitted) {
    TimelineRecorder& t = TimelineOf(wfs_[e.workflow.id()]);
    for (const v1::ProgramNode& n : e.workflow.nodes()) t.AddNode(n, now);
    return;
  }
  if (e.kind == EventKind::kNodeAppended)
    return TimelineOf(wfs_[e.workflow_id]).AddNode(e.node, now);
  if (e.workflow_id.empty()) return;
  auto it = wfs_.find(e.workflow_id);  // never recreates a forgotten workflow
  if (it == wfs_.end()) return;
  for (uint64_t id : TimelineOf(it->second).OnEvent(e, now))
    for (const auto& g : groups_)
      if (g->mover->MarkConsumed(id)) break;
}

void SchedulerDriver::NoteDecision(const Command& c, const v1::Decision& d, Time now) {
  TransferRoute route;
  if (c.kind == CommandKind::kDemote || c.kind == CommandKind::kPrefetch) {
    route.src_tier = scheduler::TierName(c.src.tier);
    route.dst_tier = scheduler::TierName(c.dst.tier);
    route.src_worker = c.src.worker;
    route.dst_worker = c.dst.worker;
    for (uint32_t l : LinksOf(c.src, c.dst))
      route.links.push_back(stack_.env->topology().link(l).id);
  }
  std::string node = TimelineOf(wfs_[c.workflow_id]).OnDecision(d, now, route);
  if (!LogEnabled(LogLevel::kDebug)) return;
  LogKeys keys;
  keys.workflow_id = c.workflow_id;
  keys.node_id = std::move(node);
  if (c.transfer_id != 0) keys.transfer_id = std::to_string(c.transfer_id);
  int w = c.worker >= 0 ? c.worker : c.src.worker;
  keys.model_epoch =
      (w >= 0 && w < total_workers() ? GroupOf(w) : *groups_[0]).blocks->model_epoch();
  keys.With("kind", d.kind());
  if (!d.context().empty()) keys.With("context", d.context());
  keys.With("line", d.line());
  Log(LogLevel::kDebug, "scheduler decision", keys);
}

void SchedulerDriver::EndTransfer(const Event& e, const XferView& x, Time now) {
  MoverTimes times;
  const Group& g =
      x.src.worker >= 0 && x.src.worker < total_workers() ? GroupOf(x.src.worker) : *groups_[0];
  if (auto m = g.mover->TimesOf(e.transfer_id)) {
    times.transport_completed = m->transport_completed;
    times.validated = m->validated;
    times.blocks = m->blocks;
    times.bytes = m->bytes;
  }
  const bool ok = e.kind == EventKind::kTransferCompleted;
  const Status st = ok ? Status::OK() : e.status;
  auto w = wfs_.find(x.wf);
  if (w != wfs_.end()) TimelineOf(w->second).OnTransferEnd(e.transfer_id, st, times, now);
  LogLevel level = ok ? LogLevel::kDebug : st.IsCancelled() ? LogLevel::kInfo : LogLevel::kWarn;
  if (!LogEnabled(level)) return;
  LogKeys keys;
  keys.workflow_id = x.wf;
  keys.transfer_id = std::to_string(e.transfer_id);
  keys.model_epoch = g.blocks->model_epoch();
  keys.With("context", x.ctx.size() > x.wf.size() ? x.ctx.substr(x.wf.size() + 1) : x.ctx)
      .With("src", scheduler::LocationString(x.src))
      .With("dst", scheduler::LocationString(x.dst))
      .With("bytes", std::to_string(x.bytes))
      .With("blocks", std::to_string(times.blocks));
  Log(level, ok ? "transfer committed" : "transfer not committed: " + st.ToString(), keys);
}

bool SchedulerDriver::FillTimeline(const std::string& workflow_id,
                                   v1::WorkflowTimeline* out) const {
  MutexLock lock(&mu_);
  auto it = wfs_.find(workflow_id);
  if (it == wfs_.end()) return false;
  out->set_workflow_id(workflow_id);
  it->second.timeline.Fill(out);
  return true;
}

}  // namespace switchyard::driver
