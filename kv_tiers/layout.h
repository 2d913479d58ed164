// KvLayout: how many bytes one token and one block of KV cache take for a model.
//
// A model config (proto/switchyard/v1/model.proto, e.g. configs/models/llama-3.1-8b.json)
// gives layers, KV heads, head dim and KV dtype. One token of KV is
//   layers x kv_heads x head_dim x 2 (K and V) x dtype bytes
// (Llama-3.1-8B in bf16: 32 x 8 x 128 x 2 x 2 = 131072 B), and a block holds a fixed
// number of tokens (default 16; configurable). Every tier and mover sizes its slots from
// this layout.
//
// Thread-safety: KvLayout is an immutable value.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "proto/switchyard/v1/model.pb.h"

namespace switchyard::kv_tiers {

constexpr uint32_t kDefaultTokensPerBlock = 16;

// Bytes of one KV element of `dtype`; InvalidArgument for DTYPE_UNSPECIFIED or unknown.
Result<uint32_t> DtypeBytes(v1::KvDtype dtype);

class KvLayout {
 public:
  // Validates the config (every dimension > 0, known dtype) and tokens_per_block > 0.
  static Result<KvLayout> FromModelConfig(const v1::ModelConfig& config,
                                          uint32_t tokens_per_block = kDefaultTokensPerBlock);
  // Parses a model config JSON file (proto::ParseJsonFile) and builds its layout.
  static Result<KvLayout> FromJsonFile(const std::string& path,
                                       uint32_t tokens_per_block = kDefaultTokensPerBlock);

  const std::string& model_name() const { return model_name_; }
  uint32_t num_layers() const { return num_layers_; }
  uint32_t num_kv_heads() const { return num_kv_heads_; }
  uint32_t head_dim() const { return head_dim_; }
  v1::KvDtype dtype() const { return dtype_; }
  uint32_t dtype_bytes() const { return dtype_bytes_; }
  uint32_t tokens_per_block() const { return tokens_per_block_; }

  uint64_t bytes_per_token() const;
  uint64_t bytes_per_block() const { return bytes_per_token() * tokens_per_block_; }
  // Bytes of one layer of one block (K and V), for per-layer transfers.
  uint64_t bytes_per_block_layer() const { return bytes_per_block() / num_layers_; }
  // Blocks needed to hold `tokens` tokens (the last one possibly partial).
  uint64_t BlocksForTokens(uint64_t tokens) const;

 private:
  KvLayout() = default;

  std::string model_name_;
  uint32_t num_layers_ = 0;
  uint32_t num_kv_heads_ = 0;
  uint32_t head_dim_ = 0;
  v1::KvDtype dtype_ = v1::DTYPE_UNSPECIFIED;
  uint32_t dtype_bytes_ = 0;
  uint32_t tokens_per_block_ = kDefaultTokensPerBlock;
};

}  // namespace switchyard::kv_tiers
