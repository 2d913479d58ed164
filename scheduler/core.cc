#include "scheduler/core.h"

#include <algorithm>
#include <utility>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler {
namespace internal {

namespace {
size_t WorkerCount(const CoreOptions& o) { return static_cast<size_t>(std::max(1, o.workers)); }

// Per-worker lists shorter or longer than the workers: the last entry stands for the rest.
CoreOptions Normalised(CoreOptions o) {
  size_t n = WorkerCount(o);
  if (!o.worker_models.empty()) o.worker_models.resize(n, o.worker_models.back());
  if (!o.worker_hbm_bytes.empty()) o.worker_hbm_bytes.resize(n, o.worker_hbm_bytes.back());
  return o;
}
}  // namespace

CoreState::CoreState(CoreOptions o, const Policy* p, const TransferPlanner* pl, GrantIssuer* g,
                     const ComputeCostModel* c)
    : opt(Normalised(std::move(o))),
      policy(p),
      planner(pl),
      grants(g),
      cost(c),
      durations(opt.durations),
      kv(opt, c, WorkerCount(opt)),
      workers(WorkerCount(opt)) {}

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
  for (int k = 0; k < n.spec.cache_refs_size(); ++k) AddContext(wf, n, k);
}

void CoreState::AddContext(WfRec& wf, NodeRec& n, int k) {
  const v1::CacheRef& r = n.spec.cache_refs(k);
  std::string key = ContextKey(wf.id, r.context());
  if (kv.Has(key)) return;
  CtxRec& c = kv.Create(key);
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
    CtxRec* c = kv.Find(key);
    if (!c) continue;
    DiscardContext(*c, kind == CommandKind::kFail ? "workflow failed"
                       : why.empty()              ? "workflow ended"
                                                  : "workflow " + why);
    kv.Retire(*c);
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
    CtxRec* c = kv.Find(t.key);
    if (!c || c->dead) continue;
    if (t.kind == TimerKind::kPrefetch && c->prefetch_at == t.at) OnPrefetchTimer(*c);
    if (t.kind == TimerKind::kReeval && c->reeval_at == t.at) OnReevalTimer(*c);
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
  s_->kv.SetNow(s_->now);
  s_->out = &out;
  s_->Handle(event);
  s_->out = nullptr;
  return out;
}

uint64_t Core::hbm_capacity(int worker) const {
  if (worker < 0 || worker >= static_cast<int>(s_->workers.size())) return 0;
  return s_->kv.Capacity(worker);
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
  return s_->kv.Used(worker);
}

std::optional<Location> Core::ContextLocation(const std::string& key) const {
  const internal::CtxRec* c = std::as_const(s_->kv).Find(key);
  if (!c || c->dead) return std::nullopt;
  return c->loc;
}

int64_t Core::ContextTokens(const std::string& key) const {
  const internal::CtxRec* c = std::as_const(s_->kv).Find(key);
  return c ? c->tokens : 0;
}

std::optional<SharedPrefixView> Core::ContextPrefix(const std::string& key) const {
  const internal::CtxRec* c = std::as_const(s_->kv).Find(key);
  if (!c || c->prefix.empty()) return std::nullopt;
  return SharedPrefixView{c->prefix, c->prefix_tokens};
}

int64_t Core::PrefixTokensOn(const std::string& prefix_key, int worker) const {
  return s_->kv.PrefixTokensOn(prefix_key, worker);
}

const PrefixStats& Core::prefix_stats() const { return s_->prefix_stats; }
const PdStats& Core::pd_stats() const { return s_->pd_stats; }

WorkerRole Core::role(int worker) const {
  const std::vector<WorkerRole>& roles = s_->opt.worker_roles;
  return worker >= 0 && static_cast<size_t>(worker) < roles.size()
             ? roles[static_cast<size_t>(worker)]
             : WorkerRole::kMixed;
}

Duration Core::TenantService(const std::string& tenant) const {
  auto it = s_->tenants.find(tenant);
  return it == s_->tenants.end() ? Duration(0) : it->second.service;
}

bool Core::Forget(const std::string& workflow_id) {
  auto it = s_->wfs.find(workflow_id);
  if (it == s_->wfs.end() || !it->second.ended) return false;
  for (const std::string& key : it->second.contexts)  // dead ones still moving
    if (internal::CtxRec* c = s_->kv.Find(key)) c->owner = nullptr;
  // An ended workflow runs nothing; no worker may keep a pointer to its record.
  for (size_t i = 0; i < it->second.nodes.size(); ++i)
    if (const int w = it->second.nodes[i].worker; w >= 0) {
      internal::WorkerRec& wr = s_->workers[static_cast<size_t>(w)];
      if (wr.nodes.erase({workflow_id, static_cast<int>(i)}) > 0)
        wr.decode_kv_tokens -= internal::DecodeKvTokens(it->second.nodes[i]);
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
size_t Core::running_nodes() const {
  size_t n = 0;
  for (const internal::WorkerRec& w : s_->workers) n += static_cast<size_t>(w.running);
  return n;
}
std::optional<ReportedLoad> Core::reported_load(int worker) const {
  if (worker < 0 || worker >= static_cast<int>(s_->workers.size())) return std::nullopt;
  const ReportedLoad* r = s_->FreshReport(worker);
  return r ? std::optional<ReportedLoad>(*r) : std::nullopt;
}
uint64_t Core::ignored_events() const { return s_->ignored; }
const DurationModel& Core::durations() const { return s_->durations; }

Status Core::RestoreDurations(const v1::LearnedDurations& saved) {
  return s_->durations.Restore(saved);
}

}  // namespace switchyard::scheduler
