// Weights of a Llama decoder in fp32, in Hugging Face's layout (linear weights [out, in],
// row-major), and where they come from: generated from a seed (random weights: the
// model's text is meaningless) or read from a safetensors checkpoint.
//
// Thread-safety: plain values and free functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "executors/cpu/model_shape.h"
#include "executors/cpu/safetensors.h"

namespace switchyard::executors::cpu {

struct LayerWeights {
  std::vector<float> attn_norm;   // [hidden]        input_layernorm
  std::vector<float> q, k, v, o;  // [q_dim, hidden], [kv_dim, hidden] ×2, [hidden, q_dim]
  std::vector<float> mlp_norm;    // [hidden]        post_attention_layernorm
  std::vector<float> gate, up;    // [intermediate, hidden]
  std::vector<float> down;        // [hidden, intermediate]
};

struct Weights {
  std::vector<float> embed;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;  // [hidden]
  std::vector<float> lm_head;     // [vocab, hidden]; empty: tied to embed
};

// Normal-ish values (Irwin–Hall of 4 uniforms, std 0.02) from splitmix64 streams seeded by
// (shape.seed, tensor); norm weights 1. The LM head is tied when shape.tie_embeddings.
// Bit-identical on every machine for a given shape.
Weights RandomWeights(const ModelShape& shape);

// Every tensor present with its shape (`where` prefixes the message).
Status CheckWeights(const ModelShape& shape, const Weights& w, const std::string& where);

// Reads model.embed_tokens, model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
// post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm and lm_head (".weight"
// each); without lm_head.weight, or with shape.tie_embeddings, the head is tied.
Result<Weights> ReadWeights(const ModelShape& shape, const SafetensorsSet& st);

}  // namespace switchyard::executors::cpu
