// Ownership of the ucp worker and its progress: the progress thread, waiters that drive the
// worker themselves, the command queue, sleeping on the worker's event fd, completions.
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <future>

#include "base/mutex.h"
#include "transport/internal/ucx_transport_impl.h"

namespace switchyard::transport::ucx_internal {

void UcxTransport::Wake() {
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof(one));
}

void UcxTransport::Enqueue(Command c) {
  {
    MutexLock lock(&queue_mu_);
    queue_.push_back(std::move(c));
    queued_.fetch_add(1);  // seq_cst: pairs with sleepers_ in ArmForSleep
  }
  if (sleepers_.load() > 0) Wake();
}

void UcxTransport::Submit(Command c) {
  if (tls_owner == this) return Execute(c);
  std::unique_lock<std::timed_mutex> lock(progress_mu_, std::try_to_lock);
  if (!lock.owns_lock() || stop_progress_.load()) {
    if (lock.owns_lock()) lock.unlock();
    return Enqueue(std::move(c));
  }
  {
    OwnerScope owner(this);
    DrainQueue();  // what was queued before goes first (a cancel after its post)
    Execute(c);
  }
  lock.unlock();
  // A sleeping progress thread must see the new operation (it may need progress).
  if (sleepers_.load() > 0) Wake();
}

void UcxTransport::Call(std::function<void()> fn) {
  if (tls_owner == this) return fn();
  {
    std::unique_lock<std::timed_mutex> lock(progress_mu_, std::try_to_lock);
    if (lock.owns_lock() && !stop_progress_.load()) {
      OwnerScope owner(this);
      DrainQueue();
      return fn();
    }
  }
  std::promise<void> done;
  Command c;
  c.kind = Command::kCall;
  c.fn = [&] {
    fn();
    done.set_value();
  };
  std::future<void> f = done.get_future();
  Enqueue(std::move(c));
  f.wait();
}

void UcxTransport::BumpCompletions() {
  completions_.fetch_add(1);  // seq_cst: pairs with completion_waiters_
  if (completion_waiters_.load() > 0) {
    { MutexLock lock(&completion_mu_); }
    completion_cv_.SignalAll();
  }
}

void UcxTransport::WaitForCompletion(uint64_t seen, Duration timeout) {
  const TimePoint until = Clock::now() + timeout;
  auto moved = [&] { return completions_.load() != seen; };
  while (!moved() && Clock::now() < until) {
    if (Drive(moved, until)) continue;
    // Another thread owns the worker: its completions wake us.
    MutexLock lock(&completion_mu_);
    completion_waiters_.fetch_add(1);
    const TimePoint wake = std::min(until, Clock::now() + kRetryDrive);
    while (!moved() && completion_cv_.WaitUntil(&completion_mu_, wake)) {
    }
    completion_waiters_.fetch_sub(1);
  }
}

void UcxTransport::SleepOwned(std::optional<TimePoint> until) {
  // Only long-wait receives pending and the spin window over: sleep on the fds, keeping
  // the worker (an event, a post or a shutdown wakes us).
  int ms = 100;
  if (until) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*until - Clock::now()).count();
    ms = static_cast<int>(std::clamp<int64_t>(left, 0, 100));
  }
  if (ArmForSleep()) {
    pollfd fds[2] = {{worker_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    ::poll(fds, 2, ms);
  }
  EndSleep();
}

void UcxTransport::DrainQueue() {
  if (queued_.load() == 0) return;
  std::vector<Command> batch;
  {
    MutexLock lock(&queue_mu_);
    batch.swap(queue_);
    queued_.store(0);
  }
  for (Command& c : batch) Execute(c);
}

bool UcxTransport::IdleStep(Spin& spin) {
  // Operations in flight: keep polling, yielding the CPU now and then.
  if (busy_ops_ > 0) {
    if (++spin.empty % kYieldEvery == 0) sched_yield();
    spin.idle_since = {};
    return false;
  }
  // Nothing pending but long-wait receives: keep polling for kSpinWindow, then sleep. The
  // clock is read only every kClockEvery empty polls.
  constexpr int kClockEvery = 64;
  if (++spin.empty % kClockEvery != 1) {
    if (spin.empty % kYieldEvery == 0) sched_yield();
    return false;
  }
  auto now = Clock::now();
  if (spin.idle_since == TimePoint{}) spin.idle_since = now;
  return now - spin.idle_since >= kSpinWindow;
}

bool UcxTransport::ArmForSleep() {
  // sleepers_ is raised before the queue is checked again, and Enqueue pushes before it
  // reads sleepers_ (both seq_cst), so a command is either seen here or its poster writes
  // the wake fd.
  sleepers_.fetch_add(1);
  return queued_.load() == 0 && !stop_progress_.load() && ucp_worker_arm(worker_) == UCS_OK;
}

void UcxTransport::EndSleep() {
  sleepers_.fetch_sub(1);
  uint64_t v;
  (void)!::read(wake_fd_, &v, sizeof(v));  // non-blocking: drain a wake-up if any
}

bool UcxTransport::StandDown() {
  bool stood = false;
  while (!stop_progress_.load()) {
    int d = drivers_.load();
    if (d > 0) {
      drivers_.wait(d);
      stood = true;
      continue;
    }
    auto since = std::chrono::nanoseconds(NowNs() - last_drive_.load());
    if (since >= kDriverGrace) return stood;
    std::this_thread::sleep_for(kDriverGrace - since);
    stood = true;
  }
  return true;
}

void UcxTransport::ProgressLoop() {
  ::prctl(PR_SET_TIMERSLACK, 1000);  // the stand-down sleeps are tens of microseconds
  while (!stop_progress_.load(std::memory_order_relaxed)) {
    if (StandDown()) continue;  // application threads drive the worker themselves
    std::unique_lock<std::timed_mutex> lock(progress_mu_);
    Drove why;
    bool armed = false;
    {
      OwnerScope owner(this);
      why = RunOwned([&] { return drivers_.load(std::memory_order_relaxed) > 0; }, std::nullopt);
      if (why == Drove::kIdle) armed = ArmForSleep();
    }
    lock.unlock();
    if (why != Drove::kIdle) continue;  // a waiter takes the worker over, or shutdown
    // Sleep on the worker's event fd and the wake fd without holding the worker: a waiter
    // may take it over meanwhile.
    if (armed) {
      pollfd fds[2] = {{worker_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      ::poll(fds, 2, 100);
    }
    EndSleep();
  }
  std::lock_guard<std::timed_mutex> lock(progress_mu_);
  OwnerScope owner(this);
  Shutdown();
}

void UcxTransport::Execute(Command& c) {
  switch (c.kind) {
    case Command::kSend:
    case Command::kRecv:
      return Post(c);
    case Command::kCancel: {
      auto it = inflight_.find(c.op.get());
      if (it != inflight_.end() && it->second.request != nullptr) {
        ucp_request_cancel(worker_, it->second.request);
      }
      return;
    }
    case Command::kCall:
      c.fn();
      return;
  }
}

void UcxTransport::Post(Command& c) {
  OpState* op = c.op.get();
  if (op->done.load()) return;  // cancelled before it was posted
  ucp_request_param_t param{};
  // Always complete through the callback (UCX 1.13 does not fill recv_info on an
  // immediate completion, which would lose the length and sender tag).
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.user_data = op;
  param.datatype = c.datatype;
  ucp_ep_h ep = nullptr;
  if (c.kind == Command::kSend) {
    auto it = eps_.find(c.peer);
    if (it == eps_.end()) {
      Status why = PeerStatus(c.peer);  // a failed peer's endpoint is closed: say why
      op->Complete(why.ok() ? Status::NotFound("ucx: unknown peer " + std::to_string(c.peer)) : why,
                   0, 0);
      return BumpCompletions();
    }
    ep = it->second.ep;
  }
  // Registered before the call: with NO_IMM_CMPL, an operation that completes at once
  // (an eager send, a receive matching a message that already arrived) runs its
  // callback inside the call, and Finish must find it then.
  inflight_[op] =
      Inflight{std::move(c.op), nullptr, c.busy, c.silent, c.kind == Command::kSend ? c.peer : 0};
  if (c.busy) ++busy_ops_;
  ucs_status_ptr_t req;
  const char* what;
  if (c.kind == Command::kSend) {
    what = "ucx send";
    param.cb.send = &UcxTransport::SendCb;
    req = ucp_tag_send_nbx(ep, c.buffer, c.count, c.tag, &param);
  } else {
    what = "ucx receive";
    param.cb.recv = &UcxTransport::RecvCb;
    req = ucp_tag_recv_nbx(worker_, c.buffer, c.count, c.tag, c.mask, &param);
  }
  auto it = inflight_.find(op);
  if (it == inflight_.end()) return;  // completed (and freed) inside the call
  if (UCS_PTR_IS_ERR(req) || req == nullptr) {
    std::shared_ptr<OpState> keep = std::move(it->second.op);
    if (it->second.busy) --busy_ops_;
    inflight_.erase(it);
    op->Complete(req == nullptr ? Status::OK() : FromUcs(UCS_PTR_STATUS(req), what), op->bytes, 0);
    return BumpCompletions();
  }
  it->second.request = req;
}

void UcxTransport::Finish(OpState* op, void* request, Status status, uint64_t bytes, Tag tag) {
  // On the worker's owner, inside ucp_worker_progress (or a cancel/close it drives).
  auto it = inflight_.find(op);
  std::shared_ptr<OpState> keep;
  bool silent = false;
  if (it != inflight_.end()) {
    keep = std::move(it->second.op);
    if (it->second.busy) --busy_ops_;
    silent = it->second.silent;
    // A send cancelled because its peer failed (its endpoint force-closed) reports why.
    if (status.IsCancelled() && it->second.peer != 0) {
      Status peer = PeerStatus(it->second.peer);
      if (!peer.ok() && !peer.IsNotFound()) status = peer;
    }
    inflight_.erase(it);
  }
  ucp_request_free(request);
  op->Complete(std::move(status), bytes, tag);
  if (!silent) BumpCompletions();
}

void UcxTransport::SendCb(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<OpState*>(user_data);
  auto* self = static_cast<UcxTransport*>(op->backend_owner);
  self->Finish(op, request, status == UCS_OK ? Status::OK() : FromUcs(status, "ucx send"),
               op->bytes, 0);
}

void UcxTransport::RecvCb(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                          void* user_data) {
  auto* op = static_cast<OpState*>(user_data);
  auto* self = static_cast<UcxTransport*>(op->backend_owner);
  uint64_t len = status == UCS_OK && info ? info->length : 0;
  Tag tag = info ? info->sender_tag : 0;
  self->Finish(op, request, status == UCS_OK ? Status::OK() : FromUcs(status, "ucx receive"), len,
               tag);
}

void UcxTransport::CloseEp(ucp_ep_h ep) {
  // Owner. Force: pending operations on it complete with an error now.
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &p);
  if (!UCS_PTR_IS_PTR(req)) return;
  auto until = std::chrono::steady_clock::now() + kShutdownBound;
  while (ucp_request_check_status(req) == UCS_INPROGRESS &&
         std::chrono::steady_clock::now() < until) {
    ucp_worker_progress(worker_);
  }
  ucp_request_free(req);
}

}  // namespace switchyard::transport::ucx_internal
