// WarmupTimer: runs callbacks at given steady-clock times on its own thread, for proxy
// mode's warm-ups timed to a waiting session's predicted return (proxy_steering.h). Not
// for use outside upstream/.
//
// Ownership: destroying it stops the thread; callbacks not yet due are dropped.
// Thread-safety: At() may be called from any thread; callbacks run on the timer's thread,
// one at a time, never under its lock.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "base/mutex.h"

namespace switchyard::upstream::internal {

class WarmupTimer {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  WarmupTimer() : thread_([this] { Run(); }) {}
  ~WarmupTimer() {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    cv_.SignalAll();
    thread_.join();
  }
  WarmupTimer(const WarmupTimer&) = delete;
  WarmupTimer& operator=(const WarmupTimer&) = delete;

  void At(TimePoint when, std::function<void()> fn) {
    {
      MutexLock lock(&mu_);
      due_.emplace(when, std::move(fn));
    }
    cv_.SignalAll();
  }

 private:
  void Run() {
    MutexLock lock(&mu_);
    while (!stopping_) {
      if (due_.empty()) {
        cv_.Wait(&mu_);
        continue;
      }
      auto first = due_.begin();
      if (first->first > std::chrono::steady_clock::now()) {
        cv_.WaitUntil(&mu_, first->first);
        continue;
      }
      std::function<void()> fn = std::move(first->second);
      due_.erase(first);
      lock.Unlock();
      fn();
      lock.Lock();
    }
  }

  Mutex mu_;
  CondVar cv_;
  std::multimap<TimePoint, std::function<void()>> due_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace switchyard::upstream::internal
