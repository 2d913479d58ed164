// Service's documents (see service.h "Documents"): values the fronts keep per tenant, under
// the store key "<kind>/<tenant>\0<id>" (a tenant name and an id hold any byte but NUL).
#include <vector>

#include "service/service.h"

namespace switchyard::service {

namespace {

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
  Status st = store_->EnqueueDocument(*key, std::move(value), done);
  if (!st.ok()) done(st);
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
  return store_->GetDocument(key);
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

}  // namespace switchyard::service
