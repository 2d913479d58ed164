// Helpers shared by the cpu model tests: KV block storage for one context (fp32 or bf16
// KV), the tiny random-weight shapes and model of configs/models/, random inputs, and the
// text of byte tokens.
#pragma once

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu_engine/dtype.h"
#include "cpu_engine/model.h"

namespace switchyard::cpu_engine::testing {

inline std::string ShapePath(const std::string& name) {
  return std::string(SY_SOURCE_DIR) + "/configs/models/" + name + ".json";
}

inline ModelShape TinyShape(const std::string& name = "tiny-llama-2l") {
  auto s = LoadShapeFile(ShapePath(name));
  if (!s.ok()) std::abort();
  return *s;
}

// One context's KV blocks, each a separate heap allocation of KvBlockBytes (filled with
// 0xff bytes: NaN as fp32 and as bf16, so a read of a position nobody wrote shows up in
// the results).
class Context {
 public:
  Context(const ModelShape& s, int64_t tokens, int64_t block_tokens = 16)
      : floats_(KvBlockFloats(s, block_tokens)),
        elem_(DTypeBytes(s.kv_dtype)),
        block_tokens_(block_tokens) {
    const int64_t n = (tokens + block_tokens - 1) / block_tokens;
    for (int64_t i = 0; i < n; ++i) {
      owned_.push_back(std::make_unique<float[]>(floats_));
      std::memset(owned_.back().get(), 0xff, floats_ * sizeof(float));
      ptrs_.push_back(owned_.back().get());
    }
  }
  KvBlocks kv() const { return {ptrs_.data(), static_cast<int64_t>(ptrs_.size()), block_tokens_}; }
  // Copies every block into fresh memory and frees the old (restoring KV is a memcpy).
  void Relocate() {
    std::vector<std::unique_ptr<float[]>> fresh;
    for (size_t i = 0; i < owned_.size(); ++i) {
      fresh.push_back(std::make_unique<float[]>(floats_));
      std::memcpy(fresh.back().get(), owned_[i].get(), floats_ * sizeof(float));
      ptrs_[i] = fresh.back().get();
    }
    owned_ = std::move(fresh);
  }
  // The bytes of (layer, kv, position): kv_dim elements of the shape's KV dtype.
  const char* Bytes(const ModelShape& s, int64_t layer, int kv, int64_t pos) const {
    return reinterpret_cast<const char*>(ptrs_[pos / block_tokens_]) +
           ((layer * 2 + kv) * block_tokens_ + pos % block_tokens_) * s.kv_dim() * elem_;
  }
  // The floats of (layer, kv, position) — kv_dim of them (fp32 KV).
  const float* At(const ModelShape& s, int64_t layer, int kv, int64_t pos) const {
    return reinterpret_cast<const float*>(Bytes(s, layer, kv, pos));
  }
  // (layer, kv, position) as fp32 values, whatever the KV dtype.
  std::vector<float> Values(const ModelShape& s, int64_t layer, int kv, int64_t pos) const {
    std::vector<float> v(static_cast<size_t>(s.kv_dim()));
    const char* b = Bytes(s, layer, kv, pos);
    for (size_t i = 0; i < v.size(); ++i) {
      if (elem_ == 4) {
        std::memcpy(&v[i], b + 4 * i, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, b + 2 * i, 2);
        v[i] = Bf16ToFloat(h);
      }
    }
    return v;
  }
  // True when positions [0, tokens) of every layer hold the same bits in both.
  bool SameKv(const ModelShape& s, const Context& o, int64_t tokens) const {
    for (int64_t l = 0; l < s.layers; ++l)
      for (int kv = 0; kv < 2; ++kv)
        for (int64_t p = 0; p < tokens; ++p)
          if (std::memcmp(Bytes(s, l, kv, p), o.Bytes(s, l, kv, p), s.kv_dim() * elem_) != 0)
            return false;
    return true;
  }

 private:
  uint64_t floats_;
  int64_t elem_;
  int64_t block_tokens_;
  std::vector<std::unique_ptr<float[]>> owned_;
  std::vector<float*> ptrs_;
};

// Rows for positions [from, to) of `tokens` in `ctx`; logits for the last one (or all).
inline std::vector<Row> Rows(const Context& ctx, const std::vector<int32_t>& tokens, int64_t from,
                             int64_t to, bool all_logits = false) {
  std::vector<Row> rows;
  for (int64_t p = from; p < to; ++p)
    rows.push_back({tokens[static_cast<size_t>(p)], p, ctx.kv(), all_logits || p == to - 1});
  return rows;
}

inline std::vector<int32_t> Tokens(int64_t n, uint32_t seed, int64_t vocab) {
  std::vector<int32_t> t;
  uint64_t x = seed * 2654435761u + 12345;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t.push_back(static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(vocab)));
  }
  return t;
}

// configs/models/tiny-llama-2l.json with random weights, loaded once per test binary.
inline const Model& TinyModel() {
  static std::unique_ptr<Model> m = [] {
    auto r = Model::Load(ShapePath("tiny-llama-2l"));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : nullptr;
  }();
  return *m;
}

// n standard normal values from `seed`, each rounded to a bf16 value if `bf16`.
inline std::vector<float> Randn(size_t n, uint32_t seed, bool bf16 = false) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = bf16 ? RoundToBf16(d(g)) : d(g);
  return v;
}

// The bytes of the byte tokens (ids 0-255) among `ids`, as text.
inline std::string ByteText(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t t : ids)
    if (t >= 0 && t < 256) s.push_back(static_cast<char>(t));
  return s;
}

}  // namespace switchyard::cpu_engine::testing
