// KvPool (kv_pool.h).
#include "cpu_engine/kv_pool.h"

namespace switchyard::cpu_engine {

Result<std::unique_ptr<KvPool>> KvPool::Create(const kv_tiers::TierOptions& options,
                                               kv_tiers::ArenaBackend backend) {
  SY_ASSIGN_OR_RETURN(std::unique_ptr<kv_tiers::ArenaTier> arena,
                      kv_tiers::ArenaTier::Create(options, std::move(backend)));
  const kv_tiers::TierOptions rounded = arena->options();  // whole slots
  return std::unique_ptr<KvPool>(new KvPool(rounded, std::move(arena)));
}

KvPool::KvPool(const kv_tiers::TierOptions& options, std::unique_ptr<kv_tiers::ArenaTier> arena)
    : Tier(options), arena_(std::move(arena)) {}

Result<kv_tiers::Extent> KvPool::Allocate(const std::string& tenant, uint64_t bytes) {
  const uint64_t slot_bytes = options().slot_bytes;
  if (bytes == 0 || bytes > slot_bytes)
    return Status::InvalidArgument("tier " + name() + ": allocation of " + std::to_string(bytes) +
                                   " B does not fit a " + std::to_string(slot_bytes) + " B slot");
  SY_RETURN_IF_ERROR(Charge(tenant, slot_bytes));  // held blocks only: kept ones are free
  MutexLock lock(&mu_);
  Result<kv_tiers::Extent> e = arena_->Allocate(tenant, bytes);
  if (!e.ok() && !reuse_order_.empty()) {  // every slot is held or kept: reuse a kept one
    const uint64_t hash = reuse_order_.begin()->second;
    e = kept_.at(hash).extent;
    ForgetKept(hash);
    ++reused_;
  }
  if (!e.ok()) {
    Uncharge(tenant, slot_bytes);
    return e.status();
  }
  tenant_[e->slot] = tenant;
  return kv_tiers::Extent{e->slot, bytes};
}

Result<std::string> KvPool::TakeHolder(uint64_t slot) {
  auto it = tenant_.find(slot);
  if (it == tenant_.end())
    return Status::NotFound("tier " + name() + ": slot " + std::to_string(slot) + " is not held");
  std::string tenant = std::move(it->second);
  tenant_.erase(it);
  return tenant;
}

Status KvPool::Free(const kv_tiers::Extent& extent) {
  std::string tenant;
  {
    MutexLock lock(&mu_);
    SY_ASSIGN_OR_RETURN(tenant, TakeHolder(extent.slot));
    SY_RETURN_IF_ERROR(arena_->Free(extent));
  }
  Uncharge(tenant, options().slot_bytes);
  return Status::OK();
}

Status KvPool::Keep(const kv_tiers::Extent& extent, uint64_t hash, int priority) {
  std::string tenant;
  {
    MutexLock lock(&mu_);
    SY_ASSIGN_OR_RETURN(tenant, TakeHolder(extent.slot));
    if (auto k = kept_.find(hash); k != kept_.end()) {  // one copy per hash: the newer stays
      (void)arena_->Free(k->second.extent);
      ForgetKept(hash);
    }
    const Order order{-static_cast<int64_t>(priority), ++tick_};
    kept_[hash] = Kept{extent, order};
    reuse_order_[order] = hash;
  }
  Uncharge(tenant, options().slot_bytes);
  return Status::OK();
}

const void* KvPool::FindKept(uint64_t hash) const {
  MutexLock lock(&mu_);
  auto it = kept_.find(hash);
  return it == kept_.end() ? nullptr : arena_->Data(it->second.extent);
}

std::optional<kv_tiers::Extent> KvPool::TakeKept(uint64_t hash, const std::string& tenant) {
  MutexLock lock(&mu_);
  auto it = kept_.find(hash);
  if (it == kept_.end() || !Charge(tenant, options().slot_bytes).ok()) return std::nullopt;
  const kv_tiers::Extent e = it->second.extent;
  ForgetKept(hash);
  tenant_[e.slot] = tenant;
  return e;
}

void KvPool::DropKept() {
  MutexLock lock(&mu_);
  for (const auto& [hash, k] : kept_) (void)arena_->Free(k.extent);
  kept_.clear();
  reuse_order_.clear();
}

void KvPool::ForgetKept(uint64_t hash) {
  auto it = kept_.find(hash);
  if (it == kept_.end()) return;
  reuse_order_.erase(it->second.order);
  kept_.erase(it);
}

size_t KvPool::kept_blocks() const {
  MutexLock lock(&mu_);
  return kept_.size();
}

uint64_t KvPool::kept_reused() const {
  MutexLock lock(&mu_);
  return reused_;
}

}  // namespace switchyard::cpu_engine
