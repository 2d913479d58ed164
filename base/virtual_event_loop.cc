#include "base/virtual_event_loop.h"
#include "base/mutex.h"

namespace switchyard {

VirtualEventLoop::VirtualEventLoop(Time start) : clock_(start) {}

void VirtualEventLoop::Post(Callback fn) { PostAt(Now(), std::move(fn)); }

TimerId VirtualEventLoop::PostAt(Time when, Callback fn) {
  MutexLock lock(&mu_);
  Time now = clock_.Now();
  if (when < now) when = now;  // never schedule into the past
  TimerId id = next_id_++;
  heap_.push(Entry{when, next_seq_++, id});
  live_.emplace(id, std::move(fn));
  return id;
}

bool VirtualEventLoop::Cancel(TimerId id) {
  MutexLock lock(&mu_);
  return live_.erase(id) > 0;  // the heap entry is skipped lazily when popped
}

size_t VirtualEventLoop::pending() const {
  MutexLock lock(&mu_);
  return live_.size();
}

Time VirtualEventLoop::NextDue() const {
  MutexLock lock(&mu_);
  auto& heap = const_cast<decltype(heap_)&>(heap_);
  while (!heap.empty() && !live_.count(heap.top().id)) heap.pop();  // drop cancelled
  return heap.empty() ? Time::Max() : heap.top().due;
}

bool VirtualEventLoop::PopDue(Time limit, Callback* fn) {
  MutexLock lock(&mu_);
  while (!heap_.empty()) {
    Entry top = heap_.top();
    auto it = live_.find(top.id);
    if (it == live_.end()) {  // cancelled
      heap_.pop();
      continue;
    }
    if (top.due > limit) return false;
    heap_.pop();
    *fn = std::move(it->second);
    live_.erase(it);
    if (top.due > clock_.Now()) clock_.Set(top.due);
    return true;
  }
  return false;
}

bool VirtualEventLoop::RunOne() {
  Callback fn;
  if (!PopDue(Time::Max(), &fn)) return false;
  fn();
  return true;
}

uint64_t VirtualEventLoop::Run() {
  stop_.store(false, std::memory_order_release);
  uint64_t n = 0;
  Callback fn;
  while (!stop_.load(std::memory_order_acquire) && PopDue(Time::Max(), &fn)) {
    fn();
    ++n;
  }
  return n;
}

uint64_t VirtualEventLoop::RunUntil(Time deadline) {
  stop_.store(false, std::memory_order_release);
  uint64_t n = 0;
  Callback fn;
  while (!stop_.load(std::memory_order_acquire) && PopDue(deadline, &fn)) {
    fn();
    ++n;
  }
  if (!stop_.load(std::memory_order_acquire) && clock_.Now() < deadline) clock_.Set(deadline);
  return n;
}

}  // namespace switchyard
