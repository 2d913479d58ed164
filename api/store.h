// Store: the durable state of the service in RocksDB (DESIGN.md invariant 10).
//
// Two column families: "workflow_log" holds each workflow's history as ordered records
// (key "<workflow id>/<16-hex sequence>"), "idempotency" holds first answers by
// "<tenant>\0<Idempotency-Key>". A record and its idempotency answer are written in one
// WriteBatch, so after a crash either both exist or neither does. With sync on (the
// default) the WAL is fsynced before Append returns: whatever the API acknowledged
// survives kill -9. Concurrent appends are group-committed by RocksDB.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "proto/switchyard/v1/api.pb.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
}  // namespace rocksdb

namespace switchyard::api {

class Store {
 public:
  static Result<std::unique_ptr<Store>> Open(const std::string& dir, bool sync);
  ~Store();

  // Appends record `seq` of a workflow, with an optional idempotency answer, atomically.
  Status Append(const std::string& workflow_id, uint64_t seq, const v1::WorkflowLogRecord& rec,
                const std::string& tenant = "", const std::string& idem_key = "",
                const v1::IdempotencyEntry* idem = nullptr);
  // Visits every record in (workflow id, sequence) order.
  Status ForEachRecord(const std::function<Status(const std::string& workflow_id, uint64_t seq,
                                                  const v1::WorkflowLogRecord&)>& fn) const;
  Result<std::optional<v1::IdempotencyEntry>> GetIdempotent(const std::string& tenant,
                                                            const std::string& key) const;

 private:
  Store() = default;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* log_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* idem_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
  bool sync_ = true;
};

}  // namespace switchyard::api
