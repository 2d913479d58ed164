#include "kv_tiers/tier.h"

#include <string>

#include "base/mutex.h"

namespace switchyard::kv_tiers {

std::string_view TierKindName(TierKind kind) {
  switch (kind) {
    case v1::TIER_HBM:
      return "hbm";
    case v1::TIER_HOST:
      return "host";
    case v1::TIER_DISK:
      return "disk";
    case v1::TIER_PEER:
      return "peer";
    default:
      return "unspecified";
  }
}

Tier::Tier(const TierOptions& options) : options_(options) {}

Result<std::optional<uint64_t>> Tier::WriteChecksummed(const BlockWrite& write) {
  SY_RETURN_IF_ERROR(Write(std::span<const BlockWrite>(&write, 1)));
  return std::optional<uint64_t>();
}

Status Tier::PersistMeta(const Extent&, const v1::KvBlockMeta&) {
  return Status::NotSupported("tier " + name() + " does not persist block metadata");
}

Result<std::vector<std::pair<Extent, v1::KvBlockMeta>>> Tier::Recover() {
  return std::vector<std::pair<Extent, v1::KvBlockMeta>>{};
}

uint64_t Tier::used_bytes() const {
  MutexLock lock(&mu_);
  return used_;
}

uint64_t Tier::tenant_used_bytes(const std::string& tenant) const {
  MutexLock lock(&mu_);
  auto it = tenant_used_.find(tenant);
  return it == tenant_used_.end() ? 0 : it->second;
}

void Tier::SetTenantQuota(const std::string& tenant, uint64_t bytes) {
  MutexLock lock(&mu_);
  if (bytes == 0) {
    tenant_quota_.erase(tenant);
  } else {
    tenant_quota_[tenant] = bytes;
  }
}

uint64_t Tier::tenant_quota(const std::string& tenant) const {
  MutexLock lock(&mu_);
  auto it = tenant_quota_.find(tenant);
  return it == tenant_quota_.end() ? 0 : it->second;
}

bool Tier::AboveHighWatermark() const {
  MutexLock lock(&mu_);
  return static_cast<double>(used_) >
         options_.high_watermark * static_cast<double>(options_.capacity_bytes);
}

uint64_t Tier::BytesAboveLowWatermark() const {
  MutexLock lock(&mu_);
  auto low =
      static_cast<uint64_t>(options_.low_watermark * static_cast<double>(options_.capacity_bytes));
  return used_ > low ? used_ - low : 0;
}

Status Tier::Charge(const std::string& tenant, uint64_t bytes) {
  MutexLock lock(&mu_);
  if (used_ + bytes > options_.capacity_bytes) {
    return Status::ResourceExhausted("tier " + name() + ": capacity " +
                                     std::to_string(options_.capacity_bytes) + " B full (" +
                                     std::to_string(used_) + " B used, " + std::to_string(bytes) +
                                     " B asked by tenant '" + tenant + "')");
  }
  uint64_t& t = tenant_used_[tenant];
  auto q = tenant_quota_.find(tenant);
  if (q != tenant_quota_.end() && t + bytes > q->second) {
    return Status::ResourceExhausted(
        "tier " + name() + ": tenant '" + tenant + "' quota " + std::to_string(q->second) +
        " B reached (" + std::to_string(t) + " B used, " + std::to_string(bytes) + " B asked)");
  }
  t += bytes;
  used_ += bytes;
  return Status::OK();
}

void Tier::Uncharge(const std::string& tenant, uint64_t bytes) {
  MutexLock lock(&mu_);
  auto it = tenant_used_.find(tenant);
  if (it != tenant_used_.end()) {
    it->second -= std::min(it->second, bytes);
    if (it->second == 0) tenant_used_.erase(it);
  }
  used_ -= std::min(used_, bytes);
}

}  // namespace switchyard::kv_tiers
