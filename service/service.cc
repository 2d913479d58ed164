// Service: opening and recovery, and the write path (submit, append, events, close, cancel:
// validated, logged durably, applied, forwarded to the scheduler). Archiving and retention
// are in service_archive.cc, reads (status, lists, idempotency lookups, counts) in
// service_queries.cc, the scheduler side in service_scheduler.cc.
#include "service/service.h"

#include <algorithm>
#include <future>
#include <map>
#include <random>

#include "base/ids.h"
#include "base/logging.h"
#include "base/utf8.h"

namespace switchyard::service {

namespace pg = program_graph;

Service::Service(ServiceOptions options, const Clock* clock)
    : options_(std::move(options)), clock_(clock), ids_(std::random_device{}()) {}

Service::~Service() {
  // Complete what is queued (its callbacks forward to the scheduler), then stop both.
  if (driver_) driver_->SaveDurationsNow();  // while the store still takes writes
  closing_ = true;
  if (store_) store_->Shutdown();
  driver_.reset();
}

Result<std::unique_ptr<Service>> Service::Open(ServiceOptions options, const Clock* clock) {
  std::unique_ptr<Service> svc(new Service(std::move(options), clock));
  SY_ASSIGN_OR_RETURN(
      svc->store_, Store::Open(svc->options_.data_dir + "/state", svc->options_.sync_writes,
                               svc->options_.idempotency_retention_s, svc->options_.commit_delay));
  SY_RETURN_IF_ERROR(svc->Recover());
  if (svc->options_.scheduler.enabled) {
    driver::SchedulerDriver::Callbacks cb;
    Service* self = svc.get();
    cb.llm_placed = [self](const std::string& wf, const std::string& node) {
      self->RecordLlm(wf, node, false, Status::OK(), 0);
    };
    cb.llm_done = [self](const std::string& wf, const std::string& node, const Status& st,
                         int64_t out) { self->RecordLlm(wf, node, true, st, out); };
    cb.llm_retried = [self](const std::string& wf, const std::string& node,
                            const std::string& why) {
      self->RecordLlm(wf, node, true, Status::Unavailable(why), 0, /*retried=*/true);
    };
    cb.workflow_failed = [self](const std::string& wf, const std::string& node,
                                const std::string& reason) {
      self->RecordSchedulerFailure(wf, node, reason);
    };
    cb.decision = [self](const std::string& wf, const v1::Decision& d) {
      std::shared_ptr<DecisionListener> l;
      {
        std::lock_guard<std::mutex> lock(self->listener_mu_);
        l = self->listener_;
      }
      if (!l) return;
      std::shared_ptr<Entry> e = self->Lookup(wf);
      (*l)(e ? e->tenant : std::string(), wf, d);
    };
    cb.worker_lost = [self](const std::string& wf, const v1::WorkerLoss& loss) {
      self->RecordWorkerLoss(wf, loss);
    };
    cb.durations_learned = [self](const v1::LearnedDurations& d) { self->SaveDurations(d); };
    SY_ASSIGN_OR_RETURN(svc->driver_,
                        driver::SchedulerDriver::Start(svc->options_.scheduler,
                                                       svc->options_.data_dir, std::move(cb)));
    svc->RestoreDurations();
    svc->StartScheduler();
  }
  return svc;
}

std::string Service::NewWorkflowId() { return ids_.NextString("wf"); }

// Learned tool durations are advisory: a write that fails, or a saved value that cannot be
// read back, is logged and the scheduler learns afresh.
void Service::SaveDurations(const v1::LearnedDurations& learned) {
  v1::LearnedDurations d = learned;
  d.set_saved_ms(clock_->Now().millis());
  Status st = store_->EnqueueMeta(kDurationsMeta, d.SerializeAsString());
  if (!st.ok() && !closing_)
    Log(LogLevel::kWarn, "learned tool durations not saved",
        LogKeys().With("error", st.ToString()));
}

void Service::RestoreDurations() {
  Result<std::optional<std::string>> saved = store_->GetMeta(kDurationsMeta);
  Status st = saved.status();
  v1::LearnedDurations d;
  if (st.ok() && !*saved) return;  // nothing learned yet
  if (st.ok() && !d.ParseFromString(**saved))
    st = Status::DataLoss("the saved learned durations do not parse");
  if (st.ok()) st = driver_->RestoreDurations(d);
  if (!st.ok()) {
    Log(LogLevel::kWarn, "learned tool durations not restored; learning afresh",
        LogKeys().With("error", st.ToString()));
    return;
  }
  Log(LogLevel::kInfo, "learned tool durations restored",
      LogKeys()
          .With("keys", std::to_string(d.entries_size()))
          .With("samples", std::to_string(static_cast<int64_t>(d.samples())))
          .With("saved_ms", std::to_string(d.saved_ms())));
}

Status Service::Recover() {
  // Recovery archives without storing snapshots: a workflow archived by an earlier run
  // has one already, and one that has none is read back from its history.
  recovering_ = true;
  struct Done {
    bool* flag;
    ~Done() { *flag = false; }
  } done_recovering{&recovering_};
  size_t records = 0;
  std::string current;  // the workflow being replayed (records come in id order)
  auto finished = [&]() {
    if (current.empty()) return;
    if (workflows_[current]->graph->done()) NoteEnded(current);
  };
  Status st = store_->ForEachRecord([&](const std::string& id, uint64_t seq,
                                        const v1::WorkflowLogRecord& rec) -> Status {
    if (id != current) {
      finished();  // archives as it goes: recovery's memory is bounded like the live one's
      current = id;
    }
    auto& slot = workflows_[id];
    if (!slot) slot = std::make_shared<Entry>();
    if (seq != slot->next_seq) {
      return Status::DataLoss("workflow " + id + ": history gap at record " + std::to_string(seq));
    }
    Status applied = ApplyRecord(slot.get(), rec);
    if (!applied.ok()) {
      return Status::DataLoss("workflow " + id + ": record " + std::to_string(seq) +
                              " does not replay: " + applied.message());
    }
    slot->next_seq = seq + 1;
    ++records;
    return Status::OK();
  });
  SY_RETURN_IF_ERROR(st);
  finished();
  // Recovery archived in id order: retention needs the order of their ends.
  std::sort(archive_order_.begin(), archive_order_.end(),
            [this](const std::string& a, const std::string& b) {
              return archived_.at(a).ended_ms < archived_.at(b).ended_ms;
            });
  Sweep(/*force=*/true);
  for (const auto& [id, e] : workflows_) {
    if (!e->graph->done()) ++live_[e->tenant];
  }
  Log(LogLevel::kInfo, "state recovered",
      LogKeys()
          .With("workflows", std::to_string(workflows_.size() + archived_.size()))
          .With("archived", std::to_string(archived_.size()))
          .With("records", std::to_string(records)));
  return Status::OK();
}

Status Service::ApplyEvent(pg::Workflow* wf, const v1::NodeEvent& ev) const {
  SY_RETURN_IF_ERROR(CheckEventFields(ev));  // before the lookup: no node '' to miss
  auto idx = wf->Find(ev.node_id());
  if (!idx) {
    return Status::NotFound("workflow " + wf->id() + " has no node '" + ev.node_id() + "'");
  }
  bool tool_event = ev.type() == v1::TOOL_STARTED || ev.type() == v1::TOOL_FINISHED ||
                    ev.type() == v1::TOOL_FAILED;
  bool is_tool = wf->node(*idx).kind() == v1::TOOL;
  if (tool_event != is_tool) {
    return Status::InvalidArgument("event " + v1::NodeEventType_Name(ev.type()) + " does not fit " +
                                   (is_tool ? "TOOL" : "LLM") + " node '" + ev.node_id() + "'");
  }
  if (ev.attempt() != 0 && ev.attempt() != wf->attempts(*idx)) {
    return Status::FailedPrecondition("event for attempt " + std::to_string(ev.attempt()) +
                                      " of node '" + ev.node_id() + "', which is on attempt " +
                                      std::to_string(wf->attempts(*idx)));
  }
  switch (ev.type()) {
    case v1::TOOL_STARTED:
    case v1::LLM_STARTED:
      return wf->MarkRunning(*idx);
    case v1::TOOL_FINISHED:
    case v1::LLM_FINISHED:
      return wf->MarkSucceeded(*idx).status();
    case v1::TOOL_FAILED:
    case v1::LLM_FAILED: {
      std::string reason = ev.error().empty() ? "reported failed" : ev.error();
      // The reporter's word first: retryable false (the default) fails the node for good.
      // A retryable node with attempts left is offered again (READY, attempt + 1); any
      // other failure is terminal and fails the workflow (program_graph's rule), and a
      // side effect without an idempotency key is never retried whatever the flag says.
      if (!ev.retryable()) reason += " (reported not retryable)";
      auto failed = wf->MarkFailed(
          *idx, reason, ev.retryable() ? pg::FailMode::kAllowRetry : pg::FailMode::kTerminal);
      if (!failed.ok()) return failed.status();
      if (wf->CanRetry(*idx)) return wf->ResetForRetry(*idx);
      return Status::OK();
    }
    default:
      return Status::InvalidArgument("unknown event type");
  }
}

Status Service::CheckEventFields(const v1::NodeEvent& ev) {
  if (ev.node_id().empty()) return Status::InvalidArgument("event.nodeId is required");
  if (ev.type() == v1::NODE_EVENT_UNSPECIFIED) {
    return Status::InvalidArgument("event.type is required");
  }
  return CheckUtf8("event.error", ev.error());
}

Status Service::CheckUtf8(std::string_view field, std::string_view value) {
  std::string problem = Utf8Problem(value);
  if (problem.empty()) return Status::OK();
  return Status::InvalidArgument(std::string(field) + ": " + problem + " (want UTF-8 text)");
}

namespace {

// A context's KV belongs to one model: every LLM node that references it runs that model.
// `known` holds the workflow's nodes so far; each of `added` is checked against them and
// the ones before it (the error names the field of `added`).
template <typename Nodes>
Status CheckContextModels(std::vector<const v1::ProgramNode*> known, const Nodes& added) {
  std::map<std::string, const v1::ProgramNode*> owner;  // context -> first LLM node using it
  auto note = [&](const v1::ProgramNode& n, int index) -> Status {
    if (n.kind() != v1::LLM) return Status::OK();
    for (int j = 0; j < n.cache_refs_size(); ++j) {
      auto [it, fresh] = owner.emplace(n.cache_refs(j).context(), &n);
      if (fresh || it->second->model_id() == n.model_id()) continue;
      return Status::InvalidArgument(
          "nodes[" + std::to_string(index) + "].cacheRefs[" + std::to_string(j) + "]: context '" +
          it->first + "' holds model '" + it->second->model_id() + "''s KV (node '" +
          it->second->id() + "'); node '" + n.id() + "' runs model '" + n.model_id() + "'");
    }
    return Status::OK();
  };
  for (const v1::ProgramNode* n : known) SY_RETURN_IF_ERROR(note(*n, -1));
  int i = 0;
  for (const v1::ProgramNode& n : added) SY_RETURN_IF_ERROR(note(n, i++));
  return Status::OK();
}

}  // namespace

Status Service::ApplyRecord(Entry* e, const v1::WorkflowLogRecord& rec) const {
  Time now = Time::FromMillis(rec.time_ms());
  e->last_ms = std::max(e->last_ms, rec.time_ms());
  switch (rec.entry_case()) {
    case v1::WorkflowLogRecord::kSubmitted: {
      if (e->graph) return Status::AlreadyExists("workflow already submitted");
      SY_ASSIGN_OR_RETURN(e->graph, pg::Workflow::Create(rec.submitted(), now, options_.limits));
      e->tenant = rec.submitted().tenant();
      e->arrival_ms = rec.submitted().arrival_ms();
      return Status::OK();
    }
    case v1::WorkflowLogRecord::kAppended: {
      std::vector<v1::ProgramNode> nodes(rec.appended().nodes().begin(),
                                         rec.appended().nodes().end());
      return e->graph->Append(nodes, now);
    }
    case v1::WorkflowLogRecord::kEvent: {
      SY_RETURN_IF_ERROR(ApplyEvent(e->graph.get(), rec.event()));
      const v1::NodeEvent& ev = rec.event();
      int64_t at = ev.time_ms() > 0 ? ev.time_ms() : rec.time_ms();
      auto& t = e->times[ev.node_id()];
      if (ev.type() == v1::TOOL_STARTED || ev.type() == v1::LLM_STARTED) t = {at, 0};
      if (ev.type() == v1::TOOL_FINISHED || ev.type() == v1::LLM_FINISHED ||
          ev.type() == v1::TOOL_FAILED || ev.type() == v1::LLM_FAILED)
        t.second = at;
      return Status::OK();
    }
    case v1::WorkflowLogRecord::kClosed:
      if (e->graph->closed()) return Status::FailedPrecondition("workflow already closed");
      e->graph->Close();
      return Status::OK();
    case v1::WorkflowLogRecord::kCancelled:
      if (e->graph->done()) {
        return Status::FailedPrecondition("workflow already ended (" +
                                          v1::WorkflowState_Name(e->graph->state()) + ")");
      }
      e->graph->Cancel(rec.cancelled());
      return Status::OK();
    case v1::WorkflowLogRecord::kSchedulerFailed: {
      if (e->graph->done()) return Status::FailedPrecondition("workflow already ended");
      const auto& f = rec.scheduler_failed();
      std::string reason = "scheduler: " + f.reason();
      auto idx = e->graph->Find(f.node_id());
      if (idx && e->graph->state(*idx) == v1::NODE_READY)
        SY_RETURN_IF_ERROR(e->graph->MarkRunning(*idx));
      if (idx &&
          (e->graph->state(*idx) == v1::NODE_RUNNING || e->graph->state(*idx) == v1::NODE_FAILED)) {
        return e->graph->MarkFailed(*idx, reason, pg::FailMode::kTerminal).status();
      }
      e->graph->Cancel(reason);
      return Status::OK();
    }
    case v1::WorkflowLogRecord::kWorkerLost:
      e->losses.push_back(rec.worker_lost());
      return Status::OK();
    case v1::WorkflowLogRecord::ENTRY_NOT_SET:
      break;
  }
  return Status::InvalidArgument("empty workflow record");
}

Result<std::shared_ptr<Service::Entry>> Service::Find(const std::string& tenant,
                                                      const std::string& id) const {
  std::shared_lock lock(mu_);
  auto it = workflows_.find(id);
  if (it == workflows_.end() || it->second->tenant != tenant) {
    return Status::NotFound("no workflow '" + id + "'");
  }
  return it->second;
}

std::shared_ptr<Service::Entry> Service::Lookup(const std::string& id) const {
  std::shared_lock lock(mu_);
  auto it = workflows_.find(id);
  return it == workflows_.end() ? nullptr : it->second;
}

Status Service::Replay(const std::string& id, Entry* e) const {
  return store_->ForEachRecordOf(id, [&](uint64_t seq, const v1::WorkflowLogRecord& rec) -> Status {
    if (seq != e->next_seq)
      return Status::DataLoss("workflow " + id + ": history gap at record " + std::to_string(seq));
    SY_RETURN_IF_ERROR(ApplyRecord(e, rec));
    e->next_seq = seq + 1;
    return Status::OK();
  });
}

Status Service::Rebuild(const std::string& id, Entry* e) const {
  Entry fresh;
  SY_RETURN_IF_ERROR(Replay(id, &fresh));
  e->graph = std::move(fresh.graph);
  e->next_seq = fresh.next_seq;
  e->last_ms = fresh.last_ms;
  return Status::OK();
}

Status Service::Await(const std::function<void(Done)>& start) {
  std::promise<Status> p;
  auto f = p.get_future();
  start([&p](const Status& s) { p.set_value(s); });
  return f.get();
}

void Service::MutateAsync(const std::string& tenant, const std::string& id,
                          v1::WorkflowLogRecord rec, const IdempotentAnswer* idem, Done done) {
  // An entry archived between the lookup and its lock is looked up again (restored).
  for (int attempt = 0;; ++attempt) {
    auto entry = Find(tenant, id);
    if (!entry.ok() && entry.status().code() == StatusCode::kNotFound) entry = Restore(tenant, id);
    if (!entry.ok()) return done(entry.status());
    Status st;
    {
      std::lock_guard<std::mutex> lock((*entry)->mu);
      if ((*entry)->archived && attempt < 8) continue;
      st = (*entry)->archived ? Status::Unavailable("workflow '" + id + "' is being archived")
                              : MutateLocked(*entry, id, std::move(rec), idem, done);
    }
    if (!st.ok()) done(st);
    return;
  }
}

Status Service::MutateLocked(const std::shared_ptr<Entry>& entry, const std::string& id,
                             v1::WorkflowLogRecord rec, const IdempotentAnswer* idem, Done done) {
  if (!entry->graph) return Status::NotFound("no workflow '" + id + "'");
  if (driver_ && rec.has_appended()) {
    std::vector<const v1::ProgramNode*> known;
    for (size_t i = 0; i < entry->graph->size(); ++i)
      known.push_back(&entry->graph->node(static_cast<pg::NodeIndex>(i)));
    SY_RETURN_IF_ERROR(CheckContextModels(std::move(known), rec.appended().nodes()));
  }
  bool was_done = entry->graph->done();
  SY_RETURN_IF_ERROR(ApplyRecord(entry.get(), rec));  // validates; changes only on success
  Effects fx;
  fx.ended = !was_done && entry->graph->done();
  fx.ended_failed =
      rec.has_event() && entry->graph->done() && entry->graph->state() != v1::WORKFLOW_COMPLETED;
  if (fx.ended_failed && entry->graph->state() == v1::WORKFLOW_FAILED) {
    fx.failure = entry->graph->failure_reason();
    auto idx = entry->graph->Find(rec.event().node_id());
    if (idx && entry->graph->state(*idx) == v1::NODE_FAILED) fx.failed_node = rec.event().node_id();
  }
  v1::IdempotencyEntry stored;
  if (idem) {
    stored.set_status(idem->status);
    stored.set_body(idem->body);
    stored.set_fingerprint(idem->fingerprint);
    stored.set_time_ms(rec.time_ms());
  }
  // Queued under the entry's lock: this workflow's records reach the committer, become
  // durable and complete in sequence order.
  auto recp = std::make_shared<const v1::WorkflowLogRecord>(std::move(rec));
  Status st = store_->Enqueue(
      id, entry->next_seq, *recp,
      [this, entry, id, recp, fx, done = std::move(done)](const Status& s) {
        OnCommitted(entry, id, *recp, fx, s, done);
      },
      entry->tenant, idem ? idem->key : "", idem ? &stored : nullptr);
  if (!st.ok()) {  // refused (the store failed earlier): undo what was applied
    Status rebuilt = Rebuild(id, entry.get());
    Log(LogLevel::kError, "write refused; workflow rebuilt from its durable history",
        LogKeys().With("error", st.ToString()).With("rebuild", rebuilt.ToString()));
    return Status::Unavailable("state store write failed; nothing was applied: " + st.message());
  }
  ++entry->next_seq;
  ++entry->pending;
  return Status::OK();
}

void Service::OnCommitted(const std::shared_ptr<Entry>& entry, const std::string& id,
                          const v1::WorkflowLogRecord& rec, Effects fx, const Status& st,
                          const Done& done) {
  if (st.ok()) {
    v1::WorkflowState state = v1::WORKFLOW_STATE_UNSPECIFIED;
    int64_t arrival_ms = 0;
    {
      std::lock_guard<std::mutex> lock(entry->mu);
      --entry->pending;
      if (fx.ended && entry->graph) state = entry->graph->state();
      arrival_ms = entry->arrival_ms;
    }
    latency_.OnDurable(entry->tenant, id, rec, fx.ended, state, arrival_ms,
                       driver_ ? &driver_->metrics() : nullptr);
    if (rec.has_event()) events_applied_.fetch_add(1, std::memory_order_relaxed);
    if (fx.ended) {
      std::unique_lock g(mu_);
      --live_[entry->tenant];
    }
    Forward(id, rec, fx);
    if (done) done(Status::OK());
    if (fx.ended) NoteEnded(id);  // after the answer: archiving is not on its path
    return;
  }
  bool submit = rec.has_submitted();
  {
    std::lock_guard<std::mutex> lock(entry->mu);
    --entry->pending;
    if (submit) {
      entry->graph.reset();  // a reader that already holds the entry sees NotFound
    } else {
      Status rebuilt = Rebuild(id, entry.get());
      Log(LogLevel::kError, "write failed; workflow rebuilt from its durable history",
          LogKeys().With("error", st.ToString()).With("rebuild", rebuilt.ToString()));
    }
  }
  if (submit) {
    std::unique_lock lock(mu_);
    auto it = workflows_.find(id);
    if (it != workflows_.end() && it->second == entry) {
      workflows_.erase(it);
      --live_[entry->tenant];
    }
  }
  if (done)
    done(Status::Unavailable(std::string("state store write failed; ") +
                             (submit ? "workflow not registered: " : "nothing was applied: ") +
                             st.message()));
}

void Service::SubmitAsync(const std::string& tenant, v1::Workflow workflow,
                          const IdempotentAnswer* idem, Done done) {
  if (tenant.empty()) return done(Status::InvalidArgument("tenant is required"));
  if (!workflow.tenant().empty() && workflow.tenant() != tenant) {
    return done(Status::InvalidArgument("workflow.tenant '" + workflow.tenant() +
                                        "' does not match the caller's tenant"));
  }
  workflow.set_tenant(tenant);
  for (int i = 0; i < workflow.nodes_size(); ++i)
    if (Status st = ResolveModel(workflow.mutable_nodes(i), i); !st.ok()) return done(st);
  if (driver_)
    if (Status st = CheckContextModels({}, workflow.nodes()); !st.ok()) return done(st);
  if (workflow.id().empty()) workflow.set_id(NewWorkflowId());
  Time now = clock_->Now();
  if (workflow.arrival_ms() == 0) workflow.set_arrival_ms(now.millis());
  const std::string id = workflow.id();
  auto recp = std::make_shared<v1::WorkflowLogRecord>();
  recp->set_time_ms(now.millis());
  *recp->mutable_submitted() = std::move(workflow);
  auto entry = std::make_shared<Entry>();
  Status st = ApplyRecord(entry.get(), *recp);  // validates the whole graph
  if (!st.ok()) return done(st);
  {
    std::lock_guard<std::mutex> elock(entry->mu);
    {
      std::unique_lock lock(mu_);
      if (workflows_.count(id) || archived_.count(id)) {
        st = Status::AlreadyExists("workflow '" + id + "' exists");
      } else if (live_[tenant] >= LiveLimit(tenant)) {
        st = Status::ResourceExhausted(
            "tenant '" + tenant + "' has " + std::to_string(live_[tenant]) +
            " live workflows, its limit (maxWorkflows " + std::to_string(LiveLimit(tenant)) + ")");
      } else {
        // Registered at once; a reader of it waits (pending) until it is durable, and a
        // later record of it is queued behind this one.
        workflows_[id] = entry;
        ++live_[tenant];
      }
    }
    if (st.ok()) {
      v1::IdempotencyEntry stored;
      if (idem) {
        stored.set_status(idem->status);
        stored.set_body(idem->body);
        stored.set_fingerprint(idem->fingerprint);
        stored.set_time_ms(now.millis());
      }
      st = store_->Enqueue(
          id, 0, *recp,
          [this, entry, id, recp, done](const Status& s) {
            OnCommitted(entry, id, *recp, Effects{}, s, done);
          },
          tenant, idem ? idem->key : "", idem ? &stored : nullptr);
      if (st.ok()) {
        entry->next_seq = 1;
        entry->pending = 1;
        return;
      }
      entry->graph.reset();
      std::unique_lock lock(mu_);
      workflows_.erase(id);
      --live_[tenant];
      st =
          Status::Unavailable("state store write failed; workflow not registered: " + st.message());
    }
  }
  done(st);
}

Status Service::ResolveModel(v1::ProgramNode* node, int index) const {
  if (!driver_ || node->kind() != v1::LLM) return Status::OK();
  Result<std::string> id = driver_->ResolveModel(node->model_id());
  if (!id.ok())
    return Status::InvalidArgument("nodes[" + std::to_string(index) + "]." + id.status().message());
  node->set_model_id(*id);
  return Status::OK();
}

Result<std::pair<std::string, uint64_t>> Service::BumpModelEpoch(const std::string& model) {
  if (!driver_) return Status::FailedPrecondition("no scheduler runs in this server");
  if (model.empty()) return Status::InvalidArgument("model: empty");
  SY_ASSIGN_OR_RETURN(std::string id, driver_->ResolveModel(model));
  uint64_t epoch = driver_->BumpModelEpoch(id);
  Log(LogLevel::kInfo, "model epoch bumped (admin request)",
      LogKeys().With("model_id", id).With("model_epoch", std::to_string(epoch)));
  return std::make_pair(id, epoch);
}

Result<std::string> Service::Submit(const std::string& tenant, v1::Workflow workflow,
                                    const IdempotentAnswer* idem) {
  if (workflow.id().empty()) workflow.set_id(NewWorkflowId());
  std::string id = workflow.id();
  SY_RETURN_IF_ERROR(
      Await([&](Done d) { SubmitAsync(tenant, std::move(workflow), idem, std::move(d)); }));
  return id;
}

void Service::AppendAsync(const std::string& tenant, const std::string& workflow_id,
                          std::vector<v1::ProgramNode> nodes, const IdempotentAnswer* idem,
                          Done done) {
  if (nodes.empty()) return done(Status::InvalidArgument("nodes is empty"));
  for (size_t i = 0; i < nodes.size(); ++i)
    if (Status st = ResolveModel(&nodes[i], static_cast<int>(i)); !st.ok()) return done(st);
  v1::WorkflowLogRecord rec;
  rec.set_time_ms(clock_->Now().millis());
  for (auto& n : nodes) *rec.mutable_appended()->add_nodes() = std::move(n);
  MutateAsync(tenant, workflow_id, std::move(rec), idem, std::move(done));
}

Status Service::Append(const std::string& tenant, const std::string& workflow_id,
                       std::vector<v1::ProgramNode> nodes, const IdempotentAnswer* idem) {
  return Await(
      [&](Done d) { AppendAsync(tenant, workflow_id, std::move(nodes), idem, std::move(d)); });
}

void Service::ReportEventAsync(const std::string& tenant, const std::string& workflow_id,
                               v1::NodeEvent event, const IdempotentAnswer* idem, Done done) {
  if (Status st = CheckEventFields(event); !st.ok()) return done(st);
  bool llm = event.type() == v1::LLM_STARTED || event.type() == v1::LLM_FINISHED ||
             event.type() == v1::LLM_FAILED;
  if (llm && driver_ && driver_->config().engines_run_llm) {
    return done(Status::FailedPrecondition(
        "event." + v1::NodeEventType_Name(event.type()) +
        ": LLM nodes run on the service's simulated engine (llm_executor "
        "'simulated'), which reports their results; LLM events are accepted from clients "
        "only with llm_executor 'reported'"));
  }
  event.set_workflow_id(workflow_id);
  v1::WorkflowLogRecord rec;
  rec.set_time_ms(clock_->Now().millis());
  if (event.time_ms() == 0) event.set_time_ms(rec.time_ms());
  *rec.mutable_event() = std::move(event);
  MutateAsync(tenant, workflow_id, std::move(rec), idem, std::move(done));
}

Status Service::ReportEvent(const std::string& tenant, const std::string& workflow_id,
                            v1::NodeEvent event, const IdempotentAnswer* idem) {
  return Await(
      [&](Done d) { ReportEventAsync(tenant, workflow_id, std::move(event), idem, std::move(d)); });
}

void Service::CloseAsync(const std::string& tenant, const std::string& workflow_id,
                         const IdempotentAnswer* idem, Done done) {
  v1::WorkflowLogRecord rec;
  rec.set_time_ms(clock_->Now().millis());
  rec.set_closed(true);
  MutateAsync(tenant, workflow_id, std::move(rec), idem, std::move(done));
}

Status Service::Close(const std::string& tenant, const std::string& workflow_id,
                      const IdempotentAnswer* idem) {
  return Await([&](Done d) { CloseAsync(tenant, workflow_id, idem, std::move(d)); });
}

void Service::CancelAsync(const std::string& tenant, const std::string& workflow_id,
                          std::string reason, const IdempotentAnswer* idem, Done done) {
  // Stored in a proto3 string field: bytes that are not UTF-8 would be written but not
  // parse back, and the store would not open again.
  if (Status st = CheckUtf8("reason", reason); !st.ok()) return done(st);
  v1::WorkflowLogRecord rec;
  rec.set_time_ms(clock_->Now().millis());
  rec.set_cancelled(reason.empty() ? "cancelled by client" : std::move(reason));
  MutateAsync(tenant, workflow_id, std::move(rec), idem, std::move(done));
}

Status Service::Cancel(const std::string& tenant, const std::string& workflow_id,
                       std::string reason, const IdempotentAnswer* idem) {
  return Await(
      [&](Done d) { CancelAsync(tenant, workflow_id, std::move(reason), idem, std::move(d)); });
}

void Service::AfterDurable(Done done) const { store_->Barrier(std::move(done)); }

Status Service::Flush() const { return store_->Flush(); }

}  // namespace switchyard::service
