#include "scheduler/net_budget_env.h"

#include <algorithm>

#include "base/mutex.h"

namespace switchyard::scheduler {
namespace {

std::string NodeName(int n) { return "node" + std::to_string(n); }
double UplinkBytesPerS(const ClusterShape& s) {
  return s.pcie_uplink_bytes_per_s > 0 ? s.pcie_uplink_bytes_per_s : s.pcie_bytes_per_s;
}
std::string PcieSwitchDevice(int node, int i) {
  return NodeName(node) + "/pcisw" + std::to_string(i);
}
std::string WorkerDevice(const ClusterShape& s, int w) {
  return NodeName(w / s.workers_per_node) + "/w" + std::to_string(w % s.workers_per_node);
}

void AddDevice(v1::Topology* t, const std::string& id, v1::DeviceKind kind, const std::string& host,
               const std::string& name) {
  auto* d = t->add_devices();
  d->set_id(id);
  d->set_kind(kind);
  d->set_host(host);
  d->set_name(name);
  d->set_source(v1::SOURCE_CONFIGURED);
}

void AddLink(v1::Topology* t, const std::string& src, const std::string& dst, v1::LinkKind kind,
             double bandwidth, double latency_s) {
  auto* l = t->add_links();
  l->set_id(src + "<->" + dst);
  l->set_src(src);
  l->set_dst(dst);
  l->set_kind(kind);
  l->set_bandwidth_bytes_per_s(bandwidth);
  l->set_latency_us(latency_s * 1e6);
  l->set_duplex(true);
  l->set_source(v1::SOURCE_CONFIGURED);
}

Status CheckShape(const ClusterShape& s) {
  struct Field {
    const char* name;
    double value;
  };
  const Field fields[] = {{"nodes", double(s.nodes)},
                          {"workers_per_node", double(s.workers_per_node)},
                          {"tp", double(s.tp)},
                          {"pcie_bytes_per_s", s.pcie_bytes_per_s},
                          {"pcie_latency_s", s.pcie_latency_s},
                          {"nvlink_bytes_per_s", s.nvlink_bytes_per_s},
                          {"nvlink_latency_s", s.nvlink_latency_s},
                          {"nic_bytes_per_s", s.nic_bytes_per_s},
                          {"nic_latency_s", s.nic_latency_s},
                          {"disk_bytes_per_s", s.disk_bytes_per_s},
                          {"disk_latency_s", s.disk_latency_s},
                          {"gpus_per_pcie_switch", double(s.gpus_per_pcie_switch)}};
  auto bad = [&](const std::string& field, const std::string& why) {
    return Status::InvalidArgument("cluster shape '" + s.name + "': " + field + " " + why);
  };
  for (const Field& f : fields) {
    if (!(f.value > 0)) return bad(f.name, "must be positive, got " + std::to_string(f.value));
  }
  if (!(s.pcie_uplink_bytes_per_s >= 0))
    return bad("pcie_uplink_bytes_per_s", "must be >= 0 (0: pcie_bytes_per_s)");
  if (!(s.pcie_gather_s_per_byte >= 0)) return bad("pcie_gather_s_per_byte", "must be >= 0");
  int g = s.gpus_per_pcie_switch;
  if (g > 1 && g % s.tp != 0 && s.tp % g != 0)
    return bad("gpus_per_pcie_switch", std::to_string(g) + " and tp " + std::to_string(s.tp) +
                                           ": one must divide the other");
  if (g > 1 && (s.workers_per_node * s.tp) % g != 0)
    return bad("gpus_per_pcie_switch", std::to_string(g) + " does not divide the node's " +
                                           std::to_string(s.workers_per_node * s.tp) + " GPUs");
  return Status::OK();
}

// The bandwidth of a worker's link towards its host: its GPUs' PCIe slowed by the gather
// cost (time per byte 1/bandwidth + gather), and at most the uplinks of the switches it
// spans whole.
double WorkerPcieBytesPerS(const ClusterShape& s) {
  double bw = 1.0 / (1.0 / (s.pcie_bytes_per_s * s.tp) + s.pcie_gather_s_per_byte);
  if (s.gpus_per_pcie_switch > 1 && s.tp >= s.gpus_per_pcie_switch)
    bw = std::min(bw, UplinkBytesPerS(s) * (s.tp / s.gpus_per_pcie_switch));
  return bw;
}

}  // namespace

int WorkersPerPcieSwitch(const ClusterShape& s) {
  return s.gpus_per_pcie_switch > s.tp ? s.gpus_per_pcie_switch / s.tp : 1;
}

Result<v1::Topology> BuildClusterTopology(const ClusterShape& s) {
  SY_RETURN_IF_ERROR(CheckShape(s));
  v1::Topology t;
  t.set_name(s.name);
  if (s.nodes > 1) AddDevice(&t, "tor", v1::DEVICE_SWITCH, "", "top-of-rack switch");
  for (int n = 0; n < s.nodes; ++n) {
    std::string node = NodeName(n);
    auto* h = t.add_hosts();
    h->set_id(node);
    std::string cpu = node + "/cpu", nvme = node + "/nvme", sw = node + "/nvswitch";
    AddDevice(&t, cpu, v1::DEVICE_CPU, node, "host memory");
    AddDevice(&t, nvme, v1::DEVICE_STORAGE, node, "NVMe (disk tier)");
    AddLink(&t, cpu, nvme, v1::LINK_PCIE, s.disk_bytes_per_s, s.disk_latency_s);
    if (s.workers_per_node > 1) AddDevice(&t, sw, v1::DEVICE_SWITCH, node, "NVSwitch");
    std::string nic = node + "/nic";
    if (s.nodes > 1) {
      AddDevice(&t, nic, v1::DEVICE_NIC, node, "NIC");
      AddLink(&t, nic, "tor", v1::LINK_NIC_PORT, s.nic_bytes_per_s, s.nic_latency_s);
    }
    int shared = WorkersPerPcieSwitch(s);
    for (int k = 0; k < s.workers_per_node; ++k) {
      std::string w = WorkerDevice(s, n * s.workers_per_node + k);
      AddDevice(&t, w, v1::DEVICE_GPU, node,
                s.tp > 1 ? std::to_string(s.tp) + " GPUs (tensor parallel)" : "GPU");
      std::string host_side = cpu;
      if (shared > 1) {
        host_side = PcieSwitchDevice(n, k / shared);
        if (k % shared == 0) {
          AddDevice(&t, host_side, v1::DEVICE_SWITCH, node, "PCIe switch");
          AddLink(&t, host_side, cpu, v1::LINK_PCIE, UplinkBytesPerS(s), s.pcie_latency_s);
        }
      }
      AddLink(&t, w, host_side, v1::LINK_PCIE, WorkerPcieBytesPerS(s), s.pcie_latency_s);
      if (s.workers_per_node > 1)
        AddLink(&t, w, sw, v1::LINK_NVLINK, s.nvlink_bytes_per_s * s.tp, s.nvlink_latency_s);
      // GPUDirect RDMA: the workers reach the NIC over PCIe without staging in host memory.
      if (s.nodes > 1) AddLink(&t, w, nic, v1::LINK_PCIE, s.pcie_bytes_per_s, s.pcie_latency_s);
    }
  }
  return t;
}

LocationMap ClusterLocationMap(const ClusterShape& s) {
  int workers = s.nodes * s.workers_per_node;
  return [s, workers](const Location& l) -> Result<std::string> {
    if (l.worker < 0 || l.worker >= workers) {
      return Status::NotFound("location " + LocationString(l) + " is outside the cluster (" +
                              std::to_string(workers) + " workers)");
    }
    std::string node = NodeName(l.worker / s.workers_per_node);
    switch (l.tier) {
      case Tier::kHbm:
      case Tier::kPeer:
        return WorkerDevice(s, l.worker);
      case Tier::kHost:
        return node + "/cpu";
      case Tier::kDisk:
        return node + "/nvme";
      default:
        return Status::NotFound("location " + LocationString(l) + " has no device");
    }
  };
}

Result<std::unique_ptr<NetBudgetEnvironment>> NetBudgetEnvironment::Create(
    net_budget::Topology topology, LocationMap map, EventLoop* loop,
    net_budget::BudgetPolicy policy) {
  if (!map) return Status::InvalidArgument("NetBudgetEnvironment: no location map");
  if (!loop) return Status::InvalidArgument("NetBudgetEnvironment: no event loop");
  auto topo = std::make_unique<net_budget::Topology>(std::move(topology));
  return std::unique_ptr<NetBudgetEnvironment>(
      new NetBudgetEnvironment(std::move(topo), std::move(map), loop, policy));
}

NetBudgetEnvironment::NetBudgetEnvironment(std::unique_ptr<net_budget::Topology> topo,
                                           LocationMap map, EventLoop* loop,
                                           net_budget::BudgetPolicy policy)
    : topology_(std::move(topo)), map_(std::move(map)) {
  budgets_ = std::make_unique<net_budget::LinkBudgets>(*topology_, loop, policy);
  planner_ = std::make_unique<net_budget::Planner>(*topology_, budgets_.get());
}

NetBudgetEnvironment::~NetBudgetEnvironment() {
  grants_.clear();  // release while the budgets still exist
}

Result<const net_budget::Path*> NetBudgetEnvironment::Route(const Location& src,
                                                            const Location& dst) const {
  constexpr int kTiers = static_cast<int>(Tier::kNone) + 1;
  auto pack = [](const Location& l) {
    return (static_cast<uint64_t>(l.tier) << 24) | (static_cast<uint64_t>(l.worker) & 0xFFFFFF);
  };
  MutexLock lock(&routes_mu_);
  bool dense = src.worker >= 0 && dst.worker >= 0 && src.worker < (1 << 16) &&
               dst.worker < (1 << 16) && static_cast<int>(src.tier) < kTiers &&
               static_cast<int>(dst.tier) < kTiers;
  if (dense && std::max(src.worker, dst.worker) >= workers_cap_) {
    workers_cap_ = std::max(8, 2 * std::max(src.worker, dst.worker) + 1);
    size_t slots = static_cast<size_t>(kTiers * workers_cap_);
    flat_.assign(slots * slots, nullptr);
    for (const auto& [k, r] : routes_) {
      auto slot = [&](uint64_t p) REQUIRES(routes_mu_) {
        return static_cast<size_t>((p >> 24) * workers_cap_ + (p & 0xFFFFFF));
      };
      flat_[slot(k >> 32) * slots + slot(k & 0xFFFFFFFF)] = r.get();
    }
  }
  size_t slots = static_cast<size_t>(kTiers * workers_cap_);
  size_t at =
      dense ? (static_cast<size_t>(static_cast<int>(src.tier) * workers_cap_ + src.worker) * slots +
               static_cast<size_t>(static_cast<int>(dst.tier) * workers_cap_ + dst.worker))
            : 0;
  const Result<net_budget::Path>* r = dense ? flat_[at] : nullptr;
  if (!r) {
    uint64_t key = (pack(src) << 32) | pack(dst);
    auto it = routes_.find(key);
    if (it == routes_.end())
      it = routes_.emplace(key, std::make_unique<Result<net_budget::Path>>(ResolveRoute(src, dst)))
               .first;
    r = it->second.get();
    if (dense) flat_[at] = r;
  }
  if (!r->ok()) return r->status();
  return &**r;
}

Result<net_budget::Path> NetBudgetEnvironment::ResolveRoute(const Location& src,
                                                            const Location& dst) const {
  SY_ASSIGN_OR_RETURN(std::string a, map_(src));
  SY_ASSIGN_OR_RETURN(std::string b, map_(dst));
  auto ia = topology_->FindDevice(a);
  auto ib = topology_->FindDevice(b);
  if (!ia || !ib) {
    return Status::NotFound("location " + LocationString(!ia ? src : dst) + " maps to device '" +
                            (!ia ? a : b) + "', which the topology lacks");
  }
  return planner_->Route(*ia, *ib);
}

TransferEstimate NetBudgetEnvironment::Estimate(const Location& src, const Location& dst,
                                                uint64_t bytes, TrafficClass cls) const {
  TransferEstimate out;
  Result<const net_budget::Path*> route = Route(src, dst);
  if (!route.ok()) return out;
  const net_budget::Path& path = **route;
  Result<net_budget::Estimate> e = planner_->EstimatePath(path, bytes, cls);
  if (!e.ok()) return out;
  out.reachable = true;
  out.duration = e->duration;
  // Load: the share of the path's narrowest hop that other traffic would keep from us.
  size_t hops = path.hops.size();
  if (hops == 0) return out;
  constexpr size_t kInline = 16;
  double rates_buf[kInline], backlog_buf[kInline];
  std::vector<double> rates_vec, backlog_vec;
  double* rates = rates_buf;
  double* backlog = backlog_buf;
  if (hops > kInline) {
    rates_vec.resize(hops);
    backlog_vec.resize(hops);
    rates = rates_vec.data();
    backlog = backlog_vec.data();
  }
  budgets_->Snapshot(path, cls, rates, backlog);
  for (size_t i = 0; i < hops; ++i) {
    const auto& link = topology_->link(path.hops[i].link);
    double cap = link.bandwidth_bytes_per_s.value_or(0);
    if (cap > 0) out.path_load = std::max(out.path_load, std::clamp(1 - rates[i] / cap, 0.0, 1.0));
  }
  return out;
}

Result<Grant> NetBudgetEnvironment::Acquire(const Location& src, const Location& dst,
                                            uint64_t bytes, TrafficClass cls, Time /*now*/) {
  SY_ASSIGN_OR_RETURN(const net_budget::Path* path, Route(src, dst));
  SY_ASSIGN_OR_RETURN(net_budget::Estimate planned, planner_->EstimatePath(*path, bytes, cls));
  SY_ASSIGN_OR_RETURN(net_budget::Grant g, budgets_->TryAcquire(*path, cls, bytes));
  uint64_t id = next_id_++;
  grants_.emplace(id, Held{std::move(g), planned.duration});
  return Grant{.id = id, .traffic_class = cls, .bytes = bytes};
}

void NetBudgetEnvironment::Release(uint64_t grant_id) { grants_.erase(grant_id); }

Duration NetBudgetEnvironment::PlannedDuration(uint64_t grant_id) const {
  auto it = grants_.find(grant_id);
  return it == grants_.end() ? Duration{0} : it->second.planned;
}

void NetBudgetEnvironment::TrafficBytes(std::vector<ClassBytes>* out) const {
  out->assign(topology_->num_links(), ClassBytes{});
  for (net_budget::LinkIndex i = 0; i < topology_->num_links(); ++i)
    for (TrafficClass c : net_budget::kAllClasses)
      for (net_budget::ChannelIndex ch : {i * 2, i * 2 + 1})
        (*out)[i][net_budget::ClassIndex(c)] += budgets_->State(ch, c).granted_bytes;
}

std::vector<NetBudgetEnvironment::LinkTraffic> NetBudgetEnvironment::Traffic() const {
  std::vector<LinkTraffic> out;
  for (net_budget::LinkIndex i = 0; i < topology_->num_links(); ++i) {
    LinkTraffic t{.link = topology_->link(i).id};
    for (TrafficClass c : net_budget::kAllClasses) {
      for (net_budget::ChannelIndex ch : {i * 2, i * 2 + 1})
        t.bytes[net_budget::ClassIndex(c)] += budgets_->State(ch, c).granted_bytes;
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace switchyard::scheduler
