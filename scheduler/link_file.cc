#include "scheduler/link_file.h"

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <system_error>

#include "net_budget/link_model.h"
#include "proto/json.h"

namespace switchyard::scheduler {
namespace {

constexpr const char* kDefaultSource = "default (ClusterShape, documented)";

// A device of BuildClusterTopology(shape): its role and the index naming its links.
struct Role {
  enum Kind { kCpu, kNvme, kSwitch, kNic, kTor, kWorker, kPcieSwitch } kind;
  int index = 0;  // node (cpu, nvme, switch, nic), worker, or PCIe switch of the cluster
};

std::map<std::string, Role> ShapeDevices(const ClusterShape& s) {
  std::map<std::string, Role> roles{{"tor", {Role::kTor, 0}}};
  for (int n = 0; n < s.nodes; ++n) {
    std::string node = "node" + std::to_string(n);
    roles[node + "/cpu"] = {Role::kCpu, n};
    roles[node + "/nvme"] = {Role::kNvme, n};
    roles[node + "/nvswitch"] = {Role::kSwitch, n};
    roles[node + "/nic"] = {Role::kNic, n};
    for (int k = 0; k < s.workers_per_node; ++k)
      roles[node + "/w" + std::to_string(k)] = {Role::kWorker, n * s.workers_per_node + k};
    int shared = WorkersPerPcieSwitch(s);
    int switches = shared > 1 ? s.workers_per_node / shared : 0;
    for (int i = 0; i < switches; ++i)
      roles[node + "/pcisw" + std::to_string(i)] = {Role::kPcieSwitch, n * switches + i};
  }
  return roles;
}

// "configured (a, b)", the default, or one of each naming which figure is which; a
// bandwidth not configured but taken from a GPU spec (`spec` non-empty) says so.
std::string Source(const std::string& bandwidth_field, const std::string& latency_field,
                   const std::string& spec = "") {
  const std::string from_spec = "GPU spec (" + spec + ")";
  if (bandwidth_field.empty() && !spec.empty())
    return latency_field.empty() ? "bandwidth " + from_spec + "; latency " + kDefaultSource
                                 : "configured (" + latency_field + "); bandwidth " + from_spec;
  if (bandwidth_field.empty() && latency_field.empty()) return kDefaultSource;
  if (!bandwidth_field.empty() && !latency_field.empty())
    return "configured (" + bandwidth_field + ", " + latency_field + ")";
  if (!bandwidth_field.empty())
    return "configured (" + bandwidth_field + "); latency " + kDefaultSource;
  return "configured (" + latency_field + "); bandwidth " + kDefaultSource;
}

// The short name and the figure source of a link between two roles ("" when the pair is
// not one BuildClusterTopology makes).
std::pair<std::string, std::string> NameLink(Role a, Role b, const ShapeFigureOrigins& o) {
  if (b.kind == Role::kWorker) std::swap(a, b);
  if (b.kind == Role::kCpu && a.kind == Role::kNvme) std::swap(a, b);
  if (b.kind == Role::kNic && a.kind == Role::kTor) std::swap(a, b);
  if (b.kind == Role::kPcieSwitch && a.kind == Role::kCpu) std::swap(a, b);
  std::string w = std::to_string(a.index);
  if (a.kind == Role::kWorker && (b.kind == Role::kCpu || b.kind == Role::kPcieSwitch))
    return {"pcie" + w, Source(o.pcie_bandwidth, o.pcie_latency, o.gpu_spec)};
  if (a.kind == Role::kPcieSwitch && b.kind == Role::kCpu)
    return {"pcieup" + w, Source(o.pcie_uplink, o.pcie_latency)};
  if (a.kind == Role::kWorker && b.kind == Role::kSwitch)
    return {"nvlink" + w, Source(o.nvlink_bandwidth, o.nvlink_latency, o.gpu_spec)};
  if (a.kind == Role::kWorker && b.kind == Role::kNic)
    return {"gdr" + w, Source(o.pcie_bandwidth, o.pcie_latency, o.gpu_spec)};
  if (a.kind == Role::kCpu && b.kind == Role::kNvme)
    return {"disk" + w, Source(o.disk_bandwidth, o.disk_latency)};
  if (a.kind == Role::kNic && b.kind == Role::kTor)
    return {"nic" + w, Source(o.nic_bandwidth, o.nic_latency, o.gpu_spec)};
  return {"", ""};
}

Status Bad(const std::string& path, const std::string& field, const std::string& why) {
  return Status::InvalidArgument("link file " + path + ": " + field + " " + why);
}

// The name attribute of a link, or its id.
std::string NameOf(const v1::TopologyLink& l) {
  auto n = l.attributes().find(kLinkNameAttribute);
  return n == l.attributes().end() ? l.id() : n->second;
}

}  // namespace

void ApplyGpuSpecLinks(const v1::GpuSpec& gpu, ClusterShape* shape, ShapeFigureOrigins* origins) {
  bool any = false;
  if (gpu.pcie_bandwidth_bytes_per_s() > 0)
    shape->pcie_bytes_per_s = gpu.pcie_bandwidth_bytes_per_s(), any = true;
  if (gpu.nvlink_bandwidth_bytes_per_s() > 0)
    shape->nvlink_bytes_per_s = gpu.nvlink_bandwidth_bytes_per_s() / 2, any = true;
  if (gpu.nic_bandwidth_bits_per_s() > 0)
    shape->nic_bytes_per_s = gpu.nic_bandwidth_bits_per_s() / 8, any = true;
  if (any && origins != nullptr) origins->gpu_spec = gpu.name().empty() ? "unnamed" : gpu.name();
}

Status LabelClusterLinks(const ClusterShape& shape, const ShapeFigureOrigins& origins,
                         v1::Topology* t) {
  std::map<std::string, Role> roles = ShapeDevices(shape);
  for (auto& l : *t->mutable_links()) {
    auto a = roles.find(l.src()), b = roles.find(l.dst());
    std::pair<std::string, std::string> named;
    if (a != roles.end() && b != roles.end()) named = NameLink(a->second, b->second, origins);
    if (named.first.empty())
      return Status::InvalidArgument("topology '" + t->name() + "': link '" + l.id() +
                                     "' is not one of cluster shape '" + shape.name + "'");
    (*l.mutable_attributes())[kLinkNameAttribute] = named.first;
    (*l.mutable_attributes())[kFigureSourceAttribute] = named.second;
  }
  return Status::OK();
}

std::string CalibratedSource(const v1::MeasuredLink& m) {
  std::string label = m.label().empty() ? m.calibration().transport() : m.label();
  if (label.empty()) label = "unlabelled";
  std::time_t secs = static_cast<std::time_t>(m.calibration().calibrated_at_ms() / 1000);
  std::tm tm{};
  char when[32] = "time unknown";
  if (m.calibration().calibrated_at_ms() > 0 && gmtime_r(&secs, &tm) != nullptr)
    std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return "calibrated (" + label + ", " + when + ")";
}

Status CheckLinkFile(const v1::LinkFile& file, const std::string& path) {
  if (file.links().empty()) return Bad(path, "links", "is empty: no measured link");
  std::set<std::string> seen;
  for (int i = 0; i < file.links_size(); ++i) {
    const v1::MeasuredLink& m = file.links(i);
    std::string at = "links[" + std::to_string(i) + "]";
    if (m.link().empty()) return Bad(path, at + ".link", "is empty: name the link measured");
    if (!seen.insert(m.link()).second)
      return Bad(path, at + ".link", "'" + m.link() + "' is named twice");
    if (!m.has_calibration()) return Bad(path, at + ".calibration", "is missing");
    const v1::LinkCalibration& c = m.calibration();
    if (!(c.beta_s_per_byte() > 0) || !std::isfinite(c.beta_s_per_byte()))
      return Bad(path, at + ".calibration.betaSPerByte",
                 "must be > 0, got " + std::to_string(c.beta_s_per_byte()));
    if (!(c.alpha_s() >= 0) || !std::isfinite(c.alpha_s()))
      return Bad(path, at + ".calibration.alphaS",
                 "must be >= 0, got " + std::to_string(c.alpha_s()));
  }
  return Status::OK();
}

Result<v1::LinkFile> LoadLinkFile(const std::string& path) {
  v1::LinkFile file;
  Status st = proto::ParseJsonFile(path, &file);
  if (!st.ok()) return st.Annotate("link file " + path);
  SY_RETURN_IF_ERROR(CheckLinkFile(file, path));
  return file;
}

Status ApplyLinkFile(const v1::LinkFile& file, const std::string& path, v1::Topology* t) {
  SY_RETURN_IF_ERROR(CheckLinkFile(file, path));
  for (const v1::MeasuredLink& m : file.links()) {
    v1::TopologyLink* found = nullptr;
    std::string names;
    for (auto& l : *t->mutable_links()) {
      if (NameOf(l) == m.link() || l.id() == m.link()) found = &l;
      names += (names.empty() ? "" : ", ") + NameOf(l);
    }
    if (found == nullptr)
      return Status::NotFound("link file " + path + ": link '" + m.link() +
                              "' is not in the topology (its links: " + names + ")");
    const v1::LinkCalibration& c = m.calibration();
    *found->mutable_calibration() = c;
    found->set_bandwidth_bytes_per_s(1.0 / c.beta_s_per_byte());
    found->set_latency_us(c.alpha_s() * 1e6);
    found->set_source(v1::SOURCE_CALIBRATED);
    (*found->mutable_attributes())[kFigureSourceAttribute] = CalibratedSource(m);
  }
  return Status::OK();
}

Status AddToLinkFile(const std::string& path, const v1::MeasuredLink& m) {
  v1::LinkFile file;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    SY_ASSIGN_OR_RETURN(file, LoadLinkFile(path));
  }
  bool replaced = false;
  for (auto& l : *file.mutable_links())
    if (l.link() == m.link()) l = m, replaced = true;
  if (!replaced) *file.add_links() = m;
  SY_RETURN_IF_ERROR(CheckLinkFile(file, path));
  SY_ASSIGN_OR_RETURN(std::string json, proto::ToJson(file));
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << json << "\n";
  f.close();
  if (!f) return Status::Internal("cannot write link file " + path);
  return Status::OK();
}

}  // namespace switchyard::scheduler
