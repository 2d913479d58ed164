// Discover(): sysfs NUMA nodes, network interfaces, ibverbs devices and nvidia-smi.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "net_budget/discovery.h"

namespace switchyard::net_budget {
namespace fs = std::filesystem;
namespace {

// First line of a file, trimmed; nullopt when unreadable (virtual NICs give EINVAL).
std::optional<std::string> ReadLine(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  std::string s;
  if (!std::getline(in, s) && !in.eof()) return std::nullopt;
  if (in.bad()) return std::nullopt;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::optional<long> ReadInt(const fs::path& p) {
  auto s = ReadLine(p);
  if (!s || s->empty()) return std::nullopt;
  try {
    size_t used = 0;
    long v = std::stol(*s, &used);
    if (used != s->size()) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

std::vector<std::string> ListDir(const fs::path& p) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(p, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Builder {
  std::string host;
  v1::Topology topo;
  std::map<int, std::string> numa;  // node -> device id

  v1::TopologyDevice* AddDevice(const std::string& id, v1::DeviceKind kind,
                                const std::string& name) {
    auto* d = topo.add_devices();
    d->set_id(id);
    d->set_kind(kind);
    d->set_host(host);
    d->set_name(name);
    d->set_source(v1::SOURCE_DISCOVERED);
    return d;
  }
  v1::TopologyLink* AddLink(const std::string& id, const std::string& src, const std::string& dst,
                            v1::LinkKind kind) {
    auto* l = topo.add_links();
    l->set_id(id);
    l->set_src(src);
    l->set_dst(dst);
    l->set_kind(kind);
    l->set_duplex(true);
    l->set_source(v1::SOURCE_DISCOVERED);
    return l;
  }
  // Where a PCIe device attaches: its NUMA node when known, else the host.
  std::string Anchor(std::optional<long> numa_node) {
    if (numa_node && *numa_node >= 0 && numa.count(static_cast<int>(*numa_node))) {
      return numa[static_cast<int>(*numa_node)];
    }
    return host;
  }
  const std::string& Network() {
    static const std::string kSuffix = "/net";
    std::string id = host + kSuffix;
    for (const auto& d : topo.devices()) {
      if (d.id() == id) return d.id();
    }
    auto* d = AddDevice(id, v1::DEVICE_SWITCH, "network beyond this host's ports");
    (*d->mutable_attributes())["note"] = "the far end of each port is not discovered";
    return d->id();
  }
};

void DiscoverNuma(const fs::path& root, Builder* b) {
  for (const auto& name : ListDir(root / "devices/system/node")) {
    if (name.rfind("node", 0) != 0 || name.size() == 4 ||
        name.find_first_not_of("0123456789", 4) != std::string::npos) {
      continue;
    }
    int n = std::stoi(name.substr(4));
    std::string id = b->host + "/numa" + std::to_string(n);
    auto* d = b->AddDevice(id, v1::DEVICE_CPU, "NUMA node " + std::to_string(n));
    d->set_numa_node(n);
    auto cpulist = ReadLine(root / "devices/system/node" / name / "cpulist");
    if (cpulist) {
      (*d->mutable_attributes())["cpulist"] = *cpulist;
      auto cpus = ParseCpuList(*cpulist);
      if (cpus.ok()) (*d->mutable_attributes())["cpus"] = std::to_string(cpus->size());
    }
    b->numa[n] = id;
  }
}

void DiscoverNet(const fs::path& root, Builder* b) {
  for (const auto& ifname : ListDir(root / "class/net")) {
    fs::path dir = root / "class/net" / ifname;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    auto type = ReadInt(dir / "type");
    bool loopback = type && *type == 772;  // ARPHRD_LOOPBACK
    bool physical = fs::exists(dir / "device", ec);
    auto ifindex = ReadInt(dir / "ifindex"), iflink = ReadInt(dir / "iflink");
    bool veth = !physical && !loopback && ifindex && iflink && *ifindex != *iflink;
    std::string nic = b->host + "/" + ifname;
    auto* d = b->AddDevice(nic, v1::DEVICE_NIC, ifname);
    auto& attrs = *d->mutable_attributes();
    auto numa = physical ? ReadInt(dir / "device/numa_node") : std::nullopt;
    if (numa && *numa >= 0) d->set_numa_node(static_cast<int>(*numa));
    attrs["numa_node"] = numa ? std::to_string(*numa) : "unknown";
    attrs["operstate"] = ReadLine(dir / "operstate").value_or("unknown");
    attrs["class"] = loopback ? "loopback" : physical ? "physical" : veth ? "veth" : "virtual";
    auto speed = ReadInt(dir / "speed");  // Mb/s; -1 or EINVAL when the driver does not say
    attrs["speed_mbps"] = speed && *speed > 0 ? std::to_string(*speed) : "unknown";
    if (loopback) {
      b->AddLink(nic + "/loopback", b->host, nic, v1::LINK_LOOPBACK);
      continue;
    }
    v1::LinkKind port_kind = physical ? v1::LINK_NIC_PORT
                             : veth   ? v1::LINK_VETH
                                      : v1::LINK_ETHERNET;
    auto* attach = b->AddLink(nic + (physical ? "/pcie" : "/host"), b->Anchor(numa), nic,
                              physical ? v1::LINK_PCIE : port_kind);
    (*attach->mutable_attributes())["note"] = "bandwidth not reported by the machine";
    auto* port = b->AddLink(nic + "/port", nic, b->Network(), port_kind);
    if (speed && *speed > 0) port->set_bandwidth_bytes_per_s(static_cast<double>(*speed) * 1e6 / 8);
  }
}

// "400 Gb/sec (4X NDR)" -> bytes/s.
std::optional<double> ParseIbRate(const std::string& s) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (s.compare(used, 5, " Gb/s") == 0 || s.compare(used, 7, " Gb/sec") == 0) return v * 1e9 / 8;
  } catch (...) {
  }
  return std::nullopt;
}

void DiscoverInfiniband(const fs::path& root, Builder* b) {
  for (const auto& dev : ListDir(root / "class/infiniband")) {
    fs::path dir = root / "class/infiniband" / dev;
    std::string nic = b->host + "/ib:" + dev;
    auto* d = b->AddDevice(nic, v1::DEVICE_NIC, dev);
    auto numa = ReadInt(dir / "device/numa_node");
    if (numa && *numa >= 0) d->set_numa_node(static_cast<int>(*numa));
    (*d->mutable_attributes())["ibverbs"] = "true";
    auto* attach = b->AddLink(nic + "/pcie", b->Anchor(numa), nic, v1::LINK_PCIE);
    (*attach->mutable_attributes())["note"] = "bandwidth not reported by the machine";
    for (const auto& port : ListDir(dir / "ports")) {
      fs::path pdir = dir / "ports" / port;
      std::string layer = ReadLine(pdir / "link_layer").value_or("");
      auto* l = b->AddLink(nic + "/port" + port, nic, b->Network(),
                           layer == "Ethernet" ? v1::LINK_ETHERNET : v1::LINK_INFINIBAND);
      auto rate = ReadLine(pdir / "rate");
      auto& attrs = *l->mutable_attributes();
      attrs["rate"] = rate.value_or("unknown");
      attrs["state"] = ReadLine(pdir / "state").value_or("unknown");
      attrs["link_layer"] = layer.empty() ? "unknown" : layer;
      if (rate) {
        if (auto bw = ParseIbRate(*rate)) l->set_bandwidth_bytes_per_s(*bw);
      }
    }
  }
}

std::string NvidiaSmiOutput() {
  if (std::system("command -v nvidia-smi >/dev/null 2>&1") != 0) return "";
  FILE* p = popen("nvidia-smi topo -m 2>/dev/null", "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  if (pclose(p) != 0) return "";
  return out;
}

std::string GpuOrNicId(const Builder& b, const NvidiaSmiTopo& t, size_t i) {
  const std::string& label = t.devices[i];
  std::string name = label;
  for (const auto& [k, v] : t.nic_legend) {
    if (k == label) name = v;
  }
  if (label.rfind("GPU", 0) == 0) return b.host + "/gpu" + label.substr(3);
  return b.host + "/ib:" + name;
}

Status DiscoverGpus(const std::string& text, Builder* b) {
  SY_ASSIGN_OR_RETURN(NvidiaSmiTopo t, ParseNvidiaSmiTopo(text));
  std::vector<std::string> ids;
  for (size_t i = 0; i < t.devices.size(); ++i) {
    std::string id = GpuOrNicId(*b, t, i);
    ids.push_back(id);
    bool gpu = t.devices[i].rfind("GPU", 0) == 0;
    bool exists = std::any_of(b->topo.devices().begin(), b->topo.devices().end(),
                              [&](const auto& d) { return d.id() == id; });
    if (exists) continue;
    auto* d = b->AddDevice(id, gpu ? v1::DEVICE_GPU : v1::DEVICE_NIC, t.devices[i]);
    std::optional<long> numa;
    try {
      if (!t.numa_affinity[i].empty() && t.numa_affinity[i] != "N/A")
        numa = std::stol(t.numa_affinity[i]);
    } catch (...) {
    }
    if (numa) d->set_numa_node(static_cast<int>(*numa));
    if (!t.cpu_affinity[i].empty()) (*d->mutable_attributes())["cpu_affinity"] = t.cpu_affinity[i];
    auto* l = b->AddLink(id + "/pcie", b->Anchor(numa), id, v1::LINK_PCIE);
    (*l->mutable_attributes())["note"] = "bandwidth not reported by nvidia-smi topo";
  }
  using R = NvidiaSmiTopo::Relation;
  for (size_t i = 0; i < t.devices.size(); ++i) {
    for (size_t j = i + 1; j < t.devices.size(); ++j) {
      const auto& c = t.matrix[i][j];
      if (c.relation == R::kNvLink) {
        auto* l = b->AddLink(ids[i] + "~" + ids[j] + "/nvlink", ids[i], ids[j], v1::LINK_NVLINK);
        (*l->mutable_attributes())["nvlinks"] = std::to_string(c.nvlinks);
      } else if (c.relation == R::kPix || c.relation == R::kPxb) {
        auto* l = b->AddLink(ids[i] + "~" + ids[j] + "/pcie", ids[i], ids[j], v1::LINK_PCIE);
        (*l->mutable_attributes())["relation"] = c.text;
      }
    }
  }
  return Status::OK();
}

std::string Hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == 0) return "localhost";
  return buf;
}

}  // namespace

Result<v1::Topology> Discover(const DiscoveryOptions& opts) {
  Builder b;
  b.host = opts.host_id.empty() ? Hostname() : opts.host_id;
  b.topo.set_name("discovered on " + b.host);
  b.topo.add_hosts()->set_id(b.host);
  b.AddDevice(b.host, v1::DEVICE_HOST, "host " + b.host);
  fs::path root(opts.sysfs_root);
  DiscoverNuma(root, &b);
  DiscoverNet(root, &b);
  DiscoverInfiniband(root, &b);
  std::string smi = opts.nvidia_smi_topo_text;
  if (smi.empty() && opts.run_nvidia_smi) smi = NvidiaSmiOutput();
  if (!smi.empty()) {
    Status st = DiscoverGpus(smi, &b);
    if (!st.ok()) return st.Annotate("discovery from nvidia-smi topo -m");
  }
  return std::move(b.topo);
}

}  // namespace switchyard::net_budget
