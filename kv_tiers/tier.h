// Tier: one place a KV block can live (hbm, host, disk, peer), behind one interface.
//
// A tier hands out Extents (a slot id and a byte length) to tenants and accounts for
// them against its capacity, per-tenant quotas and high/low watermarks. Implementations:
//   - "hbm":  a cudaMalloc arena in CUDA builds when a device answers; otherwise an
//             *emulated HBM* arena in host memory whose name() is "emulated-hbm".
//   - "host": pinned (cudaHostAlloc) memory when a device answers, else aligned memory.
//   - "disk": RocksDB (a column family for block bytes, one for block metadata).
//   - "peer": another node's memory (PeerTier), implemented by kv_tiers/remote over a KV store.
// Byte-addressable tiers (capabilities().addressable) expose Data(); every tier supports
// block I/O (Write/Read and their batched forms) so movers and tests can copy through it.
// Tiers are created by kind through the TierRegistry (tier_registry.h), never by #ifdef.
//
// Ownership: the tier owns its memory/storage; an Extent is a lease on a slot that the
// caller (normally the BlockManager) returns with Free(). Freeing an extent that a move
// still reads is the caller's bug: the BlockManager pins sources (docs/design.md invariant 2).
//
// Thread-safety: all methods are thread-safe (accounting is under a mutex; Data() of a
// live extent may be used from mover worker threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "base/status.h"
#include "proto/switchyard/v1/kv.pb.h"

namespace switchyard::kv_tiers {

using TierKind = v1::Tier;                     // TIER_HBM, TIER_HOST, TIER_DISK, TIER_PEER
std::string_view TierKindName(TierKind kind);  // "hbm", "host", "disk", "peer"

// A slot in a tier: `slot` is tier-defined (an arena index, a RocksDB key), `bytes` the
// length in use.
struct Extent {
  uint64_t slot = 0;
  uint64_t bytes = 0;
  friend bool operator==(const Extent&, const Extent&) = default;
};

struct TierCapabilities {
  bool addressable = false;    // Data() returns a CPU- or device-visible pointer
  bool device_memory = false;  // memory lives on a GPU (Data() is a device pointer)
  bool pinned = false;         // page-locked host memory (fast DMA)
  bool persistent = false;     // survives a process restart (disk)
  bool remote = false;         // another node (peer)
  bool emulated = false;       // stands in for hardware that is absent (emulated HBM)
  // Write() of a block that carries its checksum succeeds only after the tier's far end
  // verified the stored bytes against it (peer: the worker's commit rule), so a mover's
  // validation need not read the block back to hash it.
  bool verifies_writes = false;
};

struct TierOptions {
  uint64_t capacity_bytes = 0;   // required, > 0
  uint64_t slot_bytes = 0;       // arena slot size (normally KvLayout::bytes_per_block)
  double high_watermark = 0.90;  // fraction of capacity: above it, reclaim
  double low_watermark = 0.75;   // reclaim down to this fraction
  std::string path;              // disk tier: RocksDB directory
  int device = 0;                // CUDA tiers: device ordinal
};

// One block I/O operation on a tier (src/dst are host pointers, or device pointers for a
// device tier's own I/O).
struct BlockWrite {
  Extent extent;
  const void* src = nullptr;
  uint64_t bytes = 0;
  // The block's checksum (BlockChecksum of the bytes at `src`) when the caller knows it;
  // a tier with verifies_writes checks the stored bytes against it.
  std::optional<uint64_t> checksum;
};
struct BlockRead {
  Extent extent;
  void* dst = nullptr;
  uint64_t bytes = 0;
};

class Tier {
 public:
  explicit Tier(const TierOptions& options);
  virtual ~Tier() = default;
  Tier(const Tier&) = delete;
  Tier& operator=(const Tier&) = delete;

  // "emulated-hbm", "cuda-hbm", "host", "pinned-host", "disk", "peer:<endpoint>".
  virtual std::string name() const = 0;
  virtual TierKind kind() const = 0;
  virtual TierCapabilities capabilities() const = 0;

  // Reserves `bytes` for `tenant`: ResourceExhausted naming the tier and tenant when the
  // capacity or the tenant's quota would be exceeded; InvalidArgument for a bad size.
  virtual Result<Extent> Allocate(const std::string& tenant, uint64_t bytes) = 0;
  // Returns an extent; NotFound if it is not allocated.
  virtual Status Free(const Extent& extent) = 0;

  // Addressable tiers: the bytes of a live extent; nullptr otherwise.
  virtual void* Data(const Extent& extent) { return nullptr; }

  // Block I/O; memory tiers copy, the disk tier uses WriteBatch / Get.
  virtual Status Write(std::span<const BlockWrite> writes) = 0;
  // Writes one block and returns BlockChecksum of the bytes now stored, when the tier can
  // hash them as it copies (host-addressable arenas); nullopt when it cannot (the caller
  // then hashes the stored bytes itself). The default is Write() and nullopt.
  virtual Result<std::optional<uint64_t>> WriteChecksummed(const BlockWrite& write);
  virtual Status Read(std::span<const BlockRead> reads) = 0;

  // Persistent tiers: store / list block metadata next to the bytes (NotSupported
  // elsewhere). Recover() lists what survived a restart, re-charging it to its tenant.
  virtual Status PersistMeta(const Extent& extent, const v1::KvBlockMeta& meta);
  virtual Result<std::vector<std::pair<Extent, v1::KvBlockMeta>>> Recover();

  // Accounting (common to all tiers).
  uint64_t capacity_bytes() const { return options_.capacity_bytes; }
  uint64_t used_bytes() const;
  uint64_t tenant_used_bytes(const std::string& tenant) const;
  // 0 removes the quota. A quota below current usage is allowed (new allocations fail).
  void SetTenantQuota(const std::string& tenant, uint64_t bytes);
  uint64_t tenant_quota(const std::string& tenant) const;  // 0: none
  bool AboveHighWatermark() const;
  // Bytes to free to get down to the low watermark (0 when at or below it).
  uint64_t BytesAboveLowWatermark() const;
  const TierOptions& options() const { return options_; }

 protected:
  // Charges `bytes` to `tenant` if capacity and quota allow; ResourceExhausted otherwise.
  Status Charge(const std::string& tenant, uint64_t bytes);
  void Uncharge(const std::string& tenant, uint64_t bytes);

 private:
  TierOptions options_;
  mutable Mutex mu_;
  uint64_t used_ GUARDED_BY(mu_) = 0;
  std::map<std::string, uint64_t> tenant_used_ GUARDED_BY(mu_);
  std::map<std::string, uint64_t> tenant_quota_ GUARDED_BY(mu_);
};

}  // namespace switchyard::kv_tiers
