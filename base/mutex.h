// Mutex, MutexLock, CondVar (and SharedMutex with Reader/WriterMutexLock): std::mutex,
// std::condition_variable and std::shared_mutex with the capability
// annotations of base/thread_annotations.h, so that clang's -Wthread-safety can check which
// members a lock guards (scripts/thread_safety_check.sh, ctest `thread_safety`).
//
//   class Queue {
//    public:
//     void Push(int v) EXCLUDES(mu_) { MutexLock lock(&mu_); items_.push_back(v); cv_.Signal(); }
//     int Pop() EXCLUDES(mu_) {
//       MutexLock lock(&mu_);
//       while (items_.empty()) cv_.Wait(&mu_);
//       ...
//     }
//    private:
//     Mutex mu_;
//     CondVar cv_;
//     std::deque<int> items_ GUARDED_BY(mu_);
//   };
//
// Waits take the mutex explicitly and have no predicate overloads: the condition is written
// as a loop in the caller, where the analysis sees that the mutex is held (a predicate
// lambda is analysed as a function of its own, holding nothing).
//
// Mutex also has the lower-case lock()/unlock()/try_lock() of the standard's Lockable, so
// that std::unique_lock<Mutex> and std::scoped_lock still work where needed; the analysis
// does not follow those, so prefer MutexLock.
//
// Thread-safety: Mutex and CondVar are shared between threads by design; a MutexLock
// belongs to the thread that made it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "base/thread_annotations.h"

namespace switchyard {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  [[nodiscard]] bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the caller holds the mutex (std::mutex cannot check it).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

  // Lockable, for std::unique_lock / std::scoped_lock (unchecked by the analysis).
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  [[nodiscard]] bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex from construction to destruction. Unlock()/Lock() release and take it
// again inside the scope (the destructor unlocks only if held).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    held_ = false;
    mu_->Unlock();
  }
  void Lock() ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* const mu_;
  bool held_ = true;
};

// A condition variable waited on with a Mutex held. Signal/SignalAll need not hold it,
// but a waker that changes the condition under the mutex and then signals cannot be missed.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases *mu, waits for a signal (or a spurious wake-up), takes *mu again.
  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's MutexLock owns it
  }
  // As Wait, up to `deadline`; false when the deadline passed.
  template <class Clock, class Duration>
  bool WaitUntil(Mutex* mu, const std::chrono::time_point<Clock, Duration>& deadline) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool signalled = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  // As Wait, for up to `timeout`; false when it ran out.
  template <class Rep, class Period>
  bool WaitFor(Mutex* mu, const std::chrono::duration<Rep, Period>& timeout) REQUIRES(mu) {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout);
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// A reader-writer mutex: many readers (ReaderMutexLock) or one writer (WriterMutexLock).
class CAPABILITY("shared mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void ReaderLock() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void ReaderUnlock() RELEASE_SHARED() { mu_.unlock_shared(); }
  void AssertHeld() const ASSERT_CAPABILITY(this) {}
  void AssertReaderHeld() const ASSERT_SHARED_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex exclusively; Unlock()/Lock() as MutexLock's.
class SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterMutexLock() RELEASE() {
    if (held_) mu_->Unlock();
  }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

  void Unlock() RELEASE() {
    held_ = false;
    mu_->Unlock();
  }
  void Lock() ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  SharedMutex* const mu_;
  bool held_ = true;
};

// Holds a SharedMutex shared (readers) from construction to destruction.
class SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->ReaderLock(); }
  ~ReaderMutexLock() RELEASE() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

}  // namespace switchyard
