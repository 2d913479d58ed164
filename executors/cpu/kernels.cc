#include "executors/cpu/kernels.h"

#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "executors/cpu/thread_pool.h"

namespace switchyard::executors::cpu {

void UseSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void PackedMatrix::Free::operator()(float* p) const { std::free(p); }

PackedMatrix::PackedMatrix(const float* w, int64_t out, int64_t in) : out_(out), in_(in) {
  const size_t floats = static_cast<size_t>(panels() * in * kPanelCols);
  const size_t bytes = std::max<size_t>(64, (floats * sizeof(float) + 63) / 64 * 64);
  data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
  if (!data_) throw std::bad_alloc();
  for (int64_t p = 0; p < panels(); ++p) {
    float* d = data_.get() + p * in * kPanelCols;
    for (int64_t c = 0; c < kPanelCols; ++c) {
      const int64_t o = p * kPanelCols + c;
      for (int64_t i = 0; i < in; ++i) d[i * kPanelCols + c] = o < out ? w[o * in + i] : 0.0f;
    }
  }
}

namespace {

// The micro-kernels: rows [0, R) of one packed row block xp ([in][kBlockRows]) times one
// panel b ([in][kPanelCols]) into y (row stride ldy), the first `cols` columns. Every
// element is acc = fma(x[k], w[k], acc) for k = 0..in−1 from acc = 0, in every path.
using Kernel = void (*)(const float* xp, int64_t rows, const float* b, int64_t in, float* y,
                        int64_t ldy, int64_t cols);

template <int R>
[[gnu::target("avx512f,fma")]] void Avx512Rows(const float* xp, const float* b, int64_t in,
                                               float* y, int64_t ldy, int64_t cols) {
  __m512 a0[R], a1[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < in; ++k, xp += kBlockRows, b += kPanelCols) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_set1_ps(xp[r]);
      a0[r] = _mm512_fmadd_ps(xv, b0, a0[r]);
      a1[r] = _mm512_fmadd_ps(xv, b1, a1[r]);
    }
  }
  if (cols == kPanelCols) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      _mm512_storeu_ps(y + r * ldy, a0[r]);
      _mm512_storeu_ps(y + r * ldy + 16, a1[r]);
    }
  } else {
    const uint32_t m = cols >= 32 ? ~0u : (1u << cols) - 1;
    for (int r = 0; r < R; ++r) {
      _mm512_mask_storeu_ps(y + r * ldy, static_cast<__mmask16>(m & 0xffff), a0[r]);
      _mm512_mask_storeu_ps(y + r * ldy + 16, static_cast<__mmask16>(m >> 16), a1[r]);
    }
  }
}

template <int... R>
[[gnu::target("avx512f,fma")]] void Avx512(const float* xp, int64_t rows, const float* b,
                                           int64_t in, float* y, int64_t ldy, int64_t cols,
                                           std::integer_sequence<int, R...>) {
  ((rows == R + 1 ? Avx512Rows<R + 1>(xp, b, in, y, ldy, cols) : void()), ...);
}

void Avx512Kernel(const float* xp, int64_t rows, const float* b, int64_t in, float* y, int64_t ldy,
                  int64_t cols) {
  Avx512(xp, rows, b, in, y, ldy, cols, std::make_integer_sequence<int, kBlockRows>());
}

// AVX2: 16 columns (two 8-lane vectors) of up to 6 rows per pass.
template <int R>
[[gnu::target("avx2,fma")]] void Avx2Rows(const float* xp, const float* b, int64_t in, float* y,
                                          int64_t ldy, int64_t cols) {
  __m256 a0[R], a1[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < in; ++k, xp += kBlockRows, b += kPanelCols) {
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 xv = _mm256_broadcast_ss(xp + r);
      a0[r] = _mm256_fmadd_ps(xv, b0, a0[r]);
      a1[r] = _mm256_fmadd_ps(xv, b1, a1[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    alignas(32) float t[16];
    _mm256_store_ps(t, a0[r]);
    _mm256_store_ps(t + 8, a1[r]);
    std::memcpy(y + r * ldy, t, static_cast<size_t>(std::min<int64_t>(16, cols)) * sizeof(float));
  }
}

template <int... R>
[[gnu::target("avx2,fma")]] void Avx2(const float* xp, int64_t rows, const float* b, int64_t in,
                                      float* y, int64_t ldy, int64_t cols,
                                      std::integer_sequence<int, R...>) {
  ((rows == R + 1 ? Avx2Rows<R + 1>(xp, b, in, y, ldy, cols) : void()), ...);
}

void Avx2Kernel(const float* xp, int64_t rows, const float* b, int64_t in, float* y, int64_t ldy,
                int64_t cols) {
  for (int64_t half = 0; half < 2 && half * 16 < cols; ++half)
    for (int64_t r0 = 0; r0 < rows; r0 += 6)
      Avx2(xp + r0, std::min<int64_t>(6, rows - r0), b + half * 16, in, y + r0 * ldy + half * 16,
           ldy, cols - half * 16, std::make_integer_sequence<int, 6>());
}

void ScalarKernel(const float* xp, int64_t rows, const float* b, int64_t in, float* y, int64_t ldy,
                  int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float acc = 0.0f;
      for (int64_t k = 0; k < in; ++k)
        acc = std::fma(xp[k * kBlockRows + r], b[k * kPanelCols + c], acc);
      y[r * ldy + c] = acc;
    }
}

struct Path {
  Kernel kernel;
  const char* name;
};

Path& ChosenPath() {
  static Path p = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
      return Path{Avx512Kernel, "avx512"};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return Path{Avx2Kernel, "avx2"};
    return Path{ScalarKernel, "scalar"};
  }();
  return p;
}

constexpr int64_t kPanelsPerTask = 4;  // a task: 4 panels (128 columns) × every row block

struct AlignedFloats {
  float* data = nullptr;
  size_t size = 0;
  ~AlignedFloats() { std::free(data); }
  float* Get(size_t n) {
    if (n > size) {
      std::free(data);
      data = static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64));
      if (!data) throw std::bad_alloc();
      size = n;
    }
    return data;
  }
};

}  // namespace

const char* LinearPath() { return ChosenPath().name; }

bool SetLinearPathForTesting(const std::string& name) {
  __builtin_cpu_init();
  const bool fma = __builtin_cpu_supports("fma");
  if (name == "avx512" && fma && __builtin_cpu_supports("avx512f"))
    ChosenPath() = {Avx512Kernel, "avx512"};
  else if (name == "avx2" && fma && __builtin_cpu_supports("avx2"))
    ChosenPath() = {Avx2Kernel, "avx2"};
  else if (name == "scalar")
    ChosenPath() = {ScalarKernel, "scalar"};
  else
    return false;
  return true;
}

void Linear(const float* x, int64_t rows, const PackedMatrix& w, float* y, int64_t ldy,
            ThreadPool* pool) {
  if (rows <= 0) return;
  const int64_t in = w.in(), blocks = (rows + kBlockRows - 1) / kBlockRows;
  // x packed per row block as [in][kBlockRows] (rows past the end zero).
  thread_local AlignedFloats packed;
  float* xp = packed.Get(static_cast<size_t>(blocks * in * kBlockRows));
  for (int64_t b = 0; b < blocks; ++b) {
    float* d = xp + b * in * kBlockRows;
    for (int64_t r = 0; r < kBlockRows; ++r) {
      const int64_t row = b * kBlockRows + r;
      if (row < rows) {
        const float* s = x + row * in;
        for (int64_t k = 0; k < in; ++k) d[k * kBlockRows + r] = s[k];
      } else {
        for (int64_t k = 0; k < in; ++k) d[k * kBlockRows + r] = 0.0f;
      }
    }
  }
  const Kernel kernel = ChosenPath().kernel;
  const int64_t panels = w.panels(), tasks = (panels + kPanelsPerTask - 1) / kPanelsPerTask;
  auto task = [&](int64_t t) {
    for (int64_t p = t * kPanelsPerTask; p < std::min(panels, (t + 1) * kPanelsPerTask); ++p) {
      const int64_t cols = std::min(kPanelCols, w.out() - p * kPanelCols);
      for (int64_t b = 0; b < blocks; ++b)
        kernel(xp + b * in * kBlockRows, std::min(kBlockRows, rows - b * kBlockRows), w.panel(p),
               in, y + b * kBlockRows * ldy + p * kPanelCols, ldy, cols);
    }
  };
  if (pool) {
    pool->ParallelFor(tasks, task);
  } else {
    for (int64_t t = 0; t < tasks; ++t) task(t);
  }
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
