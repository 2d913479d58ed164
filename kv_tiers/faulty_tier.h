// FaultyTier: a decorator around any Tier that injects faults into its operations, the
// tier-level counterpart of FaultyMover (fault_injection.h). Tests use it to show that a
// failing, partial, corrupting or slow tier never yields a readable bad block; replay and
// service fault tests use it for storage faults.
//
// Faults (FaultSpec, deterministic for a given seed and call order), applied to the
// operations selected by `ops` (Allocate, Write, Read, PersistMeta):
//   - fail_rate:    each selected call fails (Unavailable, naming the injection) with this
//                   probability;
//   - fail_after:   the first N selected calls pass, every later one fails (-1: off);
//   - partial:      a failing Write still stores the first half of its first block, so
//                   the tier holds partial bytes (they must never become readable);
//   - corrupt_rate: a passing Write stores its first block with one byte flipped, and a
//                   passing Read returns its first block with one byte flipped; both
//                   report success (validation must catch them);
//   - delay:        every selected call first waits `delay` through `wait` (default: the
//                   calling thread sleeps; tests pass a function that advances a
//                   ManualClock, so no test sleeps).
// Byte-addressed access through Data() is forwarded untouched: moves that copy through
// Data() (the local and CUDA movers) are faulted with FaultyMover instead.
//
// Accounting: the wrapper keeps its own capacity/quota accounting (the Tier base class),
// with the inner tier's options, so quotas are set on the wrapper. The wrapper owns the
// inner tier; use only the wrapper once wrapped.
// Thread-safety: as Tier; the fault decisions are under a mutex, counters are atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "base/mutex.h"
#include "base/time.h"
#include "kv_tiers/fault_injection.h"
#include "kv_tiers/tier.h"

namespace switchyard::kv_tiers {

// Which tier operations faults apply to (a bit mask).
enum TierFaultOps : uint32_t {
  kFaultAllocate = 1u << 0,
  kFaultWrite = 1u << 1,
  kFaultRead = 1u << 2,
  kFaultPersistMeta = 1u << 3,
  kFaultAllOps = kFaultAllocate | kFaultWrite | kFaultRead | kFaultPersistMeta,
};

class FaultyTier final : public Tier {
 public:
  FaultyTier(std::unique_ptr<Tier> inner, FaultSpec spec, uint32_t ops = kFaultWrite | kFaultRead,
             std::function<void(Duration)> wait = nullptr);

  std::string name() const override { return "faulty(" + inner_->name() + ")"; }
  TierKind kind() const override { return inner_->kind(); }
  TierCapabilities capabilities() const override { return inner_->capabilities(); }
  Result<Extent> Allocate(const std::string& tenant, uint64_t bytes) override;
  Status Free(const Extent& extent) override;
  void* Data(const Extent& extent) override { return inner_->Data(extent); }
  Status Write(std::span<const BlockWrite> writes) override;
  Status Read(std::span<const BlockRead> reads) override;
  Status PersistMeta(const Extent& extent, const v1::KvBlockMeta& meta) override;
  Result<std::vector<std::pair<Extent, v1::KvBlockMeta>>> Recover() override;

  Tier& inner() { return *inner_; }
  uint64_t calls() const { return dice_.calls(); }  // selected calls seen
  uint64_t injected_failures() const { return failures_.load(); }
  uint64_t injected_corruptions() const { return corruptions_.load(); }

 private:
  using Fault = FaultDice::Fault;
  // Decides the fault of one call of operation `op` (kNone for unselected operations),
  // after waiting the configured delay.
  Fault Decide(TierFaultOps op);
  Status Injected(const std::string& what);

  std::unique_ptr<Tier> inner_;
  FaultSpec spec_;
  uint32_t ops_;
  std::function<void(Duration)> wait_;
  FaultDice dice_;
  Mutex mu_;  // guards tenants_
  std::map<uint64_t, std::string> tenants_
      GUARDED_BY(mu_);  // slot -> tenant charged on the wrapper
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> corruptions_{0};
};

}  // namespace switchyard::kv_tiers
