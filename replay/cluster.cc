#include "replay/cluster.h"

#include <filesystem>

#include "kv_tiers/layout.h"
#include "proto/json.h"
#include "scheduler/link_file.h"

namespace switchyard::replay {

Result<ClusterShapeInfo> DeriveShape(const v1::ReplayCluster& c) {
  auto bad = [&](const std::string& field, const std::string& why) {
    return Status::InvalidArgument("cluster '" + c.name() + "': " + field + " " + why);
  };
  if (c.nodes() == 0) return bad("nodes", "must be > 0");
  if (c.gpus_per_node() == 0) return bad("gpusPerNode", "must be > 0");
  if (c.admission_watermark() < 0 || c.admission_watermark() >= 0.5)
    return bad("admissionWatermark", "must be in [0, 0.5)");
  if (c.step_overhead_s() < 0) return bad("stepOverheadS", "must be >= 0");
  if (!(c.call_overhead_s() >= 0) || c.call_overhead_s() > 3600)
    return bad("callOverheadS", "must be in [0, 3600] seconds");
  if (!(c.tool_overhead_s() >= 0) || c.tool_overhead_s() > 3600)
    return bad("toolOverheadS", "must be in [0, 3600] seconds");
  if (c.gpu().hbm_bytes() == 0) return bad("gpu.hbmBytes", "must be > 0");
  if (c.gpu().pcie_bandwidth_bytes_per_s() <= 0)
    return bad("gpu.pcieBandwidthBytesPerS", "must be > 0");
  if (c.model().num_parameters() == 0) return bad("model.numParameters", "must be > 0");
  if (c.hbm_reserved_fraction() < 0 || c.hbm_reserved_fraction() >= 1)
    return bad("hbmReservedFraction", "must be in [0, 1)");
  int tp = static_cast<int>(std::max<uint32_t>(1, c.model().tensor_parallel()));
  if (c.gpus_per_node() % static_cast<uint32_t>(tp) != 0)
    return bad("gpusPerNode",
               "must be a multiple of model.tensorParallel (" + std::to_string(tp) + ")");
  uint32_t per_switch = std::max<uint32_t>(1, c.gpus_per_pcie_switch());
  if (c.gpus_per_node() % per_switch != 0)
    return bad("gpusPerPcieSwitch",
               "must divide gpusPerNode (" + std::to_string(c.gpus_per_node()) + ")");
  if (per_switch % static_cast<uint32_t>(tp) != 0 && static_cast<uint32_t>(tp) % per_switch != 0)
    return bad("gpusPerPcieSwitch",
               "and model.tensorParallel (" + std::to_string(tp) + "): one must divide the other");
  if (!(c.pcie_uplink_bytes_per_s() >= 0))
    return bad("pcieUplinkBytesPerS", "must be >= 0 (0: gpu.pcieBandwidthBytesPerS)");
  if (!(c.kv_copy_piece_overhead_s() >= 0) || c.kv_copy_piece_overhead_s() > 1e-3)
    return bad("kvCopyPieceOverheadS", "must be in [0, 0.001] seconds");
  ClusterShapeInfo s;
  s.tensor_parallel = tp;
  s.workers_per_node = static_cast<int>(c.gpus_per_node()) / tp;
  s.workers = s.workers_per_node * static_cast<int>(c.nodes());
  if (c.prefill_workers() >= static_cast<uint32_t>(s.workers))
    return bad("prefillWorkers",
               "must leave a decode worker: " + std::to_string(c.prefill_workers()) + " of " +
                   std::to_string(s.workers) + " workers");
  double hbm = static_cast<double>(c.gpu().hbm_bytes()) * tp * (1.0 - c.hbm_reserved_fraction());
  double weights = 2.0 * static_cast<double>(c.model().num_parameters());
  if (hbm <= weights)
    return bad("model", "weights (" + std::to_string(weights / 1e9) +
                            " GB) do not fit the worker's usable HBM");
  s.kv_bytes_per_worker = static_cast<uint64_t>(hbm - weights);
  return s;
}

Result<v1::ReplayCluster> LoadCluster(const std::string& path_or_name,
                                      const std::string& clusters_dir) {
  std::string path = path_or_name;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec) && !clusters_dir.empty() && path.find('/') == std::string::npos) {
    std::string named =
        clusters_dir + "/" + path_or_name +
        (path_or_name.size() > 5 && path_or_name.substr(path_or_name.size() - 5) == ".json"
             ? ""
             : ".json");
    if (fs::exists(named, ec)) path = named;
  }
  v1::ReplayCluster c;
  SY_RETURN_IF_ERROR(proto::ParseJsonFile(path, &c));
  Result<ClusterShapeInfo> shape = DeriveShape(c);
  if (!shape.ok()) return Status::InvalidArgument(path + ": " + shape.status().message());
  // A relative stepTable is the cluster file's folder's (replay.proto): made absolute here,
  // so that every caller (replay, sweep, slo capacity, benches) reads the same table
  // whatever its working folder.
  if (!c.step_table().empty() && !fs::path(c.step_table()).is_absolute()) {
    fs::path table = fs::absolute(fs::path(path), ec).parent_path() / c.step_table();
    c.set_step_table(table.lexically_normal().string());
  }
  return c;
}

#ifndef SY_CLUSTERS_DIR
#define SY_CLUSTERS_DIR "replay/clusters"
#endif

Result<v1::ReplayCluster> ClusterFromArg(const std::string& arg) {
  if (arg.empty()) return DefaultCluster();
  std::error_code ec;
  if (std::filesystem::exists(arg, ec)) return LoadCluster(arg);
  for (const char* dir : {"replay/clusters", SY_CLUSTERS_DIR}) {
    Result<v1::ReplayCluster> c = LoadCluster(arg, dir);
    if (c.ok() || c.status().code() != StatusCode::kNotFound) return c;
  }
  return Status::NotFound("cluster '" + arg +
                          "': no such file, nor a name in replay/clusters/ (e.g. h200x8-llama8b)");
}

v1::ReplayCluster DefaultCluster() {
  v1::ReplayCluster c;
  c.set_name("h200x8-llama8b");
  c.set_description("1 node, 8x H200 (NVLink), Llama-3.1-8B, 8 workers (one per GPU)");
  v1::ModelConfig* m = c.mutable_model();
  m->set_name("Llama-3.1-8B");
  m->set_num_layers(32);
  m->set_num_kv_heads(8);
  m->set_head_dim(128);
  m->set_kv_dtype(v1::BF16);
  m->set_hidden_size(4096);
  m->set_num_attention_heads(32);
  m->set_intermediate_size(14336);
  m->set_vocab_size(128256);
  m->set_num_parameters(8030261248ULL);
  m->set_tensor_parallel(1);
  v1::GpuSpec* g = c.mutable_gpu();
  g->set_name("H200");
  g->set_hbm_bytes(141000000000ULL);
  g->set_hbm_bandwidth_bytes_per_s(4.8e12);
  g->set_bf16_flops(9.89e14);
  g->set_pcie_bandwidth_bytes_per_s(5.0e10);
  g->set_nvlink_bandwidth_bytes_per_s(9.0e11);
  g->set_nic_bandwidth_bits_per_s(4.0e11);
  g->set_compute_efficiency(0.6);
  g->set_memory_efficiency(0.8);
  c.set_nodes(1);
  c.set_gpus_per_node(8);
  c.set_max_num_seqs(256);
  c.set_max_num_batched_tokens(8192);
  c.set_kv_block_tokens(16);
  c.set_step_overhead_s(0.002);
  c.set_admission_watermark(0.01);
  c.set_host_bytes_per_node(1ULL << 40);
  c.set_hbm_reserved_fraction(0.1);
  c.set_disk_bytes_per_s(6e9);
  c.set_chunk_tokens(2048);
  c.set_default_max_output_tokens(256);
  return c;
}

double GatherSecondsPerByte(const v1::ReplayCluster& c) {
  const v1::ModelConfig& m = c.model();
  Result<uint32_t> dtype = kv_tiers::DtypeBytes(m.kv_dtype());
  double block_tokens = c.kv_block_tokens() > 0 ? c.kv_block_tokens() : 16;
  double block_bytes = block_tokens * m.num_layers() * m.num_kv_heads() * m.head_dim() * 2.0 *
                       (dtype.ok() ? *dtype : 2);
  if (!(block_bytes > 0) || c.kv_copy_piece_overhead_s() <= 0) return 0;
  // Each of the worker's GPUs copies its share of a block as 2 x layers pieces, in
  // parallel with the others: the block costs 2 x layers pieces' overhead, whatever tp.
  return 2.0 * m.num_layers() * c.kv_copy_piece_overhead_s() / block_bytes;
}

scheduler::ClusterShape ToClusterShape(const v1::ReplayCluster& c, const ClusterShapeInfo& shape) {
  scheduler::ClusterShape s;
  s.name = c.name();
  s.nodes = static_cast<int>(c.nodes());
  s.workers_per_node = shape.workers_per_node;
  s.tp = shape.tensor_parallel;
  scheduler::ApplyGpuSpecLinks(c.gpu(), &s, nullptr);  // the rule `serve` uses too
  if (c.disk_bytes_per_s() > 0) s.disk_bytes_per_s = c.disk_bytes_per_s();
  s.gpus_per_pcie_switch = static_cast<int>(std::max<uint32_t>(1, c.gpus_per_pcie_switch()));
  s.pcie_uplink_bytes_per_s = c.pcie_uplink_bytes_per_s();
  s.pcie_gather_s_per_byte = GatherSecondsPerByte(c);
  return s;
}

}  // namespace switchyard::replay
