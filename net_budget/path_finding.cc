// Topology::FindPath and Describe (see topology.h for the metrics).
#include <algorithm>
#include <limits>
#include <queue>
#include <string>

#include "net_budget/topology.h"

namespace switchyard::net_budget {
namespace {

// Alpha of a link for routing: calibrated alpha, else the configured latency.
std::optional<double> Alpha(const Link& l) {
  if (l.calibration) return l.calibration->model.alpha_s;
  return l.latency_s;
}
std::optional<double> Width(const Link& l) {
  if (l.calibration) return l.calibration->model.bandwidth();
  return l.bandwidth_bytes_per_s;
}

struct Label {
  double primary = std::numeric_limits<double>::infinity();  // lower is better
  double secondary = std::numeric_limits<double>::infinity();
  bool operator<(const Label& o) const {
    return primary != o.primary ? primary < o.primary : secondary < o.secondary;
  }
};

// Extends `from` over link `l` under `metric`; false when the link cannot be used.
bool Extend(const Label& from, const Link& l, PathMetric metric, Label* out) {
  switch (metric) {
    case PathMetric::kFewestHops:
      *out = {from.primary + 1, from.secondary + Alpha(l).value_or(0)};
      return true;
    case PathMetric::kMinLatency: {
      auto a = Alpha(l);
      if (!a) return false;
      *out = {from.primary + *a, from.secondary + 1};
      return true;
    }
    case PathMetric::kWidest: {
      auto w = Width(l);
      if (!w) return false;
      // primary = -bottleneck width (so lower is better), secondary = hops.
      double width = std::min(-from.primary, *w);
      *out = {-width, from.secondary + 1};
      return true;
    }
  }
  return false;
}

}  // namespace

Result<Path> Topology::FindPath(DeviceIndex src, DeviceIndex dst, PathMetric metric) const {
  if (src >= devices_.size() || dst >= devices_.size()) {
    return Status::InvalidArgument("FindPath: device index out of range");
  }
  Path path{src, dst, {}};
  if (src == dst) return path;
  const size_t n = devices_.size();
  std::vector<Label> best(n);
  std::vector<Hop> via(n);
  std::vector<bool> done(n, false);
  best[src] = metric == PathMetric::kWidest ? Label{-std::numeric_limits<double>::infinity(), 0}
                                            : Label{0, 0};
  using Item = std::pair<Label, DeviceIndex>;
  auto cmp = [](const Item& a, const Item& b) { return b.first < a.first; };
  std::priority_queue<Item, std::vector<Item>, decltype(cmp)> pq(cmp);
  pq.push({best[src], src});
  while (!pq.empty()) {
    auto [label, d] = pq.top();
    pq.pop();
    if (done[d]) continue;
    done[d] = true;
    if (d == dst) break;
    for (const Hop& h : out_[d]) {
      DeviceIndex next = HopTarget(h);
      Label cand;
      if (done[next] || !Extend(label, links_[h.link], metric, &cand)) continue;
      if (cand < best[next]) {
        best[next] = cand;
        via[next] = h;
        pq.push({cand, next});
      }
    }
  }
  if (!done[dst]) {
    const char* why = metric == PathMetric::kMinLatency ? " over links of known latency"
                      : metric == PathMetric::kWidest   ? " over links of known bandwidth"
                                                        : "";
    return Status::NotFound("no path from '" + devices_[src].id + "' to '" + devices_[dst].id +
                            "'" + why);
  }
  for (DeviceIndex d = dst; d != src;) {
    const Hop& h = via[d];
    path.hops.push_back(h);
    d = h.reverse ? links_[h.link].dst : links_[h.link].src;
  }
  std::reverse(path.hops.begin(), path.hops.end());
  return path;
}

Result<Path> Topology::FindPath(std::string_view src, std::string_view dst,
                                PathMetric metric) const {
  auto s = FindDevice(src);
  if (!s) return Status::NotFound("no device '" + std::string(src) + "' in the topology");
  auto d = FindDevice(dst);
  if (!d) return Status::NotFound("no device '" + std::string(dst) + "' in the topology");
  return FindPath(*s, *d, metric);
}

std::string Topology::Describe(const Path& p) const {
  std::string out = devices_[p.src].id;
  for (const Hop& h : p.hops) {
    out += " -[" + links_[h.link].id + "]-> " + devices_[HopTarget(h)].id;
  }
  return out;
}

}  // namespace switchyard::net_budget
