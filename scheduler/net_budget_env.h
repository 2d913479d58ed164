// NetBudgetEnvironment: the scheduler's TransferPlanner and GrantIssuer over net_budget.
//
// The core speaks of Locations (tier, worker); net_budget speaks of topology devices and
// links. This adapter maps each Location to a device id (a LocationMap), asks
// net_budget::Planner for completion-time estimates under the current load of
// net_budget::LinkBudgets, and takes grants from LinkBudgets::TryAcquire on every channel
// of the route in the transfer's class (invariant 6). A grant the core receives is an id;
// the adapter holds the net_budget::Grant until Release(id). The estimate taken just
// before a grant was debited is remembered as the grant's planned duration, which the
// simulated KV mover uses to time the move (the debit itself would otherwise count twice).
//
// BuildClusterTopology() makes the topology of a simulated cluster from a few figures
// (nodes, workers per node, tensor-parallel degree, PCIe/NVLink/NIC/NVMe bandwidths), and
// ClusterLocationMap() the matching LocationMap; the replay benchmark and the service's
// embedded defaults use both. Every figure is configured (invariant 9): the defaults are
// the documented H200 node figures (configs/gpus/h200.json), not discoveries.
//
// Ownership: the environment owns its Topology, Planner and LinkBudgets and borrows the
// EventLoop (budgets refill on its clock). Thread-safety: loop thread only, like the core.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/event_loop.h"
#include "base/mutex.h"
#include "base/result.h"
#include "net_budget/budget.h"
#include "net_budget/planner.h"
#include "net_budget/topology.h"
#include "scheduler/environment.h"

namespace switchyard::scheduler {

// Device id of a Location, or NotFound when it has none (e.g. a worker out of range).
using LocationMap = std::function<Result<std::string>(const Location&)>;

// Figures of a simulated cluster. A worker is one model replica (the core's unit of
// placement); with tp > 1 it spans tp GPUs and is modelled as one device whose PCIe and
// NVLink bandwidths are tp times a GPU's (its KV is spread across the tp GPUs, which move
// their shares in parallel).
struct ClusterShape {
  std::string name = "simulated cluster";
  int nodes = 1;
  int workers_per_node = 1;
  int tp = 1;                      // GPUs per worker
  double pcie_bytes_per_s = 55e9;  // per GPU, per direction (PCIe Gen5 x16, achievable)
  double pcie_latency_s = 10e-6;
  double nvlink_bytes_per_s = 450e9;  // per GPU, per direction (900 GB/s bidirectional)
  double nvlink_latency_s = 3e-6;
  double nic_bytes_per_s = 50e9;  // 400 Gb/s per node
  double nic_latency_s = 5e-6;
  double disk_bytes_per_s = 6e9;  // NVMe per node
  double disk_latency_s = 100e-6;
  // GPUs behind one PCIe switch, sharing its uplink to the host (a DGX H100/H200 has two
  // per switch). 1: every GPU has a link of its own to the host.
  int gpus_per_pcie_switch = 1;
  double pcie_uplink_bytes_per_s = 0;  // per switch, per direction (0: pcie_bytes_per_s)
  // Seconds a copy between a worker and its host spends per byte beyond the bytes' time at
  // link speed: the per-piece cost of copying non-contiguous KV blocks, spread over a
  // block's bytes (replay's kvCopyPieceOverheadS). 0: none.
  double pcie_gather_s_per_byte = 0;
};

// Devices: "node<n>/cpu" (host memory), "node<n>/nvme", "node<n>/w<k>" (worker k of the
// node), "node<n>/nvswitch" when a node has several workers, "node<n>/nic" and "tor" when
// there are several nodes, "node<n>/pcisw<i>" when several workers share a PCIe switch.
// A worker's link to the host runs at tp x pcie_bytes_per_s slowed by the gather cost;
// workers behind one switch reach the host through its uplink, and a worker spanning
// whole switches gets at most their uplinks. InvalidArgument naming the field for a
// non-positive figure or switches that do not divide the node's GPUs.
Result<v1::Topology> BuildClusterTopology(const ClusterShape& shape);
// Workers sharing one PCIe switch in BuildClusterTopology (1: none share; a worker that
// spans whole switches shares none).
int WorkersPerPcieSwitch(const ClusterShape& shape);
// hbm@w and peer@w -> the worker's device; host@w -> its node's cpu; disk@w -> its nvme.
LocationMap ClusterLocationMap(const ClusterShape& shape);

class NetBudgetEnvironment final : public TransferPlanner, public GrantIssuer {
 public:
  static Result<std::unique_ptr<NetBudgetEnvironment>> Create(net_budget::Topology topology,
                                                              LocationMap map, EventLoop* loop,
                                                              net_budget::BudgetPolicy policy = {});
  ~NetBudgetEnvironment() override;

  TransferEstimate Estimate(const Location& src, const Location& dst, uint64_t bytes,
                            TrafficClass cls) const override;
  Result<Grant> Acquire(const Location& src, const Location& dst, uint64_t bytes, TrafficClass cls,
                        Time now) override;
  void Release(uint64_t grant_id) override;

  // The estimate taken when the grant was issued (zero for an unknown id).
  Duration PlannedDuration(uint64_t grant_id) const;
  size_t outstanding_grants() const { return grants_.size(); }

  // Bytes granted so far on a link, both directions, per class (index: ClassIndex).
  struct LinkTraffic {
    std::string link;
    std::array<uint64_t, net_budget::kNumClasses> bytes{};
  };
  std::vector<LinkTraffic> Traffic() const;
  // The same counters without the link names (index: link index of topology()), for
  // callers that sample often (the replay collector samples after every granted move).
  using ClassBytes = std::array<uint64_t, net_budget::kNumClasses>;
  void TrafficBytes(std::vector<ClassBytes>* out) const;

  const net_budget::Topology& topology() const { return *topology_; }
  const net_budget::LinkBudgets& budgets() const { return *budgets_; }

 private:
  NetBudgetEnvironment(std::unique_ptr<net_budget::Topology> topo, LocationMap map, EventLoop* loop,
                       net_budget::BudgetPolicy policy);
  // The route between two locations, resolved once per pair and cached (the topology and
  // the location map never change); the pointer stays valid for the environment's life.
  Result<const net_budget::Path*> Route(const Location& src, const Location& dst) const;
  Result<net_budget::Path> ResolveRoute(const Location& src, const Location& dst) const;

  std::unique_ptr<net_budget::Topology> topology_;
  LocationMap map_;
  std::unique_ptr<net_budget::LinkBudgets> budgets_;
  std::unique_ptr<net_budget::Planner> planner_;
  struct Held {
    net_budget::Grant grant;
    Duration planned{0};
  };
  std::map<uint64_t, Held> grants_;
  uint64_t next_id_ = 1;
  mutable Mutex routes_mu_;
  // Routes by (src, dst) location: owned by routes_, indexed densely by flat_ (slot =
  // tier x workers_cap_ + worker), which grows when a larger worker index shows up.
  mutable std::unordered_map<uint64_t, std::unique_ptr<Result<net_budget::Path>>> routes_
      GUARDED_BY(routes_mu_);
  mutable std::vector<const Result<net_budget::Path>*> flat_ GUARDED_BY(routes_mu_);
  mutable int workers_cap_ GUARDED_BY(routes_mu_) = 0;
};

}  // namespace switchyard::scheduler
