// KvPool: the CPU engine's KV pool — a kv_tiers Tier over an ArenaTier of one slot per KV
// block, which keeps freed blocks that have a content hash (vLLM's block pool with its free
// queue of cached blocks).
//
// A block is held (allocated to a context) or free. A freed block whose KV is whole and
// whose token ids are known goes back as a *kept* block (Keep): free — the pool's
// used_bytes() and every tenant's usage drop as for Free, so the engine's block accounting
// is unchanged — but its bytes stay where they are, findable by hash (FindKept) and adopted
// again as they are (TakeKept). Allocate takes never-used and plainly freed slots first;
// when none is left it reuses a kept block (its hash forgotten): first those of the least
// important sequences (the highest SequenceSpec::priority number), among equals the one
// kept longest ago (LRU). A kept block's hash is unique: keeping a second block of the same
// hash frees the older copy's slot instead and refreshes the entry.
//
// Ownership: the pool owns the arena. Thread-safety: thread-safe (the kept set under its
// own mutex, the accounting as Tier's); the CPU engine calls it from its loop thread, and
// readers (the cluster view) read the accounting from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/mutex.h"
#include "kv_tiers/arena_tier.h"

namespace switchyard::cpu_engine {

class KvPool final : public kv_tiers::Tier {
 public:
  // The arena's errors (InvalidArgument for zero capacity or slot size).
  static Result<std::unique_ptr<KvPool>> Create(const kv_tiers::TierOptions& options,
                                                kv_tiers::ArenaBackend backend);

  std::string name() const override { return arena_->name(); }
  kv_tiers::TierKind kind() const override { return arena_->kind(); }
  kv_tiers::TierCapabilities capabilities() const override { return arena_->capabilities(); }
  Result<kv_tiers::Extent> Allocate(const std::string& tenant, uint64_t bytes) override;
  Status Free(const kv_tiers::Extent& extent) override;
  void* Data(const kv_tiers::Extent& extent) override { return arena_->Data(extent); }
  Status Write(std::span<const kv_tiers::BlockWrite> writes) override {
    return arena_->Write(writes);
  }
  Result<std::optional<uint64_t>> WriteChecksummed(const kv_tiers::BlockWrite& write) override {
    return arena_->WriteChecksummed(write);
  }
  Status Read(std::span<const kv_tiers::BlockRead> reads) override { return arena_->Read(reads); }

  // Frees a held block but keeps its bytes under `hash` (non-zero) with the priority of the
  // sequence that used it last. NotFound if the extent is not held.
  Status Keep(const kv_tiers::Extent& extent, uint64_t hash, int priority);
  // The bytes of the kept block of `hash` (null: none).
  const void* FindKept(uint64_t hash) const;
  // Holds the kept block of `hash` again, charged to `tenant` (nullopt: none kept, or the
  // tenant's quota refuses it).
  std::optional<kv_tiers::Extent> TakeKept(uint64_t hash, const std::string& tenant);
  // Frees every kept block's slot (the model's weights changed: nothing kept may match).
  void DropKept();

  size_t kept_blocks() const;
  uint64_t kept_reused() const;  // kept blocks Allocate reused (their hash forgotten)
  uint64_t slots() const { return arena_->num_slots(); }

 private:
  using Order = std::pair<int64_t, uint64_t>;  // (-priority, when kept): begin() goes first
  struct Kept {
    kv_tiers::Extent extent;
    Order order;
  };
  KvPool(const kv_tiers::TierOptions& options, std::unique_ptr<kv_tiers::ArenaTier> arena);
  void ForgetKept(uint64_t hash) REQUIRES(mu_);
  // The tenant of held `slot`, which is held no more; NotFound naming the slot.
  Result<std::string> TakeHolder(uint64_t slot) REQUIRES(mu_);

  std::unique_ptr<kv_tiers::ArenaTier> arena_;
  mutable Mutex mu_;
  std::unordered_map<uint64_t, std::string> tenant_ GUARDED_BY(mu_);  // held slot -> tenant
  std::unordered_map<uint64_t, Kept> kept_ GUARDED_BY(mu_);           // by hash
  std::map<Order, uint64_t> reuse_order_ GUARDED_BY(mu_);             // -> hash
  uint64_t tick_ GUARDED_BY(mu_) = 0;
  uint64_t reused_ GUARDED_BY(mu_) = 0;
};

}  // namespace switchyard::cpu_engine
