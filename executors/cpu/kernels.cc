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

// The 8-float vector helpers below are always inlined into their callers (each built for
// its own target), so their by-value vectors never cross a call: GCC's -Wpsabi note about
// passing them without AVX does not apply. No lambda may take or return one: a lambda is
// a function of the default target, and without inlining (-O0) a target clone that
// passes it a vector in an AVX register while it reads the vector from memory computes
// garbage (Debug builds on AVX2 machines did, before these were named functions).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace {

typedef float V8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));

// e^x of 8 lanes, each lane by the same operations (so a value's result does not depend on
// its lane or neighbours): x clamped to [-87.3, 88], x = n·ln2 + r with ln2 split in two,
// a degree-6 polynomial for e^r (Cephes' expf coefficients, ~1 ulp), times 2^n built in
// the exponent bits.
[[gnu::always_inline]] inline V8 Exp8(V8 x) {
  const V8 lo = V8{} - 87.3f, hi = V8{} + 88.0f;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  const V8 magic = V8{} + 12582912.0f;  // 1.5·2^23: adding it rounds to an integer
  const V8 n = (x * 1.44269504088896341f + magic) - magic;
  const V8 r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  V8 p = V8{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const I8 bits = (__builtin_convertvector(n, I8) + 127) << 23;
  V8 scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

// [x01 x23 y01 y23 | x45 x67 y45 y67]: the sums of neighbouring lanes of two vectors.
[[gnu::always_inline]] inline V8 Pairs8(V8 x, V8 y) {
  return __builtin_shufflevector(x, y, 0, 2, 8, 10, 4, 6, 12, 14) +
         __builtin_shufflevector(x, y, 1, 3, 9, 11, 5, 7, 13, 15);
}

// ((v0+v1)+(v2+v3)) + ((v4+v5)+(v6+v7)) of each of eight vectors, lane r of the result
// for a[r]: the tree of Dot's eight partial sums, for eight dot products at once.
[[gnu::always_inline]] inline V8 Tree8(const V8* a) {
  const V8 u = Pairs8(Pairs8(a[0], a[1]), Pairs8(a[2], a[3]));  // [a0..a3 of 0123 | of 4567]
  const V8 w = Pairs8(Pairs8(a[4], a[5]), Pairs8(a[6], a[7]));
  return __builtin_shufflevector(u, w, 0, 1, 2, 3, 8, 9, 10, 11) +
         __builtin_shufflevector(u, w, 4, 5, 6, 7, 12, 13, 14, 15);
}

[[gnu::always_inline]] inline V8 Load8(const float* p) {
  V8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

[[gnu::always_inline]] inline V8 Silu8(V8 g, V8 u) { return g / (1.0f + Exp8(-g)) * u; }

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

namespace {

// The attention of `group` query heads sharing one KV head (offset `off` in kv_dim), for
// head_dim HD, a multiple of 8 (0: the runtime `hd`, any size). A compile-time HD lets
// the compiler keep a head's accumulators in registers.
//
// HD > 0, per head: the scores of positions j0..j0+7 are eight dot products whose
// partial sums (lane l: dims ≡ l mod 8, in order) meet in Tree8, the order Dot uses;
// past `position` a lane repeats the last position's K and is masked out. Then the exact
// max, e^(s − max) by Exp8, the sum of the exponentials in eight partial sums (lane =
// position mod 8) combined by the same tree. Then the weighted V sum (one lane per
// dimension), of a few heads of the group at once so that they share V's loads: each
// output element is kParts partial sums by position mod kParts, each in position order,
// added in a fixed tree, then scaled once by 1/sum. How many heads go together and
// kParts depend on HD and the group only (model constants), so every step depends only
// on the row and its context, never on other rows. HD == 0: the same orders in scalar
// code (std::exp, one running sum, one head at a time).

// Softmax numerators of one head into e[0 .. position] (e has AttendScoresFloats room);
// returns 1 / their sum.
template <int HD>
[[gnu::always_inline]] inline float SoftmaxHead(const float* qh, const KvLayerView& kv,
                                                int64_t position, int64_t off, float* e) {
  constexpr int kChunks = HD / 8;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
  V8 qv[kChunks];
  for (int c = 0; c < kChunks; ++c) qv[c] = Load8(qh + 8 * c);
  const int64_t n = position + 1;
  const bool one_block = kv.block_tokens % 8 == 0;  // eight positions share a base
  V8 maxv = V8{} - INFINITY;
  for (int64_t j0 = 0; j0 < n; j0 += 8) {
    const float* kb = one_block ? kv.K(j0) + off : nullptr;
    V8 acc[8];
    for (int r = 0; r < 8; ++r) {
      const int64_t j = std::min<int64_t>(j0 + r, position);
      const float* k = one_block ? kb + (j - j0) * kv.kv_dim : kv.K(j) + off;
      V8 a = {};
      for (int c = 0; c < kChunks; ++c) a += qv[c] * Load8(k + 8 * c);
      acc[r] = a;
    }
    V8 sv = Tree8(acc) * scale;
    if (n - j0 < 8)
      for (int r = static_cast<int>(n - j0); r < 8; ++r) sv[r] = -INFINITY;
    std::memcpy(e + j0, &sv, sizeof(sv));
    maxv = maxv > sv ? maxv : sv;
  }
  float max = maxv[0];
  for (int r = 1; r < 8; ++r) max = std::max(max, maxv[r]);
  V8 sumv = {};
  for (int64_t j0 = 0; j0 < n; j0 += 8) {
    V8 x = Exp8(Load8(e + j0) - max);
    if (n - j0 < 8)
      for (int r = static_cast<int>(n - j0); r < 8; ++r) x[r] = 0.0f;
    std::memcpy(e + j0, &x, sizeof(x));
    sumv += x;
  }
  return 1.0f / (((sumv[0] + sumv[1]) + (sumv[2] + sumv[3])) +
                 ((sumv[4] + sumv[5]) + (sumv[6] + sumv[7])));
}

// out[g·HD + d] = inv[g] · Σ_j e[g·stride + j] · V(j)[off + d] for the G heads g < G.
template <int HD, int G>
[[gnu::always_inline]] inline void WeightedV(const KvLayerView& kv, int64_t position, int64_t off,
                                             const float* e, int64_t stride, const float* inv,
                                             float* out) {
  constexpr int kChunks = HD / 8;
  constexpr int kParts = G * kChunks >= 8 ? 1 : 8 / (G * kChunks);
  static_assert(kParts == 1 || kParts == 2 || kParts == 4);
  const int64_t n = position + 1;
  V8 acc[kParts][G][kChunks] = {};
  for (int64_t j0 = 0; j0 < n; j0 += kv.block_tokens) {  // block by block
    const float* v = kv.V(j0) + off;
    const int64_t end = std::min(n, j0 + kv.block_tokens);
    auto add = [&](V8(*a)[kChunks], int64_t j) __attribute__((always_inline)) {
      const float* vj = v + (j - j0) * kv.kv_dim;
      V8 x[kChunks];
      for (int c = 0; c < kChunks; ++c) x[c] = Load8(vj + 8 * c);
      for (int g = 0; g < G; ++g) {
        const float p = e[g * stride + j];
        for (int c = 0; c < kChunks; ++c) a[g][c] += p * x[c];
      }
    };
    int64_t j = j0;
    if (j0 % kParts == 0)
      for (; j + kParts <= end; j += kParts)
        for (int q = 0; q < kParts; ++q) add(acc[q], j + q);
    for (; j < end; ++j) add(acc[j % kParts], j);
  }
  for (int g = 0; g < G; ++g)
    for (int c = 0; c < kChunks; ++c) {
      V8 t = acc[0][g][c];
      if constexpr (kParts == 2) t = acc[0][g][c] + acc[1][g][c];
      if constexpr (kParts == 4) t = (acc[0][g][c] + acc[1][g][c]) + (acc[2][g][c] + acc[3][g][c]);
      for (int l = 0; l < 8; ++l) out[g * HD + 8 * c + l] = t[l] * inv[g];
    }
}

// Heads g, g+1, ... of the group G at a time while G of them are left; returns the next g.
template <int HD, int G>
[[gnu::always_inline]] inline int64_t AttendHeads(const float* q, const KvLayerView& kv,
                                                  int64_t position, int64_t group, int64_t off,
                                                  int64_t g, float* scores, float* out) {
  const int64_t stride = AttendScoresFloats(position);
  float inv[G];
  for (; g + G <= group; g += G) {
    for (int i = 0; i < G; ++i)
      inv[i] = SoftmaxHead<HD>(q + (g + i) * HD, kv, position, off, scores + i * stride);
    WeightedV<HD, G>(kv, position, off, scores, stride, inv, out + g * HD);
  }
  return g;
}

template <int HD>
[[gnu::always_inline]] inline void AttendGroup(const float* q, const KvLayerView& kv,
                                               int64_t position, int64_t group, int64_t off,
                                               int64_t hd_rt, float* scores, float* out) {
  if constexpr (HD > 0) {
    static_assert(HD % 8 == 0);
    // Heads whose V sums run together: as many as fill 8 accumulators (a power of two
    // dividing the group).
    constexpr int kTogether = HD / 8 >= 8 ? 1 : 8 / (HD / 8);
    int64_t g = 0;
    if constexpr (kTogether >= 4)
      g = AttendHeads<HD, 4>(q, kv, position, group, off, g, scores, out);
    if constexpr (kTogether >= 2)
      g = AttendHeads<HD, 2>(q, kv, position, group, off, g, scores, out);
    AttendHeads<HD, 1>(q, kv, position, group, off, g, scores, out);
  } else {
    const int64_t hd = hd_rt;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (int64_t g = 0; g < group; ++g) {
      const float* qh = q + g * hd;
      float* __restrict o = out + g * hd;
      float max = -INFINITY;
      for (int64_t j = 0; j <= position; ++j) {
        scores[j] = Dot(qh, kv.K(j) + off, hd) * scale;
        max = std::max(max, scores[j]);
      }
      float sum = 0;
      for (int64_t j = 0; j <= position; ++j) {
        scores[j] = std::exp(scores[j] - max);
        sum += scores[j];
      }
      const float inv = 1.0f / sum;
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
