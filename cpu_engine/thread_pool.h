// cpu_engine::ThreadPool: a small persistent pool for the CPU engine's kernels. ParallelFor(n, fn)
// runs fn(0..n-1) on the pool's workers and the calling thread and returns when all have
// run. Which thread runs an index is not fixed, so callers make every index's result
// independent of the thread that computes it (model.cc partitions by output columns and
// rows, never by thread count).
//
// Thread-safety: ParallelFor may be called from several threads at once: each call queues
// its own job, the caller works on its own job's indices (so a call always makes progress,
// even while the workers serve another caller), and the workers take indices from the
// oldest unfinished job. fn must not call ParallelFor on the same pool. Idle workers and a
// caller waiting for its job's last indices poll for ~50 us before they sleep: a decode
// step is dozens of short parallel regions, and a sleep and wake per region cost more
// than the region.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace switchyard::cpu_engine {

class ThreadPool {
 public:
  // `threads` computing threads in all: threads − 1 workers plus each caller (1: no
  // workers, ParallelFor runs on the caller).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  void ParallelFor(int64_t n, const std::function<void(int64_t)>& fn);

 private:
  struct Job;
  void Work();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Job*> queue_;
  bool stop_ = false;
  // Idle workers and waiting callers poll these for a short while before they sleep
  // (thread_pool.cc, kSpin); a caller wakes sleepers only when there are any.
  std::atomic<int> queued_{0};
  std::atomic<bool> stopping_{false};
  int sleepers_ = 0;  // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace switchyard::cpu_engine
