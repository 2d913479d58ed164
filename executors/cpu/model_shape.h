// ModelShape: the dimensions of a Llama-architecture decoder the CPU engine computes, and
// where they come from: a Switchyard shape file (configs/models/tiny-*.json, camelCase
// keys, random weights from a seed: such a model's text is meaningless) or a Hugging Face
// checkpoint's config.json (LlamaForCausalLM). Errors name the file and the field.
//
// Thread-safety: plain values and free functions; no shared state.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "base/status.h"

namespace switchyard::executors::cpu {

struct ModelShape {
  std::string name;
  int64_t vocab_size = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0,
          intermediate = 0, max_positions = 4096;
  double rope_theta = 10000.0, rms_eps = 1e-5;
  int32_t bos_id = -1, eos_id = -1;
  bool random_weights = true;   // generated from a seed: the model's text is meaningless
  uint64_t seed = 0;            // random weights only
  bool tie_embeddings = false;  // the LM head is the token embedding matrix
  // Llama 3 "llama3" rope scaling (rope_scaling in config.json); factor 0 = none.
  double rope_scaling_factor = 0, rope_low_freq_factor = 1, rope_high_freq_factor = 4;
  int64_t rope_original_max_positions = 8192;

  uint64_t kv_bytes_per_token() const;  // layers * 2 * kv_heads * head_dim * sizeof(float)
  uint64_t parameters() const;          // embedding (+ LM head unless tied) + layers + norm
  int64_t q_dim() const { return heads * head_dim; }
  int64_t kv_dim() const { return kv_heads * head_dim; }
  // "tiny-llama-2l (random weights, seed 1): 2 layers, hidden 64, ..." for logs.
  std::string Describe() const;
};

// Every size positive, heads a multiple of kv_heads, head_dim even, ids inside the vocab
// (or -1). `where` prefixes the message (the file name); fields are named as a shape file
// spells them, or as config.json does with `hf_names`.
Status ValidateShape(const ModelShape& s, const std::string& where, bool hf_names = false);

// A shape file: {"name", "vocabSize", "hiddenSize", "numLayers", "numAttentionHeads",
// "numKvHeads", "headDim" (default hiddenSize / numAttentionHeads), "intermediateSize",
// "maxPositions", "ropeTheta", "rmsNormEps", "bosId", "eosId", "randomWeights", "seed",
// "tieEmbeddings"}; other keys of configs/models/*.json (kvDtype, numParameters,
// tensorParallel) are ignored. InvalidArgument naming the file and the field.
Result<ModelShape> LoadShapeFile(const std::string& path);
// A Hugging Face config.json of a Llama model (model_type "llama").
Result<ModelShape> LoadHfConfig(const std::string& path);

}  // namespace switchyard::executors::cpu
