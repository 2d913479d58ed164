// Service: the embedding facade of Switchyard, and the core of the HTTP service.
//
// A serving stack or agent runtime links this class to submit workflows, append nodes as
// the agent decides its next step, report node events (tool started/finished/failed,
// client-side LLM results), close or cancel workflows, and read their status. Every
// mutating call is validated against the workflow graph (program_graph) and applied in
// memory under the workflow's lock, its record is queued for the store's group commit
// (Store: one committer thread, one fsynced RocksDB WriteBatch for everything queued), and
// it is acknowledged only when that record is durable (invariant 10): the synchronous
// calls return then, the *Async calls run their `done` then (on the committer thread). A
// call that fails validation changes nothing and writes nothing. On Open() every workflow
// is rebuilt by replaying its durable history.
//
// Ordering and visibility: a workflow's records are queued under its lock, so they become
// durable and are acknowledged in sequence order, and a later request on a workflow is
// never acknowledged before an earlier one. Get()/GetAsync() of a workflow with records not
// yet durable answer only once they are (a reader never acts on state that a crash could
// take back); List() and counts() read the in-memory state as it is. If a group commit
// fails, every request in it (and every later one: the store stops writing) fails with
// Unavailable, the workflows it touched are rebuilt from their durable history, and the
// scheduler is told only about durable records.
//
// Tenancy: every call names the caller's tenant; a workflow of another tenant is
// reported as NotFound, never as PermissionDenied (its existence is not revealed).
//
// Retry of failed nodes follows program_graph's rule: a node reported failed with
// `retryable: true` that is retryable and has attempts left becomes READY again (attempt
// + 1); otherwise (`retryable: false`, also when the field is absent) the node fails for
// good and the workflow fails with the reason, and nothing with a side effect is ever
// re-run without an idempotency key, whatever the flag says. The scheduler is then told
// to fail the workflow too: its decisions end with `fail` (a cancelled workflow's with
// `cancel`, a completed one's with `complete`).
//
// Scheduling: unless options.scheduler.enabled is false, the service drives a real
// scheduler (SchedulerDriver: scheduler::Core through executors::Runtime on its own event
// loop). Every acknowledged mutation is forwarded to it; tool nodes wait for the client's
// TOOL_* reports; LLM nodes run on the simulated engine (embedded default, whose
// LLM_STARTED/LLM_FINISHED the service records durably itself) or, with
// scheduler.engines_run_llm = false, on an engine that reports LLM_* events (embedding API or
// HTTP). Get() adds where each context's KV lives and the decisions taken. On Open() every
// workflow that has not ended is re-fed to the scheduler: its unfinished nodes (a context
// whose creator already ran is recomputed), its close, and the start of running tools.
//
// Memory: live workflows are kept whole in memory, and so are the `ended_in_memory` most
// recently ended ones (status, KV view, decisions). An older ended workflow is archived:
// dropped from memory, the scheduler's and its mirror's included, and remembered only by
// id, tenant, state and arrival (~100 bytes). Get() of an archived workflow reads the
// snapshot of its final status stored when it was archived (one point lookup), or, for one
// archived by recovery or whose history grew since, replays its durable history (status
// with `archived` set, no KV view or decisions); a mutation of
// one (say, Close of a failed workflow) brings it back into memory first; List() includes
// archived workflows as summaries (id, tenant, state, closed, arrival, `archived` set) and
// counts() includes them. Recovery archives the same way as it
// replays, so memory after a restart is bounded the same. The durable log and idempotency
// answers are kept on disk; with `ended_retention_s` set, an archived workflow whose last
// record is older than that is deleted from the log and forgotten (swept as workflows end
// and at recovery). Idempotency answers are kept for `idempotency_retention_s` (forever
// when 0): an older one is ignored, and compaction drops it.
//
// Engine side (embedding): SetDecisionListener() receives every scheduler command (place,
// preempt, keep, demote, prefetch, discard, ...) for the engine to carry out; the engine
// reports results with ReportEvent() (LLM_STARTED / LLM_FINISHED / LLM_FAILED).
//
// Thread-safety: all methods are thread-safe; calls on different workflows run in
// parallel (their durable writes are group-committed), calls on one workflow serialise.
// The decision listener runs on the scheduler's thread and must not block for long.
// `done` callbacks of the *Async calls may run inline (validation errors) or on the
// committer thread; they must not call the synchronous methods.
#pragma once

#include <map>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/ids.h"
#include "base/mutex.h"
#include "base/result.h"
#include "driver/scheduler_driver.h"
#include "program_graph/workflow.h"
#include "proto/switchyard/v1/api.pb.h"
#include "service/service_metrics.h"
#include "service/store.h"

namespace switchyard::service {

struct ServiceOptions {
  std::string data_dir = "var";
  bool sync_writes = true;
  program_graph::Limits limits;
  int64_t max_live_workflows_per_tenant = 10000;
  // A tenant's own limit on live workflows (the config's tenants[].maxWorkflows); absent:
  // max_live_workflows_per_tenant.
  std::map<std::string, int64_t> max_live_workflows_by_tenant;
  // Ended workflows kept whole in memory, the most recently ended; older ones are archived
  // (see "Memory" above).
  size_t ended_in_memory = 256;
  // Archived workflows whose last record is older than this are deleted from the store
  // and forgotten (their ids may be used again); 0 keeps them forever.
  int64_t ended_retention_s = 0;
  // Idempotency-Key answers older than this are forgotten (a repeat is a new request) and
  // dropped from the store by compaction; 0 keeps them forever.
  int64_t idempotency_retention_s = 0;
  // Documents (stored OpenAI Responses) stored longer ago than this are no longer read and
  // are deleted from the store (see "Documents"); 0 keeps them forever. 30 days, as the
  // OpenAI API keeps stored responses.
  int64_t document_retention_s = 30 * 24 * 3600;
  // Group commit delay under concurrent load (service/store.h, "Commit delay"); 0 = none.
  std::chrono::microseconds commit_delay{700};
  driver::SchedulerConfig scheduler;
};

// The nodes of one submitted or appended batch in the order the scheduler is fed them
// (it takes nodes one at a time; program_graph accepts a batch in any order): every dep
// inside the batch before its dependent. The order is that of repeated passes over the
// batch, each taking, in batch order, the nodes whose deps inside the batch are taken
// (earlier in the pass or before it): a batch already in dependency order keeps its
// order. Deps outside the batch are ignored; nodes on a cycle (which validation refuses)
// and those after them come last, in batch order. Linear in nodes and deps (Kahn's
// algorithm; service_scheduler.cc).
std::vector<const v1::ProgramNode*> DepsFirst(
    const google::protobuf::RepeatedPtrField<v1::ProgramNode>& nodes);

// The first answer to store with a mutation that carries an Idempotency-Key.
struct IdempotentAnswer {
  std::string key;
  uint64_t fingerprint = 0;
  int status = 200;
  std::string body;
};

class Service {
 public:
  static Result<std::unique_ptr<Service>> Open(ServiceOptions options, const Clock* clock);
  ~Service();

  // A fresh workflow id ("wf_" + 16 hex digits).
  std::string NewWorkflowId();

  // Registers a workflow (its id is generated when empty). AlreadyExists if the id is
  // taken, InvalidArgument naming the problem, ResourceExhausted over the tenant quota.
  Result<std::string> Submit(const std::string& tenant, v1::Workflow workflow,
                             const IdempotentAnswer* idem = nullptr);
  Status Append(const std::string& tenant, const std::string& workflow_id,
                std::vector<v1::ProgramNode> nodes, const IdempotentAnswer* idem = nullptr);
  // Applies a node event; InvalidArgument naming a missing nodeId or type (or an error
  // text that is not UTF-8), NotFound for an unknown node, FailedPrecondition for an event
  // the node's state does not allow.
  Status ReportEvent(const std::string& tenant, const std::string& workflow_id, v1::NodeEvent event,
                     const IdempotentAnswer* idem = nullptr);
  Status Close(const std::string& tenant, const std::string& workflow_id,
               const IdempotentAnswer* idem = nullptr);
  // `reason` must be UTF-8 (InvalidArgument naming it otherwise); empty: "cancelled by
  // client".
  Status Cancel(const std::string& tenant, const std::string& workflow_id, std::string reason,
                const IdempotentAnswer* idem = nullptr);

  // Asynchronous forms (the HTTP service): `done` runs once the mutation is durable (OK)
  // or has failed. `idem` is copied before they return. SubmitAsync needs workflow.id().
  using Done = std::function<void(const Status&)>;
  void SubmitAsync(const std::string& tenant, v1::Workflow workflow, const IdempotentAnswer* idem,
                   Done done);
  void AppendAsync(const std::string& tenant, const std::string& workflow_id,
                   std::vector<v1::ProgramNode> nodes, const IdempotentAnswer* idem, Done done);
  void ReportEventAsync(const std::string& tenant, const std::string& workflow_id,
                        v1::NodeEvent event, const IdempotentAnswer* idem, Done done);
  void CloseAsync(const std::string& tenant, const std::string& workflow_id,
                  const IdempotentAnswer* idem, Done done);
  void CancelAsync(const std::string& tenant, const std::string& workflow_id, std::string reason,
                   const IdempotentAnswer* idem, Done done);
  using StatusDone = std::function<void(Result<v1::WorkflowStatus>)>;
  void GetAsync(const std::string& tenant, const std::string& workflow_id, StatusDone done) const;
  // `done` runs once everything acknowledged or queued so far is durable.
  void AfterDurable(Done done) const;
  // Waits until everything queued so far is durable (or failed).
  Status Flush() const;
  Store::Stats store_stats() const { return store_->stats(); }

  // Documents the fronts keep (stored OpenAI Responses), each of one tenant: durable in
  // the store like workflows (Store "Documents"), so they survive a restart. `kind`
  // groups them ("response"); InvalidArgument for an empty kind or id. Put replaces;
  // `done` runs once durable or failed. Retention: a document stored (by the service's
  // clock) more than options.document_retention_s ago is expired: GetDocument no longer
  // finds it, and a sweep deletes it from the store. The sweep runs at Open and as
  // documents are stored, at most once a second of the clock (SweepDocuments runs one
  // now); each deletes a bounded batch, oldest first (an expiry index, so a sweep reads
  // only what it deletes). Documents stored before stored times were kept count from the
  // first Open that keeps them.
  void PutDocumentAsync(const std::string& tenant, const std::string& kind, const std::string& id,
                        std::string value, Done done);
  void DeleteDocumentAsync(const std::string& tenant, const std::string& kind,
                           const std::string& id, Done done);
  // The durable document, if any (another tenant's is not found).
  Result<std::optional<std::string>> GetDocument(const std::string& tenant, const std::string& kind,
                                                 const std::string& id) const;
  // Deletes every durable document of `kind` for which `expired(value)` holds; the count.
  Result<int64_t> EraseDocuments(const std::string& kind,
                                 const std::function<bool(const std::string& value)>& expired);
  // Queues the deletion of the documents past retention (a batch of at most `limit` index
  // entries, oldest first); the count of documents. Nothing without a retention.
  Result<int64_t> SweepDocuments(size_t limit = kDocumentSweepBatch);
  static constexpr size_t kDocumentSweepBatch = 256;
  // Documents deleted by retention since Open.
  uint64_t documents_expired() const { return documents_expired_.load(std::memory_order_relaxed); }

  Result<v1::WorkflowStatus> Get(const std::string& tenant, const std::string& workflow_id) const;
  // The workflow's timeline from the scheduler's mirror (scheduler_driver.h FillTimeline):
  // empty without a scheduler, `archived` and empty once archived. NotFound for an unknown
  // workflow or another tenant's.
  Result<v1::WorkflowTimeline> Timeline(const std::string& tenant,
                                        const std::string& workflow_id) const;
  // One page of a tenant's workflows, live and archived, ordered by (arrival, id).
  struct ListQuery {
    std::optional<v1::WorkflowState> state;  // only workflows in this state
    size_t page_size = 0;                    // 0: no limit
    bool newest_first = false;
    std::string page_token;  // next_page_token of the previous page ("": the first page)
  };
  // InvalidArgument names a malformed page token. The page's next_page_token is set when
  // more workflows follow it.
  Result<v1::WorkflowList> List(const std::string& tenant, const ListQuery& query) const;
  // Every workflow of the tenant (in `state` if given), oldest first.
  v1::WorkflowList List(const std::string& tenant,
                        std::optional<v1::WorkflowState> state = std::nullopt) const;
  // The stored first answer for (tenant, key), if any (waits for it to be durable).
  Result<std::optional<v1::IdempotencyEntry>> LookupIdempotent(const std::string& tenant,
                                                               const std::string& key) const;
  // The same without waiting: `pending` when the answer is queued but not yet durable
  // (answer a repeat only after AfterDurable).
  Result<std::optional<Store::Idempotent>> PeekIdempotent(const std::string& tenant,
                                                          const std::string& key) const;

  struct Counts {
    size_t workflows = 0, running = 0, completed = 0, failed = 0, cancelled = 0;
    size_t archived = 0;  // of the ended ones above, archived
    // Reads of archived workflows: from their stored snapshot, or by replaying history
    // (archived before snapshots existed, or at recovery).
    uint64_t archived_reads_snapshot = 0, archived_reads_replay = 0;
    uint64_t events_applied = 0;
  };
  Counts counts() const;
  // Workflows held whole in memory, and archived ones (ended, remembered by id).
  size_t in_memory() const;
  size_t archived() const;

  // Cluster view: workflow counts, topology, tiers with occupancy, link budgets by class,
  // decisions by kind and bytes moved per tier (tenants are added by the HTTP layer).
  v1::ClusterState Cluster() const;
  // Every scheduler decision, with the workflow's tenant (engine side of the embedding
  // API). Set before submitting; replaces the previous listener.
  using DecisionListener = std::function<void(const std::string& tenant,
                                              const std::string& workflow_id, const v1::Decision&)>;
  void SetDecisionListener(DecisionListener listener);
  // The running scheduler, or null when disabled.
  driver::SchedulerDriver* scheduler() const { return driver_.get(); }
  // What the front doors need of the engines (executors/generation.h): the scheduler
  // driver's narrow view, or null when the scheduler is disabled.
  executors::Generation* generation() const { return driver_.get(); }
  // A model-epoch change (new weights under the same id, POST
  // /v1/models/{model}:bump-epoch): every tier's blocks of the old epoch become unreadable
  // and each context of the model recomputes on its next call. `model` may be an alias.
  // Returns the served id and its new epoch; InvalidArgument naming an unknown model,
  // FailedPrecondition without a scheduler.
  Result<std::pair<std::string, uint64_t>> BumpModelEpoch(const std::string& model);
  // Per-tenant TTFT, JCT and tool-wait histograms of the durable records (/metrics).
  const ServiceMetrics& latency_metrics() const { return latency_; }

 private:
  // One workflow. `tenant`, `arrival_ms` and `restored` are set before the entry is
  // published (in workflows_) and never change; the rest is guarded by `mu`.
  struct Entry {
    mutable Mutex mu;
    std::string tenant;
    std::unique_ptr<program_graph::Workflow> graph GUARDED_BY(mu);
    uint64_t next_seq GUARDED_BY(mu) = 0;
    uint64_t pending GUARDED_BY(mu) = 0;  // records applied in memory, not yet durable
    int64_t arrival_ms = 0;
    int64_t last_ms GUARDED_BY(mu) = 0;    // time of its latest record
    bool archived GUARDED_BY(mu) = false;  // dropped from workflows_: look again
    bool restored = false;                 // read back from the archive (no KV view or decisions)
    // Per node: when its current attempt started and ended (ms; 0: not yet).
    std::unordered_map<std::string, std::pair<int64_t, int64_t>> times GUARDED_BY(mu);
    std::vector<v1::WorkerLoss> losses GUARDED_BY(mu);  // durable failure records, oldest first
  };
  // What is remembered of an archived workflow.
  struct Archived {
    uint32_t tenant = 0;  // index into tenant_names_
    v1::WorkflowState state = v1::WORKFLOW_STATE_UNSPECIFIED;
    int64_t arrival_ms = 0;
    int64_t ended_ms = 0;  // time of its latest record
    uint64_t records = 0;  // its history is records 0..records-1
    bool closed = false;
  };
  // What a queued record does once durable.
  struct Effects {
    bool ended = false;         // it ended the workflow (live count)
    bool ended_failed = false;  // an event that ended it other than completed
    std::string failed_node;    // ended_failed by a node's failure: the node and the
    std::string failure;        // workflow's failure reason (the scheduler says `fail`)
  };

  Service(ServiceOptions options, const Clock* clock);
  Status Recover();
  // Applies one history record to an entry (used live and on recovery).
  Status ApplyRecord(Entry* e, const v1::WorkflowLogRecord& rec) const REQUIRES(e->mu);
  Status ApplyEvent(program_graph::Workflow* wf, const v1::NodeEvent& ev) const;
  // An event's required fields (nodeId, type) and its error text (UTF-8): InvalidArgument
  // naming the field, checked before the node is looked up.
  static Status CheckEventFields(const v1::NodeEvent& ev);
  // InvalidArgument naming `field` when `value`, bound for a proto3 string field, is not
  // UTF-8 (protobuf would write it and then refuse to read the store back).
  static Status CheckUtf8(std::string_view field, std::string_view value);
  // Looks up the caller's workflow: NotFound for an unknown id or another tenant's.
  Result<std::shared_ptr<Entry>> Find(const std::string& tenant, const std::string& id) const;
  // Any tenant's workflow (scheduler-side callbacks); nullptr when unknown.
  std::shared_ptr<Entry> Lookup(const std::string& id) const;
  // Validates `rec` by applying it, then queues it; `done` runs when it is durable. On a
  // failed write the entry is rebuilt from its durable history and Unavailable is given.
  void MutateAsync(const std::string& tenant, const std::string& id, v1::WorkflowLogRecord rec,
                   const IdempotentAnswer* idem, Done done);
  // The same with entry->mu held: an error returned means `done` will not be called.
  Status MutateLocked(const std::shared_ptr<Entry>& entry, const std::string& id,
                      v1::WorkflowLogRecord rec, const IdempotentAnswer* idem, Done done)
      REQUIRES(entry->mu);
  // Runs on the committer thread once a queued record is durable or failed.
  void OnCommitted(const std::shared_ptr<Entry>& entry, const std::string& id,
                   const v1::WorkflowLogRecord& rec, Effects fx, const Status& st,
                   const Done& done);
  // Applies a workflow's durable history to a fresh entry (DataLoss on a gap).
  Status Replay(const std::string& id, Entry* e) const REQUIRES(e->mu);
  // Resets an entry to its durable history (after a failed write).
  Status Rebuild(const std::string& id, Entry* e) const REQUIRES(e->mu);
  // Notes that `id` ended (durably) and archives the oldest ended workflows beyond
  // options_.ended_in_memory. Takes entry locks then mu_ (the order SubmitAsync uses).
  void NoteEnded(const std::string& id);
  // Archives one ended workflow if nothing of it is pending; false if it was kept.
  // `snapshot`: also store its final status, so that a GET of it is a point lookup.
  bool Archive(const std::string& id, bool tell_scheduler, bool snapshot);
  // The stored final status of an archived workflow of `tenant` (nullopt: read its history).
  std::optional<v1::WorkflowStatus> ReadSnapshot(const std::string& tenant,
                                                 const std::string& id) const;
  // Deletes archived workflows past options_.ended_retention_s (at most once a second
  // unless `force`).
  void Sweep(bool force);
  // At Open: times the documents stored without one (once: meta "documents_timed"), then
  // sweeps every expired one.
  Status OpenDocuments();
  // SweepDocuments at most once a second of clock_ (as documents are stored); logs a failure.
  void MaybeSweepDocuments();
  // Reads an archived workflow of `tenant` back from the store (NotFound otherwise).
  Result<std::shared_ptr<Entry>> ReadArchived(const std::string& tenant,
                                              const std::string& id) const;
  // Brings an archived workflow back into memory for a mutation.
  Result<std::shared_ptr<Entry>> Restore(const std::string& tenant, const std::string& id);
  static Status Await(const std::function<void(Done)>& start);
  // Scheduler side: forwards an acknowledged record; records what the scheduler did.
  void Forward(const std::string& id, const v1::WorkflowLogRecord& rec, const Effects& fx);
  void StartScheduler();
  // Live workflows `tenant` may hold (its own maxWorkflows, else the default).
  int64_t LiveLimit(const std::string& tenant) const {
    auto it = options_.max_live_workflows_by_tenant.find(tenant);
    return it == options_.max_live_workflows_by_tenant.end()
               ? options_.max_live_workflows_per_tenant
               : it->second;
  }
  void Refeed(const std::string& id, const Entry& e) REQUIRES(e.mu);
  // A simulated LLM node's start (placed) or end (finished, with its status). `retried`:
  // the scheduler retries the node, so its attempt is recorded failed (retryable: READY on
  // the next attempt until placed again) — skipped where this graph would not retry (after
  // a restart the scheduler counts attempts afresh): the node then shows its last recorded
  // attempt, never a failure the scheduler did not make.
  void RecordLlm(const std::string& id, const std::string& node, bool finished, const Status& st,
                 int64_t output_tokens, bool retried = false);
  void RecordSchedulerFailure(const std::string& id, const std::string& node,
                              const std::string& reason);
  // Applies and queues a record made by the service itself (no tenant check, entry->mu
  // held); a failed write is logged.
  Status RecordInternal(const std::string& id, const std::shared_ptr<Entry>& e,
                        v1::WorkflowLogRecord rec) REQUIRES(e->mu);
  static v1::WorkflowStatus StatusOf(const std::string& id, const Entry& e) REQUIRES(e.mu);
  // An idempotency answer past options_.idempotency_retention_s.
  bool Expired(const v1::IdempotencyEntry& e) const;
  // An LLM node's modelId as the served id (empty: the default model; an alias: its
  // model); another name is InvalidArgument naming nodes[index].modelId.
  Status ResolveModel(v1::ProgramNode* node, int index) const;
  // The scheduler's evidence of a lost worker (SchedulerDriver::Callbacks::worker_lost),
  // appended to the workflow's log.
  void RecordWorkerLoss(const std::string& id, const v1::WorkerLoss& loss);
  // The scheduler's learned tool durations in the state store ("meta/learned_durations").
  static constexpr char kDurationsMeta[] = "learned_durations";
  void SaveDurations(const v1::LearnedDurations& learned);  // the scheduler's thread
  void RestoreDurations();                                  // at Open, before workflows

  ServiceOptions options_;
  const Clock* clock_;
  std::unique_ptr<Store> store_;
  IdGenerator ids_;
  mutable SharedMutex mu_;  // guards workflows_ and live_
  std::unordered_map<std::string, std::shared_ptr<Entry>> workflows_ GUARDED_BY(mu_);
  std::unordered_map<std::string, int64_t> live_ GUARDED_BY(mu_);  // not-done workflows per tenant
  std::deque<std::string> ended_;  // ended, in memory, oldest end first
  std::unordered_map<std::string, Archived> archived_;
  std::deque<std::string> archive_order_;  // ids as archived (oldest first), for retention
  int64_t last_sweep_ms_ = 0;
  std::vector<std::string> tenant_names_;  // interned for archived_
  std::unordered_map<std::string, uint32_t> tenant_index_;
  size_t archived_by_state_[3] = {0, 0, 0};  // completed, failed, cancelled
  std::atomic<uint64_t> events_applied_{0};
  std::atomic<int64_t> last_document_sweep_ms_{0};
  std::atomic<uint64_t> documents_expired_{0};
  mutable std::atomic<uint64_t> archived_reads_snapshot_{0}, archived_reads_replay_{0};
  bool recovering_ = false;           // Recover() runs: archive without snapshots
  std::atomic<bool> closing_{false};  // the destructor runs: the scheduler records nothing
  Mutex listener_mu_;
  std::shared_ptr<DecisionListener> listener_ GUARDED_BY(listener_mu_);
  ServiceMetrics latency_;                           // fed by OnCommitted
  std::unique_ptr<driver::SchedulerDriver> driver_;  // last member: stopped first
};

}  // namespace switchyard::service
