// Planner: completion-time estimates for transfers, for the scheduler's decisions.
//
// EstimateTransfer(src, dst, bytes, class) finds the route (cached per device pair,
// PathMetric from PlannerOptions) and returns
//     duration = sum over hops of alpha_i + max over hops of (backlog_i + bytes) / rate_i
// where alpha_i is the link's fixed cost (calibrated alpha, else configured latency),
// rate_i is the smaller of the link's bandwidth (1/beta) and the class's prospective rate
// on that channel under the current load of LinkBudgets (its share among the classes now
// active, with the control reserve, borrowing and background yielding), and backlog_i is
// what the class already owes or has queued there. The hop with the largest second term
// is the bottleneck. Without LinkBudgets the links are taken as idle (rate = bandwidth).
// A link whose bandwidth or latency is unknown (not discovered, configured or
// calibrated) makes the estimate fail with FailedPrecondition naming the link
// (invariant 9): the planner never guesses.
//
// Cost: one route-cache lookup, and per hop one model read and one budget snapshot; no
// allocation on the cached path (bench/net_budget: planner decisions per second).
//
// Ownership: references the Topology and (optionally) LinkBudgets; both must outlive it.
// Thread-safety: EstimateTransfer may be called concurrently (the route cache has its own
// mutex); Invalidate() after the topology's calibration changes, never concurrently with
// estimates.
#pragma once

#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "base/time.h"
#include "net_budget/budget.h"
#include "net_budget/topology.h"
#include "net_budget/traffic_class.h"

namespace switchyard::net_budget {

struct Estimate {
  Duration duration{0};
  LinkIndex bottleneck_link = 0;  // meaningless when hops is 0
  double rate_bytes_per_s = 0;    // the bottleneck's effective rate
  Duration fixed_cost{0};         // sum of alphas
  uint32_t hops = 0;
};

struct PlannerOptions {
  PathMetric route_metric = PathMetric::kFewestHops;
};

class Planner {
 public:
  Planner(const Topology& topo, const LinkBudgets* budgets = nullptr, PlannerOptions opts = {});

  Result<Estimate> EstimateTransfer(DeviceIndex src, DeviceIndex dst, uint64_t bytes,
                                    TrafficClass cls) const;
  Result<Estimate> EstimateTransfer(std::string_view src, std::string_view dst, uint64_t bytes,
                                    TrafficClass cls) const;
  Result<Estimate> EstimatePath(const Path& path, uint64_t bytes, TrafficClass cls) const;
  // The cached route between two devices.
  Result<Path> Route(DeviceIndex src, DeviceIndex dst) const;
  // Drops cached routes and link models (after SetCalibration on the topology).
  void Invalidate();

 private:
  struct LinkCost {
    bool known = false;
    double alpha_s = 0;
    double bandwidth = 0;
    Status error;
  };
  // The cached route (stable address until Invalidate) or null with *error set.
  const Path* CachedRoute(DeviceIndex src, DeviceIndex dst, Status* error) const;

  const Topology& topo_;
  const LinkBudgets* budgets_;
  PlannerOptions opts_;
  std::vector<LinkCost> costs_;
  mutable Mutex mu_;
  mutable std::unordered_map<uint64_t, Result<Path>> routes_ GUARDED_BY(mu_);
};

}  // namespace switchyard::net_budget
