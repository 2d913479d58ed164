// FaultyMover: a decorator around any Mover that injects faults (a test and replay tool,
// in the spirit of Mooncake's fault proxy and leveldb's FaultInjectionTestEnv).
//
// Faults, all deterministic for a given seed and submission order:
//   - fail_rate:   each move fails with this probability (seeded RNG);
//   - fail_after:  the first N moves pass, every later one fails (-1: off);
//   - partial:     a failing move still copies the first half of its first segment, so
//                  the destination holds partial bytes (it must never become readable);
//   - corrupt_rate: a passing move has one byte of its destination flipped afterwards and
//                  still reports success (validation must catch it);
//   - delay:       the completion notification is posted `delay` later on the EventLoop
//                  (virtual time in tests: no sleeping).
// The production Mover interface carries no test hooks; faults live only here.
//
// Ownership: shares ownership of the inner mover. Thread-safety: as Mover; counters are
// atomic.
#pragma once

#include <atomic>
#include <memory>
#include <random>

#include "base/mutex.h"
#include "kv_tiers/mover.h"
#include "kv_tiers/worker_pool.h"

namespace switchyard::kv_tiers {

struct FaultSpec {
  double fail_rate = 0.0;
  int64_t fail_after = -1;
  bool partial = true;
  double corrupt_rate = 0.0;
  Duration delay{0};
  uint64_t seed = 1;
};

// The fault draw shared by FaultyMover and FaultyTier: call n (0-based, in call order)
// fails once n >= fail_after; otherwise it fails with fail_rate, else is corrupted with
// corrupt_rate. Two draws per call from a generator seeded with spec.seed, so a given seed
// and call order always give the same faults. Thread-safe.
class FaultDice {
 public:
  enum class Fault { kNone, kFail, kCorrupt };
  explicit FaultDice(const FaultSpec& spec) : spec_(spec), rng_(spec.seed) {}
  Fault Draw();
  uint64_t calls() const { return calls_.load(); }

 private:
  FaultSpec spec_;
  Mutex mu_;
  std::mt19937_64 rng_ GUARDED_BY(mu_);
  std::atomic<uint64_t> calls_{0};
};

class FaultyMover final : public Mover {
 public:
  FaultyMover(std::shared_ptr<Mover> inner, FaultSpec spec, EventLoop* loop);
  ~FaultyMover() override;

  std::string name() const override { return "faulty(" + inner_->name() + ")"; }
  bool Supports(const Tier& src, const Tier& dst) const override {
    return inner_->Supports(src, dst);
  }
  Result<MoveHandle> Submit(MoveRequest request, MoveCallback on_complete) override;

  uint64_t submitted() const { return dice_.calls(); }
  uint64_t injected_failures() const { return failures_.load(); }
  uint64_t injected_corruptions() const { return corruptions_.load(); }

 private:
  using Fault = FaultDice::Fault;

  std::shared_ptr<Mover> inner_;
  FaultSpec spec_;
  EventLoop* loop_;
  FaultDice dice_;
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> corruptions_{0};
  std::unique_ptr<WorkerPool> watchers_;  // last member: joined first
};

// Flips one byte of `extent` in `tier` (through Data() or read-modify-write block I/O).
Status CorruptOneByte(Tier& tier, const Extent& extent, uint64_t offset);

}  // namespace switchyard::kv_tiers
