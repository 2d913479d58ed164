#include "kv_tiers/worker_pool.h"

#include <algorithm>

namespace switchyard::kv_tiers {

WorkerPool::WorkerPool(int threads) {
  if (threads < 1) threads = 1;
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void WorkerPool::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stop_ and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

void ParallelFor(WorkerPool* pool, size_t n, const std::function<void(size_t, size_t)>& fn) {
  const size_t threads = pool ? std::min<size_t>(static_cast<size_t>(pool->size()) + 1, n) : 1;
  if (threads <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  const size_t per = (n + threads - 1) / threads;
  std::mutex mu;
  std::condition_variable cv;
  size_t running = 0;
  for (size_t t = 0; t + 1 < threads; ++t) {
    size_t from = t * per, to = std::min(n, (t + 1) * per);
    if (from >= to) break;
    {
      std::lock_guard<std::mutex> lock(mu);
      ++running;
    }
    pool->Submit([&, from, to]() {
      fn(from, to);
      std::lock_guard<std::mutex> lock(mu);
      if (--running == 0) cv.notify_one();
    });
  }
  const size_t last = std::min(n, (threads - 1) * per);
  if (last < n) fn(last, n);
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return running == 0; });
}

}  // namespace switchyard::kv_tiers
