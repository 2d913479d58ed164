// WorkerPool: a few threads that run queued tasks (the local and disk movers' copies).
//
// Tasks run in FIFO order, each on one worker. The destructor drains the queue (every
// task queued before it runs) and joins the threads.
//
// Thread-safety: Submit is thread-safe.
#pragma once

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace switchyard::kv_tiers {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Submit(std::function<void()> task);
  int size() const { return static_cast<int>(threads_.size()); }

 private:
  void Loop();

  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> tasks_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

// Runs fn(from, to) over [0, n) cut into contiguous stripes, one per pool thread and one
// on the calling thread (null pool: fn(0, n) on the caller), and returns when all ended.
// fn must be safe to run on several threads at once over disjoint ranges.
void ParallelFor(WorkerPool* pool, size_t n, const std::function<void(size_t, size_t)>& fn);

}  // namespace switchyard::kv_tiers
