// The serve topology with joined workers on other hosts, built from what the workers
// report (docs/design.md "Topology", invariant 9: topology from discovery, never assumed).
//
// Serve's loopback topology (BuildClusterTopology of one node, LabelClusterLinks) puts
// every worker in serve's node. A joined worker reports its host's identity, what
// net_budget::Discover found there and the interface its control connection leaves by
// (v1::WorkerHello); serve knows the interface its end of each connection uses. For each
// worker on a host other than serve's, ApplyJoinedHosts moves it there:
//   - the worker's device becomes "<host>/w<k>" (k its worker number), linked to that
//     host's memory "<host>/mem" by its pool link (named "pcie<k>", the configured or
//     default figure as before: a CPU engine's pool is host memory);
//   - the host memory reaches the network through the reported interface: "<host>/<if>"
//     (a NIC device, linked to <host>/mem by "nic-host:<host>/<if>", PCIe figures) and
//     the interface's port to the network "fabric" (a switch: what lies between the hosts
//     is not discovered), named "nic:<host>/<if>", at the speed the interface reported
//     (figure source "discovered (...)"), or the shape's NIC default where it reports none;
//   - serve's interface toward it likewise: "node0/<if>" with "nic:<serve host>/<if>".
// Serve's host tier and disk stay in node0 (they live in serve's process), so a demotion
// from a remote worker crosses both hosts' ports, and a move between two remote workers
// crosses theirs. Workers on serve's host (or that report nothing) stay as they were.
//
// Conflicts: a link whose figure a link file set (after ApplyLinkFile) more than 25 %
// away from the speed its interface reported is a conflict, listed with the worker whose
// report it contradicts.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "proto/switchyard/v1/topology.pb.h"
#include "scheduler/net_budget_env.h"

namespace switchyard::scheduler {

// One joined worker's report (its hello), and serve's interface toward it.
struct WorkerHostReport {
  std::string worker_id;
  std::string host;             // the worker's host identity
  v1::Topology discovered;      // net_budget::Discover there
  std::string interface;        // its control connection's interface there ("": unknown)
  std::string serve_interface;  // serve's end of that connection ("": unknown)
};

struct JoinedHosts {
  std::string serve_host;                   // serve's own host identity
  v1::Topology serve_discovered;            // net_budget::Discover on serve's host
  std::map<int, WorkerHostReport> workers;  // by worker number
};

// Edits `t` (serve's labelled loopback topology of `shape`) as above; the location map
// for the result. InvalidArgument naming a worker outside the shape.
Result<LocationMap> ApplyJoinedHosts(const JoinedHosts& hosts, const ClusterShape& shape,
                                     v1::Topology* t);

// A link file's figure against a report.
struct TopologyConflict {
  int worker = -1;
  std::string link;    // the link's name
  std::string detail;  // both figures and their sources
};
std::vector<TopologyConflict> FindTopologyConflicts(const v1::Topology& t);

}  // namespace switchyard::scheduler
