// Dot, RmsNorm, rotary embeddings and SiluMul (kernels.h). Linear and PackedMatrix are in
// linear.cc, Attend in attention.cc.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "cpu_engine/internal/vec8.h"
#include "cpu_engine/kernels.h"

namespace switchyard::cpu_engine {

float Dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  for (int l = 0; i < n; ++i, ++l) acc[l] += a[i] * b[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  const float mean = Dot(x, x, n) / static_cast<float>(n);
  const float inv = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * inv) * w[i];
}

void ApplyRope(float* x, int64_t head_dim, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    x[i] = a * cos[i] - b * sin[i];
    x[i + half] = b * cos[i] + a * sin[i];
  }
}

namespace {

// Llama 3 rope scaling (transformers' _compute_llama3_parameters).
double ScaledInvFreq(const RopeParams& p, double inv_freq) {
  if (p.scaling_factor <= 0) return inv_freq;
  const double old = static_cast<double>(p.original_max_positions);
  const double low_wavelen = old / p.low_freq_factor, high_wavelen = old / p.high_freq_factor;
  const double wavelen = 2 * std::numbers::pi / inv_freq;
  if (wavelen < high_wavelen) return inv_freq;
  if (wavelen > low_wavelen) return inv_freq / p.scaling_factor;
  const double smooth =
      (old / wavelen - p.low_freq_factor) / (p.high_freq_factor - p.low_freq_factor);
  return (1 - smooth) * inv_freq / p.scaling_factor + smooth * inv_freq;
}

}  // namespace

void RopeAngles(const RopeParams& p, int64_t position, float* cos, float* sin) {
  const int64_t half = p.head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double inv_freq = ScaledInvFreq(
        p, 1.0 / std::pow(p.theta, static_cast<double>(2 * i) / static_cast<double>(p.head_dim)));
    const double angle = static_cast<double>(position) * inv_freq;
    cos[i] = static_cast<float>(std::cos(angle));
    sin[i] = static_cast<float>(std::sin(angle));
  }
}

namespace {

using internal::Load8;
using internal::Silu8;
using internal::V8;

}  // namespace

// Every element through Exp8 (a tail through a padded vector), so its bits do not depend
// on n or its index.
[[gnu::target_clones("arch=x86-64-v3", "default")]] void SiluMul(const float* gate, const float* up,
                                                                 int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const V8 r = Silu8(Load8(gate + i), Load8(up + i));
    std::memcpy(out + i, &r, sizeof(r));
  }
  if (i < n) {
    float g[8] = {}, u[8] = {};
    std::memcpy(g, gate + i, (n - i) * sizeof(float));
    std::memcpy(u, up + i, (n - i) * sizeof(float));
    const V8 r = Silu8(Load8(g), Load8(u));
    std::memcpy(out + i, &r, (n - i) * sizeof(float));
  }
}

}  // namespace switchyard::cpu_engine
