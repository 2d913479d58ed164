// Link figures of the serve topology and where each came from (docs/design.md "Cluster",
// invariant 9). BuildClusterTopology's links get short names ("pcie<w>": worker w <->
// its node's host memory, "nvlink<w>": worker w <-> the NVSwitch, "disk<n>": host memory
// <-> NVMe of node n, "nic<n>": node n's NIC port, "gdr<w>": worker w <-> its NIC) and a
// figure source ("configured (...)", "GPU spec (...)" or the documented default); a link
// file (v1::LinkFile, written by `switchyard calibrate --link NAME
// --links-out FILE`) replaces the figures of the links it names with measured ones.
//
// The name and the source travel as the topology link's attributes kLinkNameAttribute and
// kFigureSourceAttribute (net_budget::Link::attributes keeps them), so /v1/cluster reads
// them back from the topology.
//
// Thread-safety: pure functions, except the file reads/writes of LoadLinkFile and
// AddToLinkFile (one caller per file at a time).
#pragma once

#include <string>

#include "base/result.h"
#include "proto/switchyard/v1/link_file.pb.h"
#include "proto/switchyard/v1/model.pb.h"
#include "proto/switchyard/v1/topology.pb.h"
#include "scheduler/net_budget_env.h"

namespace switchyard::scheduler {

inline constexpr const char* kLinkNameAttribute = "name";
inline constexpr const char* kFigureSourceAttribute = "figure_source";

// Where the figures of a ClusterShape came from when not measured: the config field that
// set each one (e.g. "links.pcieBytesPerS"), empty for ClusterShape's documented default.
// gpu_spec names the GPU spec whose link bandwidths (pcie, nvlink, nic) ApplyGpuSpecLinks
// took, where no field configured them.
struct ShapeFigureOrigins {
  std::string pcie_bandwidth, pcie_latency;
  std::string nvlink_bandwidth, nvlink_latency;
  std::string nic_bandwidth, nic_latency;
  std::string disk_bandwidth, disk_latency;
  std::string pcie_uplink;  // a PCIe switch's uplink to the host
  std::string gpu_spec;
};

// The link bandwidths of the GPU (or CPU engine) the workers run on, over ClusterShape's
// defaults, by one rule for `serve` and replay: PCIe = gpu.pcieBandwidthBytesPerS, NVLink
// per direction = gpu.nvlinkBandwidthBytesPerS / 2, NIC = gpu.nicBandwidthBitsPerS / 8;
// a figure of 0 keeps the default. Latencies and the disk are not in a GPU spec. Records
// gpu.name() in origins->gpu_spec (when given).
void ApplyGpuSpecLinks(const v1::GpuSpec& gpu, ClusterShape* shape, ShapeFigureOrigins* origins);

// Names every link of `t` (BuildClusterTopology(shape)) and records its figure source:
// "configured (links.pcieBytesPerS, links.pcieLatencyUs)", "default (ClusterShape,
// documented)", or both when only one figure was configured. InvalidArgument naming a
// link that is not one of the shape's.
Status LabelClusterLinks(const ClusterShape& shape, const ShapeFigureOrigins& origins,
                         v1::Topology* t);

// "calibrated (<label>, <UTC date and time>)" for a measured link.
std::string CalibratedSource(const v1::MeasuredLink& m);

// Checks a parsed link file: every entry names a link (once) and has a calibration with
// alpha >= 0 and beta > 0. InvalidArgument naming `path` and the field (links[i].link...).
Status CheckLinkFile(const v1::LinkFile& file, const std::string& path);

// Reads and checks a link file (JSON); errors name the file and the field.
Result<v1::LinkFile> LoadLinkFile(const std::string& path);

// Gives every link `file` names the measured figures: its calibration (the planner's
// alpha-beta model), bandwidth 1/beta, latency alpha, source SOURCE_CALIBRATED and the
// figure source CalibratedSource(). A link is found by its name attribute or its id;
// NotFound naming the link, `path` and the links there are otherwise.
Status ApplyLinkFile(const v1::LinkFile& file, const std::string& path, v1::Topology* t);

// Adds `m` to the link file at `path` (created when missing), replacing an entry for
// the same link; the file is checked before and after.
Status AddToLinkFile(const std::string& path, const v1::MeasuredLink& m);

}  // namespace switchyard::scheduler
