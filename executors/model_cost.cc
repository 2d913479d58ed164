#include "executors/model_cost.h"

#include <algorithm>

#include "kv_tiers/layout.h"
#include "proto/json.h"

namespace switchyard::executors {

Result<RooflineCostModel> RooflineCostModel::Create(const v1::ModelConfig& m,
                                                    const v1::GpuSpec& g) {
  auto bad = [&](const char* field) {
    return Status::InvalidArgument(std::string("roofline cost model: ") + field +
                                   " must be > 0 (model '" + m.name() + "', gpu '" + g.name() +
                                   "')");
  };
  if (m.num_layers() == 0) return bad("model.num_layers");
  if (m.num_kv_heads() == 0) return bad("model.num_kv_heads");
  if (m.head_dim() == 0) return bad("model.head_dim");
  if (m.num_attention_heads() == 0) return bad("model.num_attention_heads");
  if (m.num_parameters() == 0) return bad("model.num_parameters");
  if (!(g.bf16_flops() > 0)) return bad("gpu.bf16_flops");
  if (!(g.hbm_bandwidth_bytes_per_s() > 0)) return bad("gpu.hbm_bandwidth_bytes_per_s");
  if (!(g.compute_efficiency() > 0) || g.compute_efficiency() > 1)
    return bad("gpu.compute_efficiency (and <= 1)");
  if (!(g.memory_efficiency() > 0) || g.memory_efficiency() > 1)
    return bad("gpu.memory_efficiency (and <= 1)");
  Result<uint32_t> dtype = kv_tiers::DtypeBytes(m.kv_dtype());
  if (!dtype.ok()) return dtype.status();
  RooflineCostModel r;
  r.model_ = m;
  r.gpu_ = g;
  r.kv_bytes_per_token_ =
      static_cast<uint64_t>(m.num_layers()) * m.num_kv_heads() * m.head_dim() * 2ULL * *dtype;
  r.tp_ = std::max<uint32_t>(1, m.tensor_parallel());
  return r;
}

Result<RooflineCostModel> RooflineCostModel::FromFiles(const std::string& model_json,
                                                       const std::string& gpu_json) {
  v1::ModelConfig m;
  v1::GpuSpec g;
  SY_RETURN_IF_ERROR(proto::ParseJsonFile(model_json, &m));
  SY_RETURN_IF_ERROR(proto::ParseJsonFile(gpu_json, &g));
  return Create(m, g);
}

double RooflineCostModel::PrefillFlops(int64_t n, int64_t c) const {
  if (n <= 0) return 0;
  double N = static_cast<double>(n), C = static_cast<double>(std::max<int64_t>(c, 0));
  double linear = 2.0 * static_cast<double>(model_.num_parameters()) * N;
  double width = static_cast<double>(model_.num_attention_heads()) * model_.head_dim();
  double attention = 4.0 * model_.num_layers() * width * N * (C + (N + 1) / 2.0);
  return linear + attention;
}

double RooflineCostModel::DecodeBytes(int64_t s, int64_t c) const {
  if (s <= 0) return 0;
  double S = static_cast<double>(s), C = static_cast<double>(std::max<int64_t>(c, 0));
  double weights = 2.0 * static_cast<double>(model_.num_parameters());
  return S * weights + static_cast<double>(kv_bytes_per_token_) * (S * C + S * (S - 1) / 2.0);
}

Duration RooflineCostModel::PrefillTime(int64_t n, int64_t c) const {
  double rate = gpu_.bf16_flops() * gpu_.compute_efficiency() * tp_;
  return Seconds(PrefillFlops(n, c) / rate);
}

Duration RooflineCostModel::DecodeTime(int64_t s, int64_t c) const {
  double rate = gpu_.hbm_bandwidth_bytes_per_s() * gpu_.memory_efficiency() * tp_;
  return Seconds(DecodeBytes(s, c) / rate);
}

}  // namespace switchyard::executors
