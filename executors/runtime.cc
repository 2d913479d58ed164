#include "executors/runtime.h"

namespace switchyard::executors {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Event;
using scheduler::EventKind;

Runtime::Runtime(EventLoop* loop, scheduler::Core* core, ModelExecutor* model, ToolWaiter* tools,
                 KvMover* mover)
    : loop_(loop), core_(core), model_(model), tools_(tools), mover_(mover) {}

void Runtime::Submit(v1::Workflow workflow) {
  loop_->Post([this, w = std::move(workflow)]() {
    auto& specs = specs_[w.id()];
    for (const v1::ProgramNode& n : w.nodes()) specs.emplace(n.id(), n);
    Event e;
    e.kind = EventKind::kWorkflowSubmitted;
    e.workflow = w;
    Feed(e);
  });
}

void Runtime::Append(const std::string& workflow_id, v1::ProgramNode node) {
  loop_->Post([this, workflow_id, n = std::move(node)]() mutable {
    specs_[workflow_id].emplace(n.id(), n);
    Event e;
    e.kind = EventKind::kNodeAppended;
    e.workflow_id = workflow_id;
    e.node = std::move(n);
    Feed(e);
  });
}

void Runtime::Close(const std::string& workflow_id) {
  Event e;
  e.kind = EventKind::kWorkflowClosed;
  e.workflow_id = workflow_id;
  Inject(std::move(e));
}

void Runtime::Cancel(const std::string& workflow_id) {
  Event e;
  e.kind = EventKind::kCancel;
  e.workflow_id = workflow_id;
  Inject(std::move(e));
}

void Runtime::PeerLost(int worker) {
  loop_->Post([this, worker]() {
    // Runs on the lost worker produce nothing more.
    for (const std::string& key : running_on_[worker]) model_->Stop(key);
    running_on_.erase(worker);
    Event e;
    e.kind = EventKind::kPeerLost;
    e.worker = worker;
    Feed(e);
  });
}

void Runtime::ModelEpochChanged(const std::string& model_id, uint64_t epoch) {
  Event e;
  e.kind = EventKind::kModelEpochChanged;
  e.model_id = model_id;
  e.epoch = epoch;
  Inject(std::move(e));
}

void Runtime::Inject(Event e) {
  loop_->Post([this, e = std::move(e)]() { Feed(e); });
}

void Runtime::Feed(const Event& e) {
  Time now = loop_->Now();
  scheduler::Commands out = core_->handle(e, now);
  ++events_;
  if (observer_) observer_(e, out, now);
  for (const Command& c : out.list) Execute(c);
  if (out.wakeup != Time::Max()) ScheduleTick(out.wakeup);
}

void Runtime::ScheduleTick(Time at) {
  if (tick_ != kNoTimer && tick_at_ <= at) return;
  if (tick_ != kNoTimer) loop_->Cancel(tick_);
  tick_at_ = at;
  tick_ = loop_->PostAt(at, [this]() {
    tick_ = kNoTimer;
    tick_at_ = Time::Max();
    Feed(Event{});
  });
}

void Runtime::Execute(const Command& c) {
  switch (c.kind) {
    case CommandKind::kPlace:
      StartLlm(c);
      break;
    case CommandKind::kPreempt:
      model_->Stop(c.workflow_id + "/" + c.node_id);
      running_on_[c.worker].erase(c.workflow_id + "/" + c.node_id);
      break;
    case CommandKind::kAdmit:
      StartTool(c);
      break;
    case CommandKind::kDemote:
    case CommandKind::kPrefetch: {
      uint64_t id = c.transfer_id;
      mover_->Move(c, [this, id](Status st) {
        Event e;
        e.kind = st.ok() ? EventKind::kTransferCompleted : EventKind::kTransferFailed;
        e.transfer_id = id;
        e.status = st;
        Feed(e);
      });
      break;
    }
    case CommandKind::kDiscard:
      if (c.transfer_id != 0) mover_->Cancel(c.transfer_id);
      mover_->Discard(c.context);
      break;
    case CommandKind::kFail:
    case CommandKind::kComplete:
      outcomes_[c.workflow_id] = WorkflowOutcome{c.kind, c.reason, loop_->Now()};
      specs_.erase(c.workflow_id);
      break;
    case CommandKind::kKeep:
    case CommandKind::kRetry:
      break;  // the core's own timers re-admit retries
  }
}

void Runtime::StartLlm(const Command& c) {
  auto wf = specs_.find(c.workflow_id);
  if (wf == specs_.end()) return;
  auto node = wf->second.find(c.node_id);
  if (node == wf->second.end()) return;
  int64_t ctx = 0;
  for (const v1::CacheRef& r : node->second.cache_refs())
    ctx += core_->ContextTokens(scheduler::ContextKey(c.workflow_id, r.context()));
  std::string key = c.workflow_id + "/" + c.node_id;
  running_on_[c.worker].insert(key);
  std::string wf_id = c.workflow_id, node_id = c.node_id;
  int worker = c.worker;
  LlmReport report;
  report.step = [this, wf_id, node_id, worker](int64_t done) {
    Event e;
    e.kind = EventKind::kEngineStep;
    e.workflow_id = wf_id;
    e.node_id = node_id;
    e.worker = worker;
    e.tokens_done = done;
    Feed(e);
  };
  report.done = [this, wf_id, node_id, worker, key](Status st, int64_t out, Duration used) {
    running_on_[worker].erase(key);
    Event e;
    e.kind = EventKind::kLlmFinished;
    e.workflow_id = wf_id;
    e.node_id = node_id;
    e.worker = worker;
    e.status = st;
    e.output_tokens = out;
    e.model_time = used;
    Feed(e);
  };
  model_->Start(key, c, node->second, ctx, std::move(report));
}

void Runtime::StartTool(const Command& c) {
  auto wf = specs_.find(c.workflow_id);
  if (wf == specs_.end()) return;
  auto node = wf->second.find(c.node_id);
  if (node == wf->second.end()) return;
  std::string wf_id = c.workflow_id, node_id = c.node_id;
  tools_->Start(
      wf_id + "/" + node_id, node->second,
      [this, wf_id, node_id]() {
        Event e;
        e.kind = EventKind::kToolStarted;
        e.workflow_id = wf_id;
        e.node_id = node_id;
        Feed(e);
      },
      [this, wf_id, node_id](Status st) {
        Event e;
        e.kind = EventKind::kToolFinished;
        e.workflow_id = wf_id;
        e.node_id = node_id;
        e.status = st;
        Feed(e);
      });
}

}  // namespace switchyard::executors
