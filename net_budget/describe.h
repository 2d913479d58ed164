// Human-readable text of a topology (used by `switchyard topo`): every device and link
// with kind, bandwidth, latency and where each figure came from. Unknown figures print
// as "unknown" (docs/design.md invariant 9).
//
// Thread-safety: stateless functions.
#pragma once

#include <string>

#include "net_budget/topology.h"

namespace switchyard::net_budget {

// "450 GB/s", "3.12 GB/s", "125 MB/s"; "unknown" for an unset value.
std::string FormatBandwidth(std::optional<double> bytes_per_s);
// "2 us", "1.5 ms"; "unknown" for an unset value.
std::string FormatLatency(std::optional<double> seconds);
// The whole graph as aligned text tables.
std::string FormatTopology(const Topology& topo);

}  // namespace switchyard::net_budget
