#include "executors/cpu/weights.h"

namespace switchyard::executors::cpu {
namespace {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<float> RandomTensor(uint64_t seed, uint64_t tensor, int64_t n, float std_dev) {
  uint64_t state = seed * 0x100000001b3ull + tensor * 0x9e3779b97f4a7c15ull + 1;
  // Irwin–Hall: the sum of 4 uniforms on [0,1) has mean 2 and variance 1/3.
  const float scale = std_dev * 1.7320508f;  // sqrt(3)
  std::vector<float> out(static_cast<size_t>(n));
  for (auto& x : out) {
    float sum = 0;
    for (int i = 0; i < 4; ++i)
      sum += static_cast<float>(SplitMix64(&state) >> 40) * (1.0f / 16777216.0f);
    x = (sum - 2.0f) * scale;
  }
  return out;
}

std::vector<float> Ones(int64_t n) { return std::vector<float>(static_cast<size_t>(n), 1.0f); }

// A layer's tensors by checkpoint name (L: LayerWeights or const LayerWeights).
template <typename L>
auto ExpectedTensors(const ModelShape& s, L& l) {
  struct Expected {
    const char* name;
    decltype(&l.q) data;
    int64_t rows, cols;  // cols 0: a vector of `rows`
  };
  const int64_t h = s.hidden, q = s.q_dim(), kv = s.kv_dim(), in = s.intermediate;
  return std::vector<Expected>{
      {"input_layernorm", &l.attn_norm, h, 0}, {"self_attn.q_proj", &l.q, q, h},
      {"self_attn.k_proj", &l.k, kv, h},       {"self_attn.v_proj", &l.v, kv, h},
      {"self_attn.o_proj", &l.o, h, q},        {"post_attention_layernorm", &l.mlp_norm, h, 0},
      {"mlp.gate_proj", &l.gate, in, h},       {"mlp.up_proj", &l.up, in, h},
      {"mlp.down_proj", &l.down, h, in}};
}

std::vector<int64_t> TensorShape(int64_t rows, int64_t cols) {
  return cols ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows};
}

}  // namespace

Weights RandomWeights(const ModelShape& s) {
  constexpr float kStd = 0.02f;
  const int64_t h = s.hidden, q = s.q_dim(), kv = s.kv_dim(), in = s.intermediate;
  Weights w;
  uint64_t t = 0;
  w.embed = RandomTensor(s.seed, t++, s.vocab_size * h, kStd);
  for (int64_t i = 0; i < s.layers; ++i) {
    LayerWeights l;
    l.attn_norm = Ones(h);
    l.q = RandomTensor(s.seed, t++, q * h, kStd);
    l.k = RandomTensor(s.seed, t++, kv * h, kStd);
    l.v = RandomTensor(s.seed, t++, kv * h, kStd);
    l.o = RandomTensor(s.seed, t++, h * q, kStd);
    l.mlp_norm = Ones(h);
    l.gate = RandomTensor(s.seed, t++, in * h, kStd);
    l.up = RandomTensor(s.seed, t++, in * h, kStd);
    l.down = RandomTensor(s.seed, t++, h * in, kStd);
    w.layers.push_back(std::move(l));
  }
  w.final_norm = Ones(h);
  if (!s.tie_embeddings) w.lm_head = RandomTensor(s.seed, t++, s.vocab_size * h, kStd);
  return w;
}

Status CheckWeights(const ModelShape& s, const Weights& w, const std::string& where) {
  auto check = [&](const std::string& name, const std::vector<float>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) == n) return Status::OK();
    return Status::InvalidArgument(where + ": tensor '" + name + "' has " +
                                   std::to_string(v.size()) + " values, expected " +
                                   std::to_string(n));
  };
  SY_RETURN_IF_ERROR(check("embed", w.embed, s.vocab_size * s.hidden));
  SY_RETURN_IF_ERROR(check("final_norm", w.final_norm, s.hidden));
  if (!w.lm_head.empty()) SY_RETURN_IF_ERROR(check("lm_head", w.lm_head, s.vocab_size * s.hidden));
  if (static_cast<int64_t>(w.layers.size()) != s.layers)
    return Status::InvalidArgument(where + ": " + std::to_string(w.layers.size()) +
                                   " layers, expected " + std::to_string(s.layers));
  for (int64_t i = 0; i < s.layers; ++i)
    for (const auto& e : ExpectedTensors(s, w.layers[static_cast<size_t>(i)]))
      SY_RETURN_IF_ERROR(check("layers." + std::to_string(i) + "." + e.name, *e.data,
                               e.rows * (e.cols ? e.cols : 1)));
  return Status::OK();
}

Result<Weights> ReadWeights(const ModelShape& s, const SafetensorsSet& st) {
  Weights w;
  SY_ASSIGN_OR_RETURN(w.embed, st.Read("model.embed_tokens.weight", {s.vocab_size, s.hidden}));
  for (int64_t i = 0; i < s.layers; ++i) {
    w.layers.emplace_back();
    LayerWeights& l = w.layers.back();
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    for (const auto& e : ExpectedTensors(s, l)) {
      SY_ASSIGN_OR_RETURN(*e.data,
                          st.Read(prefix + e.name + ".weight", TensorShape(e.rows, e.cols)));
    }
  }
  SY_ASSIGN_OR_RETURN(w.final_norm, st.Read("model.norm.weight", {s.hidden}));
  if (!s.tie_embeddings && st.Has("lm_head.weight")) {
    SY_ASSIGN_OR_RETURN(w.lm_head, st.Read("lm_head.weight", {s.vocab_size, s.hidden}));
  }
  return w;
}

}  // namespace switchyard::executors::cpu
