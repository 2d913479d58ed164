// Weights of a decoder (model_shape.h: Llama, Qwen2, Qwen3) in fp32, in Hugging Face's
// layout (linear weights [out, in], row-major), and where they come from: generated from a
// seed (random weights: the model's text is meaningless) or read from a safetensors
// checkpoint, where every tensor must be one the family uses and every one it uses must
// be there.
//
// Thread-safety: plain values and free functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "cpu_engine/model_shape.h"
#include "cpu_engine/safetensors.h"

namespace switchyard::cpu_engine {

struct LayerWeights {
  std::vector<float> attn_norm;   // [hidden]        input_layernorm
  std::vector<float> q, k, v, o;  // [q_dim, hidden], [kv_dim, hidden] ×2, [hidden, q_dim]
  std::vector<float> q_bias, k_bias, v_bias;  // [q_dim], [kv_dim] ×2: qwen2 only
  std::vector<float> q_norm, k_norm;          // [head_dim] each: qwen3 only
  std::vector<float> mlp_norm;                // [hidden]        post_attention_layernorm
  std::vector<float> gate, up;                // [intermediate, hidden]
  std::vector<float> down;                    // [hidden, intermediate]
};

struct Weights {
  std::vector<float> embed;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;  // [hidden]
  std::vector<float> lm_head;     // [vocab, hidden]; empty: tied to embed
};

// Normal-ish values (Irwin–Hall of 4 uniforms, std 0.02) from splitmix64 streams seeded by
// (shape.seed, tensor); norm weights 1; qwen2's biases like the weights (after every
// other tensor, so a llama shape's weights do not depend on them). With weight_dtype
// bf16 the linear weights and the embedding are rounded to bf16 (so bf16 storage holds
// them exactly); fp32 keeps the unrounded values. The LM head is tied when
// shape.tie_embeddings. Bit-identical on every machine for a given shape.
Weights RandomWeights(const ModelShape& shape);

// Every tensor the shape's family uses present with its size, and no other (`where`
// prefixes the message).
Status CheckWeights(const ModelShape& shape, const Weights& w, const std::string& where);

// The checkpoint tensors of the shape's family: model.embed_tokens, model.norm, lm_head
// (unless shape.tie_embeddings) and per layer model.layers.N.{input_layernorm,
// self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj} (".weight"
// each), plus self_attn.{q,k,v}_proj.bias (qwen2) or self_attn.{q,k}_norm.weight (qwen3).
// NotFound naming a missing tensor; InvalidArgument naming the file and any tensor the
// family does not use ("...: tensor not used by a llama model"; lm_head.weight of a tied
// model too). Rotary inverse-frequency buffers (*.rotary_emb.inv_freq), which some
// exports carry, are ignored: the engine computes them from the config.
Result<Weights> ReadWeights(const ModelShape& shape, const SafetensorsSet& st);
// The same checks and tensors, layer by layer: on_layer(i, layer) as soon as layer i is
// read (it may consume the layer: a loader packs it and frees the fp32 copy, so a whole
// fp32 model never exists at once), then the embedding, final norm and head into *rest
// (rest->layers stays empty). The first error of on_layer is returned.
Status ReadWeightsByLayer(const ModelShape& shape, const SafetensorsSet& st,
                          const std::function<Status(int64_t, LayerWeights&)>& on_layer,
                          Weights* rest);

}  // namespace switchyard::cpu_engine
