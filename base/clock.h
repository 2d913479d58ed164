// Clock: the injected source of "now" (leveldb Env::NowMicros, rocksdb MockTimeEnv).
//
// Nothing in Switchyard reads the system clock directly; it asks a Clock. RealClock
// reads the system clock (Unix epoch); ManualClock only moves when told, for tests.
//
// Thread-safety: both implementations may be read from any thread; ManualClock's
// setters are atomic.
#pragma once

#include <atomic>

#include "base/time.h"

namespace switchyard {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time Now() const = 0;
};

// Wall-clock time since the Unix epoch.
class RealClock final : public Clock {
 public:
  Time Now() const override;
  // A process-wide instance.
  static RealClock* Default();
};

// A clock that moves only when Set() or Advance() is called.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Time start = Time{0}) : now_(start.ns) {}
  Time Now() const override { return Time{now_.load(std::memory_order_acquire)}; }
  void Set(Time t) { now_.store(t.ns, std::memory_order_release); }
  void Advance(Duration d) { now_.fetch_add(d.count(), std::memory_order_acq_rel); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace switchyard
