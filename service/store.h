// Store: the durable state of the service in RocksDB (docs/design.md invariant 10).
//
// Column families: "workflow_log" holds each workflow's history as ordered records
// (key "<workflow id>/<16-hex sequence>"), "idempotency" holds first answers by
// "<tenant>\0<Idempotency-Key>", and the default family holds archived workflows' final
// status snapshots ("archive/<workflow id>"; a cache of what their history replays to),
// service metadata ("meta/<name>") and documents ("Documents" below).
// A record and its idempotency answer always travel in the same WriteBatch, so after a
// crash either both exist or neither does.
//
// Group commit: Enqueue() hands a record to the store's one committer thread and returns
// at once. The committer drains everything queued into one WriteBatch, writes it with one
// WAL fsync (sync on, the default), then runs every record's `done` in queue order on its
// own thread. `done(OK)` means the record is durable: only then may the caller acknowledge
// it. The queue is FIFO and there is one committer, so records are durable and completed
// in the order they were enqueued (a caller that enqueues a workflow's records under its
// own lock gets them durable in sequence order). Barrier() completes after everything
// enqueued before it.
//
// Commit delay (as PostgreSQL's commit_delay with commit_siblings): under concurrent load,
// when the previous group commit carried at least kDelaySiblings records, the committer
// starts the next one no sooner than `commit_delay` after the previous one started, so
// that each commit carries more records. A WAL fsync costs the committer tens of
// microseconds of CPU whatever the batch (on a VM, each block request is a VM exit, and an
// appending fdatasync sends three: data, inode, cache flush); at ~30k records/s commits ran
// back to back with ~10 records each. A lone or sequential writer (smaller batches) is
// never delayed; the delay adds at most `commit_delay` to a record's wait.
//
// Failure: if a batch write fails, every record in it and every record enqueued later gets
// `done(Unavailable)`; the store accepts no further writes until it is reopened (RocksDB
// itself stops writing after a failed WAL write, and a failed fsync cannot safely be
// retried). Reads keep working. Idempotency answers waiting in the queue are visible to
// GetIdempotent with `pending` set, so a repeat can wait (Barrier) for the first answer
// to be durable instead of being applied twice.
//
// Thread-safety: all methods are thread-safe. `done` callbacks run on the committer thread
// (a Barrier with nothing queued before it, or refused, completes inline); they must not block
// on the store (no synchronous Append/Flush from a callback).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "proto/switchyard/v1/api.pb.h"

namespace rocksdb {
class CompactionFilter;
class DB;
class ColumnFamilyHandle;
class Status;
class WriteBatch;
}  // namespace rocksdb

namespace switchyard::service {

class Store {
 public:
  using Done = std::function<void(const Status&)>;

  // `idem_retention_s` > 0: compactions of the idempotency family drop answers stored
  // more than that long ago (by their time_ms, against the wall clock).
  // `commit_delay`: see "Commit delay" above (0: commit as soon as the last one ends).
  static Result<std::unique_ptr<Store>> Open(const std::string& dir, bool sync,
                                             int64_t idem_retention_s = 0,
                                             std::chrono::microseconds commit_delay = {});
  // The smallest previous batch after which the next commit is delayed.
  static constexpr uint64_t kDelaySiblings = 4;
  ~Store();  // completes what is queued, then stops the committer

  // Queues record `seq` of a workflow, with an optional idempotency answer, for the next
  // group commit; `done` runs once it is durable (OK) or failed. When the store has
  // failed or is shut down the record is refused: the error is returned and `done` is
  // never called.
  [[nodiscard]] Status Enqueue(const std::string& workflow_id, uint64_t seq,
                               const v1::WorkflowLogRecord& rec, Done done,
                               const std::string& tenant = "", const std::string& idem_key = "",
                               const v1::IdempotencyEntry* idem = nullptr);
  // Queues the deletion of a workflow's records 0..records-1 (retention); it is written
  // with the next group commit, after everything enqueued before it.
  [[nodiscard]] Status EnqueueErase(const std::string& workflow_id, uint64_t records);
  // Queues the snapshot of an archived workflow (its final status, serialized) for the
  // next group commit. It lives in the default column family under "archive/<id>" (one
  // point lookup instead of a scan of the workflow's history);
  // EnqueueErase deletes it with the records.
  [[nodiscard]] Status EnqueueSnapshot(const std::string& workflow_id, std::string snapshot);
  // Queues service metadata `name` (e.g. the scheduler's learned tool durations) for the
  // next group commit, in the default column family under "meta/<name>", replacing the
  // previous value. `done` (optional) runs once it is durable or failed.
  [[nodiscard]] Status EnqueueMeta(const std::string& name, std::string value, Done done = {});
  // The durable value of metadata `name`, if any.
  Result<std::optional<std::string>> GetMeta(const std::string& name) const;
  // Documents: values a front keeps by key (stored OpenAI Responses), in the default
  // column family under "doc/<key>", each with the time it was stored ("doct/<key>", 16
  // hex digits of ms) and an entry in the expiry index ("doci/<16-hex ms><key>", oldest
  // first). EnqueueDocument puts (replacing; `time_ms` >= 0, the service's clock),
  // EnqueueDocumentErase deletes, with the next group commit; `done` (optional) runs once
  // durable or failed. An erase leaves the index entry, which the sweep below drops.
  [[nodiscard]] Status EnqueueDocument(const std::string& key, std::string value, int64_t time_ms,
                                       Done done = {});
  [[nodiscard]] Status EnqueueDocumentErase(const std::string& key, Done done = {});
  struct Document {
    std::string value;
    std::optional<int64_t> time_ms;  // when it was stored; none: before times were kept
  };
  // The durable document `key`, if any (nullopt also while it is still queued).
  Result<std::optional<Document>> GetDocument(const std::string& key) const;
  // Visits the durable documents whose key starts with `prefix`, in key order.
  Status ForEachDocument(
      const std::string& prefix,
      const std::function<Status(const std::string& key, const std::string& value)>& fn) const;
  // Retention: queues, for the next group commit, the deletion of the documents whose
  // stored time is before `cutoff_ms`, visiting at most `limit` entries of the expiry
  // index (oldest first). An entry whose document was replaced or erased since is only
  // dropped; a document with a put still queued is left for a later sweep.
  struct DocumentSweep {
    int64_t erased = 0;  // documents whose deletion was queued
    bool more = false;   // `limit` was reached: older entries may remain
  };
  Result<DocumentSweep> EraseDocumentsBefore(int64_t cutoff_ms, size_t limit);
  // Gives the documents stored without a time (by a version before stored times were
  // kept) the time `time_ms`, so that retention counts from it; the count. Queued like a
  // put (Flush() to wait for it).
  Result<int64_t> TimeUntimedDocuments(int64_t time_ms);
  // `done` runs after everything enqueued before it is durable (OK) or failed.
  void Barrier(Done done);
  // Synchronous forms (never from a `done` callback).
  Status Append(const std::string& workflow_id, uint64_t seq, const v1::WorkflowLogRecord& rec,
                const std::string& tenant = "", const std::string& idem_key = "",
                const v1::IdempotencyEntry* idem = nullptr);
  Status Flush();
  // Completes what is queued and stops accepting writes (later ones fail at once).
  void Shutdown();
  // Flushes and compacts the idempotency family now, dropping expired answers (they are
  // otherwise dropped as compactions happen; maintenance and tests).
  Status CompactIdempotency();

  // Visits every record in (workflow id, sequence) order.
  Status ForEachRecord(const std::function<Status(const std::string& workflow_id, uint64_t seq,
                                                  const v1::WorkflowLogRecord&)>& fn) const;
  // Visits one workflow's records in sequence order (a bounded range scan; the log's
  // memtable is a skip list, so the scan seeks instead of sorting it).
  Status ForEachRecordOf(
      const std::string& workflow_id,
      const std::function<Status(uint64_t seq, const v1::WorkflowLogRecord&)>& fn) const;
  // The durable snapshot of a workflow, if any (nullopt also while it is still queued).
  Result<std::optional<std::string>> GetSnapshot(const std::string& workflow_id) const;
  struct Idempotent {
    v1::IdempotencyEntry entry;
    bool pending = false;  // queued, not yet durable: Barrier() before answering with it
  };
  Result<std::optional<Idempotent>> GetIdempotent(const std::string& tenant,
                                                  const std::string& key) const;

  // Upper bounds (ms) of the latency histograms below; the last bucket counts the rest.
  static constexpr std::array<double, 8> kBucketsMs = {0.5, 1, 2, 5, 10, 25, 50, 100};
  struct Stats {
    uint64_t batches = 0, records = 0, max_batch = 0;
    uint64_t delayed = 0;                             // commits that waited for the commit delay
    double write_seconds = 0, max_write_seconds = 0;  // WriteBatch + WAL fsync
    size_t queued = 0;
    // Group commits by their WriteBatch + WAL fsync time, and records by the time from
    // Enqueue() to durable (queue wait + commit): where the answer path's tail is spent.
    std::array<uint64_t, kBucketsMs.size() + 1> commit_ms{}, record_ms{};
    double record_seconds = 0;  // the sum of the records' enqueue-to-durable times
  };
  Stats stats() const;

 private:
  struct Op {
    std::string key, value;  // empty key: a barrier
    uint64_t erase = 0;      // > 0: delete records 0..erase-1 of workflow `key`
    bool snapshot = false;   // `value` is workflow `key`'s snapshot
    bool meta = false;       // `value` is service metadata `key` ("meta/<key>")
    // Document `key`: put (value, stored time, index entry), erase (value and time, and
    // `doc_index` when set), time (stored time and index entry only), unindex (delete the
    // index entry `doc_index` only).
    enum class DocOp : uint8_t { kNone, kPut, kErase, kTime, kUnindex } doc = DocOp::kNone;
    int64_t doc_ms = 0;                // kPut, kTime: the stored time
    std::string doc_index;             // kErase, kUnindex: an expiry index key ("doci/...")
    std::string idem_key, idem_value;  // empty idem_key: no idempotency answer
    Done done;
    std::chrono::steady_clock::time_point enqueued;
  };
  Store() = default;
  // Queues `op` for the next group commit, stamped now (refused, returning why, once the
  // store failed or is shutting down).
  Status Push(Op op);
  void Commit();  // the committer thread
  Status WriteBatch(const std::vector<Op>& ops);
  // Adds a document op to `batch` (store_documents.cc).
  Status AddDocumentOp(const Op& op, rocksdb::WriteBatch* batch) const;
  // Queues `op` with mu_ held (Push's body).
  Status PushLocked(Op op) REQUIRES(mu_);
  // A RocksDB status as ours: Unavailable naming `what`.
  static Status FromRocks(const rocksdb::Status& s, const std::string& what);

  // Declared before db_: destroyed after the DB that uses it.
  std::unique_ptr<rocksdb::CompactionFilter> idem_filter_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* log_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* idem_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
  bool sync_ = true;
  std::chrono::microseconds commit_delay_{0};

  mutable Mutex mu_;  // guards everything below
  CondVar wake_;
  std::vector<Op> queue_ GUARDED_BY(mu_);
  // Queued idempotency answers; queued document puts by key; expiry index entries whose
  // deletion is queued.
  std::unordered_map<std::string, std::string> pending_idem_ GUARDED_BY(mu_);
  std::unordered_map<std::string, int> pending_docs_ GUARDED_BY(mu_);
  std::unordered_set<std::string> pending_unindex_ GUARDED_BY(mu_);
  Status failed_ GUARDED_BY(mu_);  // set for good after a failed write
  bool stopping_ GUARDED_BY(mu_) = false;
  bool committing_ GUARDED_BY(mu_) = false;
  Stats stats_ GUARDED_BY(mu_);
  std::thread committer_;
};

}  // namespace switchyard::service
