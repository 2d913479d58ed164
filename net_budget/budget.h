// Link budgets: per-link, per-direction hierarchical token buckets for the four traffic
// classes, and atomic multi-link grants (docs/design.md invariant 6).
//
// Every channel (one direction of a link, capacity C bytes/s) runs a two-level hierarchy:
// the root splits C between `control` (a reserved share, `control_reserve`) and the
// shared pool of latency/throughput/background, which split by weight. Rates go only to
// ACTIVE classes (those with a queued request or a token debt on the channel), so an idle
// class's share is borrowed by the busy ones (work conservation) and a lone class gets
// the whole link; control, when active, gets at least its reserve. Background's weight
// shrinks linearly with the latency class's backlog (queued + owed bytes) on the channel,
// down to `background_floor` × its weight when that backlog reaches
// `latency_yield_backlog_bytes` (background yields as latency demand rises).
//
// Tokens: an active class accrues tokens at its rate. A request for N bytes in class k on
// a path is granted when, on EVERY channel of the path, class k has no queued request
// ahead of it and a non-negative token balance; then N is debited on every channel at
// once (all or nothing), possibly into debt. The debt is paid back at the class's rate,
// which is what holds each class to its share however large its transfers are. Positive
// balances are capped at burst_s × C. Rates are recomputed at every event (request, grant,
// release, timer) and are constant in between; a timer on the EventLoop wakes the
// budgets when the next queued request can be granted.
//
// A Grant records the class, channels and bytes, and is released when the transfer
// completes (Release() or the destructor). Time comes only from the EventLoop (virtual
// in tests and replay).
//
// Ownership: LinkBudgets references the Topology and EventLoop (both must outlive it).
// Grants may outlive LinkBudgets (release then does nothing). Thread-safety: all methods
// are safe from any thread (one mutex); async callbacks run on the EventLoop.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/event_loop.h"
#include "base/result.h"
#include "net_budget/topology.h"
#include "net_budget/traffic_class.h"

namespace switchyard::net_budget {

struct BudgetPolicy {
  // Weights of the classes (relative; control's weight applies above its reserve).
  std::array<double, kNumClasses> weights = {4.0, 3.0, 1.0, 1.0};  // lat, thr, bg, ctrl
  double control_reserve = 0.05;  // fraction of every channel kept for control
  // The reserve on the links of a kind ("nvlink", "nic_port", ... as LinkKindName names
  // them), over control_reserve: the share the collectives get on the links they cross
  // when they run in the control class (TP all-reduce on NVLink, EP all-to-all on NICs).
  std::map<std::string, double> control_reserve_by_link_kind;
  double background_floor = 0.1;  // background keeps >= this fraction of its weight
  double latency_yield_backlog_bytes = 64.0 * 1024 * 1024;
  double burst_s = 0.001;  // positive token balance cap, in seconds of C

  // Reads the topology's budget section; unset fields keep the defaults above.
  // InvalidArgument on a negative weight, a reserve outside [0, 1), etc.
  static Result<BudgetPolicy> FromProto(const v1::BudgetPolicyConfig& cfg);
};

class LinkBudgets;
namespace internal {
struct BudgetCore;
}

// A granted transfer's hold on every channel of its path, in one class. Move-only.
class Grant {
 public:
  Grant() = default;
  Grant(Grant&&) noexcept;
  Grant& operator=(Grant&&) noexcept;
  Grant(const Grant&) = delete;
  Grant& operator=(const Grant&) = delete;
  ~Grant();

  // True while the grant is held (granted and not yet released).
  bool valid() const { return held_; }
  TrafficClass traffic_class() const { return cls_; }
  const std::vector<ChannelIndex>& channels() const { return channels_; }
  uint64_t bytes() const { return bytes_; }
  Time granted_at() const { return granted_at_; }
  uint64_t id() const { return id_; }
  // Marks the transfer complete (idempotent).
  void Release();

 private:
  friend class LinkBudgets;
  friend struct internal::BudgetCore;
  std::weak_ptr<internal::BudgetCore> core_;
  bool held_ = false;
  uint64_t id_ = 0;
  TrafficClass cls_ = TrafficClass::kBackground;
  std::vector<ChannelIndex> channels_;
  uint64_t bytes_ = 0;
  Time granted_at_;
};

using RequestId = uint64_t;

// The view of one channel in one class, for the planner, metrics and tests.
struct ClassState {
  double rate_bytes_per_s = 0;  // current rate (0 when inactive)
  double prospective_rate = 0;  // rate the class would get if it became active now
  double backlog_bytes = 0;     // queued + owed bytes
  uint64_t granted_bytes = 0;   // total bytes granted so far
  uint64_t inflight_bytes = 0;  // granted and not yet released
  uint32_t queued = 0;          // requests waiting
};

class LinkBudgets {
 public:
  LinkBudgets(const Topology& topo, EventLoop* loop, BudgetPolicy policy = {});
  ~LinkBudgets();
  LinkBudgets(const LinkBudgets&) = delete;
  LinkBudgets& operator=(const LinkBudgets&) = delete;

  // Grants now or fails with ResourceExhausted (retryable: the class is behind on some
  // channel of the path). FailedPrecondition when a link of the path has unknown
  // bandwidth (it cannot be budgeted); InvalidArgument for zero bytes or an empty path.
  Result<Grant> TryAcquire(const Path& path, TrafficClass cls, uint64_t bytes);

  // Queues the request (FIFO within its class on each channel) and calls `done` on the
  // EventLoop with the Grant once it is granted, or with the error if it can never be.
  using GrantCallback = std::function<void(Result<Grant>)>;
  RequestId Acquire(const Path& path, TrafficClass cls, uint64_t bytes, GrantCallback done);
  // Withdraws a queued request; its callback gets Cancelled. False if not queued.
  bool Cancel(RequestId id);

  ClassState State(ChannelIndex ch, TrafficClass cls) const;
  // Fills `rates` with the prospective rate and `backlog` of `cls` on each channel of
  // `path` in one lock (used by the planner on its hot path).
  void Snapshot(const Path& path, TrafficClass cls, double* rates, double* backlog) const;
  const BudgetPolicy& policy() const { return policy_; }
  const Topology& topology() const { return topo_; }

 private:
  const Topology& topo_;
  BudgetPolicy policy_;
  std::shared_ptr<internal::BudgetCore> core_;
};

}  // namespace switchyard::net_budget
