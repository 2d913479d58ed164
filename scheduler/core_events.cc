// Event dispatch: a table of member-function handlers indexed by EventKind, one small
// handler per kind. Every event first runs the timers that are due; its handler then says
// what follows (Then): by default the idle contexts of draining workers move off and the
// queued nodes are placed.
#include <algorithm>
#include <array>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler::internal {
namespace {

// kContextEvicted is EventKind's last enumerator: a kind added after it must move this bound.
constexpr size_t kEventKinds = static_cast<size_t>(EventKind::kContextEvicted) + 1;

struct Entry {
  EventKind kind;
  CoreState::Handler handler;
};
constexpr Entry kEntries[] = {
    {EventKind::kWorkflowSubmitted, &CoreState::HandleSubmitted},
    {EventKind::kNodeAppended, &CoreState::HandleAppended},
    {EventKind::kWorkflowClosed, &CoreState::HandleClosed},
    {EventKind::kEngineStep, &CoreState::HandleEngineStep},
    {EventKind::kEngineReport, &CoreState::HandleEngineReport},
    {EventKind::kLlmStarted, &CoreState::HandleLlmStarted},
    {EventKind::kLlmFinished, &CoreState::HandleLlmFinished},
    {EventKind::kToolStarted, &CoreState::HandleToolStarted},
    {EventKind::kToolFinished, &CoreState::HandleToolFinished},
    {EventKind::kTransferCompleted, &CoreState::HandleTransfer},
    {EventKind::kTransferFailed, &CoreState::HandleTransfer},
    {EventKind::kWorkerLost, &CoreState::HandleWorkerLost},
    {EventKind::kModelEpochChanged, &CoreState::HandleEpochChanged},
    {EventKind::kDeadlineTick, &CoreState::HandleTick},
    {EventKind::kCancel, &CoreState::HandleCancel},
    {EventKind::kWorkerJoined, &CoreState::HandleWorkerJoined},
    {EventKind::kDrainWorker, &CoreState::HandleDrain},
    {EventKind::kUndrainWorker, &CoreState::HandleDrain},
    {EventKind::kWorkerLoad, &CoreState::HandleWorkerLoad},
    {EventKind::kContextEvicted, &CoreState::HandleContextEvicted},
};

constexpr std::array<CoreState::Handler, kEventKinds> MakeHandlers() {
  std::array<CoreState::Handler, kEventKinds> t{};
  for (const Entry& e : kEntries) t[static_cast<size_t>(e.kind)] = e.handler;
  return t;
}

constexpr std::array<CoreState::Handler, kEventKinds> kHandlers = MakeHandlers();

// Checked on the kinds, not on the member pointers: comparing those is no constant
// expression under -fsanitize=undefined.
constexpr bool AllKindsHandled() {
  for (size_t k = 0; k < kEventKinds; ++k) {
    bool found = false;
    for (const Entry& e : kEntries) found = found || static_cast<size_t>(e.kind) == k;
    if (!found) return false;
  }
  return true;
}
static_assert(AllKindsHandled(), "every EventKind needs a handler in kEntries");

}  // namespace

CoreState::Handler CoreState::HandlerFor(EventKind kind) {
  auto i = static_cast<size_t>(kind);
  return i < kHandlers.size() ? kHandlers[i] : &CoreState::HandleUnknown;
}

void CoreState::Handle(const Event& e) {
  changes_at_event = Changes();
  RunTimers();
  Then then = (this->*HandlerFor(e.kind))(e);
  if (then == Then::kDrainAndDispatch) DrainStep();
  if (then != Then::kNothing) Dispatch();
  out->wakeup = timers.empty() ? Time::Max() : std::max(now, timers.begin()->at);
}

WfRec* CoreState::EventWorkflow(const Event& e) {
  WfRec* wf = FindWf(e.workflow_id);
  if (!wf) ++ignored;
  return wf;
}

std::pair<WfRec*, int> CoreState::EventNode(const Event& e) {
  WfRec* wf = EventWorkflow(e);
  if (!wf) return {nullptr, -1};
  std::optional<program_graph::NodeIndex> found = wf->graph->Find(e.node_id);
  if (!found) {
    ++ignored;
    return {nullptr, -1};
  }
  return {wf, static_cast<int>(*found)};
}

bool CoreState::FromEarlierAttempt(const Event& e, const NodeRec& n) {
  if (e.worker < 0 || e.worker == n.worker) return false;
  ++ignored;
  return true;
}

CoreState::Then CoreState::HandleSubmitted(const Event& e) {
  Submit(e.workflow);
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleAppended(const Event& e) {
  if (WfRec* wf = EventWorkflow(e)) Append(*wf, e.node);
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleClosed(const Event& e) {
  if (WfRec* wf = EventWorkflow(e)) Close(*wf);
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleCancel(const Event& e) {
  WfRec* wf = EventWorkflow(e);
  if (!wf) return Then::kDrainAndDispatch;
  if (e.status.ok()) {
    CancelWorkflow(*wf);
  } else {
    FailWorkflow(*wf, e.node_id, e.status.message());
  }
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleEngineStep(const Event& e) {
  auto [wf, idx] = EventNode(e);
  if (!wf) return Then::kDrainAndDispatch;
  NodeRec& n = wf->nodes[static_cast<size_t>(idx)];
  if (FromEarlierAttempt(e, n)) return Then::kDispatch;
  if (n.state == NState::kRunning) OnEngineStep(*wf, idx, e.tokens_done);
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleEngineReport(const Event& e) {
  // A step's progress only consumes memory: re-dispatch only when something was freed
  // (a timer, an eviction or a preemption), so a batching engine's many steps stay cheap.
  uint64_t preempted = pool_preemptions;
  OnEngineReport(e);
  // vLLM: no admissions in a step that preempted (the victim would come straight back);
  // the next report dispatches.
  if (pool_preemptions != preempted) {
    dispatch_next_report = true;
    return Then::kNothing;
  }
  if (Changes() == changes_at_event && !dispatch_next_report) return Then::kNothing;
  dispatch_next_report = false;
  return Then::kDispatch;
}

CoreState::Then CoreState::HandleLlmStarted(const Event& e) {
  (void)EventNode(e);  // placement already accounted for it
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleLlmFinished(const Event& e) {
  auto [wf, idx] = EventNode(e);
  if (!wf) return Then::kDrainAndDispatch;
  NodeRec& n = wf->nodes[static_cast<size_t>(idx)];
  if (FromEarlierAttempt(e, n)) return Then::kDispatch;
  if (n.state != NState::kRunning) {
    ++ignored;
  } else if (e.status.ok()) {
    OnLlmSucceeded(*wf, idx, e);
  } else {
    StopRunning(*wf, idx);
    OnNodeFailed(*wf, idx, e.status);
  }
  return Then::kDrainAndDispatch;
}

void CoreState::OnLlmSucceeded(WfRec& wf, int idx, const Event& e) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  int64_t out_tokens = std::clamp<int64_t>(e.output_tokens, 0,
                                           n.spec.hints().max_output_tokens() > 0
                                               ? n.spec.hints().max_output_tokens()
                                               : opt.default_max_output_tokens);
  auto [mean, fresh] = output_mean.try_emplace(n.spec.model_id(), out_tokens);
  if (!fresh) mean->second += (static_cast<double>(out_tokens) - mean->second) / 50;
  // Grow the primary context by what the node wrote; release the rest.
  std::vector<std::string> cs = NodeContexts(wf, n);
  int64_t grown = n.new_tokens - n.new_done + std::max<int64_t>(0, out_tokens - n.out_done);
  if (n.worker >= 0)
    workers[static_cast<size_t>(n.worker)].decode_kv_tokens += n.new_done - n.new_tokens;
  n.new_done = n.new_tokens;
  n.out_done = 0;
  uint64_t grown_bytes = 0;
  if (!cs.empty() && ExtendsPrimary(n)) grown_bytes = kv.Grow(kv.At(cs[0]), grown, false);
  OnPrefixProgress(wf, idx, INT64_MAX);  // its prefill is done
  TenantRec& t = Tenant(wf.tenant);
  t.service += e.model_time - n.charged;
  wf.plas += e.model_time;
  wf.atlas = std::max(wf.atlas, n.inherited + e.model_time);
  StopRunning(wf, idx);
  // StopRunning returned the reservation; account the grown bytes again.
  if (grown_bytes > 0) kv.Hold(kv.At(cs[0]).loc, static_cast<int64_t>(grown_bytes));
  OnSucceeded(wf, idx);
}

CoreState::Then CoreState::HandleToolStarted(const Event& e) {
  auto [wf, idx] = EventNode(e);
  if (!wf) return Then::kDrainAndDispatch;
  NodeRec& n = wf->nodes[static_cast<size_t>(idx)];
  if (n.state != NState::kAdmitted) {
    ++ignored;
    return Then::kDrainAndDispatch;
  }
  wf->admitted_tools--;
  n.state = NState::kRunning;
  n.started = now;
  wf->running_tools++;
  OnToolStarted(*wf, idx);
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleToolFinished(const Event& e) {
  auto [wf, idx] = EventNode(e);
  if (!wf) return Then::kDrainAndDispatch;
  NodeRec& n = wf->nodes[static_cast<size_t>(idx)];
  if (n.state != NState::kRunning && n.state != NState::kAdmitted) {
    ++ignored;
    return Then::kDrainAndDispatch;
  }
  if (n.state == NState::kRunning) wf->running_tools--;
  if (n.state == NState::kAdmitted) wf->admitted_tools--;
  durations.Observe(wf->tenant, n.spec.tool_name(), now - n.started);
  if (e.status.ok()) {
    OnSucceeded(*wf, idx);
  } else {
    OnNodeFailed(*wf, idx, e.status);
  }
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleTransfer(const Event& e) {
  OnTransferDone(e.transfer_id, e.kind == EventKind::kTransferCompleted);
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleWorkerLost(const Event& e) {
  OnWorkerLost(e.worker);
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleWorkerJoined(const Event& e) {
  if (e.role && e.worker >= 0 && e.worker < static_cast<int>(workers.size())) {
    opt.worker_roles.resize(workers.size(), WorkerRole::kMixed);
    opt.worker_roles[static_cast<size_t>(e.worker)] = *e.role;
  }
  OnWorkerJoined(e.worker);
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleDrain(const Event& e) {
  OnDrain(e.worker, e.kind == EventKind::kDrainWorker);
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleWorkerLoad(const Event& e) {
  if (e.worker < 0 || e.worker >= static_cast<int>(workers.size())) {
    ++ignored;
    return Then::kNothing;
  }
  WorkerRec& wr = workers[static_cast<size_t>(e.worker)];
  wr.reported = e.load;
  wr.reported_at = now;
  return Then::kNothing;  // costs change, capacity does not: the next placement reads it
}

CoreState::Then CoreState::HandleContextEvicted(const Event& e) {
  CtxRec* c = kv.Find(e.context);
  // Only a context the core holds idle in that worker's HBM: one in use or moving is the
  // engine's to keep, and one the core already moved or dropped is not there to lose.
  if (!c || c->loc.tier != Tier::kHbm || c->loc.worker != e.worker || c->users > 0 ||
      c->transfer != 0) {
    ++ignored;
    return Then::kNothing;
  }
  DiscardContext(*c, "its engine evicted it (KV events)");
  return Then::kDispatch;  // its memory is free
}

CoreState::Then CoreState::HandleEpochChanged(const Event& e) {
  OnEpochChanged(e.model_id, e.epoch);
  return Then::kDrainAndDispatch;
}

CoreState::Then CoreState::HandleTick(const Event&) { return Then::kDrainAndDispatch; }

CoreState::Then CoreState::HandleUnknown(const Event&) {
  ++ignored;
  return Then::kDrainAndDispatch;
}

}  // namespace switchyard::scheduler::internal
