// RooflineCostModel: the "simulated engine" cost model (prefill and decode time).
//
// Prices one LLM call from a model config and a GPU spec (proto/switchyard/v1/model.proto;
// configs/models/*.json, configs/gpus/*.json) with a roofline:
//   prefill(N new tokens on C cached) is compute-bound:
//     FLOPs = 2 * params * N                        (every weight is a multiply-add per token)
//           + 4 * layers * heads * head_dim * N * (C + (N + 1) / 2)   (QK^T and AV, causal)
//     time  = FLOPs / (bf16_flops * compute_efficiency * TP)
//   decode(S steps from C cached) is memory-bound, one sequence:
//     bytes = S * weight_bytes + kv_bytes_per_token * (S * C + S * (S - 1) / 2)
//     time  = bytes / (hbm_bandwidth * memory_efficiency * TP)
// weight_bytes = params * 2 (bf16 weights). TP (tensor_parallel) splits both FLOPs and bytes
// over its GPUs; communication is not priced. The efficiency factors come from the GPU spec
// file; their reasons are in executors/README.md.
//
// Thread-safety: an immutable value.
#pragma once

#include <string>

#include "base/result.h"
#include "proto/switchyard/v1/model.pb.h"
#include "scheduler/environment.h"

namespace switchyard::executors {

class RooflineCostModel final : public scheduler::ComputeCostModel {
 public:
  // InvalidArgument naming the field when a dimension, rate or efficiency is missing.
  static Result<RooflineCostModel> Create(const v1::ModelConfig& model, const v1::GpuSpec& gpu);
  static Result<RooflineCostModel> FromFiles(const std::string& model_json,
                                             const std::string& gpu_json);

  Duration PrefillTime(int64_t new_tokens, int64_t context_tokens) const override;
  Duration DecodeTime(int64_t steps, int64_t context_tokens) const override;
  uint64_t KvBytesPerToken() const override { return kv_bytes_per_token_; }

  double PrefillFlops(int64_t new_tokens, int64_t context_tokens) const;
  double DecodeBytes(int64_t steps, int64_t context_tokens) const;
  const v1::ModelConfig& model() const { return model_; }
  const v1::GpuSpec& gpu() const { return gpu_; }

 private:
  RooflineCostModel() = default;
  v1::ModelConfig model_;
  v1::GpuSpec gpu_;
  uint64_t kv_bytes_per_token_ = 0;
  double tp_ = 1;
};

}  // namespace switchyard::executors
