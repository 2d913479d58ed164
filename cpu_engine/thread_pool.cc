#include "cpu_engine/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace switchyard::cpu_engine {
namespace {

// How long an idle worker, or a caller whose job others still run, polls before it sleeps
// on a condition variable. A decode step of a small model is a few dozen parallel regions
// of tens of microseconds each: a futex sleep and wake per region cost more than the
// region (bench engine). Short enough that an idle engine gives its cores back at once.
constexpr auto kSpin = std::chrono::microseconds(50);

inline void Relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Polls `ready` for up to kSpin; true when it became true.
template <typename Pred>
bool SpinFor(Pred ready) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    Relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return ready();
  }
}

}  // namespace

struct ThreadPool::Job {
  const std::function<void(int64_t)>* fn = nullptr;
  int64_t n = 0;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::condition_variable finished;  // with the pool's mu_; signalled when done == n
};

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { Work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Work() {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    if (queue_.empty() && !stop_) {
      lk.unlock();
      SpinFor([this] { return queued_.load(std::memory_order_acquire) > 0 || stopping_.load(); });
      lk.lock();
      ++sleepers_;
      wake_.wait(lk, [this] { return stop_ || !queue_.empty(); });
      --sleepers_;
    }
    if (queue_.empty()) return;  // stop_
    Job* j = queue_.front();
    const int64_t i = j->next.fetch_add(1);
    if (i >= j->n) {  // all taken: the job leaves the queue; its caller waits for `done`
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_release);
      continue;
    }
    lk.unlock();
    (*j->fn)(i);
    int64_t ran = 1;
    // Keep taking this job's indices without the lock while there are any.
    for (int64_t k; (k = j->next.fetch_add(1)) < j->n; ++ran) (*j->fn)(k);
    // The caller may free the job as soon as done reaches n: the last to finish signals
    // under the lock, which the caller holds while it decides to sleep.
    lk.lock();
    if (j->done.fetch_add(ran) + ran == j->n) j->finished.notify_all();
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
  bool wake = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(&job);
    queued_.fetch_add(1, std::memory_order_release);
    wake = sleepers_ > 0;
  }
  if (wake) wake_.notify_all();
  int64_t ran = 0;
  for (int64_t i; (i = job.next.fetch_add(1)) < n; ++ran) fn(i);
  std::unique_lock<std::mutex> lk(mu_);
  auto it = std::find(queue_.begin(), queue_.end(), &job);
  if (it != queue_.end()) {  // no worker can take it any more
    queue_.erase(it);
    queued_.fetch_sub(1, std::memory_order_release);
  }
  job.done.fetch_add(ran);
  if (job.done.load() == n) return;
  lk.unlock();
  if (SpinFor([&] { return job.done.load(std::memory_order_acquire) == n; })) {
    lk.lock();  // the finishing worker's notify (under the lock) has returned
    return;
  }
  lk.lock();
  job.finished.wait(lk, [&] { return job.done.load() == n; });
}

}  // namespace switchyard::cpu_engine
