// ReceiverCredit: the receiver's side of per-destination credit (docs/design.md
// invariant 7) — the ledger a `switchyard worker` keeps of the put bytes it has accepted
// (header admitted, data arriving or being validated) and not yet committed or rejected,
// per sender and in total.
//
// A put is charged when its header arrives: refused (RejectReason::kCredit, with a
// message naming the limit) when it would take its sender past the per-sender byte limit
// or slot limit, or the worker past its total (incast) limit. The charge is returned
// once the put has been committed or rejected (or cancelled because its sender failed),
// before the ack goes out, so a sender that frees its credit on the ack never sees less
// free credit at the receiver than in its own ledger. The highest in-use figures ever
// seen are kept, so that tests and operators can check the limits held.
//
// Ownership: a value type; holds no references. Thread-safety: all methods are safe from
// any thread (one mutex): the worker loop charges, the loop or its verifier returns.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/mutex.h"
#include "kv_store/kv_store_protocol.h"

namespace switchyard::kv_store {

struct ReceiverCreditLimits {
  uint64_t per_sender_bytes = 0;
  uint64_t total_bytes = 0;
  uint32_t per_sender_transfers = 0;  // puts in flight per sender
};

struct ReceiverCreditState {
  uint64_t in_use_bytes = 0;             // accepted, not yet committed or rejected
  uint64_t max_in_use_bytes = 0;         // highest in_use_bytes seen
  uint64_t max_sender_in_use_bytes = 0;  // highest in-use bytes of any one sender
  uint32_t max_sender_in_use_transfers = 0;
  uint64_t refused = 0;  // puts refused for credit
};

class ReceiverCredit {
 public:
  // Limits must be > 0 (KvStoreServer::Start checks them).
  explicit ReceiverCredit(ReceiverCreditLimits limits) : limits_(limits) {}

  const ReceiverCreditLimits& limits() const { return limits_; }

  // Charges a put of `bytes` from `sender`. kNone when charged; kCredit when refused
  // (nothing charged), with `*why` naming the limit, the request and what is in use.
  RejectReason Charge(uint64_t sender, uint64_t bytes, std::string* why);
  // Returns a charge made by Charge (the put was committed, rejected or cancelled).
  void Return(uint64_t sender, uint64_t bytes);

  ReceiverCreditState State() const;

 private:
  struct Sender {
    uint64_t bytes = 0;
    uint32_t transfers = 0;
  };
  const ReceiverCreditLimits limits_;
  mutable Mutex mu_;
  std::map<uint64_t, Sender> senders_ GUARDED_BY(mu_);
  ReceiverCreditState state_ GUARDED_BY(mu_);
};

}  // namespace switchyard::kv_store
