#include "executors/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>

namespace switchyard::executors::cpu {

struct ThreadPool::Job {
  const std::function<void(int64_t)>* fn = nullptr;
  int64_t n = 0;
  std::atomic<int64_t> next{0};
  int64_t done = 0;  // guarded by mu_
  std::condition_variable finished;
};

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { Work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Work() {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    wake_.wait(lk, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_
    Job* j = queue_.front();
    const int64_t i = j->next.fetch_add(1);
    if (i >= j->n) {  // all taken: the job leaves the queue; its caller waits for `done`
      queue_.pop_front();
      continue;
    }
    lk.unlock();
    (*j->fn)(i);
    int64_t ran = 1;
    // Keep taking this job's indices without the lock while there are any.
    for (int64_t k; (k = j->next.fetch_add(1)) < j->n; ++ran) (*j->fn)(k);
    lk.lock();
    j->done += ran;
    if (j->done == j->n) j->finished.notify_all();
  }
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(&job);
  }
  wake_.notify_all();
  int64_t ran = 0;
  for (int64_t i; (i = job.next.fetch_add(1)) < n; ++ran) fn(i);
  std::unique_lock<std::mutex> lk(mu_);
  auto it = std::find(queue_.begin(), queue_.end(), &job);
  if (it != queue_.end()) queue_.erase(it);  // no worker can take it any more
  job.done += ran;
  job.finished.wait(lk, [&] { return job.done == n; });
}

}  // namespace switchyard::executors::cpu
