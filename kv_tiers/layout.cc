#include "kv_tiers/layout.h"

#include <string>

#include "proto/json.h"

namespace switchyard::kv_tiers {

Result<uint32_t> DtypeBytes(v1::KvDtype dtype) {
  switch (dtype) {
    case v1::BF16:
    case v1::FP16:
      return 2u;
    case v1::FP8:
      return 1u;
    case v1::FP32:
      return 4u;
    default:
      return Status::InvalidArgument("kv layout: unsupported kv_dtype " +
                                     std::to_string(static_cast<int>(dtype)));
  }
}

Result<KvLayout> KvLayout::FromModelConfig(const v1::ModelConfig& config,
                                           uint32_t tokens_per_block) {
  const std::string where = "model config '" + config.name() + "': ";
  if (config.num_layers() == 0) return Status::InvalidArgument(where + "num_layers must be > 0");
  if (config.num_kv_heads() == 0) {
    return Status::InvalidArgument(where + "num_kv_heads must be > 0");
  }
  if (config.head_dim() == 0) return Status::InvalidArgument(where + "head_dim must be > 0");
  if (tokens_per_block == 0) {
    return Status::InvalidArgument(where + "tokens_per_block must be > 0");
  }
  auto dtype_bytes = DtypeBytes(config.kv_dtype());
  if (!dtype_bytes.ok()) return dtype_bytes.status().Annotate(where);
  KvLayout layout;
  layout.model_name_ = config.name();
  layout.num_layers_ = config.num_layers();
  layout.num_kv_heads_ = config.num_kv_heads();
  layout.head_dim_ = config.head_dim();
  layout.dtype_ = config.kv_dtype();
  layout.dtype_bytes_ = *dtype_bytes;
  layout.tokens_per_block_ = tokens_per_block;
  return layout;
}

Result<KvLayout> KvLayout::FromJsonFile(const std::string& path, uint32_t tokens_per_block) {
  v1::ModelConfig config;
  SY_RETURN_IF_ERROR(proto::ParseJsonFile(path, &config));
  auto layout = FromModelConfig(config, tokens_per_block);
  if (!layout.ok()) return layout.status().Annotate(path);
  return layout;
}

uint64_t KvLayout::bytes_per_token() const {
  return uint64_t{num_layers_} * num_kv_heads_ * head_dim_ * 2 * dtype_bytes_;
}

uint64_t KvLayout::BlocksForTokens(uint64_t tokens) const {
  return (tokens + tokens_per_block_ - 1) / tokens_per_block_;
}

}  // namespace switchyard::kv_tiers
