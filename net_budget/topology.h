// Topology: the graph of devices (GPUs, CPU/NUMA nodes, NICs, switches, hosts) and the
// links between them (NVLink, PCIe, NIC ports, loopback, veth, Ethernet, InfiniBand), each
// with a bandwidth and a latency that were configured, discovered or calibrated — never
// assumed (docs/design.md invariant 9). A figure nobody provided stays unknown, and the
// planner refuses to estimate over it.
//
// A Topology is built from v1::Topology (a JSON config, discovery output, or both) by
// FromProto, which validates it and reports the first problem naming the device or link
// id and the field. Devices and links are addressed by dense indices for speed and by
// their string ids for humans. A duplex link carries its capacity in each direction
// separately: a path crosses a link in one direction (a Hop), and budgets are kept per
// direction (a channel).
//
// Path finding (FindPath): kFewestHops is breadth-first search (ties broken by lower
// total known latency, then by link order); kMinLatency is Dijkstra on each link's alpha
// (calibrated alpha, else configured latency) and skips links of unknown latency;
// kWidest maximises the bottleneck bandwidth (a modified Dijkstra) and skips links of
// unknown bandwidth.
//
// Ownership: a Topology owns its devices and links. Thread-safety: const methods may be
// called concurrently; SetCalibration must not race with readers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "net_budget/link_model.h"
#include "proto/switchyard/v1/topology.pb.h"

namespace switchyard::net_budget {

using DeviceIndex = uint32_t;
using LinkIndex = uint32_t;
// One direction of one link: link * 2 + (reverse ? 1 : 0). Budgets are kept per channel.
using ChannelIndex = uint32_t;

enum class Source { kConfigured, kDiscovered, kCalibrated };
std::string_view SourceName(Source s);
std::string_view DeviceKindName(v1::DeviceKind k);
std::string_view LinkKindName(v1::LinkKind k);

struct Device {
  std::string id;
  v1::DeviceKind kind = v1::DEVICE_KIND_UNSPECIFIED;
  std::string host;
  std::optional<int> numa_node;
  std::string name;
  Source source = Source::kConfigured;
  std::map<std::string, std::string> attributes;
};

struct Link {
  std::string id;
  DeviceIndex src = 0;
  DeviceIndex dst = 0;
  v1::LinkKind kind = v1::LINK_KIND_UNSPECIFIED;
  std::optional<double> bandwidth_bytes_per_s;  // per direction; unset = unknown
  std::optional<double> latency_s;              // unset = unknown
  bool duplex = false;
  Source source = Source::kConfigured;
  std::optional<LinkFit> calibration;
  std::map<std::string, std::string> attributes;

  // The alpha-beta model the planner uses: the calibration when present, else the
  // configured/discovered latency and bandwidth. FailedPrecondition naming the link and
  // the unknown figure otherwise.
  Result<AlphaBeta> Model() const;
};

struct Hop {
  LinkIndex link = 0;
  bool reverse = false;  // crossing dst -> src (duplex links only)
  ChannelIndex channel() const { return link * 2 + (reverse ? 1 : 0); }
};

struct Path {
  DeviceIndex src = 0;
  DeviceIndex dst = 0;
  std::vector<Hop> hops;  // empty when src == dst
};

enum class PathMetric { kFewestHops, kMinLatency, kWidest };

class Topology {
 public:
  Topology() = default;

  // Validates and builds. Errors (InvalidArgument) name the device/link id and field:
  // duplicate ids, a link to an unknown device, a self-link, a missing or non-positive
  // bandwidth or latency, an unknown host, a missing kind.
  static Result<Topology> FromProto(const v1::Topology& proto);
  // Reads a JSON file (proto3 JSON of v1::Topology) and builds it; errors name the file.
  static Result<Topology> LoadFile(const std::string& path);
  v1::Topology ToProto() const;

  const std::string& name() const { return name_; }
  size_t num_devices() const { return devices_.size(); }
  size_t num_links() const { return links_.size(); }
  size_t num_channels() const { return links_.size() * 2; }
  const Device& device(DeviceIndex i) const { return devices_[i]; }
  const Link& link(LinkIndex i) const { return links_[i]; }
  const std::vector<Device>& devices() const { return devices_; }
  const std::vector<Link>& links() const { return links_; }
  const v1::BudgetPolicyConfig& budget_config() const { return budget_; }

  std::optional<DeviceIndex> FindDevice(std::string_view id) const;
  std::optional<LinkIndex> FindLink(std::string_view id) const;
  // Hops leaving a device (a directed link leaves only its src; a duplex link both ends).
  const std::vector<Hop>& out_hops(DeviceIndex d) const { return out_[d]; }
  // The device a hop arrives at.
  DeviceIndex HopTarget(const Hop& h) const {
    return h.reverse ? links_[h.link].src : links_[h.link].dst;
  }

  // A path from src to dst; NotFound (naming both ids) when none exists under `metric`.
  Result<Path> FindPath(DeviceIndex src, DeviceIndex dst,
                        PathMetric metric = PathMetric::kFewestHops) const;
  Result<Path> FindPath(std::string_view src, std::string_view dst,
                        PathMetric metric = PathMetric::kFewestHops) const;
  // Human text of a path: "gpu0 -[nvl0]-> gpu1".
  std::string Describe(const Path& p) const;

  // Stores a measured fit on a link and marks it calibrated.
  Status SetCalibration(std::string_view link_id, const LinkFit& fit);

 private:
  void BuildIndex();

  std::string name_;
  std::vector<v1::TopologyHost> hosts_;
  std::vector<Device> devices_;
  std::vector<Link> links_;
  v1::BudgetPolicyConfig budget_;
  std::unordered_map<std::string, DeviceIndex> device_by_id_;
  std::unordered_map<std::string, LinkIndex> link_by_id_;
  std::vector<std::vector<Hop>> out_;
};

}  // namespace switchyard::net_budget
