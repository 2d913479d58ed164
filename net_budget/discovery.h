// Discovery: what the machine itself says about its topology (docs/design.md invariant 9).
//
// Sources, each read only if present:
//   - <sysfs>/devices/system/node/node*/cpulist      NUMA nodes  -> DEVICE_CPU
//   - <sysfs>/class/net/<if>/{speed,device/numa_node,type,operstate,device}
//                                                    interfaces  -> DEVICE_NIC, links
//   - <sysfs>/class/infiniband/<dev>/ports/<n>/{rate,state,link_layer}
//                                                    ibverbs     -> DEVICE_NIC, links
//   - `nvidia-smi topo -m` output (when nvidia-smi exists) -> DEVICE_GPU, NVLink/PCIe
// Every device and link produced is marked SOURCE_DISCOVERED. A figure the machine does
// not report (speed -1 or unreadable on virtual interfaces, PCIe bandwidth, NVLink
// per-link speed) is left unset = unknown, with the raw text kept in attributes.
// The sysfs root is configurable so that tests run against a fake tree.
//
// Thread-safety: stateless functions.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "proto/switchyard/v1/topology.pb.h"

namespace switchyard::net_budget {

struct DiscoveryOptions {
  std::string sysfs_root = "/sys";
  std::string host_id;  // empty: the machine's hostname
  // Text of `nvidia-smi topo -m`; empty: run nvidia-smi if it is on PATH.
  std::string nvidia_smi_topo_text;
  bool run_nvidia_smi = true;
};

// `nvidia-smi topo -m`, parsed.
struct NvidiaSmiTopo {
  enum class Relation { kSelf, kNvLink, kPix, kPxb, kPhb, kNode, kSys, kUnknown };
  struct Cell {
    Relation relation = Relation::kUnknown;
    int nvlinks = 0;  // for kNvLink: the # of NV#
    std::string text;
  };
  std::vector<std::string> devices;        // row/column labels: GPU0.., NIC0.. / mlx5_0..
  std::vector<std::vector<Cell>> matrix;   // [row][col]
  std::vector<std::string> cpu_affinity;   // per row ("" when absent)
  std::vector<std::string> numa_affinity;  // per row ("" or "N/A" when absent)
  std::vector<std::pair<std::string, std::string>> nic_legend;  // NIC0 -> mlx5_0
};

// Parses the matrix text; InvalidArgument naming the line on malformed input.
Result<NvidiaSmiTopo> ParseNvidiaSmiTopo(const std::string& text);

// Parses a Linux cpulist ("0-3,8,10-11") into CPU ids; InvalidArgument on bad text.
Result<std::vector<int>> ParseCpuList(const std::string& text);

// Discovers what the options allow and returns the topology (possibly with no links).
Result<v1::Topology> Discover(const DiscoveryOptions& opts = {});

}  // namespace switchyard::net_budget
