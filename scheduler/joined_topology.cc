// ApplyJoinedHosts and FindTopologyConflicts (joined_topology.h).
#include "scheduler/joined_topology.h"

#include <algorithm>
#include <set>

#include "scheduler/link_file.h"

namespace switchyard::scheduler {
namespace {

constexpr char kReportedBy[] = "reported_by_worker";
constexpr char kReportedSpeed[] = "reported_bytes_per_s";
constexpr char kFabric[] = "fabric";

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The speed discovery reported for interface `ifname` (0: none): its port's bandwidth.
double ReportedSpeed(const v1::Topology& found, const std::string& ifname) {
  if (ifname.empty()) return 0;
  for (const v1::TopologyLink& l : found.links())
    if (EndsWith(l.id(), "/" + ifname + "/port") && l.has_bandwidth_bytes_per_s())
      return l.bandwidth_bytes_per_s();
  return 0;
}

void AddHostDevice(v1::Topology* t, const std::string& id, v1::DeviceKind kind,
                   const std::string& host, const std::string& name, v1::TopologySource source) {
  v1::TopologyDevice* d = t->add_devices();
  d->set_id(id);
  d->set_kind(kind);
  d->set_host(host);
  d->set_name(name);
  d->set_source(source);
}

v1::TopologyLink* AddNamedLink(v1::Topology* t, const std::string& src, const std::string& dst,
                               v1::LinkKind kind, double bandwidth, double latency_s,
                               const std::string& name, const std::string& figure_source) {
  v1::TopologyLink* l = t->add_links();
  l->set_id(src + "<->" + dst);
  l->set_src(src);
  l->set_dst(dst);
  l->set_kind(kind);
  l->set_bandwidth_bytes_per_s(bandwidth);
  l->set_latency_us(latency_s * 1e6);
  l->set_duplex(true);
  l->set_source(v1::SOURCE_CONFIGURED);
  (*l->mutable_attributes())[kLinkNameAttribute] = name;
  (*l->mutable_attributes())[kFigureSourceAttribute] = figure_source;
  return l;
}

// An interface's port to the fabric, at the speed its host reported (or the default).
// `host`: the topology's host (node0 for serve's); `named`: its identity, in link names.
void AddPort(v1::Topology* t, const std::string& host, const std::string& named,
             const std::string& ifname, const std::string& memory, const v1::Topology& found,
             const ClusterShape& s, int reported_by) {
  const std::string nic = host + "/" + ifname, name = named + "/" + ifname;
  AddHostDevice(t, nic, v1::DEVICE_NIC, host, ifname, v1::SOURCE_DISCOVERED);
  AddNamedLink(t, memory, nic, v1::LINK_PCIE, s.pcie_bytes_per_s, s.pcie_latency_s,
               "nic-host:" + name, "default (ClusterShape, documented: the NIC's PCIe)");
  const double speed = ReportedSpeed(found, ifname);
  v1::TopologyLink* port =
      AddNamedLink(t, nic, kFabric, v1::LINK_NIC_PORT, speed > 0 ? speed : s.nic_bytes_per_s,
                   s.nic_latency_s, "nic:" + name,
                   speed > 0 ? "discovered (" + ifname + "'s reported speed, sysfs)"
                             : "default (ClusterShape: " + ifname + " reports no speed)");
  if (speed > 0) {
    port->set_source(v1::SOURCE_DISCOVERED);
    (*port->mutable_attributes())[kReportedSpeed] = std::to_string(speed);
    (*port->mutable_attributes())[kReportedBy] = std::to_string(reported_by);
  }
}

// Moves worker device `old` to `dev` on `host`: its pool link to the host's memory, its
// NVLink gone (no NVLink between hosts).
void Rehome(v1::Topology* t, const std::string& old, const std::string& dev,
            const std::string& host, const std::string& memory) {
  auto* links = t->mutable_links();
  for (int i = links->size() - 1; i >= 0; --i) {
    v1::TopologyLink& l = *links->Mutable(i);
    if (l.src() != old && l.dst() != old) continue;
    if (l.kind() != v1::LINK_PCIE) {
      links->DeleteSubrange(i, 1);
      continue;
    }
    l.set_src(dev);
    l.set_dst(memory);
    l.set_id(dev + "<->" + memory);
  }
  for (v1::TopologyDevice& d : *t->mutable_devices())
    if (d.id() == old) {
      d.set_id(dev);
      d.set_host(host);
    }
}

// Devices no link touches any more (serve's NVSwitch once its workers left) go.
void DropUnlinked(v1::Topology* t) {
  std::set<std::string> used;
  for (const v1::TopologyLink& l : t->links()) used.insert({l.src(), l.dst()});
  auto* devs = t->mutable_devices();
  for (int i = devs->size() - 1; i >= 0; --i)
    if (devs->Get(i).kind() == v1::DEVICE_SWITCH && !used.count(devs->Get(i).id()))
      devs->DeleteSubrange(i, 1);
}

}  // namespace

Result<LocationMap> ApplyJoinedHosts(const JoinedHosts& hosts, const ClusterShape& shape,
                                     v1::Topology* t) {
  LocationMap base = ClusterLocationMap(shape);
  const int workers = shape.nodes * shape.workers_per_node;
  std::map<int, std::string> moved;  // worker -> its device on its own host
  std::set<std::string> host_done, serve_ports;
  for (const auto& [w, r] : hosts.workers) {
    if (w < 0 || w >= workers)
      return Status::InvalidArgument("joined worker " + r.worker_id + " has number " +
                                     std::to_string(w) + ", outside the " +
                                     std::to_string(workers) + " workers");
    if (r.host.empty() || r.host == hosts.serve_host) continue;
    if (moved.empty())
      AddHostDevice(t, kFabric, v1::DEVICE_SWITCH, "", "the network between hosts (not discovered)",
                    v1::SOURCE_CONFIGURED);
    const std::string memory = r.host + "/mem";
    if (host_done.insert(r.host).second) {
      t->add_hosts()->set_id(r.host);
      AddHostDevice(t, memory, v1::DEVICE_CPU, r.host, "host memory (joined workers' pools)",
                    v1::SOURCE_DISCOVERED);
      AddPort(t, r.host, r.host, r.interface.empty() ? "net" : r.interface, memory, r.discovered,
              shape, w);
    }
    SY_ASSIGN_OR_RETURN(std::string old, base(Location{Tier::kHbm, w}));
    const std::string dev = r.host + "/w" + std::to_string(w);
    Rehome(t, old, dev, r.host, memory);
    moved[w] = dev;
    const std::string sif = r.serve_interface.empty() ? "net" : r.serve_interface;
    if (serve_ports.insert(sif).second)
      AddPort(t, "node0", hosts.serve_host, sif, "node0/cpu", hosts.serve_discovered, shape, -1);
  }
  if (moved.empty()) return base;
  DropUnlinked(t);
  for (v1::TopologyHost& h : *t->mutable_hosts())
    if (h.id() == "node0") h.set_address(hosts.serve_host + " (serve)");
  t->set_name("discovered from the joined workers' reports (" +
              std::to_string(host_done.size() + 1) + " hosts)");
  return LocationMap([base, moved](const Location& l) -> Result<std::string> {
    auto it = moved.find(l.worker);
    if (it != moved.end() && (l.tier == Tier::kHbm || l.tier == Tier::kPeer)) return it->second;
    return base(l);
  });
}

std::vector<TopologyConflict> FindTopologyConflicts(const v1::Topology& t) {
  std::vector<TopologyConflict> out;
  for (const v1::TopologyLink& l : t.links()) {
    auto reported = l.attributes().find(kReportedSpeed);
    if (reported == l.attributes().end() || l.source() != v1::SOURCE_CALIBRATED) continue;
    const double speed = std::atof(reported->second.c_str());
    const double figure = l.bandwidth_bytes_per_s();
    if (speed <= 0 || (figure <= 1.25 * speed && figure >= 0.8 * speed)) continue;
    TopologyConflict c;
    auto by = l.attributes().find(kReportedBy);
    c.worker = by == l.attributes().end() ? -1 : std::atoi(by->second.c_str());
    auto name = l.attributes().find(kLinkNameAttribute);
    c.link = name == l.attributes().end() ? l.id() : name->second;
    auto source = l.attributes().find(kFigureSourceAttribute);
    c.detail = "link " + c.link + ": the link file says " + std::to_string(figure / 1e9) +
               " GB/s (" + (source == l.attributes().end() ? "" : source->second) +
               "), its interface reported " + std::to_string(speed / 1e9) + " GB/s";
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace switchyard::scheduler
