#include "kv_store/receiver_credit.h"

#include <algorithm>

#include "base/mutex.h"

namespace switchyard::kv_store {
namespace {

std::string Refusal(const char* limit, uint64_t bytes, uint64_t sender, uint64_t cap,
                    uint64_t in_use, const char* unit) {
  return std::string("credit: put of ") + std::to_string(bytes) + " B from sender " +
         std::to_string(sender) + " exceeds the " + limit + " limit of " + std::to_string(cap) +
         " " + unit + " (" + std::to_string(in_use) + " " + unit + " in use)";
}

}  // namespace

RejectReason ReceiverCredit::Charge(uint64_t sender, uint64_t bytes, std::string* why) {
  MutexLock lock(&mu_);
  Sender& s = senders_[sender];
  std::string refused;
  if (s.bytes + bytes > limits_.per_sender_bytes) {
    refused = Refusal("per-sender", bytes, sender, limits_.per_sender_bytes, s.bytes, "B");
  } else if (s.transfers + 1 > limits_.per_sender_transfers) {
    refused = Refusal("per-sender transfer", bytes, sender, limits_.per_sender_transfers,
                      s.transfers, "puts");
  } else if (state_.in_use_bytes + bytes > limits_.total_bytes) {
    refused =
        Refusal("total (incast)", bytes, sender, limits_.total_bytes, state_.in_use_bytes, "B");
  }
  if (!refused.empty()) {
    if (s.transfers == 0) senders_.erase(sender);
    ++state_.refused;
    if (why != nullptr) *why = std::move(refused);
    return RejectReason::kCredit;
  }
  s.bytes += bytes;
  ++s.transfers;
  state_.in_use_bytes += bytes;
  state_.max_in_use_bytes = std::max(state_.max_in_use_bytes, state_.in_use_bytes);
  state_.max_sender_in_use_bytes = std::max(state_.max_sender_in_use_bytes, s.bytes);
  state_.max_sender_in_use_transfers = std::max(state_.max_sender_in_use_transfers, s.transfers);
  return RejectReason::kNone;
}

void ReceiverCredit::Return(uint64_t sender, uint64_t bytes) {
  MutexLock lock(&mu_);
  auto it = senders_.find(sender);
  if (it == senders_.end()) return;
  Sender& s = it->second;
  uint64_t b = std::min(bytes, s.bytes);
  s.bytes -= b;
  state_.in_use_bytes -= std::min(b, state_.in_use_bytes);
  if (s.transfers > 0) --s.transfers;
  if (s.transfers == 0) senders_.erase(it);
}

ReceiverCreditState ReceiverCredit::State() const {
  MutexLock lock(&mu_);
  return state_;
}

}  // namespace switchyard::kv_store
