// Service <-> scheduler: forwarding acknowledged records, re-feeding restored workflows,
// recording what the scheduler did (simulated LLM results, failures), the cluster view.
#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>

#include "base/logging.h"
#include "base/mutex.h"
#include "service/service.h"

namespace switchyard::service {

namespace pg = program_graph;

std::vector<const v1::ProgramNode*> DepsFirst(
    const google::protobuf::RepeatedPtrField<v1::ProgramNode>& nodes) {
  const size_t n = static_cast<size_t>(nodes.size());
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(n);
  for (size_t i = 0; i < n; ++i) index.emplace(nodes[static_cast<int>(i)].id(), i);
  std::vector<std::vector<size_t>> dependents(n);
  std::vector<size_t> waiting(n, 0);  // deps inside the batch not yet taken
  for (size_t i = 0; i < n; ++i) {
    for (const std::string& d : nodes[static_cast<int>(i)].deps()) {
      auto it = index.find(d);
      if (it == index.end()) continue;  // outside the batch
      dependents[it->second].push_back(i);
      ++waiting[i];
    }
  }
  // Kahn's algorithm, computing each node's pass (1-based): the first pass whose scan finds
  // its deps taken, i.e. the latest of each dep's pass, plus one for a dep after it in the
  // batch (the scan reaches that dep after it). A node still waiting at the end is on or
  // after a cycle.
  std::vector<size_t> pass(n, 0), ready;
  ready.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) {
      pass[i] = 1;
      ready.push_back(i);
    }
  }
  for (size_t head = 0; head < ready.size(); ++head) {
    size_t d = ready[head];
    for (size_t i : dependents[d]) {
      pass[i] = std::max(pass[i], pass[d] + (d > i ? 1 : 0));
      if (--waiting[i] == 0) ready.push_back(i);
    }
  }
  // By pass, then batch order (a counting sort); a node never ready goes last.
  auto slot = [&](size_t i) { return waiting[i] > 0 ? n + 1 : pass[i]; };
  std::vector<size_t> start(n + 2, 0);
  for (size_t i = 0; i < n; ++i) ++start[slot(i)];
  for (size_t p = 1; p < start.size(); ++p) start[p] += start[p - 1];
  std::vector<const v1::ProgramNode*> out(n);
  for (size_t i = 0; i < n; ++i) out[start[slot(i) - 1]++] = &nodes[static_cast<int>(i)];
  return out;
}

void Service::Forward(const std::string& id, const v1::WorkflowLogRecord& rec, const Effects& fx) {
  if (!driver_) return;
  switch (rec.entry_case()) {
    case v1::WorkflowLogRecord::kSubmitted: {
      v1::Workflow w = rec.submitted();
      w.clear_nodes();
      for (const v1::ProgramNode* n : DepsFirst(rec.submitted().nodes())) *w.add_nodes() = *n;
      driver_->Submit(w);
      break;
    }
    case v1::WorkflowLogRecord::kAppended:
      for (const v1::ProgramNode* n : DepsFirst(rec.appended().nodes())) driver_->Append(id, *n);
      break;
    case v1::WorkflowLogRecord::kEvent:
      driver_->Report(id, rec.event());
      break;
    case v1::WorkflowLogRecord::kClosed:
      driver_->Close(id);
      break;
    case v1::WorkflowLogRecord::kCancelled:
      driver_->Cancel(id);
      return;
    default:
      return;
  }
  // The durable graph ended the workflow (a node failed for good): the scheduler stops too,
  // and ends it with `fail` (a cancel would read as the client's).
  if (fx.ended_failed && !fx.failure.empty())
    driver_->Fail(id, fx.failed_node, fx.failure);
  else if (fx.ended_failed)
    driver_->Cancel(id);
}

void Service::StartScheduler() {
  std::vector<std::pair<std::string, std::shared_ptr<Entry>>> all, live;
  {
    ReaderMutexLock lock(&mu_);
    all.assign(workflows_.begin(), workflows_.end());
  }
  for (auto& [id, e] : all) {  // an entry's lock is taken before mu_, never under it
    MutexLock lock(&e->mu);
    if (e->graph && !e->graph->done()) live.emplace_back(id, e);
  }
  std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) {
    return a.second->arrival_ms != b.second->arrival_ms
               ? a.second->arrival_ms < b.second->arrival_ms
               : a.first < b.first;
  });
  for (const auto& [id, e] : live) {
    MutexLock lock(&e->mu);
    Refeed(id, *e);
  }
  if (!live.empty())
    Log(LogLevel::kInfo, "restored workflows re-fed to the scheduler",
        LogKeys().With("workflows", std::to_string(live.size())));
}

void Service::Refeed(const std::string& id, const Entry& e) {
  const pg::Workflow& g = *e.graph;
  v1::Workflow full = g.ToProto();
  v1::Workflow wf = full;
  wf.clear_nodes();
  std::set<std::string> kept, contexts;
  std::vector<std::string> running_tools;
  for (pg::NodeIndex i : g.TopologicalOrder()) {
    v1::NodeState st = g.state(i);
    if (st != v1::NODE_PENDING && st != v1::NODE_READY && st != v1::NODE_RUNNING) continue;
    v1::ProgramNode n = g.node(i);
    n.clear_deps();
    for (const std::string& d : g.node(i).deps())
      if (kept.count(d)) n.add_deps(d);
    // KV does not survive a restart: the first unfinished user of a context rebuilds it.
    for (auto& r : *n.mutable_cache_refs()) {
      if (contexts.insert(r.context()).second && r.mode() == v1::CacheRef::EXTEND)
        r.set_mode(v1::CacheRef::CREATE);
    }
    if (n.kind() == v1::TOOL && st == v1::NODE_RUNNING) running_tools.push_back(n.id());
    kept.insert(n.id());
    *wf.add_nodes() = std::move(n);
  }
  driver_->Submit(wf);
  for (const std::string& node : running_tools) {
    v1::NodeEvent started;
    started.set_node_id(node);
    started.set_type(v1::TOOL_STARTED);
    driver_->Report(id, started);
  }
  if (g.closed()) driver_->Close(id);
}

Status Service::RecordInternal(const std::string& id, const std::shared_ptr<Entry>& e,
                               v1::WorkflowLogRecord rec) {
  // Not waited for: the scheduler's thread never blocks on a disk write. The record is
  // applied now and forwarded once durable, in order with the workflow's other records.
  return MutateLocked(e, id, std::move(rec), nullptr, [id](const Status& s) {
    if (!s.ok())
      Log(LogLevel::kWarn, "could not persist a record of the scheduler",
          LogKeys().With("workflow", id).With("error", s.ToString()));
  });
}

void Service::RecordLlm(const std::string& id, const std::string& node, bool finished,
                        const Status& st, int64_t output_tokens, bool retried) {
  if (closing_) return;
  std::shared_ptr<Entry> e = Lookup(id);
  if (!e) return;
  MutexLock lock(&e->mu);
  if (!e->graph || e->graph->done()) return;
  auto idx = e->graph->Find(node);
  if (!idx) return;
  // A retry: only an attempt still shown running (an engine's failure was recorded
  // already) of an LLM node this graph would retry.
  const pg::Workflow& g = *e->graph;
  if (retried && (g.node(*idx).kind() != v1::LLM || g.state(*idx) != v1::NODE_RUNNING ||
                  !g.RetryAllowed(*idx)))
    return;
  auto event = [&](v1::NodeEventType type) REQUIRES(e->mu) {
    v1::WorkflowLogRecord rec;
    rec.set_time_ms(clock_->Now().millis());
    auto* ev = rec.mutable_event();
    ev->set_workflow_id(id);
    ev->set_node_id(node);
    ev->set_type(type);
    ev->set_time_ms(rec.time_ms());
    ev->set_request_id("simulated engine");
    if (type == v1::LLM_FINISHED) ev->set_output_tokens(output_tokens);
    if (type == v1::LLM_FAILED) {
      ev->set_error(st.message());
      ev->set_retryable(true);
    }
    Status s = RecordInternal(id, e, std::move(rec));
    if (!s.ok())
      Log(LogLevel::kWarn, "could not record a simulated LLM result",
          LogKeys().With("workflow", id).With("node", node).With("error", s.ToString()));
    return s;
  };
  if (e->graph->state(*idx) == v1::NODE_READY && !event(v1::LLM_STARTED).ok()) return;
  if (!finished || e->graph->state(*idx) != v1::NODE_RUNNING) return;
  (void)event(st.ok() ? v1::LLM_FINISHED : v1::LLM_FAILED);
}

void Service::RecordSchedulerFailure(const std::string& id, const std::string& node,
                                     const std::string& reason) {
  if (closing_) return;
  std::shared_ptr<Entry> e = Lookup(id);
  if (!e) return;
  MutexLock lock(&e->mu);
  if (!e->graph || e->graph->done()) return;
  v1::WorkflowLogRecord rec;
  rec.set_time_ms(clock_->Now().millis());
  rec.mutable_scheduler_failed()->set_node_id(node);
  rec.mutable_scheduler_failed()->set_reason(reason);
  Status s = RecordInternal(id, e, std::move(rec));
  if (!s.ok())
    Log(LogLevel::kWarn, "could not record a scheduler failure",
        LogKeys().With("workflow", id).With("error", s.ToString()));
}

void Service::RecordWorkerLoss(const std::string& id, const v1::WorkerLoss& loss) {
  if (closing_) return;
  std::shared_ptr<Entry> e = Lookup(id);
  if (!e) return;
  MutexLock lock(&e->mu);
  if (!e->graph) return;
  v1::WorkflowLogRecord rec;
  rec.set_time_ms(clock_->Now().millis());
  *rec.mutable_worker_lost() = loss;
  Status s = RecordInternal(id, e, std::move(rec));
  if (!s.ok())
    Log(LogLevel::kWarn, "could not record a worker loss",
        LogKeys().With("workflow", id).With("error", s.ToString()));
}

v1::ClusterState Service::Cluster() const {
  v1::ClusterState out;
  Counts c = counts();
  auto* w = out.mutable_workflows();
  w->set_total(c.workflows);
  w->set_running(c.running);
  w->set_completed(c.completed);
  w->set_failed(c.failed);
  w->set_cancelled(c.cancelled);
  out.set_node_events_applied(c.events_applied);
  out.set_time_ms(clock_->Now().millis());
  if (driver_) driver_->FillCluster(&out);
  return out;
}

void Service::SetDecisionListener(DecisionListener listener) {
  MutexLock lock(&listener_mu_);
  listener_ = listener ? std::make_shared<DecisionListener>(std::move(listener)) : nullptr;
}

}  // namespace switchyard::service
