// VirtualEventLoop: a discrete-event EventLoop in virtual time (replay and tests).
//
// Pending callbacks sit in a min-heap ordered by (due time, scheduling sequence); Run
// pops the earliest, moves the clock to its due time and runs it. Time never goes
// backwards: a callback posted for the past runs at the current time. Runs are
// deterministic for a given sequence of Post/PostAt calls.
//
// Thread-safety: as EventLoop. Posts from other threads are accepted (guarded by a
// mutex), but a replay that wants determinism posts only from the loop thread.
#pragma once

#include <atomic>
#include <queue>
#include <unordered_map>
#include <vector>

#include "base/event_loop.h"
#include "base/mutex.h"

namespace switchyard {

class VirtualEventLoop final : public EventLoop {
 public:
  explicit VirtualEventLoop(Time start = Time{0});

  Time Now() const override { return clock_.Now(); }
  const Clock& clock() const override { return clock_; }
  void Post(Callback fn) override;
  TimerId PostAt(Time when, Callback fn) override;
  bool Cancel(TimerId id) override;
  uint64_t Run() override;
  uint64_t RunUntil(Time deadline) override;
  void Stop() override { stop_.store(true, std::memory_order_release); }
  size_t pending() const override;

  // Runs exactly one due callback if any is pending; returns false when none is.
  bool RunOne();
  // Due time of the earliest pending callback (Time::Max() when idle).
  Time NextDue() const;

 private:
  struct Entry {
    Time due;
    uint64_t seq;
    TimerId id;
    bool operator>(const Entry& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  // Pops the next live entry due at or before `limit`; false if none.
  bool PopDue(Time limit, Callback* fn);

  ManualClock clock_;
  mutable Mutex mu_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_ GUARDED_BY(mu_);
  std::unordered_map<TimerId, Callback> live_ GUARDED_BY(mu_);
  uint64_t next_seq_ GUARDED_BY(mu_) = 0;
  TimerId next_id_ GUARDED_BY(mu_) = 1;
  std::atomic<bool> stop_{false};
};

}  // namespace switchyard
