// EventLoop: where the runtime's work runs, in real or in virtual time.
//
// The scheduler core is pure; the runtime that feeds it owns time through this
// interface. Two implementations exist behind it so that the same runtime code runs in
// the HTTP service and in replay:
//   - AsioEventLoop (asio_event_loop.h): a Boost.Asio io_context and steady timers,
//     real time (Unix-epoch Time from a RealClock).
//   - VirtualEventLoop (virtual_event_loop.h): a discrete-event queue; time jumps to the
//     next due event, so an hour of trace replays in milliseconds, deterministically.
// Callbacks due at the same time run in the order they were scheduled (FIFO).
//
// Thread-safety: Post/PostAt/Cancel may be called from any thread (movers complete on
// worker threads and post their completion here). Run/RunUntil/RunFor are called from one
// thread at a time; callbacks run on that thread.
#pragma once

#include <cstdint>
#include <functional>

#include "base/clock.h"
#include "base/time.h"

namespace switchyard {

using TimerId = uint64_t;
constexpr TimerId kNoTimer = 0;

class EventLoop {
 public:
  using Callback = std::function<void()>;

  virtual ~EventLoop() = default;

  // The loop's current time; also available as a Clock for components that only read.
  virtual Time Now() const = 0;
  virtual const Clock& clock() const = 0;

  // Runs `fn` on the loop as soon as possible (after already-due callbacks).
  virtual void Post(Callback fn) = 0;
  // Runs `fn` at `when` (immediately if `when` has passed). Returns an id for Cancel.
  virtual TimerId PostAt(Time when, Callback fn) = 0;
  TimerId PostAfter(Duration delay, Callback fn) { return PostAt(Now() + delay, std::move(fn)); }
  // Cancels a pending timer; returns false if it already ran, was cancelled or is unknown.
  virtual bool Cancel(TimerId id) = 0;

  // Runs until Stop() is called or (virtual loop) no work is left. Returns callbacks run.
  virtual uint64_t Run() = 0;
  // Runs callbacks due at or before `deadline`, then returns. On the virtual loop time
  // ends at `deadline`; on the real loop this blocks until then.
  virtual uint64_t RunUntil(Time deadline) = 0;
  uint64_t RunFor(Duration d) { return RunUntil(Now() + d); }
  // Makes Run()/RunUntil() return after the current callback. Thread-safe.
  virtual void Stop() = 0;

  // Number of scheduled callbacks not yet run (timers and posts).
  virtual size_t pending() const = 0;
};

}  // namespace switchyard
