// Store's documents (see store.h "Documents"): values, their stored times and the expiry
// index ordered by those times, all in the default column family.
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <cstdio>

#include "service/store.h"

namespace switchyard::service {
namespace {

constexpr char kDocPrefix[] = "doc/", kTimePrefix[] = "doct/", kIndexPrefix[] = "doci/";
constexpr size_t kMsDigits = 16;

std::string DocKey(const std::string& key) { return kDocPrefix + key; }
std::string TimeKey(const std::string& key) { return kTimePrefix + key; }
std::string Hex(int64_t ms) {
  char buf[kMsDigits + 1];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(ms));
  return buf;
}
// Index keys sort by time: fixed-width hex digits, then the document's key.
std::string IndexKey(int64_t ms, const std::string& key) { return kIndexPrefix + Hex(ms) + key; }

// 16 hex digits as ms; nullopt if they are not.
std::optional<int64_t> ParseMs(std::string_view hex) {
  if (hex.size() != kMsDigits) return std::nullopt;
  uint64_t v = 0;
  for (char c : hex) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return static_cast<int64_t>(v);
}

}  // namespace

Status Store::EnqueueDocument(const std::string& key, std::string value, int64_t time_ms,
                              Done done) {
  if (key.empty()) return Status::InvalidArgument("document key is empty");
  if (time_ms < 0) return Status::InvalidArgument("document " + key + ": stored time is negative");
  Op op;
  op.key = key;
  op.value = std::move(value);
  op.doc = Op::DocOp::kPut;
  op.doc_ms = time_ms;
  op.done = std::move(done);
  return Push(std::move(op));
}

Status Store::EnqueueDocumentErase(const std::string& key, Done done) {
  if (key.empty()) return Status::InvalidArgument("document key is empty");
  Op op;
  op.key = key;
  op.doc = Op::DocOp::kErase;
  op.done = std::move(done);
  return Push(std::move(op));
}

Status Store::AddDocumentOp(const Op& op, rocksdb::WriteBatch* batch) const {
  rocksdb::Status s;
  switch (op.doc) {
    case Op::DocOp::kPut:
      s = batch->Put(default_cf_, DocKey(op.key), op.value);
      [[fallthrough]];
    case Op::DocOp::kTime:
      if (s.ok()) s = batch->Put(default_cf_, TimeKey(op.key), Hex(op.doc_ms));
      if (s.ok()) s = batch->Put(default_cf_, IndexKey(op.doc_ms, op.key), "");
      break;
    case Op::DocOp::kErase:
      s = batch->Delete(default_cf_, DocKey(op.key));
      if (s.ok()) s = batch->Delete(default_cf_, TimeKey(op.key));
      [[fallthrough]];
    case Op::DocOp::kUnindex:
      if (s.ok() && !op.doc_index.empty()) s = batch->Delete(default_cf_, op.doc_index);
      break;
    case Op::DocOp::kNone:
      break;
  }
  return FromRocks(s, "cannot build write batch");
}

Result<std::optional<Store::Document>> Store::GetDocument(const std::string& key) const {
  // One consistent read of the value and its time.
  const std::string doc_key = DocKey(key), time_key = TimeKey(key);
  std::vector<rocksdb::ColumnFamilyHandle*> cfs = {default_cf_, default_cf_};
  std::vector<rocksdb::Slice> keys = {doc_key, time_key};
  std::vector<std::string> values;
  std::vector<rocksdb::Status> st = db_->MultiGet(rocksdb::ReadOptions(), cfs, keys, &values);
  if (st[0].IsNotFound()) return std::optional<Document>();
  if (!st[0].ok()) return FromRocks(st[0], "document lookup of " + key);
  if (!st[1].ok() && !st[1].IsNotFound()) return FromRocks(st[1], "document time of " + key);
  Document d{std::move(values[0]), std::nullopt};
  if (st[1].ok()) {
    std::optional<int64_t> ms = ParseMs(values[1]);
    if (!ms) return Status::DataLoss("state store: malformed time of document " + key);
    d.time_ms = *ms;
  }
  return std::optional<Document>(std::move(d));
}

Status Store::ForEachDocument(
    const std::string& prefix,
    const std::function<Status(const std::string& key, const std::string& value)>& fn) const {
  const std::string from = DocKey(prefix);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), default_cf_));
  for (it->Seek(from); it->Valid() && it->key().starts_with(from); it->Next()) {
    std::string key = it->key().ToString().substr(sizeof(kDocPrefix) - 1);
    SY_RETURN_IF_ERROR(fn(key, it->value().ToString()));
  }
  return FromRocks(it->status(), "document scan of " + prefix);
}

Result<Store::DocumentSweep> Store::EraseDocumentsBefore(int64_t cutoff_ms, size_t limit) {
  struct Due {
    std::string index_key, key;
    int64_t ms;
  };
  std::vector<Due> due;
  DocumentSweep out;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), default_cf_));
    const size_t head = sizeof(kIndexPrefix) - 1;
    for (it->Seek(kIndexPrefix); it->Valid() && it->key().starts_with(kIndexPrefix); it->Next()) {
      std::string index_key = it->key().ToString();
      std::optional<int64_t> ms = ParseMs(std::string_view(index_key).substr(head, kMsDigits));
      if (!ms || index_key.size() <= head + kMsDigits)
        return Status::DataLoss("state store: malformed document index key '" + index_key + "'");
      if (*ms >= cutoff_ms) break;  // the rest is newer
      if (due.size() == limit) {
        out.more = true;
        break;
      }
      due.push_back({index_key, index_key.substr(head + kMsDigits), *ms});
    }
    SY_RETURN_IF_ERROR(FromRocks(it->status(), "document index scan"));
  }
  for (Due& d : due) {
    // Under mu_: a put of this key is either still queued (counted in pending_docs_: left
    // for a later sweep) or already applied, so the time read here is the document's latest.
    // An entry an earlier sweep queued for deletion is not queued twice.
    MutexLock lock(&mu_);
    if (pending_docs_.count(d.key) || pending_unindex_.count(d.index_key)) continue;
    std::string time;
    auto s = db_->Get(rocksdb::ReadOptions(), default_cf_, TimeKey(d.key), &time);
    if (!s.ok() && !s.IsNotFound()) return FromRocks(s, "document time of " + d.key);
    Op op;
    op.key = d.key;
    op.doc_index = std::move(d.index_key);
    const bool current = s.ok() && ParseMs(time) == d.ms;  // else replaced or erased since
    op.doc = current ? Op::DocOp::kErase : Op::DocOp::kUnindex;
    SY_RETURN_IF_ERROR(PushLocked(std::move(op)));
    out.erased += current ? 1 : 0;
  }
  return out;
}

Result<int64_t> Store::TimeUntimedDocuments(int64_t time_ms) {
  if (time_ms < 0) return Status::InvalidArgument("documents' stored time is negative");
  // Documents and times are both in key order: one pass over each, side by side.
  std::unique_ptr<rocksdb::Iterator> docs(db_->NewIterator(rocksdb::ReadOptions(), default_cf_));
  std::unique_ptr<rocksdb::Iterator> times(db_->NewIterator(rocksdb::ReadOptions(), default_cf_));
  const size_t doc_head = sizeof(kDocPrefix) - 1, time_head = sizeof(kTimePrefix) - 1;
  times->Seek(kTimePrefix);
  int64_t timed = 0;
  for (docs->Seek(kDocPrefix); docs->Valid() && docs->key().starts_with(kDocPrefix); docs->Next()) {
    rocksdb::Slice key(docs->key().data() + doc_head, docs->key().size() - doc_head);
    while (times->Valid() && times->key().starts_with(kTimePrefix) &&
           rocksdb::Slice(times->key().data() + time_head, times->key().size() - time_head)
                   .compare(key) < 0)
      times->Next();
    if (times->Valid() && times->key().starts_with(kTimePrefix) &&
        rocksdb::Slice(times->key().data() + time_head, times->key().size() - time_head) == key)
      continue;
    Op op;
    op.key = key.ToString();
    op.doc = Op::DocOp::kTime;
    op.doc_ms = time_ms;
    SY_RETURN_IF_ERROR(Push(std::move(op)));
    ++timed;
  }
  SY_RETURN_IF_ERROR(FromRocks(docs->status(), "document scan"));
  SY_RETURN_IF_ERROR(FromRocks(times->status(), "document time scan"));
  return timed;
}

}  // namespace switchyard::service
