// Test helpers that write Hugging Face-style checkpoints: safetensors files (F32 or BF16,
// one file or shards) of a Weights in a family's exact tensor names, beside a config.json.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cpu_engine/dtype.h"
#include "cpu_engine/weights.h"

namespace switchyard::cpu_engine::testing {

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  const std::vector<float>* data;
};

// Writes a safetensors file of `tensors` in `dtype` ("F32" or "BF16"; "I8" writes bytes).
inline void WriteSafetensors(const std::string& path, const std::vector<Tensor>& tensors,
                             const std::string& dtype) {
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  std::string data;
  for (const Tensor& t : tensors) {
    const size_t begin = data.size();
    for (float f : *t.data) {
      if (dtype == "F32") {
        data.append(reinterpret_cast<const char*>(&f), 4);
      } else if (dtype == "BF16") {
        const uint16_t v = FloatToBf16(f);
        data.append(reinterpret_cast<const char*>(&v), 2);
      } else {
        data.push_back(static_cast<char>(f));
      }
    }
    header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string h = header.dump();
  const uint64_t len = h.size();
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
  out << h << data;
}

// Every tensor of `w` under its checkpoint name (the family's biases and q/k norms when
// the layers hold them; lm_head when not tied).
inline std::vector<Tensor> CheckpointTensors(const ModelShape& s, const Weights& w) {
  const int64_t h = s.hidden, q = s.q_dim(), kv = s.kv_dim(), in = s.intermediate;
  std::vector<Tensor> t = {{"model.embed_tokens.weight", {s.vocab_size, h}, &w.embed},
                           {"model.norm.weight", {h}, &w.final_norm}};
  if (!w.lm_head.empty()) t.push_back({"lm_head.weight", {s.vocab_size, h}, &w.lm_head});
  for (int64_t i = 0; i < s.layers; ++i) {
    const auto& l = w.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back({p + "input_layernorm.weight", {h}, &l.attn_norm});
    t.push_back({p + "self_attn.q_proj.weight", {q, h}, &l.q});
    t.push_back({p + "self_attn.k_proj.weight", {kv, h}, &l.k});
    t.push_back({p + "self_attn.v_proj.weight", {kv, h}, &l.v});
    t.push_back({p + "self_attn.o_proj.weight", {h, q}, &l.o});
    t.push_back({p + "post_attention_layernorm.weight", {h}, &l.mlp_norm});
    t.push_back({p + "mlp.gate_proj.weight", {in, h}, &l.gate});
    t.push_back({p + "mlp.up_proj.weight", {in, h}, &l.up});
    t.push_back({p + "mlp.down_proj.weight", {h, in}, &l.down});
    if (!l.q_bias.empty()) {
      t.push_back({p + "self_attn.q_proj.bias", {q}, &l.q_bias});
      t.push_back({p + "self_attn.k_proj.bias", {kv}, &l.k_bias});
      t.push_back({p + "self_attn.v_proj.bias", {kv}, &l.v_bias});
    }
    if (!l.q_norm.empty()) {
      t.push_back({p + "self_attn.q_norm.weight", {s.head_dim}, &l.q_norm});
      t.push_back({p + "self_attn.k_norm.weight", {s.head_dim}, &l.k_norm});
    }
  }
  return t;
}

// Every value of `w` rounded to bf16, so BF16 and F32 files of it hold the same values.
inline void RoundWeights(Weights* w) {
  auto round = [](std::vector<float>& v) {
    for (float& f : v) f = RoundToBf16(f);
  };
  round(w->embed);
  round(w->lm_head);
  round(w->final_norm);
  for (auto& l : w->layers)
    for (auto* v : {&l.attn_norm, &l.q, &l.k, &l.v, &l.o, &l.q_bias, &l.k_bias, &l.v_bias,
                    &l.q_norm, &l.k_norm, &l.mlp_norm, &l.gate, &l.up, &l.down})
      round(*v);
}

}  // namespace switchyard::cpu_engine::testing
