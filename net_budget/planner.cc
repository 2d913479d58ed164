#include "net_budget/planner.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/mutex.h"

namespace switchyard::net_budget {

Planner::Planner(const Topology& topo, const LinkBudgets* budgets, PlannerOptions opts)
    : topo_(topo), budgets_(budgets), opts_(opts) {
  Invalidate();
}

void Planner::Invalidate() {
  MutexLock lock(&mu_);
  routes_.clear();
  costs_.assign(topo_.num_links(), {});
  for (LinkIndex i = 0; i < topo_.num_links(); ++i) {
    auto m = topo_.link(i).Model();
    if (m.ok()) {
      costs_[i] = {true, m->alpha_s, m->bandwidth(), Status::OK()};
    } else {
      costs_[i].error = m.status();
    }
  }
}

const Path* Planner::CachedRoute(DeviceIndex src, DeviceIndex dst, Status* error) const {
  if (src >= topo_.num_devices() || dst >= topo_.num_devices()) {
    *error = Status::InvalidArgument("planner: device index out of range");
    return nullptr;
  }
  uint64_t key = (static_cast<uint64_t>(src) << 32) | dst;
  MutexLock lock(&mu_);
  auto it = routes_.find(key);
  if (it == routes_.end()) {
    it = routes_.emplace(key, topo_.FindPath(src, dst, opts_.route_metric)).first;
  }
  if (!it->second.ok()) {
    *error = it->second.status();
    return nullptr;
  }
  return &*it->second;
}

Result<Path> Planner::Route(DeviceIndex src, DeviceIndex dst) const {
  Status error;
  const Path* p = CachedRoute(src, dst, &error);
  if (!p) return error;
  return *p;
}

Result<Estimate> Planner::EstimatePath(const Path& path, uint64_t bytes, TrafficClass cls) const {
  Estimate e;
  e.hops = static_cast<uint32_t>(path.hops.size());
  if (path.hops.empty()) return e;
  constexpr size_t kInline = 16;
  double rates_buf[kInline], backlog_buf[kInline];
  std::vector<double> rates_vec, backlog_vec;
  double* rates = rates_buf;
  double* backlog = backlog_buf;
  if (path.hops.size() > kInline) {
    rates_vec.resize(path.hops.size());
    backlog_vec.resize(path.hops.size());
    rates = rates_vec.data();
    backlog = backlog_vec.data();
  }
  for (size_t i = 0; i < path.hops.size(); ++i) {
    const LinkCost& c = costs_[path.hops[i].link];
    if (!c.known) return c.error;
    rates[i] = c.bandwidth;
    backlog[i] = 0;
  }
  if (budgets_) budgets_->Snapshot(path, cls, rates, backlog);
  double alpha = 0, worst = -1;
  for (size_t i = 0; i < path.hops.size(); ++i) {
    const LinkCost& c = costs_[path.hops[i].link];
    alpha += c.alpha_s;
    double rate = std::min(rates[i], c.bandwidth);
    if (!(rate > 0)) {
      return Status::FailedPrecondition("link '" + topo_.link(path.hops[i].link).id +
                                        "' gives class " + std::string(ClassName(cls)) +
                                        " no rate");
    }
    double t = (backlog[i] + static_cast<double>(bytes)) / rate;
    if (t > worst) {
      worst = t;
      e.bottleneck_link = path.hops[i].link;
      e.rate_bytes_per_s = rate;
    }
  }
  e.fixed_cost = Duration(static_cast<int64_t>(std::llround(alpha * 1e9)));
  e.duration = Duration(static_cast<int64_t>(std::llround((alpha + worst) * 1e9)));
  return e;
}

Result<Estimate> Planner::EstimateTransfer(DeviceIndex src, DeviceIndex dst, uint64_t bytes,
                                           TrafficClass cls) const {
  Status error;
  const Path* path = CachedRoute(src, dst, &error);
  if (!path) return error;
  return EstimatePath(*path, bytes, cls);
}

Result<Estimate> Planner::EstimateTransfer(std::string_view src, std::string_view dst,
                                           uint64_t bytes, TrafficClass cls) const {
  auto s = topo_.FindDevice(src);
  if (!s) return Status::NotFound("no device '" + std::string(src) + "' in the topology");
  auto d = topo_.FindDevice(dst);
  if (!d) return Status::NotFound("no device '" + std::string(dst) + "' in the topology");
  return EstimateTransfer(*s, *d, bytes, cls);
}

}  // namespace switchyard::net_budget
