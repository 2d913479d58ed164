#include "cpu_engine/weights.h"

#include <functional>
#include <set>

#include "cpu_engine/dtype.h"

namespace switchyard::cpu_engine {
namespace {

uint64_t NextSplitMix64(uint64_t* state) {
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
      sum += static_cast<float>(NextSplitMix64(&state) >> 40) * (1.0f / 16777216.0f);
    x = (sum - 2.0f) * scale;
  }
  return out;
}

std::vector<float> Ones(int64_t n) { return std::vector<float>(static_cast<size_t>(n), 1.0f); }

void RoundAll(std::vector<float>* v) {
  for (float& f : *v) f = RoundToBf16(f);
}

// A layer's tensors by checkpoint name (L: LayerWeights or const LayerWeights); the
// family's extra tensors only when it has them.
template <typename L>
auto ExpectedTensors(const ModelShape& s, L& l) {
  struct Expected {
    const char* name;  // without ".weight" / ".bias" for projections: see `suffix`
    const char* suffix;
    decltype(&l.q) data;
    int64_t rows, cols;  // cols 0: a vector of `rows`
  };
  const int64_t h = s.hidden, q = s.q_dim(), kv = s.kv_dim(), in = s.intermediate;
  std::vector<Expected> e = {{"input_layernorm", ".weight", &l.attn_norm, h, 0},
                             {"self_attn.q_proj", ".weight", &l.q, q, h},
                             {"self_attn.k_proj", ".weight", &l.k, kv, h},
                             {"self_attn.v_proj", ".weight", &l.v, kv, h},
                             {"self_attn.o_proj", ".weight", &l.o, h, q},
                             {"post_attention_layernorm", ".weight", &l.mlp_norm, h, 0},
                             {"mlp.gate_proj", ".weight", &l.gate, in, h},
                             {"mlp.up_proj", ".weight", &l.up, in, h},
                             {"mlp.down_proj", ".weight", &l.down, h, in}};
  if (s.qkv_bias()) {
    e.push_back({"self_attn.q_proj", ".bias", &l.q_bias, q, 0});
    e.push_back({"self_attn.k_proj", ".bias", &l.k_bias, kv, 0});
    e.push_back({"self_attn.v_proj", ".bias", &l.v_bias, kv, 0});
  }
  if (s.qk_norm()) {
    e.push_back({"self_attn.q_norm", ".weight", &l.q_norm, s.head_dim, 0});
    e.push_back({"self_attn.k_norm", ".weight", &l.k_norm, s.head_dim, 0});
  }
  return e;
}

std::vector<int64_t> TensorShape(int64_t rows, int64_t cols) {
  return cols ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows};
}

std::string LayerPrefix(int64_t i) { return "model.layers." + std::to_string(i) + "."; }

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
    if (s.qk_norm()) l.q_norm = l.k_norm = Ones(s.head_dim);
    w.layers.push_back(std::move(l));
  }
  w.final_norm = Ones(h);
  if (!s.tie_embeddings) w.lm_head = RandomTensor(s.seed, t++, s.vocab_size * h, kStd);
  for (LayerWeights& l : w.layers)
    if (s.qkv_bias()) {
      l.q_bias = RandomTensor(s.seed, t++, q, kStd);
      l.k_bias = RandomTensor(s.seed, t++, kv, kStd);
      l.v_bias = RandomTensor(s.seed, t++, kv, kStd);
    }
  if (s.weight_dtype == DType::kBf16) {
    RoundAll(&w.embed);
    RoundAll(&w.lm_head);
    for (LayerWeights& l : w.layers)
      for (auto* m : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) RoundAll(m);
  }
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
  for (int64_t i = 0; i < s.layers; ++i) {
    const LayerWeights& l = w.layers[static_cast<size_t>(i)];
    for (const auto& e : ExpectedTensors(s, l))
      SY_RETURN_IF_ERROR(check("layers." + std::to_string(i) + "." + e.name + e.suffix, *e.data,
                               e.rows * (e.cols ? e.cols : 1)));
    // Tensors of another family: refused rather than silently dropped.
    const std::string arch = ArchName(s.arch);
    if (!s.qkv_bias() && !(l.q_bias.empty() && l.k_bias.empty() && l.v_bias.empty()))
      return Status::InvalidArgument(where + ": layers." + std::to_string(i) +
                                     ": q/k/v biases are not used by a " + arch + " model");
    if (!s.qk_norm() && !(l.q_norm.empty() && l.k_norm.empty()))
      return Status::InvalidArgument(where + ": layers." + std::to_string(i) +
                                     ": q/k norms are not used by a " + arch + " model");
  }
  return Status::OK();
}

namespace {

bool Ignored(const std::string& name) {
  static const std::string kInvFreq = "rotary_emb.inv_freq";
  return name.size() >= kInvFreq.size() &&
         name.compare(name.size() - kInvFreq.size(), kInvFreq.size(), kInvFreq) == 0;
}

// Every checkpoint tensor is one of `used` (or an ignored rotary buffer).
Status RefuseUnused(const ModelShape& s, const SafetensorsSet& st,
                    const std::set<std::string>& used) {
  for (const auto& [name, info] : st.tensors()) {
    if (used.count(name) || Ignored(name)) continue;
    std::string why = "tensor not used by a " + std::string(ArchName(s.arch)) + " model";
    if (name == "lm_head.weight") why += " with tie_word_embeddings true";
    return Status::InvalidArgument(info.file + ": " + name + ": " + why);
  }
  return Status::OK();
}

// fn(name, shape, destination) for every checkpoint tensor of the family: layer by layer
// (layer_done(i, layer) after layer i's), then the embedding, final norm and head into
// `rest`.
template <typename Fn, typename Done>
Status ForEachTensor(const ModelShape& s, Weights& rest, Fn fn, Done layer_done) {
  for (int64_t i = 0; i < s.layers; ++i) {
    LayerWeights l;
    for (const auto& e : ExpectedTensors(s, l))
      SY_RETURN_IF_ERROR(
          fn(LayerPrefix(i) + e.name + e.suffix, TensorShape(e.rows, e.cols), e.data));
    SY_RETURN_IF_ERROR(layer_done(i, l));
  }
  SY_RETURN_IF_ERROR(fn("model.embed_tokens.weight", {s.vocab_size, s.hidden}, &rest.embed));
  SY_RETURN_IF_ERROR(fn("model.norm.weight", {s.hidden}, &rest.final_norm));
  if (!s.tie_embeddings)
    SY_RETURN_IF_ERROR(fn("lm_head.weight", {s.vocab_size, s.hidden}, &rest.lm_head));
  return Status::OK();
}

}  // namespace

Status ReadWeightsByLayer(const ModelShape& s, const SafetensorsSet& st,
                          const std::function<Status(int64_t, LayerWeights&)>& on_layer,
                          Weights* rest) {
  std::set<std::string> used;  // first the names: an unused tensor is refused before reading
  Weights names;
  SY_RETURN_IF_ERROR(ForEachTensor(
      s, names,
      [&](const std::string& name, const std::vector<int64_t>&, std::vector<float>*) {
        used.insert(name);
        return Status::OK();
      },
      [](int64_t, LayerWeights&) { return Status::OK(); }));
  SY_RETURN_IF_ERROR(RefuseUnused(s, st, used));
  return ForEachTensor(
      s, *rest,
      [&](const std::string& name, const std::vector<int64_t>& shape, std::vector<float>* out) {
        Result<std::vector<float>> r = st.Read(name, shape);
        if (!r.ok()) return r.status();
        *out = std::move(*r);
        return Status::OK();
      },
      on_layer);
}

Result<Weights> ReadWeights(const ModelShape& s, const SafetensorsSet& st) {
  Weights w;
  SY_RETURN_IF_ERROR(ReadWeightsByLayer(
      s, st,
      [&w](int64_t, LayerWeights& l) {
        w.layers.push_back(std::move(l));
        return Status::OK();
      },
      &w));
  return w;
}

}  // namespace switchyard::cpu_engine
