#include "cpu_engine/cpu_engine.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "cpu_engine/cpu_step_runner.h"

namespace switchyard::cpu_engine {

v1::ModelConfig ToModelConfig(const ModelShape& s) {
  v1::ModelConfig m;
  m.set_name(s.name + (s.random_weights ? " (random weights)" : ""));
  m.set_num_layers(static_cast<uint32_t>(s.layers));
  m.set_num_kv_heads(static_cast<uint32_t>(s.kv_heads));
  m.set_head_dim(static_cast<uint32_t>(s.head_dim));
  m.set_kv_dtype(s.kv_dtype == DType::kBf16 ? v1::BF16 : v1::FP32);
  m.set_hidden_size(static_cast<uint32_t>(s.hidden));
  m.set_num_attention_heads(static_cast<uint32_t>(s.heads));
  m.set_intermediate_size(static_cast<uint32_t>(s.intermediate));
  m.set_vocab_size(static_cast<uint32_t>(s.vocab_size));
  m.set_num_parameters(s.parameters());
  m.set_tensor_parallel(1);
  return m;
}

const std::vector<int32_t>* TokenLog::Find(const std::string& context) const {
  auto it = logs_.find(context);
  return it == logs_.end() ? nullptr : &it->second;
}

int32_t TokenLog::Synthetic(const std::string& context, int64_t position, int64_t vocab) {
  uint64_t h =
      SplitMix(std::hash<std::string>{}(context) ^ SplitMix(static_cast<uint64_t>(position)));
  // Byte-range ids (below 256) where the vocabulary has them: decodable as text.
  int64_t range = std::min<int64_t>(vocab, 256);
  return static_cast<int32_t>(h % static_cast<uint64_t>(std::max<int64_t>(1, range)));
}

// ---- The engine ------------------------------------------------------------------------

Result<std::unique_ptr<CpuEngine>> CpuEngine::Create(EventLoop* loop, int worker,
                                                     executors::EngineLimits limits, Options o) {
  limits.block_tokens = std::max<int64_t>(1, limits.block_tokens);
  limits.pool_blocks = std::max<int64_t>(1, limits.pool_blocks);
  SY_ASSIGN_OR_RETURN(
      std::unique_ptr<CpuStepRunner> runner,
      CpuStepRunner::Create(loop, o.model, o.tokens, limits.block_tokens, limits.pool_blocks,
                            "cpu engine KV pool (worker " + std::to_string(worker) + ")", o.tenant,
                            o.token_masks, o.token_bytes, o.prefix_caching, o.offload_bytes));
  return std::unique_ptr<CpuEngine>(
      new CpuEngine(loop, worker, limits, std::move(runner), std::move(o)));
}

CpuEngine::CpuEngine(EventLoop* loop, int worker, executors::EngineLimits limits,
                     std::unique_ptr<CpuStepRunner> r, Options o)
    : executors::BatchingEngine(loop, worker, limits, std::move(r), std::move(o.batching)),
      cpu_(static_cast<CpuStepRunner*>(runner())) {}

const Model& CpuEngine::model() const { return cpu_->model(); }
kv_tiers::Tier& CpuEngine::pool() { return cpu_->pool(); }
uint64_t CpuEngine::pool_capacity_bytes() const { return cpu_->pool().capacity_bytes(); }
uint64_t CpuEngine::pool_used_bytes() const { return cpu_->pool().used_bytes(); }
std::string CpuEngine::kv_pool_name() const { return cpu_->pool().name(); }
uint64_t CpuEngine::kv_block_bytes() const { return cpu_->block_bytes(); }

int64_t CpuEngine::valid_tokens(const std::string& context) const {
  const CpuStepRunner::Ctx* c = cpu_->Find(context);
  return c ? c->valid : -1;
}

int64_t CpuEngine::cached_prefix_tokens(std::span<const int32_t> ids) const {
  return cpu_->CachedPrefix(ids);
}
size_t CpuEngine::kept_blocks() const { return cpu_->pool().kept_blocks(); }
const OffloadCache* CpuEngine::offload() const { return cpu_->offload(); }

Result<executors::ContextKvView> CpuEngine::ExportKv(const std::string& context) const {
  return cpu_->ExportKv(context);
}
Result<std::vector<void*>> CpuEngine::ImportTargets(const std::string& context) {
  return cpu_->ImportTargets(context);
}
Status CpuEngine::CommitImport(const std::string& context, int64_t valid_tokens) {
  return cpu_->CommitImport(context, valid_tokens);
}

}  // namespace switchyard::cpu_engine
