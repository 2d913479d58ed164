#include "service/store.h"

#include <rocksdb/compaction_filter.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/write_batch.h>

#include <chrono>
#include <filesystem>
#include <future>

#include "base/completion_batch.h"
#include "base/ids.h"
#include "base/mutex.h"
#include "base/thread_name.h"

namespace switchyard::service {
namespace {

// The Stats histogram bucket of a latency.
size_t Bucket(std::chrono::duration<double, std::milli> d) {
  size_t i = 0;
  while (i < Store::kBucketsMs.size() && d.count() > Store::kBucketsMs[i]) ++i;
  return i;
}

std::string LogKey(const std::string& id, uint64_t seq) { return id + "/" + HexId(seq); }
std::string SnapshotKey(const std::string& id) { return "archive/" + id; }
std::string MetaKey(const std::string& name) { return "meta/" + name; }
std::string IdemKey(const std::string& tenant, const std::string& key) {
  std::string k;
  k.reserve(tenant.size() + 1 + key.size());
  k.append(tenant).push_back('\0');
  return k.append(key);
}

// The workflow part of a log key ("<workflow id>" of "<workflow id>/<16-hex sequence>"): the
// memtable keeps one insert hint per workflow, and a workflow's records arrive in sequence
// order, so each insert lands right after the previous one of its workflow.
class LogKeyWorkflow : public rocksdb::SliceTransform {
 public:
  static constexpr size_t kSuffix = 17;  // "/" and 16 hex digits
  const char* Name() const override { return "switchyard.LogKeyWorkflow"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), key.size() - kSuffix);
  }
  bool InDomain(const rocksdb::Slice& key) const override {
    return key.size() > kSuffix && key[key.size() - kSuffix] == '/';
  }
};

// Drops idempotency answers stored longer ago than the retention (wall clock).
class IdempotencyExpiry final : public rocksdb::CompactionFilter {
 public:
  explicit IdempotencyExpiry(int64_t retention_s) : retention_ms_(retention_s * 1000) {}
  bool Filter(int, const rocksdb::Slice&, const rocksdb::Slice& value, std::string*,
              bool*) const override {
    v1::IdempotencyEntry e;
    if (!e.ParseFromArray(value.data(), static_cast<int>(value.size())) || e.time_ms() <= 0)
      return false;  // unreadable or from before retention: kept
    int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    return e.time_ms() + retention_ms_ < now_ms;
  }
  const char* Name() const override { return "switchyard.IdempotencyExpiry"; }

 private:
  int64_t retention_ms_;
};

}  // namespace

Status Store::FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  return Status::Unavailable(what + ": " + s.ToString(), ErrorScope::kProcess);
}

Store::~Store() {
  Shutdown();
  if (db_) {
    for (auto* cf : {log_cf_, idem_cf_, default_cf_}) {
      if (cf) db_->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
    }
    db_->Close().PermitUncheckedError();
  }
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& dir, bool sync,
                                           int64_t idem_retention_s,
                                           std::chrono::microseconds commit_delay) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Unavailable("cannot create data dir '" + dir + "': " + ec.message());
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  // One writer (the committer) writes whole batches: RocksDB's own writer groups and
  // pipelined memtable inserts only add thread hand-offs here.
  db_opts.enable_pipelined_write = false;
  // Insert hints (the log family) work only with one memtable writer at a time; the
  // committer is the only writer anyway.
  db_opts.allow_concurrent_memtable_write = false;
  // Background work must not take the CPU from acknowledged writes: on a small machine a
  // memtable flush (compressing and writing ~16 MiB) competing with the I/O, committer and
  // scheduler threads delayed answers by tens of milliseconds. Flushes and compactions run
  // at the lowest CPU priority (nice 19; they use idle time, which the service leaves even
  // at its sustained rate), with room for 4 memtables so a slow flush does not stall
  // writes, and SST files are synced every MiB instead of all at once at the end. This
  // applies to RocksDB's process-wide thread pools, so the kv_tiers disk tier's flushes
  // run at low priority too.
  rocksdb::Env::Default()
      ->LowerThreadPoolCPUPriority(rocksdb::Env::Priority::HIGH, rocksdb::CpuPriority::kLow)
      .PermitUncheckedError();
  rocksdb::Env::Default()
      ->LowerThreadPoolCPUPriority(rocksdb::Env::Priority::LOW, rocksdb::CpuPriority::kLow)
      .PermitUncheckedError();
  db_opts.bytes_per_sync = 1 << 20;
  rocksdb::ColumnFamilyOptions cf_opts;
  cf_opts.write_buffer_size = 16 << 20;
  cf_opts.max_write_buffer_number = 4;
  // The log is written in steady state and read only at recovery (and when a failed write
  // forces a rebuild). Its memtable is the skip list with one insert hint per workflow: a
  // workflow's records arrive in sequence order, so an insert starts from where that
  // workflow's previous one landed instead of searching from the top. The list is sorted
  // as it fills, so a flush has nothing to sort, and a scan of one workflow seeks. The
  // vector memtable used before took a cheaper insert (~0.6 us less per record) but sorted
  // ~180,000 records at each flush (160-280 ms of CPU in one burst on 2 vCPUs) and copied
  // and sorted itself for every scan (~40 ms with a full memtable).
  rocksdb::ColumnFamilyOptions log_opts = cf_opts;
  log_opts.memtable_insert_with_hint_prefix_extractor = std::make_shared<LogKeyWorkflow>();
  // Server-made workflow ids are random, so every flushed file spans the whole key space
  // and each L0->L1 compaction rewrites all of L1 with the L0 files. Compacting after 8
  // files instead of RocksDB's 4 rewrites L1 half as often (60 s at 25,000 events/s: one
  // compaction, 0.45-0.50 s of CPU and 22 MB written, against two, 0.69-0.71 s and 33 MB).
  // Only recovery and replays read the log; they merge up to 8 more files.
  log_opts.level0_file_num_compaction_trigger = 8;
  rocksdb::ColumnFamilyOptions idem_opts = cf_opts;
  std::unique_ptr<rocksdb::CompactionFilter> idem_filter;
  if (idem_retention_s > 0) {
    idem_filter = std::make_unique<IdempotencyExpiry>(idem_retention_s);
    idem_opts.compaction_filter = idem_filter.get();
    idem_opts.ttl = static_cast<uint64_t>(idem_retention_s);  // old files get compacted
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {{rocksdb::kDefaultColumnFamilyName, cf_opts},
                                                      {"workflow_log", log_opts},
                                                      {"idempotency", idem_opts}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(db_opts, dir, cfs, &handles, &raw);
  if (!s.ok()) return FromRocks(s, "cannot open the state store in '" + dir + "'");
  std::unique_ptr<Store> store(new Store());
  store->idem_filter_ = std::move(idem_filter);
  store->db_.reset(raw);
  store->default_cf_ = handles[0];
  store->log_cf_ = handles[1];
  store->idem_cf_ = handles[2];
  store->sync_ = sync;
  store->commit_delay_ = commit_delay;
  Store* self = store.get();
  store->committer_ = std::thread([self] {
    SetThreadName("sy-store");
    self->Commit();
  });
  return store;
}

Status Store::Enqueue(const std::string& workflow_id, uint64_t seq,
                      const v1::WorkflowLogRecord& rec, Done done, const std::string& tenant,
                      const std::string& idem_key, const v1::IdempotencyEntry* idem) {
  Op op;
  op.key = LogKey(workflow_id, seq);
  rec.SerializeToString(&op.value);  // outside the lock: callers serialise in parallel
  if (idem) {
    op.idem_key = IdemKey(tenant, idem_key);
    idem->SerializeToString(&op.idem_value);
  }
  op.done = std::move(done);
  return Push(std::move(op));
}

Status Store::Push(Op op) {
  MutexLock lock(&mu_);
  return PushLocked(std::move(op));
}

Status Store::PushLocked(Op op) {
  op.enqueued = std::chrono::steady_clock::now();
  if (!failed_.ok()) return failed_;
  if (stopping_) return Status::Unavailable("state store is shutting down");
  if (!op.idem_key.empty()) pending_idem_[op.idem_key] = op.idem_value;
  if (op.doc == Op::DocOp::kPut) ++pending_docs_[op.key];
  if (!op.doc_index.empty()) pending_unindex_.insert(op.doc_index);
  queue_.push_back(std::move(op));
  if (queue_.size() == 1 && !committing_) wake_.Signal();
  return Status::OK();
}

Status Store::EnqueueErase(const std::string& workflow_id, uint64_t records) {
  if (records == 0) return Status::OK();
  Op op;
  op.key = workflow_id;
  op.erase = records;
  return Push(std::move(op));
}

Status Store::EnqueueSnapshot(const std::string& workflow_id, std::string snapshot) {
  Op op;
  op.key = workflow_id;
  op.value = std::move(snapshot);
  op.snapshot = true;
  return Push(std::move(op));
}

Status Store::EnqueueMeta(const std::string& name, std::string value, Done done) {
  if (name.empty()) return Status::InvalidArgument("metadata name is empty");
  Op op;
  op.key = name;
  op.value = std::move(value);
  op.meta = true;
  op.done = std::move(done);
  return Push(std::move(op));
}

Result<std::optional<std::string>> Store::GetMeta(const std::string& name) const {
  std::string value;
  auto s = db_->Get(rocksdb::ReadOptions(), default_cf_, MetaKey(name), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, "metadata lookup of " + name);
  return std::optional<std::string>(std::move(value));
}

void Store::Barrier(Done done) {
  Status refused;
  {
    MutexLock lock(&mu_);
    if (!failed_.ok()) {
      refused = failed_;
    } else if (stopping_) {
      refused = Status::Unavailable("state store is shutting down");
    } else if (queue_.empty() && !committing_) {
      refused = Status::OK();  // nothing before it: complete inline
    } else {
      Op op;
      op.done = std::move(done);
      queue_.push_back(std::move(op));
      if (queue_.size() == 1 && !committing_) wake_.Signal();
      return;
    }
  }
  done(refused);
}

Status Store::Append(const std::string& workflow_id, uint64_t seq, const v1::WorkflowLogRecord& rec,
                     const std::string& tenant, const std::string& idem_key,
                     const v1::IdempotencyEntry* idem) {
  std::promise<Status> p;
  SY_RETURN_IF_ERROR(Enqueue(
      workflow_id, seq, rec, [&p](const Status& s) { p.set_value(s); }, tenant, idem_key, idem));
  return p.get_future().get();
}

Status Store::CompactIdempotency() {
  SY_RETURN_IF_ERROR(FromRocks(db_->Flush(rocksdb::FlushOptions(), idem_cf_), "idempotency flush"));
  rocksdb::CompactRangeOptions o;
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  return FromRocks(db_->CompactRange(o, idem_cf_, nullptr, nullptr), "idempotency compaction");
}

Status Store::Flush() {
  std::promise<Status> p;
  Barrier([&p](const Status& s) { p.set_value(s); });
  return p.get_future().get();
}

void Store::Shutdown() {
  {
    MutexLock lock(&mu_);
    if (stopping_ && !committer_.joinable()) return;
    stopping_ = true;
  }
  wake_.Signal();
  if (committer_.joinable()) committer_.join();
}

Status Store::WriteBatch(const std::vector<Op>& ops) {
  rocksdb::WriteBatch batch;
  for (const Op& op : ops) {
    if (op.key.empty()) continue;
    if (op.erase > 0) {
      for (uint64_t seq = 0; seq < op.erase; ++seq) {
        auto s = batch.Delete(log_cf_, LogKey(op.key, seq));
        if (!s.ok()) return FromRocks(s, "cannot build write batch");
      }
      auto s = batch.Delete(default_cf_, SnapshotKey(op.key));
      if (!s.ok()) return FromRocks(s, "cannot build write batch");
      continue;
    }
    if (op.doc != Op::DocOp::kNone) {
      SY_RETURN_IF_ERROR(AddDocumentOp(op, &batch));
      continue;
    }
    if (op.snapshot || op.meta) {
      auto s = batch.Put(default_cf_, op.meta ? MetaKey(op.key) : SnapshotKey(op.key), op.value);
      if (!s.ok()) return FromRocks(s, "cannot build write batch");
      continue;
    }
    auto s = batch.Put(log_cf_, op.key, op.value);
    if (s.ok() && !op.idem_key.empty()) s = batch.Put(idem_cf_, op.idem_key, op.idem_value);
    if (!s.ok()) return FromRocks(s, "cannot build write batch");
  }
  if (batch.Count() == 0) return Status::OK();
  rocksdb::WriteOptions wo;
  wo.sync = sync_;
  return FromRocks(db_->Write(wo, &batch), "cannot persist workflow records");
}

void Store::Commit() {
  std::vector<Op> ops;
  std::chrono::steady_clock::time_point last_start;
  size_t last_ops = 0;  // in the previous commit (records, erasures, barriers)
  for (;;) {
    {
      MutexLock lock(&mu_);
      committing_ = false;
      while (queue_.empty() && !stopping_) wake_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, nothing left
      // Records queued while the commit is delayed need no wake-up (committing_).
      committing_ = true;
      if (last_ops >= kDelaySiblings && commit_delay_.count() > 0 &&
          std::chrono::steady_clock::now() < last_start + commit_delay_) {
        ++stats_.delayed;
        while (!stopping_ && wake_.WaitUntil(&mu_, last_start + commit_delay_)) {
        }
      }
      ops.swap(queue_);
    }
    auto t0 = std::chrono::steady_clock::now();
    last_start = t0;
    Status st = WriteBatch(ops);
    auto t1 = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(t1 - t0).count();
    size_t records = 0;
    {
      MutexLock lock(&mu_);
      if (!st.ok() && failed_.ok()) failed_ = st;
      if (!failed_.ok()) st = failed_;  // a batch after a failure fails too
      for (const Op& op : ops) {
        if (!op.key.empty() && op.erase == 0 && !op.snapshot && !op.meta &&
            op.doc == Op::DocOp::kNone) {
          ++records;
          ++stats_.record_ms[Bucket(std::chrono::duration<double, std::milli>(t1 - op.enqueued))];
          stats_.record_seconds += std::chrono::duration<double>(t1 - op.enqueued).count();
        }
        if (!op.idem_key.empty()) pending_idem_.erase(op.idem_key);
        if (op.doc == Op::DocOp::kPut) {  // applied (or failed): no longer queued
          auto it = pending_docs_.find(op.key);
          if (it != pending_docs_.end() && --it->second == 0) pending_docs_.erase(it);
        }
        if (!op.doc_index.empty()) pending_unindex_.erase(op.doc_index);
      }
      ++stats_.commit_ms[Bucket(std::chrono::duration<double, std::milli>(t1 - t0))];
      ++stats_.batches;
      stats_.records += records;
      stats_.max_batch = std::max<uint64_t>(stats_.max_batch, records);
      last_ops = ops.size();
      stats_.write_seconds += secs;
      stats_.max_write_seconds = std::max(stats_.max_write_seconds, secs);
    }
    // In queue order: a workflow's records complete in sequence order. The batch hands
    // the answers to each I/O thread in one go (base/completion_batch.h).
    {
      CompletionBatch batch;
      for (Op& op : ops)
        if (op.done) op.done(st);
    }
    ops.clear();
  }
}

Store::Stats Store::stats() const {
  MutexLock lock(&mu_);
  Stats s = stats_;
  s.queued = queue_.size();
  return s;
}

Status Store::ForEachRecord(const std::function<Status(const std::string&, uint64_t,
                                                       const v1::WorkflowLogRecord&)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), log_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string key = it->key().ToString();
    size_t slash = key.rfind('/');
    if (slash == std::string::npos || key.size() - slash - 1 != 16) {
      return Status::DataLoss("state store: malformed log key '" + key + "'");
    }
    uint64_t seq = std::stoull(key.substr(slash + 1), nullptr, 16);
    v1::WorkflowLogRecord rec;
    if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return Status::DataLoss("state store: unreadable record '" + key + "'");
    }
    SY_RETURN_IF_ERROR(fn(key.substr(0, slash), seq, rec));
  }
  return FromRocks(it->status(), "state store scan");
}

Status Store::ForEachRecordOf(
    const std::string& workflow_id,
    const std::function<Status(uint64_t, const v1::WorkflowLogRecord&)>& fn) const {
  // Keys are "<id>/<16 hex>": the range ["<id>/", "<id>0") holds exactly this id's records
  // ('0' follows '/'), whatever other ids share its prefix.
  std::string lower = workflow_id + "/", upper = workflow_id + "0";
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, log_cf_));
  for (it->Seek(lower); it->Valid(); it->Next()) {
    rocksdb::Slice key = it->key();
    if (key.size() != lower.size() + 16) {
      return Status::DataLoss("state store: malformed log key '" + key.ToString() + "'");
    }
    uint64_t seq = std::stoull(key.ToString().substr(lower.size()), nullptr, 16);
    v1::WorkflowLogRecord rec;
    if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return Status::DataLoss("state store: unreadable record '" + key.ToString() + "'");
    }
    SY_RETURN_IF_ERROR(fn(seq, rec));
  }
  return FromRocks(it->status(), "state store read of " + workflow_id);
}

Result<std::optional<std::string>> Store::GetSnapshot(const std::string& workflow_id) const {
  std::string value;
  auto s = db_->Get(rocksdb::ReadOptions(), default_cf_, SnapshotKey(workflow_id), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, "snapshot lookup of " + workflow_id);
  return std::optional<std::string>(std::move(value));
}

Result<std::optional<Store::Idempotent>> Store::GetIdempotent(const std::string& tenant,
                                                              const std::string& key) const {
  std::string k = IdemKey(tenant, key);
  std::string value;
  bool pending = false;
  {
    MutexLock lock(&mu_);
    auto it = pending_idem_.find(k);
    if (it != pending_idem_.end()) {
      value = it->second;
      pending = true;
    }
  }
  if (!pending) {
    auto s = db_->Get(rocksdb::ReadOptions(), idem_cf_, k, &value);
    if (s.IsNotFound()) return std::optional<Idempotent>();
    if (!s.ok()) return FromRocks(s, "idempotency lookup");
  }
  Idempotent e;
  e.pending = pending;
  if (!e.entry.ParseFromString(value)) return Status::DataLoss("unreadable idempotency entry");
  return std::optional<Idempotent>(std::move(e));
}

}  // namespace switchyard::service
