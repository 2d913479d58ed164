#include "scheduler/core.h"

#include <algorithm>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler {
namespace internal {

CoreState::CoreState(CoreOptions o, const Policy* p, const TransferPlanner* pl, GrantIssuer* g,
                     const ComputeCostModel* c)
    : opt(std::move(o)), policy(p), planner(pl), grants(g), cost(c), durations(opt.durations) {
  workers.resize(static_cast<size_t>(std::max(1, opt.workers)));
  // Per-worker lists shorter or longer than the workers: the last entry stands for the rest.
  if (!opt.worker_models.empty())
    opt.worker_models.resize(workers.size(), opt.worker_models.back());
  if (!opt.worker_hbm_bytes.empty())
    opt.worker_hbm_bytes.resize(workers.size(), opt.worker_hbm_bytes.back());
}

WfRec* CoreState::FindWf(const std::string& id) {
  auto it = wfs.find(id);
  if (it == wfs.end() || it->second.ended) return nullptr;
  return &it->second;
}

TenantRec& CoreState::Tenant(const std::string& name) {
  auto [it, fresh] = tenants.try_emplace(name);
  if (fresh) {
    auto w = opt.tenant_weights.find(name);
    it->second.weight = w == opt.tenant_weights.end() ? 1.0 : std::max(1e-6, w->second);
    it->second.credit = opt.retry_credit_capacity;
    it->second.credit_at = now;
  }
  return it->second;
}

Time CoreState::NodeDeadline(const WfRec& wf, const NodeRec& n) const {
  if (n.spec.deadline_ms() > 0)
    return std::min(wf.deadline, Time::FromMillis(n.spec.deadline_ms()));
  return wf.deadline;
}

void CoreState::Handle(const Event& e) {
  uint64_t before = changes;
  RunTimers();
  if (e.kind == EventKind::kEngineReport) {
    // A step's progress only consumes memory: re-dispatch only when something was freed
    // (a timer, an eviction or a preemption), so a batching engine's many steps stay cheap.
    bool fired = changes != before;
    uint64_t preempted = pool_preemptions;
    OnEngineReport(e);
    // vLLM: no admissions in a step that preempted (the victim would come straight back);
    // the next report dispatches.
    if (pool_preemptions != preempted) {
      dispatch_next_report = true;
    } else if (fired || changes != before || dispatch_next_report) {
      dispatch_next_report = false;
      Dispatch();
    }
    out->wakeup = timers.empty() ? Time::Max() : std::max(now, timers.begin()->at);
    return;
  }
  if (e.kind == EventKind::kWorkflowSubmitted) {
    Submit(e.workflow);
  } else if (e.kind == EventKind::kTransferCompleted || e.kind == EventKind::kTransferFailed) {
    OnTransferDone(e.transfer_id, e.kind == EventKind::kTransferCompleted);
  } else if (e.kind == EventKind::kPeerLost) {
    OnPeerLost(e.worker);
  } else if (e.kind == EventKind::kPeerJoined) {
    OnPeerJoined(e.worker);
  } else if (e.kind == EventKind::kDrainWorker || e.kind == EventKind::kUndrainWorker) {
    OnDrain(e.worker, e.kind == EventKind::kDrainWorker);
  } else if (e.kind == EventKind::kModelEpochChanged) {
    OnEpochChanged(e.model_id, e.epoch);
  } else if (e.kind != EventKind::kDeadlineTick) {
    WfRec* wf = FindWf(e.workflow_id);
    if (!wf) {
      ++ignored;
    } else if (e.kind == EventKind::kNodeAppended) {
      Append(*wf, e.node);
    } else if (e.kind == EventKind::kWorkflowClosed) {
      Close(*wf);
    } else if (e.kind == EventKind::kCancel) {
      if (e.status.ok())
        CancelWorkflow(*wf);
      else
        FailWorkflow(*wf, e.node_id, e.status.message());
    } else {
      std::optional<program_graph::NodeIndex> found = wf->graph->Find(e.node_id);
      if (!found) {
        ++ignored;
      } else {
        int idx = static_cast<int>(*found);
        NodeRec& n = wf->nodes[static_cast<size_t>(idx)];
        bool engine = e.kind == EventKind::kEngineStep || e.kind == EventKind::kLlmFinished;
        if (engine && e.worker >= 0 && e.worker != n.worker) {
          ++ignored;  // a report from an earlier attempt on another worker
          Dispatch();
          out->wakeup = timers.empty() ? Time::Max() : std::max(now, timers.begin()->at);
          return;
        }
        switch (e.kind) {
          case EventKind::kEngineStep:
            if (n.state == NState::kRunning) OnEngineStep(*wf, idx, e.tokens_done);
            break;
          case EventKind::kLlmStarted:
            break;  // placement already accounted for it
          case EventKind::kLlmFinished:
            if (n.state != NState::kRunning) {
              ++ignored;
              break;
            }
            if (e.status.ok()) {
              int64_t out_tokens = std::clamp<int64_t>(e.output_tokens, 0,
                                                       n.spec.hints().max_output_tokens() > 0
                                                           ? n.spec.hints().max_output_tokens()
                                                           : opt.default_max_output_tokens);
              auto [mean, fresh] = output_mean.try_emplace(n.spec.model_id(), out_tokens);
              if (!fresh) mean->second += (static_cast<double>(out_tokens) - mean->second) / 50;
              // Grow the primary context by what the node wrote; release the rest.
              std::vector<std::string> cs = NodeContexts(*wf, n);
              int64_t grown =
                  n.new_tokens - n.new_done + std::max<int64_t>(0, out_tokens - n.out_done);
              n.new_done = n.new_tokens;
              n.out_done = 0;
              uint64_t grown_bytes = 0;
              if (!cs.empty() && ExtendsPrimary(n)) {
                CtxRec& c = ctxs[cs[0]];
                c.tokens += grown;
                uint64_t was = c.bytes;
                c.bytes = BlockBytes(c.tokens, c.model);
                grown_bytes = c.bytes - std::min(c.bytes, was);
              }
              OnPrefixProgress(*wf, idx, INT64_MAX);  // its prefill is done
              TenantRec& t = Tenant(wf->tenant);
              t.service += e.model_time - n.charged;
              wf->plas += e.model_time;
              wf->atlas = std::max(wf->atlas, n.inherited + e.model_time);
              StopRunning(*wf, idx);
              // StopRunning returned the reservation; account the grown bytes again.
              if (grown_bytes > 0) Hold(ctxs[cs[0]].loc, static_cast<int64_t>(grown_bytes));
              OnSucceeded(*wf, idx);
            } else {
              StopRunning(*wf, idx);
              OnNodeFailed(*wf, idx, e.status);
            }
            break;
          case EventKind::kToolStarted:
            if (n.state == NState::kAdmitted) {
              wf->admitted_tools--;
              n.state = NState::kRunning;
              n.started = now;
              wf->running_tools++;
              OnToolStarted(*wf, idx);
            } else {
              ++ignored;
            }
            break;
          case EventKind::kToolFinished:
            if (n.state != NState::kRunning && n.state != NState::kAdmitted) {
              ++ignored;
              break;
            }
            if (n.state == NState::kRunning) wf->running_tools--;
            if (n.state == NState::kAdmitted) wf->admitted_tools--;
            durations.Observe(wf->tenant, n.spec.tool_name(), now - n.started);
            if (e.status.ok()) {
              OnSucceeded(*wf, idx);
            } else {
              OnNodeFailed(*wf, idx, e.status);
            }
            break;
          default:
            ++ignored;
        }
      }
    }
  }
  DrainStep();
  Dispatch();
  out->wakeup = timers.empty() ? Time::Max() : std::max(now, timers.begin()->at);
}

void CoreState::Submit(const v1::Workflow& w) {
  if (w.id().empty() || wfs.count(w.id())) {
    ++ignored;
    return;
  }
  WfRec& wf = wfs[w.id()];
  wf.id = w.id();
  wf.tenant = w.tenant();
  wf.deadline = w.deadline_ms() > 0 ? Time::FromMillis(w.deadline_ms()) : Time::Max();
  wf.priority = w.priority() == v1::PRIORITY_UNSPECIFIED ? 2 : static_cast<int>(w.priority());
  wf.arrival = w.arrival_ms() > 0 ? Time::FromMillis(w.arrival_ms()) : now;
  Tenant(wf.tenant);
  Result<std::unique_ptr<program_graph::Workflow>> graph = program_graph::Workflow::Create(w, now);
  if (!graph.ok()) {
    EndWorkflow(wf, CommandKind::kFail, "", "invalid workflow: " + graph.status().message());
    return;
  }
  wf.graph = std::move(*graph);
  for (size_t i = 0; i < wf.graph->size(); ++i) AddNode(wf, static_cast<int>(i));
  for (size_t i = 0; i < wf.graph->size() && !wf.ended; ++i)
    if (wf.graph->state(static_cast<program_graph::NodeIndex>(i)) == v1::NODE_READY)
      OnReady(wf, static_cast<int>(i));
}

void CoreState::Append(WfRec& wf, const v1::ProgramNode& spec) {
  Status st = wf.graph->Append({spec}, now);
  if (!st.ok()) {
    EndWorkflow(wf, CommandKind::kFail, spec.id(), "invalid append: " + st.message());
    return;
  }
  int idx = static_cast<int>(wf.graph->size()) - 1;
  AddNode(wf, idx);
  if (wf.graph->state(static_cast<program_graph::NodeIndex>(idx)) == v1::NODE_READY)
    OnReady(wf, idx);
}

void CoreState::AddNode(WfRec& wf, int idx) {
  wf.nodes.emplace_back();
  NodeRec& n = wf.nodes.back();
  n.spec = wf.graph->node(static_cast<program_graph::NodeIndex>(idx));
  const v1::Hints& h = n.spec.hints();
  if (n.spec.cache_refs_size() > 0) {
    auto mode = n.spec.cache_refs(0).mode();
    n.new_tokens = mode == v1::CacheRef::CREATE   ? std::max(h.prompt_tokens(), h.extend_tokens())
                   : mode == v1::CacheRef::EXTEND ? h.extend_tokens()
                                                  : 0;
  } else {
    n.new_tokens = h.prompt_tokens();
  }
  if (n.spec.cache_refs_size() > 0 && n.spec.cache_refs(0).mode() == v1::CacheRef::EXTEND)
    n.keep_tokens = n.spec.cache_refs(0).keep_tokens();
  for (int k = 0; k < n.spec.cache_refs_size(); ++k) {
    const v1::CacheRef& r = n.spec.cache_refs(k);
    std::string key = ContextKey(wf.id, r.context());
    if (!ctxs.count(key)) {
      CtxRec& c = ctxs[key];
      c.key = key;
      c.name = r.context();
      c.owner = &wf;
      c.wf = wf.id;
      c.model = n.spec.model_id();
      wf.contexts.push_back(key);
      if (opt.share_prefixes && r.mode() == v1::CacheRef::CREATE && !r.shared_prefix().empty() &&
          r.shared_prefix_tokens() > 0) {
        // The context starts with the tenant's prefix: it holds only what follows, and the
        // node creating it prefills only that when the prefix is resident where it runs.
        int64_t tokens = r.shared_prefix_tokens();
        if (k == 0) tokens = std::min(tokens, n.new_tokens);
        if (tokens > 0) {
          c.prefix = PrefixKey(wf.tenant, n.spec.model_id(), r.shared_prefix());
          c.prefix_tokens = tokens;
          if (k == 0) n.new_tokens -= tokens;
        }
      }
    }
  }
}

void CoreState::Close(WfRec& wf) {
  wf.closed = true;
  wf.graph->Close();
  MaybeComplete(wf);
}

void CoreState::OnReady(WfRec& wf, int idx) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  n.state = NState::kReady;
  n.ready_since = now;
  if (n.spec.kind() == v1::TOOL) {
    n.state = NState::kAdmitted;
    wf.admitted_tools++;
    n.attempts++;
    (void)wf.graph->MarkRunning(static_cast<program_graph::NodeIndex>(idx));
    Emit({.kind = CommandKind::kAdmit, .workflow_id = wf.id, .node_id = n.spec.id()});
  } else {
    Enqueue(wf, idx);
    LoadAhead();
  }
}

void CoreState::OnSucceeded(WfRec& wf, int idx) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  n.state = NState::kSucceeded;
  Result<std::vector<program_graph::NodeIndex>> ready =
      wf.graph->MarkSucceeded(static_cast<program_graph::NodeIndex>(idx));
  if (ready.ok()) {
    for (program_graph::NodeIndex c : *ready)
      if (wf.nodes[c].state == NState::kPending) OnReady(wf, static_cast<int>(c));
  }
  MaybeComplete(wf);
}

void CoreState::FailNode(WfRec& wf, int idx, const std::string& why) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  auto gi = static_cast<program_graph::NodeIndex>(idx);
  if (wf.graph->state(gi) == v1::NODE_READY) (void)wf.graph->MarkRunning(gi);
  (void)wf.graph->MarkFailed(gi, why, program_graph::FailMode::kTerminal);
  n.state = NState::kFailed;
  EndWorkflow(wf, CommandKind::kFail, n.spec.id(), why);
}

void CoreState::MaybeComplete(WfRec& wf) {
  if (wf.ended || !wf.closed || wf.graph->state() != v1::WORKFLOW_COMPLETED) return;
  EndWorkflow(wf, CommandKind::kComplete, "", "");
}

void CoreState::CancelWorkflow(WfRec& wf) {
  EndWorkflow(wf, CommandKind::kComplete, "", "cancelled");
}

void CoreState::FailWorkflow(WfRec& wf, const std::string& node, const std::string& why) {
  // The program's view: the node failed for good (EndWorkflow stops what still runs).
  if (std::optional<program_graph::NodeIndex> gi = wf.graph->Find(node)) {
    if (wf.graph->state(*gi) == v1::NODE_READY) (void)wf.graph->MarkRunning(*gi);
    (void)wf.graph->MarkFailed(*gi, why, program_graph::FailMode::kTerminal);
  }
  EndWorkflow(wf, CommandKind::kFail, node, why.empty() ? "failed outside the scheduler" : why);
}

// Stops everything the workflow still has going, frees its contexts and emits the end.
void CoreState::EndWorkflow(WfRec& wf, CommandKind kind, const std::string& node,
                            const std::string& why) {
  for (size_t i = 0; i < wf.nodes.size(); ++i) {
    NodeRec& n = wf.nodes[i];
    if (Terminal(n.state)) continue;
    if (n.queued) Dequeue(wf, static_cast<int>(i));
    if (n.state == NState::kRunning && n.spec.kind() == v1::LLM) {
      Emit({.kind = CommandKind::kPreempt,
            .workflow_id = wf.id,
            .node_id = n.spec.id(),
            .worker = n.worker});
      StopRunning(wf, static_cast<int>(i));
    }
    n.state = NState::kCancelled;
  }
  // The program's view: every node still open is cancelled (a failed workflow stays failed).
  if (wf.graph) wf.graph->Cancel(why.empty() ? "workflow ended" : why);
  for (const std::string& key : wf.contexts) {
    auto it = ctxs.find(key);
    if (it == ctxs.end()) continue;
    DiscardContext(it->second, kind == CommandKind::kFail ? "workflow failed"
                               : why.empty()              ? "workflow ended"
                                                          : "workflow " + why);
    it->second.dead = true;
    if (it->second.transfer == 0) {
      DetachPrefix(it->second);
      ctxs.erase(it);
    }
  }
  wf.ended = true;
  Emit({.kind = kind, .workflow_id = wf.id, .node_id = node, .reason = why});
}

void CoreState::RunTimers() {
  while (!timers.empty() && timers.begin()->at <= now) {
    Timer t = *timers.begin();
    timers.erase(timers.begin());
    if (t.kind == TimerKind::kRetry) {
      WfRec* wf = FindWf(t.key);
      if (!wf) continue;
      NodeRec& n = wf->nodes[static_cast<size_t>(t.node)];
      if (n.state != NState::kRetryWait) continue;
      Status st = wf->graph->ResetForRetry(static_cast<program_graph::NodeIndex>(t.node));
      if (st.ok()) {
        OnReady(*wf, t.node);
      } else {
        FailNode(*wf, t.node, "node '" + n.spec.id() + "' cannot be retried: " + st.message());
      }
      continue;
    }
    if (t.kind == TimerKind::kRekey) {
      rekey_pending = false;
      Rekey();  // queues the next rekey while nodes wait
      ++changes;
      continue;
    }
    auto it = ctxs.find(t.key);
    if (it == ctxs.end() || it->second.dead) continue;
    if (t.kind == TimerKind::kPrefetch && it->second.prefetch_at == t.at)
      OnPrefetchTimer(it->second);
    if (t.kind == TimerKind::kReeval && it->second.reeval_at == t.at) OnReevalTimer(it->second);
  }
}

}  // namespace internal

Core::Core(CoreOptions options, const Policy* policy, const TransferPlanner* planner,
           GrantIssuer* grants, const ComputeCostModel* cost)
    : options_(options),
      policy_(policy),
      s_(std::make_unique<internal::CoreState>(std::move(options), policy, planner, grants, cost)) {
}

Core::~Core() = default;

Commands Core::handle(const Event& event, Time now) {
  Commands out;
  s_->now = std::max(s_->now, now);
  s_->out = &out;
  s_->Handle(event);
  s_->out = nullptr;
  return out;
}

uint64_t Core::hbm_capacity(int worker) const {
  if (worker < 0 || worker >= static_cast<int>(s_->workers.size())) return 0;
  return s_->Cap(worker);
}

bool Core::alive(int worker) const {
  return worker >= 0 && worker < static_cast<int>(s_->workers.size()) &&
         s_->workers[static_cast<size_t>(worker)].alive;
}

bool Core::draining(int worker) const {
  return alive(worker) && s_->workers[static_cast<size_t>(worker)].draining;
}

bool Core::drained(int worker) const { return s_->Drained(worker); }

uint64_t Core::hbm_used(int worker) const {
  if (worker < 0 || worker >= static_cast<int>(s_->workers.size())) return 0;
  return s_->workers[static_cast<size_t>(worker)].used;
}

std::optional<Location> Core::ContextLocation(const std::string& key) const {
  auto it = s_->ctxs.find(key);
  if (it == s_->ctxs.end() || it->second.dead) return std::nullopt;
  return it->second.loc;
}

int64_t Core::ContextTokens(const std::string& key) const {
  auto it = s_->ctxs.find(key);
  return it == s_->ctxs.end() ? 0 : it->second.tokens;
}

std::optional<SharedPrefixView> Core::ContextPrefix(const std::string& key) const {
  auto it = s_->ctxs.find(key);
  if (it == s_->ctxs.end() || it->second.prefix.empty()) return std::nullopt;
  return SharedPrefixView{it->second.prefix, it->second.prefix_tokens};
}

int64_t Core::PrefixTokensOn(const std::string& prefix_key, int worker) const {
  auto it = s_->prefixes.find({prefix_key, worker});
  return it == s_->prefixes.end() ? -1 : it->second.tokens;
}

const PrefixStats& Core::prefix_stats() const { return s_->prefix_stats; }

Duration Core::TenantService(const std::string& tenant) const {
  auto it = s_->tenants.find(tenant);
  return it == s_->tenants.end() ? Duration(0) : it->second.service;
}

bool Core::Forget(const std::string& workflow_id) {
  auto it = s_->wfs.find(workflow_id);
  if (it == s_->wfs.end() || !it->second.ended) return false;
  for (const std::string& key : it->second.contexts) {  // dead ones still moving
    auto c = s_->ctxs.find(key);
    if (c != s_->ctxs.end()) c->second.owner = nullptr;
  }
  s_->wfs.erase(it);
  return true;
}

size_t Core::live_workflows() const {
  size_t n = 0;
  for (const auto& [id, wf] : s_->wfs) n += wf.ended ? 0 : 1;
  return n;
}
size_t Core::queued_nodes() const { return s_->queued; }
uint64_t Core::ignored_events() const { return s_->ignored; }
const DurationModel& Core::durations() const { return s_->durations; }

Status Core::RestoreDurations(const v1::LearnedDurations& saved) {
  return s_->durations.Restore(saved);
}

}  // namespace switchyard::scheduler
