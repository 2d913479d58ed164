// cpu_engine::Model: a decoder of the Llama family (model_shape.h Arch: Llama, Qwen2, Qwen3)
// computed in fp32 on the CPU — the reference engine's model math. Token embedding; per
// layer RMSNorm → Q/K/V projections (+ biases: Qwen2) → per-head RMSNorm of q and k (Qwen3)
// → rotary embeddings (Hugging Face's "rotate half", theta from the config, Llama 3
// scaling) → causal grouped-query attention over the KV cache → output projection →
// residual → RMSNorm → SwiGLU MLP (down(silu(gate(x)) · up(x))) → residual; final RMSNorm
// → LM head (the embedding when tied).
//
// Storage: linear weights and the embedding as fp32 or bf16 (ModelShape::weight_dtype;
// bf16 is widened in registers, so the results are the bits fp32 storage of the same
// values gives); norms and biases fp32; KV as fp32 or bf16 (ModelShape::kv_dtype).
//
// Batch and chunk invariance: a row's K/V and logits are bit-identical whatever other
// rows share its Forward call, however its context's prefill is split into calls, and
// however many threads compute it. The linear layers run on weights packed at load
// (kernels.h Linear: one fixed fma chain per output element, whatever the row count, slot
// or thread); biases, q/k norms and rotary run per row, and attention per row in a fixed
// order. tests/cpu_engine/model_test.cc checks it bit for bit.
//
// Models from a shape file (configs/models/tiny-*.json) have random weights generated
// from its seed: their text is meaningless, and every description says so
// (ModelShape::Describe).
//
// Threads: each Model owns a ThreadPool (thread_pool.h) of threads() computing threads
// (default: the machine's hardware threads, at most 8); Forward splits the linear layers
// by output columns and attention by rows over it. The split never changes a bit.
//
// Thread-safety: a loaded Model is immutable apart from SetThreads and AddEosIds; Forward is const
// with per-call scratch, so several threads may call it at once on disjoint KV blocks (their work
// shares the one pool: each call queues its own jobs and works on them itself, so it always makes
// progress). SetThreads must not run concurrently with Forward.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "cpu_engine/kernels.h"
#include "cpu_engine/model_shape.h"
#include "cpu_engine/sampling.h"
#include "cpu_engine/thread_pool.h"
#include "cpu_engine/weights.h"

namespace switchyard::cpu_engine {

// KV block layout (one block holds `block_tokens` tokens of every layer, elements of
// ModelShape::kv_dtype: fp32, or bf16 rounded to nearest):
//   element index of (layer l, kv 0=K/1=V, token t in block, kv head h, dim d) =
//     ((l * 2 + kv) * block_tokens + t) * kv_heads * head_dim + h * head_dim + d
// block bytes = block_tokens * kv_bytes_per_token(). K is stored AFTER rotary embedding.
uint64_t KvBlockBytes(const ModelShape& s, int64_t block_tokens);
// KvBlockBytes / sizeof(float): the floats of a block for fp32 KV. Callers that size a
// block as KvBlockFloats(...) * sizeof(float) get its bytes for either KV dtype.
uint64_t KvBlockFloats(const ModelShape& s, int64_t block_tokens);

// How a model is stored in memory; unset fields keep the shape's (or the checkpoint's).
struct LoadOptions {
  // A checkpoint's default: bf16 when every tensor is BF16, else fp32. bf16 over other
  // values rounds them to nearest (a different model, slightly).
  std::optional<DType> weight_dtype;
  std::optional<DType> kv_dtype;  // a checkpoint's default: fp32
};

struct KvBlocks {  // one context's KV: blocks[i] holds positions [i*bt, (i+1)*bt)
  float* const* blocks = nullptr;
  int64_t num_blocks = 0;
  int64_t block_tokens = 16;
};

struct Row {  // one token to compute
  int32_t token = 0;
  int64_t position = 0;  // its position in its context
  KvBlocks kv;           // its context's blocks (must cover `position`)
  bool want_logits = false;
};

class Model {
 public:
  // `path`: a JSON shape file (configs/models/*.json: random weights from its seed), the
  // embedded demo model's name (kDemoModel, model_shape.h),
  // or a Hugging Face checkpoint directory (config.json, generation_config.json when
  // present, *.safetensors) of a llama, qwen2 or qwen3 model.
  static Result<std::unique_ptr<Model>> Load(const std::string& path,
                                             const LoadOptions& options = {});
  static Result<std::unique_ptr<Model>> Random(const ModelShape& shape);  // uses shape.seed
  // Errors name the file and the tensor or field (weights.h ReadWeights, LoadHfConfig).
  static Result<std::unique_ptr<Model>> LoadCheckpoint(const std::string& dir,
                                                       const LoadOptions& options = {});
  // A model over given weights (tests, tools), stored as shape.weight_dtype (bf16 rounds
  // values that are not bf16 values); InvalidArgument on a wrong or foreign tensor.
  static Result<std::unique_ptr<Model>> FromWeights(const ModelShape& shape, Weights weights);

  const ModelShape& shape() const { return shape_; }
  // The bytes the weights occupy as stored: packed panels (bf16 or fp32, padding to whole
  // panels included; the tied head counted once), the embedding table, norms, biases.
  uint64_t weight_bytes() const;
  int threads() const;
  // Adds stop ids to the shape's (ModelShape::eos_ids): the tokenizer's, so that the engine
  // stops on the ids its tokenizer names (LoadTokenizer; the engine's loader calls it).
  // InvalidArgument for an id outside the vocab. Load time only: not while Forward runs.
  Status AddEosIds(std::span<const int32_t> ids);
  void SetThreads(int threads);  // >= 1; replaces the pool (not while Forward runs)

  // Computes `rows`. Rows of one context must appear in increasing, contiguous positions;
  // every earlier position of a row's context must already hold KV (written by an earlier
  // call, or by an earlier row of this call). Writes each row's K and V at its position
  // (into kv.blocks), and appends vocab_size logits per row with want_logits, in row
  // order, to *logits (cleared first). InvalidArgument naming the row for a token out of
  // range, a position outside [0, max_positions) or not covered by the blocks, or rows of
  // one context out of order.
  Status Forward(std::span<const Row> rows, std::vector<float>* logits) const;

 private:
  struct Layer {
    std::vector<float> attn_norm, mlp_norm;
    std::vector<float> qkv_bias;             // [q_dim + 2 kv_dim] (qwen2), else empty
    std::vector<float> q_norm, k_norm;       // [head_dim] (qwen3), else empty
    PackedMatrix wqkv, wo, wgate_up, wdown;  // Q/K/V and gate/up fused
  };
  struct Scratch;

  Model() = default;
  // Construction (model_load.cc): packs one layer's weights (appended to layers_) or the
  // embedding, head and final norm, as shape_.weight_dtype, freeing the fp32 copies.
  void PackLayer(LayerWeights& l);
  void PackRest(Weights& w);
  Status Validate(std::span<const Row> rows) const;
  void Embed(int32_t token, float* x) const;
  void RunLayer(int64_t l, std::span<const Row> rows, int64_t r0, int64_t n,
                const std::vector<float>& rope, std::vector<float>& x, Scratch& s) const;
  // Biases, q/k norms and rotary of one row's fused Q/K/V, then its K and V into the KV.
  void PrepareQkv(const Layer& w, int64_t l, const Row& r, const float* rope, float* qkv) const;
  void LmHead(std::span<const Row> rows, const std::vector<float>& x, Scratch& s,
              std::vector<float>* logits) const;

  ModelShape shape_;
  std::vector<float> final_norm_;
  // The embedding table when not tied (rows from head_ when tied), as weight_dtype.
  std::vector<float> embed_;
  std::vector<uint16_t> embed_bf16_;
  PackedMatrix head_;  // the LM head (the embedding when tied)
  std::vector<Layer> layers_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace switchyard::cpu_engine
