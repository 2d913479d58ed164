// What the scheduler core needs to know about the world, as narrow interfaces.
//
//   TransferPlanner  estimates how long moving `bytes` of KV from one Location to another
//                    takes in a traffic class on the budgeted path (alpha-beta model and the
//                    class's current share). net_budget's planner sits behind it in the
//                    service; SimulatedFabric (simulated_fabric.h) in tests and replay.
//   GrantIssuer      hands out budget grants for a transfer on every link of its path
//                    (docs/design.md invariant 6) and takes them back when the transfer ends.
//   ComputeCostModel prefill and decode time of a model on a worker; the roofline
//                    roofline cost model lives in executors/.
//
// The core holds non-owning pointers; the caller keeps these alive longer than the core.
// Thread-safety: called only from the core's thread.
#pragma once

#include <cstdint>
#include <optional>

#include "base/result.h"
#include "base/time.h"
#include "scheduler/types.h"

namespace switchyard::scheduler {

struct TransferEstimate {
  Duration duration{0};
  bool reachable = false;  // false: no path between the two locations
  double path_load = 0;    // highest utilisation by other traffic on the path (0..1)
};

class TransferPlanner {
 public:
  virtual ~TransferPlanner() = default;
  virtual TransferEstimate Estimate(const Location& src, const Location& dst, uint64_t bytes,
                                    TrafficClass cls) const = 0;
};

class GrantIssuer {
 public:
  virtual ~GrantIssuer() = default;
  // A grant for the whole path, or ResourceExhausted when the class has no budget left on
  // some link (the message names the link), or NotFound when there is no path.
  virtual Result<Grant> Acquire(const Location& src, const Location& dst, uint64_t bytes,
                                TrafficClass cls, Time now) = 0;
  // Returns a grant's budget (transfer completed, failed or was cancelled).
  virtual void Release(uint64_t grant_id) = 0;
};

class ComputeCostModel {
 public:
  virtual ~ComputeCostModel() = default;
  // Time to prefill `new_tokens` on top of `context_tokens` already in KV.
  virtual Duration PrefillTime(int64_t new_tokens, int64_t context_tokens) const = 0;
  // Time to decode `steps` tokens one at a time with `context_tokens` in KV at the start.
  virtual Duration DecodeTime(int64_t steps, int64_t context_tokens) const = 0;
  // Bytes of KV one token takes.
  virtual uint64_t KvBytesPerToken() const = 0;
  // One decode step of a batch of `seqs` sequences that read `kv_tokens` of KV in all. By
  // default a GPU's: the weights read once and every sequence's KV, whatever the count
  // (DecodeTime(1, kv_tokens)); an engine that pays per sequence says so.
  virtual Duration BatchStepTime(int64_t seqs, int64_t kv_tokens) const {
    (void)seqs;
    return DecodeTime(1, kv_tokens);
  }
};

}  // namespace switchyard::scheduler
