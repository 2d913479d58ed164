// SchedulerDriver::NoteWorkerLoss: the evidence a lost worker leaves on each workflow
// (the durable failure record of invariant 5), gathered from the driver's mirror as it was
// just before the loss, and the mirror's end of the transfers the core dropped.
#include <map>
#include <set>

#include "base/logging.h"
#include "driver/scheduler_driver.h"

namespace switchyard::driver {

using scheduler::Event;
using scheduler::EventKind;
using scheduler::Tier;

std::vector<std::pair<std::string, v1::WorkerLoss>> SchedulerDriver::NoteWorkerLoss(
    const Event& e, const scheduler::Commands& out, Time now) {
  const int w = e.worker;
  std::string reason = "lost";
  if (auto r = loss_reason_.find(w); r != loss_reason_.end()) {
    reason = r->second;
    loss_reason_.erase(r);
  }
  std::map<std::string, v1::WorkerLoss> by_wf;
  auto loss_of = [&](const std::string& wf) -> v1::WorkerLoss& {
    v1::WorkerLoss& l = by_wf[wf];
    if (l.reason().empty()) {
      l.set_time_ms(now.millis());
      l.set_worker(w);
      l.set_reason(reason);
    }
    return l;
  };
  for (const auto& [wf, nodes] : placed_)
    for (const auto& [node, worker] : nodes)
      if (worker == w) loss_of(wf).add_nodes(node);
  std::map<std::string, std::set<std::string>> contexts;  // sorted for a stable record
  for (const auto& [key, v] : ctxs_)
    if (v.known && v.loc.worker == w && v.loc.tier != Tier::kNone) contexts[v.wf].insert(v.name);
  for (const auto& [wf, names] : contexts)
    for (const std::string& n : names) loss_of(wf).add_contexts(n);
  // The core ended the transfers touching the worker: end them here too, failed, so a late
  // completion from the mover is not shown as a commit.
  const Status lost = Status::Unavailable("worker " + std::to_string(w) + " lost: " + reason);
  for (auto it = xfers_.begin(); it != xfers_.end();) {
    const XferView& x = it->second;
    if (x.src.worker != w && x.dst.worker != w) {
      ++it;
      continue;
    }
    Event failed;
    failed.kind = EventKind::kTransferFailed;
    failed.transfer_id = it->first;
    failed.status = lost;
    metrics_.OnTransferEnded(it->first, x.links, x.cls, x.bytes, false, now);
    EndTransfer(failed, x, now);
    v1::WorkerLoss& l = loss_of(x.wf);
    auto wit = wfs_.find(x.wf);
    const v1::TimelineTransfer* t =
        wit == wfs_.end() ? nullptr : TimelineOf(wit->second).FindTransfer(it->first);
    if (t) {
      *l.add_transfers() = *t;
    } else {
      v1::TimelineTransfer* s = l.add_transfers();
      s->set_transfer_id(it->first);
      s->set_bytes(x.bytes);
      s->set_outcome("failed");
    }
    it = xfers_.erase(it);
  }
  for (const scheduler::Command& c : out.list) {
    auto it = by_wf.find(c.workflow_id);
    if (it != by_wf.end()) it->second.add_actions(scheduler::ToString(c));
  }
  std::vector<std::pair<std::string, v1::WorkerLoss>> result(by_wf.begin(), by_wf.end());
  for (const auto& [wf, l] : result) {
    LogKeys keys;
    keys.workflow_id = wf;
    keys.With("worker", std::to_string(w))
        .With("reason", reason)
        .With("nodes", std::to_string(l.nodes_size()))
        .With("contexts", std::to_string(l.contexts_size()))
        .With("transfers", std::to_string(l.transfers_size()))
        .With("actions", std::to_string(l.actions_size()));
    Log(LogLevel::kWarn, "worker lost: failure record", keys);
  }
  return result;
}

}  // namespace switchyard::driver
