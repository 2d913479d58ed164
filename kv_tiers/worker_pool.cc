#include "kv_tiers/worker_pool.h"

#include <algorithm>

#include "base/mutex.h"

namespace switchyard::kv_tiers {

WorkerPool::WorkerPool(int threads) {
  if (threads < 1) threads = 1;
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkerPool::~WorkerPool() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  for (auto& t : threads_) t.join();
}

void WorkerPool::Submit(std::function<void()> task) {
  {
    MutexLock lock(&mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.Signal();
}

void WorkerPool::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(&mu_);
      while (!stop_ && tasks_.empty()) cv_.Wait(&mu_);
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
  Mutex mu;
  CondVar cv;
  size_t running = 0;
  for (size_t t = 0; t + 1 < threads; ++t) {
    size_t from = t * per, to = std::min(n, (t + 1) * per);
    if (from >= to) break;
    {
      MutexLock lock(&mu);
      ++running;
    }
    pool->Submit([&, from, to]() {
      fn(from, to);
      MutexLock lock(&mu);
      if (--running == 0) cv.Signal();
    });
  }
  const size_t last = std::min(n, (threads - 1) * per);
  if (last < n) fn(last, n);
  MutexLock lock(&mu);
  while (running != 0) cv.Wait(&mu);
}

}  // namespace switchyard::kv_tiers
