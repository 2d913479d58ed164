#include "kv_tiers/faulty_tier.h"

#include <thread>
#include <vector>

#include "base/mutex.h"

namespace switchyard::kv_tiers {

FaultyTier::FaultyTier(std::unique_ptr<Tier> inner, FaultSpec spec, uint32_t ops,
                       std::function<void(Duration)> wait)
    : Tier(inner->options()),
      inner_(std::move(inner)),
      spec_(spec),
      ops_(ops),
      wait_(wait ? std::move(wait) : [](Duration d) { std::this_thread::sleep_for(d); }),
      dice_(spec) {}

FaultyTier::Fault FaultyTier::Decide(TierFaultOps op) {
  if ((ops_ & op) == 0) return Fault::kNone;
  if (spec_.delay > Duration::zero()) wait_(spec_.delay);
  return dice_.Draw();
}

Status FaultyTier::Injected(const std::string& what) {
  failures_.fetch_add(1);
  return Status::Unavailable("fault injection: " + name() + ": " + what + " failed",
                             ErrorScope::kTier);
}

Result<Extent> FaultyTier::Allocate(const std::string& tenant, uint64_t bytes) {
  if (Decide(kFaultAllocate) == Fault::kFail) return Injected("allocate");
  SY_RETURN_IF_ERROR(Charge(tenant, bytes));
  auto extent = inner_->Allocate(tenant, bytes);
  if (!extent.ok()) {
    Uncharge(tenant, bytes);
    return extent.status();
  }
  MutexLock lock(&mu_);
  tenants_[extent->slot] = tenant;
  return extent;
}

Status FaultyTier::Free(const Extent& extent) {
  SY_RETURN_IF_ERROR(inner_->Free(extent));
  std::string tenant;
  {
    MutexLock lock(&mu_);
    auto it = tenants_.find(extent.slot);
    if (it == tenants_.end()) return Status::OK();
    tenant = std::move(it->second);
    tenants_.erase(it);
  }
  Uncharge(tenant, extent.bytes);
  return Status::OK();
}

Status FaultyTier::Write(std::span<const BlockWrite> writes) {
  Fault fault = Decide(kFaultWrite);
  if (writes.empty() || fault == Fault::kNone) return inner_->Write(writes);
  std::vector<BlockWrite> changed(writes.begin(), writes.end());
  std::vector<unsigned char> copy;
  if (fault == Fault::kFail) {
    if (spec_.partial) {
      // Half of the first block lands, the rest never does.
      BlockWrite half = changed.front();
      half.bytes = std::max<uint64_t>(1, half.bytes / 2);
      (void)inner_->Write(std::span<const BlockWrite>(&half, 1));
    }
    return Injected("write");
  }
  // Corrupt: the first block is stored with one byte flipped, and success is reported.
  const auto* src = static_cast<const unsigned char*>(changed.front().src);
  copy.assign(src, src + changed.front().bytes);
  if (!copy.empty()) copy[copy.size() / 3] ^= 0x5a;
  changed.front().src = copy.data();
  corruptions_.fetch_add(1);
  return inner_->Write(changed);
}

Status FaultyTier::Read(std::span<const BlockRead> reads) {
  Fault fault = Decide(kFaultRead);
  if (fault == Fault::kFail) return Injected("read");
  SY_RETURN_IF_ERROR(inner_->Read(reads));
  if (fault == Fault::kCorrupt && !reads.empty() && reads.front().bytes > 0 &&
      !inner_->capabilities().device_memory) {
    static_cast<unsigned char*>(reads.front().dst)[reads.front().bytes / 3] ^= 0x5a;
    corruptions_.fetch_add(1);
  }
  return Status::OK();
}

Status FaultyTier::PersistMeta(const Extent& extent, const v1::KvBlockMeta& meta) {
  if (Decide(kFaultPersistMeta) == Fault::kFail) return Injected("persist meta");
  return inner_->PersistMeta(extent, meta);
}

Result<std::vector<std::pair<Extent, v1::KvBlockMeta>>> FaultyTier::Recover() {
  SY_ASSIGN_OR_RETURN(auto found, inner_->Recover());
  for (const auto& [extent, meta] : found) {
    SY_RETURN_IF_ERROR(Charge(meta.tenant(), extent.bytes));
    MutexLock lock(&mu_);
    tenants_[extent.slot] = meta.tenant();
  }
  return found;
}

}  // namespace switchyard::kv_tiers
