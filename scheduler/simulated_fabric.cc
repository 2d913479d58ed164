#include "scheduler/simulated_fabric.h"

#include <algorithm>
#include <utility>

namespace switchyard::scheduler {

SimulatedFabric::SimulatedFabric(Options o) : options_(o), workers_(std::max(1, o.workers)) {
  for (int w = 0; w < workers_; ++w)
    links_.push_back({"pcie@" + std::to_string(w), o.pcie_bandwidth, o.pcie_alpha});
  for (int w = 0; w < workers_; ++w)
    links_.push_back({"disk@" + std::to_string(w), o.disk_bandwidth, o.disk_alpha});
  for (int a = 0; a < workers_; ++a)
    for (int b = a + 1; b < workers_; ++b)
      links_.push_back(
          {"peer@" + std::to_string(a) + "-" + std::to_string(b), o.peer_bandwidth, o.peer_alpha});
}

int SimulatedFabric::PeerLink(int a, int b) const {
  if (a > b) std::swap(a, b);
  // Index of pair (a, b) in row-major upper-triangular order.
  int before = a * workers_ - a * (a + 1) / 2;
  return 2 * workers_ + before + (b - a - 1);
}

// Where the bytes physically sit: a device (worker) and a level (hbm / host / disk).
std::vector<int> SimulatedFabric::PathOf(const Location& src, const Location& dst) const {
  auto valid = [&](const Location& l) {
    return l.worker >= 0 && l.worker < workers_ && l.tier != Tier::kNone;
  };
  if (!valid(src) || !valid(dst)) return {};
  // Normalise: peer copies live in the peer worker's HBM.
  auto level = [](Tier t) { return t == Tier::kPeer ? Tier::kHbm : t; };
  Tier s = level(src.tier), d = level(dst.tier);
  std::vector<int> path;
  // Up from src to its HBM, across to dst's worker, down to dst's level.
  if (s == Tier::kDisk) path.push_back(DiskLink(src.worker));
  if (s == Tier::kDisk || s == Tier::kHost) path.push_back(PcieLink(src.worker));
  if (src.worker != dst.worker) path.push_back(PeerLink(src.worker, dst.worker));
  if (d == Tier::kDisk || d == Tier::kHost) path.push_back(PcieLink(dst.worker));
  if (d == Tier::kDisk) path.push_back(DiskLink(dst.worker));
  if (path.empty() && s != d) path.push_back(PcieLink(src.worker));
  return path;
}

TransferEstimate SimulatedFabric::Estimate(const Location& src, const Location& dst, uint64_t bytes,
                                           TrafficClass cls) const {
  std::vector<int> path = PathOf(src, dst);
  if (path.empty()) return {Duration(0), src == dst};
  Duration alpha{0};
  double bw = 1e30;
  double load = 0;
  for (int l : path) {
    const SimulatedLink& link = links_[static_cast<size_t>(l)];
    alpha += link.alpha;
    load = std::max(load, link.load);
    double share = std::max(1.0 - link.load, options_.class_floor[static_cast<int>(cls)]);
    bw = std::min(bw, link.bandwidth * share);
  }
  return {alpha + Seconds(static_cast<double>(bytes) / bw), true, load};
}

Result<Grant> SimulatedFabric::Acquire(const Location& src, const Location& dst, uint64_t bytes,
                                       TrafficClass cls, Time) {
  std::vector<int> path = PathOf(src, dst);
  if (path.empty())
    return Status::NotFound("simulated fabric: no path " + LocationString(src) + " -> " +
                            LocationString(dst));
  int c = static_cast<int>(cls);
  for (int l : path) {
    const SimulatedLink& link = links_[static_cast<size_t>(l)];
    if (link.grants[c] >= options_.max_grants[c])
      return Status::ResourceExhausted("simulated fabric: class " +
                                       std::string(TrafficClassName(cls)) +
                                       " has no budget left on link " + link.name);
  }
  for (int l : path) links_[static_cast<size_t>(l)].grants[c]++;
  uint64_t id = next_grant_++;
  grants_[id] = Held{std::move(path), cls};
  return Grant{id, cls, bytes};
}

void SimulatedFabric::Release(uint64_t grant_id) {
  auto it = grants_.find(grant_id);
  if (it == grants_.end()) return;
  for (int l : it->second.path)
    links_[static_cast<size_t>(l)].grants[static_cast<int>(it->second.cls)]--;
  grants_.erase(it);
}

void SimulatedFabric::SetPeerBandwidth(int a, int b, double bytes_per_s) {
  if (a != b && a >= 0 && b >= 0 && a < workers_ && b < workers_)
    links_[static_cast<size_t>(PeerLink(a, b))].bandwidth = bytes_per_s;
}
void SimulatedFabric::SetPcieLoad(int worker, double load) {
  if (worker >= 0 && worker < workers_)
    links_[static_cast<size_t>(PcieLink(worker))].load = std::clamp(load, 0.0, 1.0);
}
void SimulatedFabric::SetPeerLoad(int a, int b, double load) {
  if (a != b && a >= 0 && b >= 0 && a < workers_ && b < workers_)
    links_[static_cast<size_t>(PeerLink(a, b))].load = std::clamp(load, 0.0, 1.0);
}

}  // namespace switchyard::scheduler
