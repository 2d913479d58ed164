// KvMover: how the runtime (executors/runtime.h) carries out a demote, prefetch or peer
// move the core ordered. Completion is reported only once the destination has committed
// the blocks (invariant 3). Implementations: SimulatedKvMover (executors/simulated.h:
// timed by a planner, replay), TieredKvMover (executors/tiered_mover.h: real blocks
// through kv_tiers' BlockManager).
//
// Thread-safety: loop-thread only; `done` runs on the event loop, never synchronously
// inside Move.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "scheduler/events.h"

namespace switchyard::executors {

class KvMover {
 public:
  virtual ~KvMover() = default;
  virtual void Move(const scheduler::Command& move, std::function<void(Status)> done) = 0;
  // Cancels an in-flight move; its `done` runs with Cancelled. False if unknown.
  virtual bool Cancel(uint64_t transfer_id) = 0;
  // The core dropped the context: free whatever holds its bytes (after an in-flight move
  // ends, if one is running). Movers that hold nothing ignore it.
  virtual void Discard(const std::string& context) {}
};

}  // namespace switchyard::executors
