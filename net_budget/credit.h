// Per-destination credit (docs/design.md invariant 7): a sender holds credit granted by the
// receiver before it posts a transfer, and the receiver returns it once it has committed
// or rejected the data. This is the ledger of one receiver's credit, kept where the
// receiver's limits are known (in the receiver's process, or mirrored by the transport).
//
// Each destination has limits, set by its receiver: max in-flight bytes, max in-flight
// transfers (slots), and an incast limit (max distinct senders holding credit at once).
// AcquireCredit grants a move-only CreditLease or fails with ResourceExhausted
// (retryable: backpressure). AcquireCreditAsync queues instead; waiters of a destination
// are served strictly FIFO as credit returns (a later small request never overtakes an
// earlier large one, and TryAcquire fails while anyone waits), and their callbacks run on
// the EventLoop. A request larger than the destination's byte limit is InvalidArgument
// (it could never be served). A lease returns its credit on Release() or destruction.
//
// Ownership: the CreditManager references the EventLoop (it must outlive it). Leases may
// outlive the manager (then release does nothing). Thread-safety: all methods are safe
// from any thread (one mutex); callbacks run on the EventLoop, never under the lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/event_loop.h"
#include "base/result.h"

namespace switchyard::net_budget {

struct CreditLimits {
  uint64_t max_inflight_bytes = 256ull << 20;
  uint32_t max_inflight_transfers = 64;  // slots
  uint32_t max_senders = 8;              // incast limit
};

namespace internal {
struct CreditCore;
}

class CreditLease {
 public:
  CreditLease() = default;
  CreditLease(CreditLease&&) noexcept;
  CreditLease& operator=(CreditLease&&) noexcept;
  CreditLease(const CreditLease&) = delete;
  CreditLease& operator=(const CreditLease&) = delete;
  ~CreditLease();

  bool valid() const { return held_; }
  const std::string& destination() const { return dest_; }
  const std::string& sender() const { return sender_; }
  uint64_t bytes() const { return bytes_; }
  // Returns the credit (the receiver committed or rejected the data). Idempotent.
  void Release();

 private:
  friend struct internal::CreditCore;
  std::weak_ptr<internal::CreditCore> core_;
  bool held_ = false;
  std::string dest_;
  std::string sender_;
  uint64_t bytes_ = 0;
};

struct CreditState {
  CreditLimits limits;
  uint64_t inflight_bytes = 0;
  uint32_t inflight_transfers = 0;
  uint32_t senders = 0;  // distinct senders holding credit
  uint32_t waiters = 0;
};

using CreditWaitId = uint64_t;

class CreditManager {
 public:
  // `default_limits`: limits of a destination nobody configured; unset means such a
  // destination has granted no credit (AcquireCredit fails with FailedPrecondition).
  explicit CreditManager(EventLoop* loop, std::optional<CreditLimits> default_limits = {});
  ~CreditManager();
  CreditManager(const CreditManager&) = delete;
  CreditManager& operator=(const CreditManager&) = delete;

  // The receiver announces (or changes) its limits. Shrinking below what is in flight
  // only blocks new credit until enough returns. InvalidArgument on zero limits.
  Status SetLimits(const std::string& dest, CreditLimits limits);

  Result<CreditLease> AcquireCredit(const std::string& dest, uint64_t bytes,
                                    const std::string& sender = "");
  using CreditCallback = std::function<void(Result<CreditLease>)>;
  CreditWaitId AcquireCreditAsync(const std::string& dest, uint64_t bytes,
                                  const std::string& sender, CreditCallback done);
  // Withdraws a waiter; its callback gets Cancelled. False if it is not waiting.
  bool Cancel(CreditWaitId id);

  // NotFound for a destination that has no limits (and no defaults).
  Result<CreditState> State(const std::string& dest) const;

 private:
  std::shared_ptr<internal::CreditCore> core_;
};

}  // namespace switchyard::net_budget
