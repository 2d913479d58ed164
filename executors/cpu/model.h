// cpu::Model: a Llama-architecture decoder computed in fp32 on the CPU — the reference
// engine's model math. Token embedding; per layer RMSNorm → Q/K/V projections → rotary
// embeddings (Hugging Face's "rotate half", theta from the config) → causal grouped-query
// attention over the KV cache → output projection → residual → RMSNorm → SwiGLU MLP
// (down(silu(gate(x)) · up(x))) → residual; final RMSNorm → LM head (tied to the embedding
// when the checkpoint says so or has no lm_head tensor).
//
// Batch and chunk invariance: a row's K/V and logits are bit-identical whatever other
// rows share its Forward call, however its context's prefill is split into calls, and
// however many threads compute it. The linear layers run on weights packed at load
// (kernels.h Linear: one fixed fma chain per output element, whatever the row count, slot
// or thread) and attention runs per row in a fixed order. tests/cpu/model_test.cc checks
// it bit for bit.
//
// Models from a shape file (configs/models/tiny-*.json) have random weights generated
// from its seed: their text is meaningless, and every description says so
// (ModelShape::Describe).
//
// Threads: each Model owns a ThreadPool (thread_pool.h) of threads() computing threads
// (default: the machine's hardware threads, at most 8); Forward splits the linear layers
// by output columns and attention by rows over it. The split never changes a bit.
//
// Thread-safety: a loaded Model is immutable apart from SetThreads; Forward is const with
// per-call scratch, so several threads may call it at once on disjoint KV blocks (their
// work shares the one pool: each call queues its own jobs and works on them itself, so it
// always makes progress). SetThreads must not run concurrently with Forward.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "executors/cpu/kernels.h"
#include "executors/cpu/model_shape.h"
#include "executors/cpu/sampling.h"
#include "executors/cpu/thread_pool.h"
#include "executors/cpu/weights.h"

namespace switchyard::executors::cpu {

// KV block layout (one block holds `block_tokens` tokens of every layer, fp32):
//   float index of (layer l, kv 0=K/1=V, token t in block, kv head h, dim d) =
//     ((l * 2 + kv) * block_tokens + t) * kv_heads * head_dim + h * head_dim + d
// block bytes = block_tokens * kv_bytes_per_token(). K is stored AFTER rotary embedding.
uint64_t KvBlockFloats(const ModelShape& s, int64_t block_tokens);

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
  // `path`: a JSON shape file (configs/models/tiny-*.json: random weights from its seed),
  // or a Hugging Face Llama checkpoint directory (config.json + *.safetensors).
  static Result<std::unique_ptr<Model>> Load(const std::string& path);
  static Result<std::unique_ptr<Model>> Random(const ModelShape& shape);  // uses shape.seed
  static Result<std::unique_ptr<Model>> LoadCheckpoint(const std::string& dir);
  // A model over given weights (tests, tools); InvalidArgument on a wrong tensor size.
  static Result<std::unique_ptr<Model>> FromWeights(const ModelShape& shape, Weights weights);

  const ModelShape& shape() const { return shape_; }
  uint64_t weight_bytes() const;  // fp32 bytes of every weight (the tied head counted once)
  int threads() const;
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
    PackedMatrix wqkv, wo, wgate_up, wdown;  // Q/K/V and gate/up fused
  };
  struct Scratch;

  Model() = default;
  Status Validate(std::span<const Row> rows) const;
  void RunLayer(int64_t l, std::span<const Row> rows, int64_t r0, int64_t n,
                const std::vector<float>& rope, std::vector<float>& x, Scratch& s) const;
  void LmHead(std::span<const Row> rows, const std::vector<float>& x, Scratch& s,
              std::vector<float>* logits) const;

  ModelShape shape_;
  std::vector<float> embed_, final_norm_;  // embed_ empty when tied: rows from head_
  PackedMatrix head_;                      // the LM head (the embedding when tied)
  std::vector<Layer> layers_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace switchyard::executors::cpu
