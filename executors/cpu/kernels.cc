#include "executors/cpu/kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <numbers>
#include <vector>

namespace switchyard::executors::cpu {

void UseSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void LinearTile(const float* x, const float* w, int64_t in, int64_t out, float* y) {
  // Column-major C[kTileRows × out] = X · Wᵀ (row-major X is column-major Xᵀ, hence
  // Trans; row-major W[out × in] is column-major Wᵀ). The tile's rows are OpenBLAS's M
  // dimension, which its micro-kernels vectorise across lanes, each lane running the same
  // instruction sequence, so all kTileRows slots compute alike. (With the rows as N — the
  // plain row-major call — the Haswell kernel's 6-row register blocks gave slots 0-5,
  // 6-11 and 12-15 different bits.) C comes out transposed; a small copy restores rows.
  thread_local std::vector<float> c;
  c.resize(static_cast<size_t>(kTileRows * out));
  cblas_sgemm(CblasColMajor, CblasTrans, CblasNoTrans, static_cast<int>(kTileRows),
              static_cast<int>(out), static_cast<int>(in), 1.0f, x, static_cast<int>(in), w,
              static_cast<int>(in), 0.0f, c.data(), static_cast<int>(kTileRows));
  for (int64_t r = 0; r < kTileRows; ++r)
    for (int64_t o = 0; o < out; ++o) y[r * out + o] = c[o * kTileRows + r];
}

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

void SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

namespace {

// The attention of `group` query heads sharing one KV head (offset `off` in kv_dim), for
// head_dim HD (0: the runtime `hd`). A compile-time HD lets the compiler keep a head's
// accumulators in registers. Orders: scores over j = 0..position, Dot's fixed lane order,
// max-subtracted exponentials, the weighted V sum in j order, then one scale by 1/sum.
// Dot with a compile-time length when HD > 0 (the same lane order as Dot).
template <int HD>
[[gnu::always_inline]] inline float DotN(const float* a, const float* b, int64_t n) {
  if constexpr (HD == 0) {
    return Dot(a, b, n);
  } else {
    static_assert(HD % 8 == 0);
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t i = 0; i < HD; i += 8)
      for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  }
}

template <int HD>
[[gnu::always_inline]] inline void AttendGroup(const float* q, const KvLayerView& kv,
                                               int64_t position, int64_t group, int64_t off,
                                               int64_t hd_rt, float* scores, float* out) {
  const int64_t hd = HD ? HD : hd_rt;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int64_t g = 0; g < group; ++g) {
    const float* qh = q + g * hd;
    float max = -INFINITY;
    for (int64_t j = 0; j <= position; ++j) {
      scores[j] = DotN<HD>(qh, kv.K(j) + off, hd) * scale;
      max = std::max(max, scores[j]);
    }
    float sum = 0;
    for (int64_t j = 0; j <= position; ++j) {
      scores[j] = std::exp(scores[j] - max);
      sum += scores[j];
    }
    float* __restrict o = out + g * hd;
    const float inv = 1.0f / sum;
    if constexpr (HD > 0) {
      // Explicit 8-float vectors (GCC vector extension): one lane per d, so the order per
      // output element is the plain j order whatever the vector width underneath.
      typedef float V8 __attribute__((vector_size(32)));
      V8 acc[HD / 8] = {};
      for (int64_t j0 = 0; j0 <= position; j0 += kv.block_tokens) {  // block by block
        const float* v = kv.V(j0) + off;
        const int64_t end = std::min(position + 1, j0 + kv.block_tokens);
        for (int64_t j = j0; j < end; ++j, v += kv.kv_dim) {
          const float p = scores[j];
          for (int c = 0; c < HD / 8; ++c) {
            V8 x;
            std::memcpy(&x, v + 8 * c, sizeof(x));
            acc[c] += p * x;
          }
        }
      }
      for (int c = 0; c < HD / 8; ++c)
        for (int l = 0; l < 8; ++l) o[8 * c + l] = acc[c][l] * inv;
    } else {
      std::fill(o, o + hd, 0.0f);
      for (int64_t j = 0; j <= position; ++j) {
        const float* __restrict v = kv.V(j) + off;
        const float p = scores[j];
        for (int64_t d = 0; d < hd; ++d) o[d] += p * v[d];
      }
      for (int64_t d = 0; d < hd; ++d) o[d] *= inv;
    }
  }
}

}  // namespace

// Cloned for AVX2/FMA machines (chosen once per process at load: every row of a process
// runs the same clone, so invariance holds; another machine may compute other bits).
[[gnu::target_clones("arch=x86-64-v3", "default")]] void Attend(const float* q,
                                                                const KvLayerView& kv,
                                                                int64_t position, int64_t heads,
                                                                int64_t kv_heads, int64_t head_dim,
                                                                float* scores, float* out) {
  const int64_t group = heads / kv_heads;
  for (int64_t k = 0; k < kv_heads; ++k) {
    const float* qk = q + k * group * head_dim;
    float* ok = out + k * group * head_dim;
    const int64_t off = k * head_dim;
    switch (head_dim) {
      case 16:
        AttendGroup<16>(qk, kv, position, group, off, 16, scores, ok);
        break;
      case 32:
        AttendGroup<32>(qk, kv, position, group, off, 32, scores, ok);
        break;
      case 64:
        AttendGroup<64>(qk, kv, position, group, off, 64, scores, ok);
        break;
      case 128:
        AttendGroup<128>(qk, kv, position, group, off, 128, scores, ok);
        break;
      default:
        AttendGroup<0>(qk, kv, position, group, off, head_dim, scores, ok);
        break;
    }
  }
}

}  // namespace switchyard::executors::cpu
