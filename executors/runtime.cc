#include "executors/runtime.h"

#include "base/logging.h"

namespace switchyard::executors {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Event;
using scheduler::EventKind;

Runtime::Runtime(EventLoop* loop, scheduler::Core* core, std::vector<Engine*> engines,
                 ToolWaiter* tools, KvMover* mover)
    : loop_(loop), core_(core), engines_(std::move(engines)), tools_(tools), mover_(mover) {
  for (size_t w = 0; w < engines_.size(); ++w)
    if (engines_[w]) engines_[w]->SetListener([this](const StepReport& r) { OnStep(r); });
}

Engine* Runtime::engine(int worker) const {
  return worker >= 0 && worker < static_cast<int>(engines_.size()) ? engines_[worker] : nullptr;
}

void Runtime::Release(const std::string& context, int worker) {
  for (size_t w = 0; w < engines_.size(); ++w)
    if (engines_[w] && (worker < 0 || worker == static_cast<int>(w)))
      (void)engines_[w]->Release(context);
}

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

void Runtime::WorkerLost(int worker) {
  loop_->Post([this, worker]() {
    // Runs on the lost worker produce nothing more.
    for (const std::string& key : running_on_[worker]) {
      if (Engine* eng = engine(worker)) (void)eng->Preempt(key);
      seqs_.erase(key);
    }
    running_on_.erase(worker);
    Event e;
    e.kind = EventKind::kWorkerLost;
    e.worker = worker;
    Feed(e);
  });
}

void Runtime::WorkerJoined(int worker, std::optional<scheduler::WorkerRole> role) {
  loop_->Post([this, worker, role]() {
    if (Engine* eng = engine(worker)) {
      Status st = eng->Reset();
      if (!st.ok()) {
        Log(LogLevel::kWarn, "worker not rejoined: its engine cannot start over",
            LogKeys().With("worker", std::to_string(worker)).With("error", st.ToString()));
        return;
      }
    }
    // Moves of the lost incarnation that are still out: their end must not free the new
    // incarnation's blocks (a context of the same key may be there by then).
    for (auto& [id, c] : moves_) {
      if (c.src.worker == worker) c.src.tier = scheduler::Tier::kNone;
      if (c.dst.worker == worker) c.dst.tier = scheduler::Tier::kNone;
    }
    Event e;
    e.kind = EventKind::kWorkerJoined;
    e.worker = worker;
    e.role = role;
    Feed(e);
  });
}

void Runtime::Drain(int worker, bool on) {
  Event e;
  e.kind = on ? EventKind::kDrainWorker : EventKind::kUndrainWorker;
  e.worker = worker;
  Inject(std::move(e));
}

void Runtime::ReportLoad(int worker, const scheduler::ReportedLoad& load) {
  Event e;
  e.kind = EventKind::kWorkerLoad;
  e.worker = worker;
  e.load = load;
  Inject(std::move(e));
}

void Runtime::ReportContextEvicted(const std::string& context, int worker) {
  Event e;
  e.kind = EventKind::kContextEvicted;
  e.context = context;
  e.worker = worker;
  Inject(std::move(e));
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

void Runtime::Feed(const Event& e, const std::function<void()>& then) {
  Time now = loop_->Now();
  scheduler::Commands out = core_->handle(e, now);
  ++events_;
  if (observer_) observer_(e, out, now);
  if (then) then();
  for (const Command& c : out.list) Execute(c);
  if (out.wakeup != Time::Max()) ScheduleTick(out.wakeup);
  if (after_) after_(now);
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
    case CommandKind::kPreempt: {
      std::string key = c.workflow_id + "/" + c.node_id;
      if (Engine* eng = engine(c.worker)) (void)eng->Preempt(key);
      running_on_[c.worker].erase(key);
      seqs_.erase(key);
      SyncContexts(c.workflow_id, c.node_id, c.worker);
      break;
    }
    case CommandKind::kAdmit:
      StartTool(c);
      break;
    case CommandKind::kDemote:
    case CommandKind::kPrefetch: {
      uint64_t id = c.transfer_id;
      // The destination's blocks exist from the start of the move (it writes into them);
      // readers see them only once the core commits the move.
      bool to_hbm = c.dst.tier == scheduler::Tier::kHbm || c.dst.tier == scheduler::Tier::kPeer;
      if (to_hbm)
        if (Engine* eng = engine(c.dst.worker)) {
          int64_t tokens = core_->ContextTokens(c.context);
          (void)eng->Import(c.context, tokens);
        }
      moves_[id] = c;
      mover_->Move(c, [this, id](Status st) { OnMoveDone(id, st); });
      break;
    }
    case CommandKind::kDiscard:
      if (c.transfer_id != 0) {
        // The move's end releases its blocks (the core holds them until then).
        release_after_.insert(c.transfer_id);
        mover_->Cancel(c.transfer_id);
      } else {
        // A shared prefix has a copy per worker: only the named one goes.
        Release(c.context, scheduler::IsPrefixKey(c.context) ? c.src.worker : -1);
      }
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

void Runtime::OnMoveDone(uint64_t id, Status st) {
  auto it = moves_.find(id);
  if (it != moves_.end()) {
    const Command& c = it->second;
    auto in_hbm = [](const scheduler::Location& l) {
      return l.tier == scheduler::Tier::kHbm || l.tier == scheduler::Tier::kPeer;
    };
    bool drop = release_after_.erase(id) > 0;
    // Committed: the source's blocks go (the copy is the context now). Failed: the
    // destination's go. Discarded while moving: both.
    if ((st.ok() || drop) && in_hbm(c.src) && !(c.src == c.dst)) Release(c.context, c.src.worker);
    if ((!st.ok() || drop) && in_hbm(c.dst)) Release(c.context, c.dst.worker);
    moves_.erase(it);
  }
  Event e;
  e.kind = st.ok() ? EventKind::kTransferCompleted : EventKind::kTransferFailed;
  e.transfer_id = id;
  e.status = st;
  Feed(e);
}

void Runtime::SyncContexts(const std::string& wf, const std::string& node, int worker) {
  Engine* eng = engine(worker);
  auto w = specs_.find(wf);
  if (!eng || w == specs_.end()) return;
  auto n = w->second.find(node);
  if (n == w->second.end()) return;
  // What the engine computed beyond what the core kept (a prefill cut short, a failed
  // call's tokens) is not part of the context: shrink the engine's copy to the core's.
  for (const v1::CacheRef& r : n->second.cache_refs()) {
    std::string key = scheduler::ContextKey(wf, r.context());
    if (eng->context_tokens(key) < 0) continue;
    std::optional<scheduler::Location> loc = core_->ContextLocation(key);
    int64_t tokens = core_->ContextTokens(key);
    bool here = loc &&
                (loc->tier == scheduler::Tier::kHbm || loc->tier == scheduler::Tier::kPeer) &&
                loc->worker == worker;
    if (here && tokens > 0) {
      (void)eng->Import(key, tokens);
    } else {
      (void)eng->Release(key);
    }
  }
}

void Runtime::StartLlm(const Command& c) {
  auto wf = specs_.find(c.workflow_id);
  if (wf == specs_.end()) return;
  auto node = wf->second.find(c.node_id);
  if (node == wf->second.end()) return;
  Engine* eng = engine(c.worker);
  std::string key = c.workflow_id + "/" + c.node_id;
  const v1::ProgramNode& n = node->second;
  SequenceSpec seq;
  seq.key = key;
  int64_t rebuilt = 0;
  for (const v1::CacheRef& r : n.cache_refs()) {
    SeqContext sc;
    sc.key = scheduler::ContextKey(c.workflow_id, r.context());
    sc.tokens = core_->ContextTokens(sc.key);
    sc.resident = eng && eng->context_tokens(sc.key) >= 0;  // else created or rebuilt
    // CacheRef.keep_tokens: the core cut the context at placement; the engine drops the
    // same blocks (a no-op when the core kept it whole).
    sc.keep_only = r.mode() == v1::CacheRef::EXTEND && r.keep_tokens() > 0;
    if (!sc.resident) rebuilt += sc.tokens;
    seq.contexts.push_back(std::move(sc));
  }
  // Shared prefixes the contexts start with: read from this worker's copy, or computed into
  // it first (the core created the copy at placement).
  int64_t primary_prefix = 0;
  for (int k = 0; k < n.cache_refs_size(); ++k) {
    std::optional<scheduler::SharedPrefixView> p =
        core_->ContextPrefix(scheduler::ContextKey(c.workflow_id, n.cache_refs(k).context()));
    if (!p) continue;
    if (k == 0) primary_prefix = p->tokens;
    bool listed = false;
    for (const SeqContext& sc : seq.contexts) listed = listed || sc.key == p->key;
    if (listed) continue;
    SeqContext sc{p->key, p->tokens, eng && eng->context_tokens(p->key) >= 0};
    if (!sc.resident) rebuilt += sc.tokens;
    seq.contexts.push_back(std::move(sc));
  }
  seq.extends_primary = n.cache_refs_size() > 0 && n.cache_refs(0).mode() != v1::CacheRef::READ;
  const v1::Hints& h = n.hints();
  int64_t fresh = 0;
  if (n.cache_refs_size() == 0) {
    fresh = h.prompt_tokens();
  } else if (n.cache_refs(0).mode() == v1::CacheRef::CREATE) {
    fresh = std::max(h.prompt_tokens(), h.extend_tokens()) - primary_prefix;  // after the prefix
  } else if (n.cache_refs(0).mode() == v1::CacheRef::EXTEND) {
    fresh = h.extend_tokens();
  }
  seq.prefill_tokens = rebuilt + std::max<int64_t>(0, fresh - c.prefill_done);
  seq.output_done = c.output_done;
  seq.max_output_tokens = std::max<int64_t>(
      1, h.max_output_tokens() > 0 ? h.max_output_tokens() : core_->default_max_output_tokens());
  if (oracle_)
    seq.actual_output_tokens = std::min(seq.max_output_tokens, oracle_(c.workflow_id, n));
  if (spec_hook_) spec_hook_(c.workflow_id, n, &seq);
  running_on_[c.worker].insert(key);
  seqs_[key] = Seq{c.workflow_id, c.node_id, loop_->Now()};
  Status st = eng ? eng->Admit(seq)
                  : Status::FailedPrecondition("no engine for worker " + std::to_string(c.worker));
  if (!st.ok()) {
    // The core and the engine disagree on free KV (or the spec is bad): the node fails
    // and the core's retry rule decides what happens next.
    running_on_[c.worker].erase(key);
    seqs_.erase(key);
    Event e;
    e.kind = EventKind::kLlmFinished;
    e.workflow_id = c.workflow_id;
    e.node_id = c.node_id;
    e.worker = c.worker;
    e.status = Status::Internal("engine refused the sequence: " + st.message());
    loop_->Post([this, e = std::move(e)]() { Feed(e); });
  }
}

void Runtime::OnStep(const StepReport& r) {
  if (step_observer_) step_observer_(r);
  Event e;
  e.kind = EventKind::kEngineReport;
  e.worker = r.worker;
  e.model_time = r.end - r.start;  // the step's duration
  std::vector<Event> finished;
  for (const SeqProgress& p : r.seqs) {
    auto it = seqs_.find(p.key);
    if (it == seqs_.end()) continue;  // preempted since
    // The progress that changes the core's view (a block taken, prefill advanced), the
    // finishing sequences' too: their last token's block is already taken, so the ledger
    // must count it before their end is handled. Tokens that stayed in their block are
    // left out (the core's view of them is only used if the node is preempted, and then
    // what it did not hear of is decoded again).
    if (p.changed || p.finished)
      e.steps.push_back(
          {it->second.wf, it->second.node, p.prefill_done, p.output_done, p.finished});
    if (!p.finished) continue;
    Event f;
    f.kind = EventKind::kLlmFinished;
    f.workflow_id = it->second.wf;
    f.node_id = it->second.node;
    f.worker = r.worker;
    f.status = p.status;
    f.output_tokens = p.status.ok() ? p.output_done : 0;
    f.model_time = r.end - it->second.admitted;
    finished.push_back(std::move(f));
    running_on_[r.worker].erase(p.key);
    seqs_.erase(it);
  }
  // Progress first (the core's ledger must count the step's new blocks before anything is
  // admitted), then the ends, then the sequences left without a block (after the ends,
  // whose contexts become evictable).
  if (!e.steps.empty()) Feed(e);
  for (const Event& f : finished) {
    if (f.status.ok()) {
      Feed(f);
    } else {
      Feed(f, [&]() { SyncContexts(f.workflow_id, f.node_id, f.worker); });
    }
  }
  Event x;
  x.kind = EventKind::kEngineReport;
  x.worker = r.worker;
  for (const std::string& key : r.exhausted) {
    auto it = seqs_.find(key);
    if (it != seqs_.end()) x.exhausted.push_back({it->second.wf, it->second.node, 0, 0});
  }
  if (!x.exhausted.empty()) Feed(x);
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
