#include "kv_tiers/arena_tier.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "base/logging.h"
#include "base/mutex.h"
#include "kv_tiers/prefix_hash.h"

namespace switchyard::kv_tiers {
namespace {

constexpr uint64_t kAlign = 4096;

Result<void*> AlignedAlloc(uint64_t bytes) {
  uint64_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (p == nullptr) {
    return Status::ResourceExhausted("aligned_alloc of " + std::to_string(bytes) + " B failed");
  }
  return p;
}

Status HostCopy(void* dst, const void* src, uint64_t bytes) {
  std::memcpy(dst, src, bytes);
  return Status::OK();
}

ArenaBackend HostMemory(std::string name, TierKind kind, bool emulated) {
  ArenaBackend b;
  b.name = std::move(name);
  b.kind = kind;
  b.caps.addressable = true;
  b.caps.emulated = emulated;
  b.alloc = AlignedAlloc;
  b.release = [](void* p) { std::free(p); };
  b.copy_in = HostCopy;
  b.copy_out = HostCopy;
  return b;
}

}  // namespace

ArenaBackend EmulatedHbmBackend() { return HostMemory("emulated-hbm", v1::TIER_HBM, true); }
ArenaBackend HostBackend() { return HostMemory("host", v1::TIER_HOST, false); }

Result<std::unique_ptr<ArenaTier>> ArenaTier::Create(const TierOptions& options,
                                                     ArenaBackend backend) {
  if (options.slot_bytes == 0) {
    return Status::InvalidArgument("tier " + backend.name + ": slot_bytes must be > 0");
  }
  uint64_t slots = options.capacity_bytes / options.slot_bytes;
  if (slots == 0) {
    return Status::InvalidArgument("tier " + backend.name + ": capacity " +
                                   std::to_string(options.capacity_bytes) + " B holds no slot of " +
                                   std::to_string(options.slot_bytes) + " B");
  }
  TierOptions rounded = options;
  rounded.capacity_bytes = slots * options.slot_bytes;
  auto base = backend.alloc(rounded.capacity_bytes);
  if (!base.ok()) return base.status().Annotate("tier " + backend.name);
  if (backend.caps.emulated) {
    Log(LogLevel::kInfo, "kv_tiers: using an emulated-hbm arena in host memory (no CUDA device)",
        LogKeys()
            .With("tier", backend.name)
            .With("capacity_bytes", std::to_string(rounded.capacity_bytes)));
  }
  return std::unique_ptr<ArenaTier>(new ArenaTier(rounded, std::move(backend), *base, slots));
}

ArenaTier::ArenaTier(const TierOptions& options, ArenaBackend backend, void* base, uint64_t slots)
    : Tier(options), backend_(std::move(backend)), base_(base), num_slots_(slots) {
  free_slots_.reserve(slots);
  for (uint64_t s = slots; s > 0; --s) free_slots_.push_back(s - 1);  // hand out 0 first
}

ArenaTier::~ArenaTier() { backend_.release(base_); }

Result<Extent> ArenaTier::Allocate(const std::string& tenant, uint64_t bytes) {
  const uint64_t slot_bytes = options().slot_bytes;
  if (bytes == 0 || bytes > slot_bytes) {
    return Status::InvalidArgument("tier " + name() + ": allocation of " + std::to_string(bytes) +
                                   " B does not fit a " + std::to_string(slot_bytes) + " B slot");
  }
  SY_RETURN_IF_ERROR(Charge(tenant, slot_bytes));
  MutexLock lock(&mu_);
  if (free_slots_.empty()) {  // cannot happen while accounting matches; be safe
    Uncharge(tenant, slot_bytes);
    return Status::ResourceExhausted("tier " + name() + ": no free slot");
  }
  uint64_t slot = free_slots_.back();
  free_slots_.pop_back();
  owner_[slot] = tenant;
  return Extent{slot, bytes};
}

Status ArenaTier::Free(const Extent& extent) {
  std::string tenant;
  {
    MutexLock lock(&mu_);
    auto it = owner_.find(extent.slot);
    if (it == owner_.end()) {
      return Status::NotFound("tier " + name() + ": slot " + std::to_string(extent.slot) +
                              " is not allocated");
    }
    tenant = std::move(it->second);
    owner_.erase(it);
    free_slots_.push_back(extent.slot);
  }
  Uncharge(tenant, options().slot_bytes);
  return Status::OK();
}

void* ArenaTier::Data(const Extent& extent) {
  if (extent.slot >= num_slots_) return nullptr;
  return static_cast<char*>(base_) + extent.slot * options().slot_bytes;
}

Status ArenaTier::CheckLive(const Extent& extent, uint64_t bytes) const {
  MutexLock lock(&mu_);
  if (owner_.count(extent.slot) == 0) {
    return Status::NotFound("tier " + name() + ": slot " + std::to_string(extent.slot) +
                            " is not allocated");
  }
  if (bytes > options().slot_bytes) {
    return Status::InvalidArgument("tier " + name() + ": " + std::to_string(bytes) +
                                   " B exceed the slot size");
  }
  return Status::OK();
}

Status ArenaTier::Write(std::span<const BlockWrite> writes) {
  for (const auto& w : writes) {
    SY_RETURN_IF_ERROR(CheckLive(w.extent, w.bytes));
    SY_RETURN_IF_ERROR(backend_.copy_in(Data(w.extent), w.src, w.bytes));
  }
  return Status::OK();
}

Result<std::optional<uint64_t>> ArenaTier::WriteChecksummed(const BlockWrite& w) {
  if (backend_.caps.device_memory) return Tier::WriteChecksummed(w);
  SY_RETURN_IF_ERROR(CheckLive(w.extent, w.bytes));
  auto* dst = static_cast<std::byte*>(Data(w.extent));
  const auto* src = static_cast<const std::byte*>(w.src);
  BlockChecksummer sum;
  for (uint64_t off = 0; off < w.bytes; off += BlockChecksummer::kChunkBytes) {
    uint64_t n = std::min<uint64_t>(BlockChecksummer::kChunkBytes, w.bytes - off);
    SY_RETURN_IF_ERROR(backend_.copy_in(dst + off, src + off, n));
    sum.Update(dst + off, n);
  }
  return std::optional<uint64_t>(sum.Digest());
}

Status ArenaTier::Read(std::span<const BlockRead> reads) {
  for (const auto& r : reads) {
    SY_RETURN_IF_ERROR(CheckLive(r.extent, r.bytes));
    SY_RETURN_IF_ERROR(backend_.copy_out(r.dst, Data(r.extent), r.bytes));
  }
  return Status::OK();
}

}  // namespace switchyard::kv_tiers
