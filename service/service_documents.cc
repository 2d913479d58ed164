// Service's documents (see service.h "Documents"): values the fronts keep per tenant, under
// the store key "<kind>/<tenant>\0<id>" (a tenant name and an id hold any byte but NUL),
// and their retention.
#include <vector>

#include "base/logging.h"
#include "service/service.h"

namespace switchyard::service {

namespace {

constexpr char kTimedMeta[] = "documents_timed";  // set once every document has a time
constexpr int64_t kSweepEveryMs = 1000;

Result<std::string> DocumentKey(const std::string& tenant, const std::string& kind,
                                const std::string& id) {
  if (kind.empty() || kind.find('/') != std::string::npos)
    return Status::InvalidArgument("document kind '" + kind + "' is empty or holds '/'");
  if (id.empty()) return Status::InvalidArgument(kind + " id is empty");
  if (id.find('\0') != std::string::npos || tenant.find('\0') != std::string::npos)
    return Status::InvalidArgument(kind + " id or tenant holds a NUL byte");
  return kind + "/" + tenant + std::string(1, '\0') + id;
}

}  // namespace

void Service::PutDocumentAsync(const std::string& tenant, const std::string& kind,
                               const std::string& id, std::string value, Done done) {
  Result<std::string> key = DocumentKey(tenant, kind, id);
  if (!key.ok()) return done(key.status());
  Status st = store_->EnqueueDocument(*key, std::move(value), clock_->Now().millis(), done);
  if (!st.ok()) return done(st);
  MaybeSweepDocuments();
}

void Service::DeleteDocumentAsync(const std::string& tenant, const std::string& kind,
                                  const std::string& id, Done done) {
  Result<std::string> key = DocumentKey(tenant, kind, id);
  if (!key.ok()) return done(key.status());
  Status st = store_->EnqueueDocumentErase(*key, done);
  if (!st.ok()) done(st);
}

Result<std::optional<std::string>> Service::GetDocument(const std::string& tenant,
                                                        const std::string& kind,
                                                        const std::string& id) const {
  SY_ASSIGN_OR_RETURN(std::string key, DocumentKey(tenant, kind, id));
  SY_ASSIGN_OR_RETURN(std::optional<Store::Document> doc, store_->GetDocument(key));
  if (!doc) return std::optional<std::string>();
  const int64_t retention_ms = options_.document_retention_s * 1000;
  if (retention_ms > 0 && doc->time_ms && *doc->time_ms + retention_ms < clock_->Now().millis())
    return std::optional<std::string>();  // expired: the sweep deletes it
  return std::optional<std::string>(std::move(doc->value));
}

Result<int64_t> Service::EraseDocuments(
    const std::string& kind, const std::function<bool(const std::string& value)>& expired) {
  std::vector<std::string> keys;
  SY_RETURN_IF_ERROR(
      store_->ForEachDocument(kind + "/", [&](const std::string& key, const std::string& value) {
        if (expired(value)) keys.push_back(key);
        return Status::OK();
      }));
  for (const std::string& key : keys) SY_RETURN_IF_ERROR(store_->EnqueueDocumentErase(key));
  return static_cast<int64_t>(keys.size());
}

Result<int64_t> Service::SweepDocuments(size_t limit) {
  if (options_.document_retention_s <= 0) return int64_t{0};
  const int64_t cutoff = clock_->Now().millis() - options_.document_retention_s * 1000;
  SY_ASSIGN_OR_RETURN(Store::DocumentSweep swept, store_->EraseDocumentsBefore(cutoff, limit));
  if (swept.erased > 0) {
    documents_expired_.fetch_add(static_cast<uint64_t>(swept.erased), std::memory_order_relaxed);
    Log(LogLevel::kInfo, "retention: expired documents deleted",
        LogKeys().With("documents", std::to_string(swept.erased)));
  }
  return swept.erased;
}

void Service::MaybeSweepDocuments() {
  if (options_.document_retention_s <= 0) return;
  const int64_t now = clock_->Now().millis();
  int64_t last = last_document_sweep_ms_.load(std::memory_order_relaxed);
  if (now - last < kSweepEveryMs) return;
  // One caller sweeps; the others go on.
  if (!last_document_sweep_ms_.compare_exchange_strong(last, now)) return;
  Result<int64_t> swept = SweepDocuments();
  if (!swept.ok()) {
    Log(LogLevel::kError, "retention: cannot delete expired documents",
        LogKeys().With("error", swept.status().ToString()));
  }
}

Status Service::OpenDocuments() {
  SY_ASSIGN_OR_RETURN(std::optional<std::string> timed, store_->GetMeta(kTimedMeta));
  if (!timed) {
    SY_ASSIGN_OR_RETURN(int64_t n, store_->TimeUntimedDocuments(clock_->Now().millis()));
    SY_RETURN_IF_ERROR(store_->EnqueueMeta(kTimedMeta, "1"));
    SY_RETURN_IF_ERROR(store_->Flush());
    if (n > 0) {
      Log(LogLevel::kInfo, "retention: documents stored without a time count from now",
          LogKeys().With("documents", std::to_string(n)));
    }
  }
  const int64_t now = clock_->Now().millis();
  last_document_sweep_ms_ = now;
  if (options_.document_retention_s <= 0) return Status::OK();
  int64_t erased = 0;
  for (;;) {  // every expired document, a batch at a time
    SY_ASSIGN_OR_RETURN(Store::DocumentSweep swept,
                        store_->EraseDocumentsBefore(now - options_.document_retention_s * 1000,
                                                     kDocumentSweepBatch));
    erased += swept.erased;
    if (!swept.more) break;
    SY_RETURN_IF_ERROR(store_->Flush());  // the next batch reads past this one
  }
  documents_expired_.fetch_add(static_cast<uint64_t>(erased), std::memory_order_relaxed);
  if (erased > 0) {
    Log(LogLevel::kInfo, "retention: expired documents deleted",
        LogKeys().With("documents", std::to_string(erased)));
  }
  return Status::OK();
}

}  // namespace switchyard::service
