// AsioEventLoop: the real-time EventLoop on a Boost.Asio io_context.
//
// Post maps to asio::post, or, while the calling thread has a CompletionBatch open, to one
// post of the whole batch when it closes (base/completion_batch.h). PostAt maps to a
// steady_timer armed for (when - Now()). Time is read from a RealClock (Unix epoch). The
// io_context is exposed so that network code (Boost.Beast) can share it; Run() keeps the
// context alive until Stop(), even when idle.
//
// Thread-safety: as EventLoop. Several threads may call Run() on the same loop to get a
// multi-threaded io_context (the HTTP service does); callbacks then run concurrently.
#pragma once

#include <atomic>
#include <memory>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/event_loop.h"
#include "base/mutex.h"

namespace switchyard {

class AsioEventLoop final : public EventLoop {
 public:
  AsioEventLoop();
  ~AsioEventLoop() override;

  Time Now() const override { return clock_.Now(); }
  const Clock& clock() const override { return clock_; }
  void Post(Callback fn) override;
  TimerId PostAt(Time when, Callback fn) override;
  bool Cancel(TimerId id) override;
  uint64_t Run() override;
  uint64_t RunUntil(Time deadline) override;
  void Stop() override;
  size_t pending() const override { return pending_.load(std::memory_order_acquire); }

  boost::asio::io_context& io_context() { return io_; }

 private:
  RealClock clock_;
  boost::asio::io_context io_;
  Mutex mu_;
  std::unordered_map<TimerId, std::shared_ptr<boost::asio::steady_timer>> timers_ GUARDED_BY(mu_);
  TimerId next_id_ GUARDED_BY(mu_) = 1;
  std::atomic<size_t> pending_{0};
};

}  // namespace switchyard
