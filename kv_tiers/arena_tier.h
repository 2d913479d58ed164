// ArenaTier: a memory tier carved into fixed-size slots from one allocation.
//
// The same slot arena backs three tiers, differing only in where the memory comes from
// and how bytes get in and out (an ArenaBackend):
//   - "emulated-hbm": host memory standing in for GPU HBM when there is no CUDA device
//     (always named so: name(), logs, README);
//   - "host": aligned host memory;
//   - "cuda-hbm" / "pinned-host": cudaMalloc / cudaHostAlloc (cuda_tiers.cc, CUDA builds).
// One extent is one slot (slot_bytes, normally a KV block); capacity is rounded down to
// whole slots and every allocation is charged a whole slot.
//
// Thread-safety: as Tier (the free list is under a mutex).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "kv_tiers/tier.h"

namespace switchyard::kv_tiers {

struct ArenaBackend {
  std::string name;
  TierKind kind = v1::TIER_HOST;
  TierCapabilities caps;
  std::function<Result<void*>(uint64_t bytes)> alloc;
  std::function<void(void*)> release;
  // Host memory <-> arena memory (memcpy for host arenas, cudaMemcpy for device ones).
  std::function<Status(void* dst, const void* src, uint64_t bytes)> copy_in;
  std::function<Status(void* dst, const void* src, uint64_t bytes)> copy_out;
};

class ArenaTier final : public Tier {
 public:
  // InvalidArgument for zero capacity/slot size; the backend's error if alloc fails.
  static Result<std::unique_ptr<ArenaTier>> Create(const TierOptions& options,
                                                   ArenaBackend backend);
  ~ArenaTier() override;

  std::string name() const override { return backend_.name; }
  TierKind kind() const override { return backend_.kind; }
  TierCapabilities capabilities() const override { return backend_.caps; }
  Result<Extent> Allocate(const std::string& tenant, uint64_t bytes) override;
  Status Free(const Extent& extent) override;
  void* Data(const Extent& extent) override;
  Status Write(std::span<const BlockWrite> writes) override;
  // Host memory: copies in chunks and hashes each right after it lands (see
  // BlockChecksummer); device memory: the default.
  Result<std::optional<uint64_t>> WriteChecksummed(const BlockWrite& write) override;
  Status Read(std::span<const BlockRead> reads) override;

  uint64_t num_slots() const { return num_slots_; }

 private:
  ArenaTier(const TierOptions& options, ArenaBackend backend, void* base, uint64_t slots);
  Status CheckLive(const Extent& extent, uint64_t bytes) const;

  ArenaBackend backend_;
  void* base_;
  uint64_t num_slots_;
  mutable Mutex mu_;
  std::vector<uint64_t> free_slots_ GUARDED_BY(mu_);
  std::unordered_map<uint64_t, std::string> owner_ GUARDED_BY(mu_);  // live slot -> tenant
};

// Host-memory backends (always available).
ArenaBackend EmulatedHbmBackend();
ArenaBackend HostBackend();

}  // namespace switchyard::kv_tiers
