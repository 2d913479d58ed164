#include "net_budget/topology.h"

#include <cmath>
#include <limits>
#include <queue>
#include <set>
#include <string>

#include "proto/json.h"

namespace switchyard::net_budget {

std::string_view SourceName(Source s) {
  switch (s) {
    case Source::kConfigured:
      return "configured";
    case Source::kDiscovered:
      return "discovered";
    case Source::kCalibrated:
      return "calibrated";
  }
  return "?";
}

std::string_view DeviceKindName(v1::DeviceKind k) {
  switch (k) {
    case v1::DEVICE_GPU:
      return "gpu";
    case v1::DEVICE_CPU:
      return "cpu";
    case v1::DEVICE_NIC:
      return "nic";
    case v1::DEVICE_SWITCH:
      return "switch";
    case v1::DEVICE_HOST:
      return "host";
    case v1::DEVICE_STORAGE:
      return "storage";
    default:
      return "unspecified";
  }
}

std::string_view LinkKindName(v1::LinkKind k) {
  switch (k) {
    case v1::LINK_NVLINK:
      return "nvlink";
    case v1::LINK_PCIE:
      return "pcie";
    case v1::LINK_NIC_PORT:
      return "nic_port";
    case v1::LINK_LOOPBACK:
      return "loopback";
    case v1::LINK_VETH:
      return "veth";
    case v1::LINK_ETHERNET:
      return "ethernet";
    case v1::LINK_INFINIBAND:
      return "infiniband";
    default:
      return "unspecified";
  }
}

namespace {

Source FromProtoSource(v1::TopologySource s) {
  switch (s) {
    case v1::SOURCE_DISCOVERED:
      return Source::kDiscovered;
    case v1::SOURCE_CALIBRATED:
      return Source::kCalibrated;
    default:
      return Source::kConfigured;
  }
}

v1::TopologySource ToProtoSource(Source s) {
  switch (s) {
    case Source::kDiscovered:
      return v1::SOURCE_DISCOVERED;
    case Source::kCalibrated:
      return v1::SOURCE_CALIBRATED;
    default:
      return v1::SOURCE_CONFIGURED;
  }
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

Status BadDevice(const std::string& what, const std::string& msg) {
  return Status::InvalidArgument("device '" + what + "': " + msg);
}
Status BadLink(const std::string& what, const std::string& msg) {
  return Status::InvalidArgument("link '" + what + "': " + msg);
}

Result<Device> BuildDevice(const v1::TopologyDevice& p, size_t i,
                           const std::set<std::string>& hosts) {
  if (p.id().empty()) {
    return Status::InvalidArgument("device #" + std::to_string(i) + ": missing field id");
  }
  if (p.kind() == v1::DEVICE_KIND_UNSPECIFIED) return BadDevice(p.id(), "missing field kind");
  if (!p.host().empty() && !hosts.empty() && !hosts.count(p.host())) {
    return BadDevice(p.id(), "field host names unknown host '" + p.host() + "'");
  }
  Device d;
  d.id = p.id();
  d.kind = p.kind();
  d.host = p.host();
  if (p.has_numa_node()) d.numa_node = p.numa_node();
  d.name = p.name();
  d.source = FromProtoSource(p.source());
  d.attributes.insert(p.attributes().begin(), p.attributes().end());
  return d;
}

// Checks one of the two figures (bandwidth or latency) of a link.
Status CheckFigure(const std::string& id, const char* field, bool has, double v, bool unknown,
                   const char* unknown_field, bool exempt, bool positive) {
  if (has && unknown) {
    return BadLink(id, std::string("both ") + field + " and " + unknown_field + " are set");
  }
  if (has) {
    bool ok = std::isfinite(v) && (positive ? v > 0 : v >= 0);
    if (!ok) {
      return BadLink(id, std::string("field ") + field + " must be " + (positive ? "> 0" : ">= 0") +
                             ", got " + Num(v));
    }
    return Status::OK();
  }
  if (!unknown && !exempt) {
    return BadLink(id, std::string("missing field ") + field +
                           " (configure it, calibrate the link, or set " + unknown_field +
                           ": true)");
  }
  return Status::OK();
}

}  // namespace

Result<AlphaBeta> Link::Model() const {
  if (calibration) return calibration->model;
  if (!bandwidth_bytes_per_s) {
    return Status::FailedPrecondition("link '" + id +
                                      "': bandwidth unknown (not discovered, configured or "
                                      "calibrated); refusing to estimate over it");
  }
  if (!latency_s) {
    return Status::FailedPrecondition("link '" + id +
                                      "': latency unknown (not discovered, configured or "
                                      "calibrated); refusing to estimate over it");
  }
  return AlphaBeta::FromLatencyBandwidth(*latency_s, *bandwidth_bytes_per_s);
}

Result<Topology> Topology::FromProto(const v1::Topology& p) {
  Topology t;
  t.name_ = p.name();
  t.budget_ = p.budget();
  std::set<std::string> hosts;
  for (int i = 0; i < p.hosts_size(); ++i) {
    const auto& h = p.hosts(i);
    if (h.id().empty()) {
      return Status::InvalidArgument("host #" + std::to_string(i) + ": missing field id");
    }
    if (!hosts.insert(h.id()).second) {
      return Status::InvalidArgument("host '" + h.id() + "': duplicate id");
    }
    t.hosts_.push_back(h);
  }
  for (int i = 0; i < p.devices_size(); ++i) {
    SY_ASSIGN_OR_RETURN(Device d, BuildDevice(p.devices(i), i, hosts));
    if (t.device_by_id_.count(d.id)) return BadDevice(d.id, "duplicate id");
    t.device_by_id_[d.id] = static_cast<DeviceIndex>(t.devices_.size());
    t.devices_.push_back(std::move(d));
  }
  for (int i = 0; i < p.links_size(); ++i) {
    const auto& l = p.links(i);
    if (l.id().empty()) {
      return Status::InvalidArgument("link #" + std::to_string(i) + ": missing field id");
    }
    if (t.link_by_id_.count(l.id())) return BadLink(l.id(), "duplicate id");
    if (l.src().empty()) return BadLink(l.id(), "missing field src");
    if (l.dst().empty()) return BadLink(l.id(), "missing field dst");
    auto src = t.FindDevice(l.src());
    if (!src) return BadLink(l.id(), "field src names unknown device '" + l.src() + "'");
    auto dst = t.FindDevice(l.dst());
    if (!dst) return BadLink(l.id(), "field dst names unknown device '" + l.dst() + "'");
    if (*src == *dst) {
      return BadLink(l.id(), "self-link (src and dst are both '" + l.src() + "')");
    }
    if (l.kind() == v1::LINK_KIND_UNSPECIFIED) return BadLink(l.id(), "missing field kind");
    Link link;
    link.id = l.id();
    link.src = *src;
    link.dst = *dst;
    link.kind = l.kind();
    link.duplex = l.duplex();
    link.source = FromProtoSource(l.source());
    link.attributes.insert(l.attributes().begin(), l.attributes().end());
    if (l.has_calibration()) {
      auto fit = net_budget::FromProto(l.calibration());
      if (!fit.ok()) return BadLink(l.id(), fit.status().message());
      link.calibration = std::move(fit).value();
      link.source = Source::kCalibrated;
    }
    bool exempt = link.source != Source::kConfigured;
    SY_RETURN_IF_ERROR(CheckFigure(l.id(), "bandwidth_bytes_per_s", l.has_bandwidth_bytes_per_s(),
                                   l.bandwidth_bytes_per_s(), l.unknown_bandwidth(),
                                   "unknown_bandwidth", exempt, /*positive=*/true));
    SY_RETURN_IF_ERROR(CheckFigure(l.id(), "latency_us", l.has_latency_us(), l.latency_us(),
                                   l.unknown_latency(), "unknown_latency", exempt,
                                   /*positive=*/false));
    if (l.has_bandwidth_bytes_per_s()) link.bandwidth_bytes_per_s = l.bandwidth_bytes_per_s();
    if (l.has_latency_us()) link.latency_s = l.latency_us() * 1e-6;
    t.link_by_id_[link.id] = static_cast<LinkIndex>(t.links_.size());
    t.links_.push_back(std::move(link));
  }
  t.BuildIndex();
  return t;
}

Result<Topology> Topology::LoadFile(const std::string& path) {
  v1::Topology p;
  SY_RETURN_IF_ERROR(proto::ParseJsonFile(path, &p));
  auto t = FromProto(p);
  if (!t.ok()) return t.status().Annotate(path);
  return t;
}

v1::Topology Topology::ToProto() const {
  v1::Topology p;
  p.set_name(name_);
  *p.mutable_budget() = budget_;
  for (const auto& h : hosts_) *p.add_hosts() = h;
  for (const auto& d : devices_) {
    auto* o = p.add_devices();
    o->set_id(d.id);
    o->set_kind(d.kind);
    o->set_host(d.host);
    if (d.numa_node) o->set_numa_node(*d.numa_node);
    o->set_name(d.name);
    o->set_source(ToProtoSource(d.source));
    o->mutable_attributes()->insert(d.attributes.begin(), d.attributes.end());
  }
  for (const auto& l : links_) {
    auto* o = p.add_links();
    o->set_id(l.id);
    o->set_src(devices_[l.src].id);
    o->set_dst(devices_[l.dst].id);
    o->set_kind(l.kind);
    if (l.bandwidth_bytes_per_s) o->set_bandwidth_bytes_per_s(*l.bandwidth_bytes_per_s);
    if (l.latency_s) o->set_latency_us(*l.latency_s * 1e6);
    bool configured = l.source == Source::kConfigured;
    o->set_unknown_bandwidth(configured && !l.bandwidth_bytes_per_s);
    o->set_unknown_latency(configured && !l.latency_s);
    o->set_duplex(l.duplex);
    o->set_source(ToProtoSource(l.source));
    if (l.calibration) *o->mutable_calibration() = net_budget::ToProto(*l.calibration);
    o->mutable_attributes()->insert(l.attributes.begin(), l.attributes.end());
  }
  return p;
}

std::optional<DeviceIndex> Topology::FindDevice(std::string_view id) const {
  auto it = device_by_id_.find(std::string(id));
  if (it == device_by_id_.end()) return std::nullopt;
  return it->second;
}

std::optional<LinkIndex> Topology::FindLink(std::string_view id) const {
  auto it = link_by_id_.find(std::string(id));
  if (it == link_by_id_.end()) return std::nullopt;
  return it->second;
}

void Topology::BuildIndex() {
  out_.assign(devices_.size(), {});
  for (LinkIndex i = 0; i < links_.size(); ++i) {
    out_[links_[i].src].push_back({i, false});
    if (links_[i].duplex) out_[links_[i].dst].push_back({i, true});
  }
}

Status Topology::SetCalibration(std::string_view link_id, const LinkFit& fit) {
  auto i = FindLink(link_id);
  if (!i) return Status::NotFound("no link '" + std::string(link_id) + "' in the topology");
  if (!(fit.model.beta_s_per_byte > 0) || fit.model.alpha_s < 0) {
    return Status::InvalidArgument("link '" + std::string(link_id) +
                                   "': calibration needs alpha >= 0 and beta > 0");
  }
  links_[*i].calibration = fit;
  links_[*i].source = Source::kCalibrated;
  return Status::OK();
}

}  // namespace switchyard::net_budget
