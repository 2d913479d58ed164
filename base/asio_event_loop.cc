#include "base/asio_event_loop.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include "base/completion_batch.h"
#include "base/mutex.h"

namespace switchyard {

AsioEventLoop::AsioEventLoop() = default;

AsioEventLoop::~AsioEventLoop() {
  io_.stop();
  MutexLock lock(&mu_);
  timers_.clear();
}

void AsioEventLoop::Post(Callback fn) {
  pending_.fetch_add(1, std::memory_order_acq_rel);
  auto task = [this, fn = std::move(fn)] {
    pending_.fetch_sub(1, std::memory_order_acq_rel);
    fn();
  };
  // A thread completing many requests at once (the store's committer) hands the loop one
  // handler for all of them: one wake-up of the loop's thread per batch.
  CompletionBatch::Post(
      this, [this](CompletionBatch::Task t) { boost::asio::post(io_, std::move(t)); },
      std::move(task));
}

TimerId AsioEventLoop::PostAt(Time when, Callback fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(io_);
  Duration delay = when - Now();
  if (delay.count() < 0) delay = Duration(0);
  timer->expires_after(delay);
  TimerId id;
  {
    MutexLock lock(&mu_);
    id = next_id_++;
    timers_.emplace(id, timer);
  }
  pending_.fetch_add(1, std::memory_order_acq_rel);
  timer->async_wait([this, id, fn = std::move(fn)](const boost::system::error_code& ec) {
    pending_.fetch_sub(1, std::memory_order_acq_rel);
    bool live;
    {
      MutexLock lock(&mu_);
      live = timers_.erase(id) > 0;
    }
    if (!ec && live) fn();
  });
  return id;
}

bool AsioEventLoop::Cancel(TimerId id) {
  std::shared_ptr<boost::asio::steady_timer> timer;
  {
    MutexLock lock(&mu_);
    auto it = timers_.find(id);
    if (it == timers_.end()) return false;
    timer = it->second;
    timers_.erase(it);
  }
  timer->cancel();
  return true;
}

uint64_t AsioEventLoop::Run() {
  auto guard = boost::asio::make_work_guard(io_);
  if (io_.stopped()) io_.restart();
  return io_.run();
}

uint64_t AsioEventLoop::RunUntil(Time deadline) {
  if (io_.stopped()) io_.restart();
  auto guard = boost::asio::make_work_guard(io_);
  Duration left = deadline - Now();
  if (left.count() <= 0) return io_.poll();
  auto until = std::chrono::steady_clock::now() + left;
  uint64_t n = 0;
  while (!io_.stopped() && std::chrono::steady_clock::now() < until) {
    n += io_.run_until(until);
  }
  return n;
}

void AsioEventLoop::Stop() { io_.stop(); }

}  // namespace switchyard
