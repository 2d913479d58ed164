// SimulatedFabric: a simulated cluster network and budget for tests and replay.
//
// Implements TransferPlanner and GrantIssuer over a small link table built from worker
// count and per-link bandwidths: each worker has a PCIe link (HBM <-> host) and a disk
// link (host <-> disk); each worker pair has a peer link (NVLink or NIC). A path is the
// list of links a move crosses; its estimate is the sum of link alphas plus bytes over
// the narrowest effective bandwidth, where effective = bandwidth x max(1 - load,
// class_floor[class]) and `load` is the simulated background utilisation of the link
// (set by tests to model congestion). Grants: each link admits at most
// max_grants[class] concurrent grants per class; Acquire takes one on every link of the
// path or none. This is a stand-in, named simulated, for net_budget's planner/budget.
//
// Thread-safety: none (single-threaded core and runtime).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "scheduler/environment.h"

namespace switchyard::scheduler {

struct SimulatedLink {
  std::string name;
  double bandwidth = 0;  // bytes/s
  Duration alpha{0};
  double load = 0;  // simulated background utilisation, 0..1
  int grants[4] = {0, 0, 0, 0};
};

class SimulatedFabric final : public TransferPlanner, public GrantIssuer {
 public:
  struct Options {
    int workers = 1;
    double pcie_bandwidth = 50e9;  // PCIe Gen5 x16, achievable
    Duration pcie_alpha = Micros(10);
    double disk_bandwidth = 6e9;  // NVMe
    Duration disk_alpha = Micros(100);
    double peer_bandwidth = 50e9;  // 400 Gb/s NIC
    Duration peer_alpha = Micros(20);
    double class_floor[4] = {0.5, 0.3, 0.1, 0.05};  // latency, throughput, background, control
    int max_grants[4] = {64, 16, 8, 64};
  };
  explicit SimulatedFabric(Options o);

  TransferEstimate Estimate(const Location& src, const Location& dst, uint64_t bytes,
                            TrafficClass cls) const override;
  Result<Grant> Acquire(const Location& src, const Location& dst, uint64_t bytes, TrafficClass cls,
                        Time now) override;
  void Release(uint64_t grant_id) override;

  // Test and replay knobs.
  void SetPeerBandwidth(int a, int b, double bytes_per_s);
  void SetPcieLoad(int worker, double load);
  void SetPeerLoad(int a, int b, double load);
  size_t outstanding_grants() const { return grants_.size(); }

 private:
  std::vector<int> PathOf(const Location& src, const Location& dst) const;
  int PcieLink(int w) const { return w; }
  int DiskLink(int w) const { return workers_ + w; }
  int PeerLink(int a, int b) const;

  Options options_;
  int workers_;
  std::vector<SimulatedLink> links_;
  struct Held {
    std::vector<int> path;
    TrafficClass cls;
  };
  std::map<uint64_t, Held> grants_;
  uint64_t next_grant_ = 1;
};

}  // namespace switchyard::scheduler
