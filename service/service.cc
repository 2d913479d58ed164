// Service: opening, and the write path (submit, append, events, close, cancel: validated,
// logged durably, applied, forwarded to the scheduler). Recovery and the history records
// applied to a workflow are in service_recovery.cc, archiving and retention in
// service_archive.cc, reads (status, lists, idempotency lookups, counts) in
// service_queries.cc, the scheduler side in service_scheduler.cc.
#include "service/service.h"

#include <algorithm>
#include <future>
#include <map>
#include <random>

#include "base/ids.h"
#include "base/logging.h"
#include "base/mutex.h"

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
  SY_RETURN_IF_ERROR(svc->OpenDocuments());
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
        MutexLock lock(&self->listener_mu_);
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

Result<std::shared_ptr<Service::Entry>> Service::Find(const std::string& tenant,
                                                      const std::string& id) const {
  ReaderMutexLock lock(&mu_);
  auto it = workflows_.find(id);
  if (it == workflows_.end() || it->second->tenant != tenant) {
    return Status::NotFound("no workflow '" + id + "'");
  }
  return it->second;
}

std::shared_ptr<Service::Entry> Service::Lookup(const std::string& id) const {
  ReaderMutexLock lock(&mu_);
  auto it = workflows_.find(id);
  return it == workflows_.end() ? nullptr : it->second;
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
      MutexLock lock(&(*entry)->mu);
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
      MutexLock lock(&entry->mu);
      --entry->pending;
      if (fx.ended && entry->graph) state = entry->graph->state();
      arrival_ms = entry->arrival_ms;
    }
    latency_.OnDurable(entry->tenant, id, rec, fx.ended, state, arrival_ms,
                       driver_ ? &driver_->metrics() : nullptr);
    if (rec.has_event()) events_applied_.fetch_add(1, std::memory_order_relaxed);
    if (fx.ended) {
      WriterMutexLock g(&mu_);
      --live_[entry->tenant];
    }
    Forward(id, rec, fx);
    if (done) done(Status::OK());
    if (fx.ended) NoteEnded(id);  // after the answer: archiving is not on its path
    return;
  }
  bool submit = rec.has_submitted();
  {
    MutexLock lock(&entry->mu);
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
    WriterMutexLock lock(&mu_);
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
  Status st;
  {
    MutexLock elock(&entry->mu);           // not shared yet
    st = ApplyRecord(entry.get(), *recp);  // validates the whole graph
  }
  if (!st.ok()) return done(st);
  {
    MutexLock elock(&entry->mu);
    {
      WriterMutexLock lock(&mu_);
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
      WriterMutexLock lock(&mu_);
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
