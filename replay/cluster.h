// Replay clusters: the simulated hardware a trace is replayed on.
//
// A cluster file (replay/clusters/*.json) is a v1::ReplayCluster in proto3 JSON: one model
// (ModelConfig) on identical nodes of GPUs (GpuSpec). Cluster derives what the core, the
// simulated executors and the simulated network need from it: worker count (one model
// replica per tensor-parallel group), KV bytes per worker, slots per worker, chunk size,
// and the net_budget topology of its links (PCIe per GPU, NVLink inside a node, a NIC per
// node, NVMe per node). Everything built from it is SIMULATED (no hardware is touched).
// Without --cluster the replay uses DefaultCluster() (= replay/clusters/h200x8-llama8b.json;
// a test checks the two agree).
//
// Thread-safety: immutable values.
#pragma once

#include <string>

#include "base/result.h"
#include "proto/switchyard/v1/replay.pb.h"
#include "scheduler/net_budget_env.h"

namespace switchyard::replay {

struct ClusterShapeInfo {
  int workers = 0;
  int workers_per_node = 0;
  int tensor_parallel = 1;
  uint64_t kv_bytes_per_worker = 0;
};

// Validates a cluster (InvalidArgument naming the field) and derives its shape.
Result<ClusterShapeInfo> DeriveShape(const v1::ReplayCluster& c);

// Loads a cluster: a JSON file path, or the name of a file in replay/clusters/ (looked up
// under `clusters_dir` when it is not empty), e.g. "h200x8-llama70b-tp8". A relative
// stepTable is resolved against the file's folder and returned absolute.
Result<v1::ReplayCluster> LoadCluster(const std::string& path_or_name,
                                      const std::string& clusters_dir = "");

// The cluster named on a command line: empty -> DefaultCluster(); else a file path, or a
// name looked up in ./replay/clusters/ and then in the source tree's replay/clusters/.
Result<v1::ReplayCluster> ClusterFromArg(const std::string& arg);

// The documented default: 1 node of 8 H200s serving Llama-3.1-8B (8 workers).
v1::ReplayCluster DefaultCluster();

// The net_budget cluster shape (scheduler::BuildClusterTopology) of the cluster: PCIe per
// GPU (gpu.pcieBandwidthBytesPerS), NVLink per GPU per direction (half of
// gpu.nvlinkBandwidthBytesPerS, which is bidirectional), one NIC per node at
// gpu.nicBandwidthBitsPerS / 8, NVMe per node (diskBytesPerS), PCIe switches shared by
// gpusPerPcieSwitch GPUs with their uplinks, and the copies' gather cost per byte.
// Seconds per byte a worker's copies to and from its host pay for the pieces of
// non-contiguous blocks: 2 x layers x kvCopyPieceOverheadS per block, over the block's
// bytes (all tensor-parallel shards). 0 without kvCopyPieceOverheadS.
double GatherSecondsPerByte(const v1::ReplayCluster& c);

scheduler::ClusterShape ToClusterShape(const v1::ReplayCluster& c, const ClusterShapeInfo& shape);

}  // namespace switchyard::replay
