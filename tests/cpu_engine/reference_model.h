// A straightforward reference forward pass for the cpu model tests: plain loops in double,
// no packing, no BLAS, the whole sequence at once — the Llama family as Hugging Face's
// modeling code computes it (qwen2 q/k/v biases, qwen3 per-head q/k RMSNorm before the
// rotary embedding, Llama 3 rope scaling, a tied head), written independently of the
// engine's kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "cpu_engine/model_shape.h"
#include "cpu_engine/weights.h"

namespace switchyard::cpu_engine::testing {

struct Reference {
  std::vector<std::vector<double>> logits;             // [position][vocab]
  std::vector<std::vector<std::vector<double>>> k, v;  // [layer][position][kv_dim]
};

inline std::vector<double> MatVec(const std::vector<float>& w, int64_t rows, int64_t cols,
                                  const std::vector<double>& x) {
  std::vector<double> y(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r] += static_cast<double>(w[r * cols + c]) * x[c];
  return y;
}

// RMSNorm of x[0, n) with weight w, in place.
inline void NormInPlace(double* x, int64_t n, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * inv * w[i];
}

inline std::vector<double> Norm(std::vector<double> x, const std::vector<float>& w, double eps) {
  NormInPlace(x.data(), static_cast<int64_t>(x.size()), w, eps);
  return x;
}

// transformers' inverse frequencies, with its "llama3" rope scaling when the shape has it.
inline double InvFreq(const ModelShape& s, int64_t i) {
  const double f = std::pow(s.rope_theta, -2.0 * i / static_cast<double>(s.head_dim));
  if (s.rope_scaling_factor <= 0) return f;
  const double old = static_cast<double>(s.rope_original_max_positions);
  const double low_wavelen = old / s.rope_low_freq_factor;
  const double high_wavelen = old / s.rope_high_freq_factor;
  const double wavelen = 2 * std::numbers::pi / f;
  const double scaled = wavelen > low_wavelen ? f / s.rope_scaling_factor : f;
  const double smooth =
      (old / wavelen - s.rope_low_freq_factor) / (s.rope_high_freq_factor - s.rope_low_freq_factor);
  const double smoothed = (1 - smooth) * scaled / s.rope_scaling_factor + smooth * scaled;
  const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
  return medium ? smoothed : scaled;
}

// Hugging Face rotate_half: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) per half.
inline void Rotate(const ModelShape& s, double* x, int64_t pos) {
  const int64_t hd = s.head_dim;
  for (int64_t i = 0; i < hd / 2; ++i) {
    const double a = pos * InvFreq(s, i), c = std::cos(a), sn = std::sin(a);
    const double x1 = x[i], x2 = x[i + hd / 2];
    x[i] = x1 * c - x2 * sn;
    x[i + hd / 2] = x2 * c + x1 * sn;
  }
}

inline void AddBias(std::vector<double>* y, const std::vector<float>& b) {
  for (size_t i = 0; i < b.size(); ++i) (*y)[i] += b[i];
}

// Softmax attention of position p over positions 0..p of layer l, every head.
inline std::vector<double> Attention(const ModelShape& s, const Reference& ref, int64_t l,
                                     const std::vector<double>& q, int64_t p) {
  const int64_t hd = s.head_dim;
  std::vector<double> attn(s.q_dim(), 0.0);
  for (int64_t hh = 0; hh < s.heads; ++hh) {
    const int64_t kvh = hh / (s.heads / s.kv_heads);
    std::vector<double> sc(p + 1);
    double max = -1e300, sum = 0;
    for (int64_t j = 0; j <= p; ++j) {
      double d = 0;
      for (int64_t i = 0; i < hd; ++i) d += q[hh * hd + i] * ref.k[l][j][kvh * hd + i];
      sc[j] = d / std::sqrt(static_cast<double>(hd));
      max = std::max(max, sc[j]);
    }
    for (auto& a : sc) sum += (a = std::exp(a - max));
    for (int64_t j = 0; j <= p; ++j)
      for (int64_t i = 0; i < hd; ++i) attn[hh * hd + i] += sc[j] / sum * ref.v[l][j][kvh * hd + i];
  }
  return attn;
}

inline Reference RunReference(const ModelShape& s, const Weights& w,
                              const std::vector<int32_t>& toks) {
  const int64_t n = static_cast<int64_t>(toks.size()), h = s.hidden, hd = s.head_dim;
  Reference ref;
  ref.k.assign(s.layers, {});
  ref.v.assign(s.layers, {});
  std::vector<std::vector<double>> x(n, std::vector<double>(h));
  for (int64_t p = 0; p < n; ++p)
    for (int64_t i = 0; i < h; ++i) x[p][i] = w.embed[toks[p] * h + i];
  for (int64_t l = 0; l < s.layers; ++l) {
    const LayerWeights& L = w.layers[l];
    std::vector<std::vector<double>> q(n);
    for (int64_t p = 0; p < n; ++p) {
      auto xn = Norm(x[p], L.attn_norm, s.rms_eps);
      q[p] = MatVec(L.q, s.q_dim(), h, xn);
      auto k = MatVec(L.k, s.kv_dim(), h, xn), v = MatVec(L.v, s.kv_dim(), h, xn);
      AddBias(&q[p], L.q_bias);
      AddBias(&k, L.k_bias);
      AddBias(&v, L.v_bias);
      if (!L.q_norm.empty()) {
        for (int64_t hh = 0; hh < s.heads; ++hh)
          NormInPlace(&q[p][hh * hd], hd, L.q_norm, s.rms_eps);
        for (int64_t hh = 0; hh < s.kv_heads; ++hh)
          NormInPlace(&k[hh * hd], hd, L.k_norm, s.rms_eps);
      }
      for (int64_t hh = 0; hh < s.heads; ++hh) Rotate(s, &q[p][hh * hd], p);
      for (int64_t hh = 0; hh < s.kv_heads; ++hh) Rotate(s, &k[hh * hd], p);
      ref.k[l].push_back(k);
      ref.v[l].push_back(v);
    }
    for (int64_t p = 0; p < n; ++p) {
      auto o = MatVec(L.o, h, s.q_dim(), Attention(s, ref, l, q[p], p));
      for (int64_t i = 0; i < h; ++i) x[p][i] += o[i];
      auto xn = Norm(x[p], L.mlp_norm, s.rms_eps);
      auto g = MatVec(L.gate, s.intermediate, h, xn), u = MatVec(L.up, s.intermediate, h, xn);
      for (int64_t i = 0; i < s.intermediate; ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      auto d = MatVec(L.down, h, s.intermediate, g);
      for (int64_t i = 0; i < h; ++i) x[p][i] += d[i];
    }
  }
  const auto& head = w.lm_head.empty() ? w.embed : w.lm_head;
  for (int64_t p = 0; p < n; ++p)
    ref.logits.push_back(MatVec(head, s.vocab_size, h, Norm(x[p], w.final_norm, s.rms_eps)));
  return ref;
}

// Largest |a - b| over the span relative to max(1, max |b|) (absolute while |b| <= 1).
inline double RelErr(const float* a, const std::vector<double>& b) {
  double err = 0, scale = 1;
  for (size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return err / scale;
}

}  // namespace switchyard::cpu_engine::testing
