// Linear and PackedMatrix (kernels.h): the batch-invariant linear layer over packed fp32 or
// bf16 weight panels, with AVX-512, AVX2 and scalar micro-kernels that compute the same
// fma chain.
#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "cpu_engine/kernels.h"
#include "cpu_engine/thread_pool.h"

namespace switchyard::cpu_engine {

void UseSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void PackedMatrix::Free::operator()(char* p) const { std::free(p); }

PackedMatrix::PackedMatrix(const float* w, int64_t out, int64_t in, DType dtype)
    : out_(out), in_(in), dtype_(dtype) {
  const size_t bytes = std::max<uint64_t>(64, (PackedMatrix::bytes() + 63) / 64 * 64);
  data_.reset(static_cast<char*>(std::aligned_alloc(64, bytes)));
  if (!data_) throw std::bad_alloc();
  for (int64_t p = 0; p < panels(); ++p) {
    const int64_t base = p * in * kPanelCols;
    auto* f = reinterpret_cast<float*>(data_.get()) + base;
    auto* h = reinterpret_cast<uint16_t*>(data_.get()) + base;
    for (int64_t c = 0; c < kPanelCols; ++c) {
      const int64_t o = p * kPanelCols + c;
      for (int64_t i = 0; i < in; ++i) {
        const float v = o < out ? w[o * in + i] : 0.0f;
        if (dtype == DType::kBf16)
          h[i * kPanelCols + c] = FloatToBf16(v);
        else
          f[i * kPanelCols + c] = v;
      }
    }
  }
}

float PackedMatrix::At(int64_t o, int64_t i) const {
  const int64_t k = i * kPanelCols + o % kPanelCols;
  const void* p = panel_data(o / kPanelCols);
  if (dtype_ == DType::kBf16) return Bf16ToFloat(static_cast<const uint16_t*>(p)[k]);
  return static_cast<const float*>(p)[k];
}

uint64_t PackedMatrix::bytes() const {
  return static_cast<uint64_t>(panels() * in_ * kPanelCols * DTypeBytes(dtype_));
}

namespace {

// The micro-kernels: rows [0, R) of one packed row block xp ([in][kBlockRows]) times one
// panel b ([in][kPanelCols] of W: float, or uint16_t bf16 bits) into y (row stride ldy),
// the first `cols` columns. Every element is acc = fma(x[k], w[k], acc) for k = 0..in−1
// from acc = 0, in every path and for both W: a bf16 weight is widened to the fp32 of the
// same value (its bits shifted into the top half) before its fma.
using Kernel = void (*)(const float* xp, int64_t rows, const void* b, int64_t in, float* y,
                        int64_t ldy, int64_t cols);

[[gnu::target("avx512f,fma"), gnu::always_inline]] inline __m512 LoadPanel16(const float* b) {
  return _mm512_load_ps(b);
}
[[gnu::target("avx512f,fma"), gnu::always_inline]] inline __m512 LoadPanel16(const uint16_t* b) {
  const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
  // The maskz forms with a full mask are the plain instructions; the plain intrinsics
  // start from _mm512_undefined_epi32, which GCC 12 reports as maybe uninitialized.
  const __m512i w = _mm512_maskz_cvtepu16_epi32(0xffff, h);
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, w, 16));
}

template <int R, typename W>
[[gnu::target("avx512f,fma")]] void Avx512Rows(const float* xp, const W* b, int64_t in, float* y,
                                               int64_t ldy, int64_t cols) {
  __m512 a0[R], a1[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < in; ++k, xp += kBlockRows, b += kPanelCols) {
    const __m512 b0 = LoadPanel16(b), b1 = LoadPanel16(b + 16);
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

template <typename W, int... R>
[[gnu::target("avx512f,fma")]] void Avx512(const float* xp, int64_t rows, const W* b, int64_t in,
                                           float* y, int64_t ldy, int64_t cols,
                                           std::integer_sequence<int, R...>) {
  ((rows == R + 1 ? Avx512Rows<R + 1>(xp, b, in, y, ldy, cols) : void()), ...);
}

template <typename W>
void Avx512Kernel(const float* xp, int64_t rows, const void* b, int64_t in, float* y, int64_t ldy,
                  int64_t cols) {
  Avx512(xp, rows, static_cast<const W*>(b), in, y, ldy, cols,
         std::make_integer_sequence<int, kBlockRows>());
}

[[gnu::target("avx2,fma"), gnu::always_inline]] inline __m256 LoadPanel8(const float* b) {
  return _mm256_load_ps(b);
}
[[gnu::target("avx2,fma"), gnu::always_inline]] inline __m256 LoadPanel8(const uint16_t* b) {
  const __m128i h = _mm_load_si128(reinterpret_cast<const __m128i*>(b));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// AVX2: 16 columns (two 8-lane vectors) of up to 6 rows per pass.
template <int R, typename W>
[[gnu::target("avx2,fma")]] void Avx2Rows(const float* xp, const W* b, int64_t in, float* y,
                                          int64_t ldy, int64_t cols) {
  __m256 a0[R], a1[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < in; ++k, xp += kBlockRows, b += kPanelCols) {
    const __m256 b0 = LoadPanel8(b), b1 = LoadPanel8(b + 8);
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

template <typename W, int... R>
[[gnu::target("avx2,fma")]] void Avx2(const float* xp, int64_t rows, const W* b, int64_t in,
                                      float* y, int64_t ldy, int64_t cols,
                                      std::integer_sequence<int, R...>) {
  ((rows == R + 1 ? Avx2Rows<R + 1>(xp, b, in, y, ldy, cols) : void()), ...);
}

template <typename W>
void Avx2Kernel(const float* xp, int64_t rows, const void* bv, int64_t in, float* y, int64_t ldy,
                int64_t cols) {
  const W* b = static_cast<const W*>(bv);
  for (int64_t half = 0; half < 2 && half * 16 < cols; ++half)
    for (int64_t r0 = 0; r0 < rows; r0 += 6)
      Avx2(xp + r0, std::min<int64_t>(6, rows - r0), b + half * 16, in, y + r0 * ldy + half * 16,
           ldy, cols - half * 16, std::make_integer_sequence<int, 6>());
}

template <typename W>
void ScalarKernel(const float* xp, int64_t rows, const void* bv, int64_t in, float* y, int64_t ldy,
                  int64_t cols) {
  const W* b = static_cast<const W*>(bv);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float acc = 0.0f;
      for (int64_t k = 0; k < in; ++k)
        acc = std::fma(xp[k * kBlockRows + r], Widen(b[k * kPanelCols + c]), acc);
      y[r * ldy + c] = acc;
    }
}

struct Path {
  Kernel f32, bf16;
  const char* name;
};

Path MakePath(const std::string& name) {
  if (name == "avx512") return {Avx512Kernel<float>, Avx512Kernel<uint16_t>, "avx512"};
  if (name == "avx2") return {Avx2Kernel<float>, Avx2Kernel<uint16_t>, "avx2"};
  return {ScalarKernel<float>, ScalarKernel<uint16_t>, "scalar"};
}

Path& ChosenPath() {
  static Path p = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
      return MakePath("avx512");
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return MakePath("avx2");
    return MakePath("scalar");
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

// x [rows × in] packed per row block as [in][kBlockRows] (rows past the end zero).
float* PackRows(const float* x, int64_t rows, int64_t in) {
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
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
  return xp;
}

}  // namespace

const char* LinearPath() { return ChosenPath().name; }

bool SetLinearPathForTesting(const std::string& name) {
  __builtin_cpu_init();
  const bool fma = __builtin_cpu_supports("fma");
  if ((name == "avx512" && fma && __builtin_cpu_supports("avx512f")) ||
      (name == "avx2" && fma && __builtin_cpu_supports("avx2")) || name == "scalar") {
    ChosenPath() = MakePath(name);
    return true;
  }
  return false;
}

void Linear(const float* x, int64_t rows, const PackedMatrix& w, float* y, int64_t ldy,
            ThreadPool* pool) {
  if (rows <= 0) return;
  const int64_t in = w.in(), blocks = (rows + kBlockRows - 1) / kBlockRows;
  const float* xp = PackRows(x, rows, in);
  const Kernel kernel = w.dtype() == DType::kBf16 ? ChosenPath().bf16 : ChosenPath().f32;
  const int64_t panels = w.panels(), tasks = (panels + kPanelsPerTask - 1) / kPanelsPerTask;
  auto task = [&](int64_t t) {
    for (int64_t p = t * kPanelsPerTask; p < std::min(panels, (t + 1) * kPanelsPerTask); ++p) {
      const int64_t cols = std::min(kPanelCols, w.out() - p * kPanelCols);
      for (int64_t b = 0; b < blocks; ++b)
        kernel(xp + b * in * kBlockRows, std::min(kBlockRows, rows - b * kBlockRows),
               w.panel_data(p), in, y + b * kBlockRows * ldy + p * kPanelCols, ldy, cols);
    }
  };
  if (pool) {
    pool->ParallelFor(tasks, task);
  } else {
    for (int64_t t = 0; t < tasks; ++t) task(t);
  }
}

}  // namespace switchyard::cpu_engine
