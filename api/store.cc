#include "api/store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <filesystem>

#include "base/ids.h"

namespace switchyard::api {
namespace {

std::string LogKey(const std::string& id, uint64_t seq) { return id + "/" + HexId(seq); }
std::string IdemKey(const std::string& tenant, const std::string& key) {
  return tenant + std::string(1, '\0') + key;
}

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  return Status::Unavailable(what + ": " + s.ToString(), ErrorScope::kProcess);
}

}  // namespace

Store::~Store() {
  if (db_) {
    for (auto* cf : {log_cf_, idem_cf_, default_cf_}) {
      if (cf) db_->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
    }
    db_->Close().PermitUncheckedError();
  }
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& dir, bool sync) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Unavailable("cannot create data dir '" + dir + "': " + ec.message());
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  // Small records, many concurrent writers: let writes from several threads share one
  // WAL fsync (group commit) and pipeline memtable inserts behind the WAL write.
  db_opts.enable_pipelined_write = true;
  rocksdb::ColumnFamilyOptions cf_opts;
  cf_opts.write_buffer_size = 16 << 20;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {{rocksdb::kDefaultColumnFamilyName, cf_opts},
                                                      {"workflow_log", cf_opts},
                                                      {"idempotency", cf_opts}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(db_opts, dir, cfs, &handles, &raw);
  if (!s.ok()) return FromRocks(s, "cannot open the state store in '" + dir + "'");
  std::unique_ptr<Store> store(new Store());
  store->db_.reset(raw);
  store->default_cf_ = handles[0];
  store->log_cf_ = handles[1];
  store->idem_cf_ = handles[2];
  store->sync_ = sync;
  return store;
}

Status Store::Append(const std::string& workflow_id, uint64_t seq, const v1::WorkflowLogRecord& rec,
                     const std::string& tenant, const std::string& idem_key,
                     const v1::IdempotencyEntry* idem) {
  rocksdb::WriteBatch batch;
  auto s = batch.Put(log_cf_, LogKey(workflow_id, seq), rec.SerializeAsString());
  if (s.ok() && idem) s = batch.Put(idem_cf_, IdemKey(tenant, idem_key), idem->SerializeAsString());
  if (!s.ok()) return FromRocks(s, "cannot build write batch");
  rocksdb::WriteOptions wo;
  wo.sync = sync_;
  return FromRocks(db_->Write(wo, &batch), "cannot persist workflow " + workflow_id);
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

Result<std::optional<v1::IdempotencyEntry>> Store::GetIdempotent(const std::string& tenant,
                                                                 const std::string& key) const {
  std::string value;
  auto s = db_->Get(rocksdb::ReadOptions(), idem_cf_, IdemKey(tenant, key), &value);
  if (s.IsNotFound()) return std::optional<v1::IdempotencyEntry>();
  if (!s.ok()) return FromRocks(s, "idempotency lookup");
  v1::IdempotencyEntry e;
  if (!e.ParseFromString(value)) return Status::DataLoss("unreadable idempotency entry");
  return std::optional<v1::IdempotencyEntry>(std::move(e));
}

}  // namespace switchyard::api
