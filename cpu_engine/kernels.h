// The CPU engine's numeric kernels, written so that every output element has one fixed
// reduction order whatever else is computed alongside it (batch and chunk invariance):
//
//   * Linear (linear.cc): y = x · wᵀ over weights packed once at load (PackedMatrix:
//     panels of kPanelCols output columns, each [in][kPanelCols], fp32 or bf16). Every
//     output element is ONE fused multiply-add chain over k = 0..in−1 in order, starting
//     from zero — the same chain whatever the number of rows, the row's slot, the
//     blocking, or the thread that runs it; the AVX-512, AVX2 and scalar (std::fma) paths
//     compute the same chain, so they give the same bits (tests/cpu_engine/kernels_test.cc and
//     model_test.cc check it). bf16 panels are widened to fp32 in registers (exactly), so
//     the chain is the one fp32 storage of the same values computes. No BLAS.
//   * Dot / RmsNorm: 8 interleaved partial sums combined in a fixed tree (vectorisable,
//     no reassociation by the compiler: no -ffast-math).
//   * Attend (attention.cc): one row's causal grouped-query attention over its context's
//     KV blocks (fp32 or bf16): scores of positions 0..p eight at a time (Dot's lane order
//     and tree), the exact max, exponentials by one vector routine per element, their sum
//     in 8 lanes by position (fixed tree), the weighted V sum in position order (one
//     vector lane per dimension).
//   * SiluMul: every element through the same vector exponential.
//   Attend and SiluMul are built twice (x86-64-v3 with FMA, and baseline), the clone
//   chosen once per process: within a process every row runs the same code; two machines
//   may differ in the last bits.
//
// Thread-safety: pure functions over caller-owned memory (Linear packs its input into a
// per-thread buffer and may share a ThreadPool with other callers: thread_pool.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cpu_engine/dtype.h"

namespace switchyard::cpu_engine {

class ThreadPool;

inline constexpr int64_t kPanelCols = 32;  // output columns per packed panel
inline constexpr int64_t kBlockRows = 12;  // rows per micro-kernel call

// Sets OpenBLAS to one thread (once per process; later calls do nothing). The model math
// no longer calls BLAS; benchmarks and tools that do use it.
void UseSingleThreadedBlas();

// w[out × in] (row-major, as Hugging Face stores linear weights) packed for Linear: panel
// p holds columns [p·kPanelCols, (p+1)·kPanelCols) as [in][kPanelCols], zero past `out`;
// 64-byte aligned. Stored as fp32 or as bf16 (half the bytes: each value rounded to the
// nearest bf16, exact for a value that is one; Linear widens it in registers, so bf16
// storage of bf16 values gives the same bits as their fp32 storage).
class PackedMatrix {
 public:
  PackedMatrix() = default;
  PackedMatrix(const float* w, int64_t out, int64_t in, DType dtype = DType::kF32);
  int64_t out() const { return out_; }
  int64_t in() const { return in_; }
  DType dtype() const { return dtype_; }
  int64_t panels() const { return (out_ + kPanelCols - 1) / kPanelCols; }
  // Panel p: [in][kPanelCols] floats (fp32) or bf16 bit patterns (bf16).
  const void* panel_data(int64_t p) const {
    return data_.get() + p * in_ * kPanelCols * DTypeBytes(dtype_);
  }
  const float* panel(int64_t p) const { return static_cast<const float*>(panel_data(p)); }
  float At(int64_t o, int64_t i) const;  // w[o][i] (as stored: rounded when bf16)
  uint64_t bytes() const;                // the bytes the panels occupy (padding included)

 private:
  struct Free {
    void operator()(char* p) const;
  };
  int64_t out_ = 0, in_ = 0;
  DType dtype_ = DType::kF32;
  std::unique_ptr<char[], Free> data_;
};

// y[rows × w.out()] (row stride ldy ≥ out) = x[rows × w.in()] · wᵀ, computed on `pool`
// (nullptr: the calling thread). Each element: one fma chain in k order (see above).
void Linear(const float* x, int64_t rows, const PackedMatrix& w, float* y, int64_t ldy,
            ThreadPool* pool);

// Which Linear path this process runs: "avx512", "avx2" or "scalar" (all the same bits).
const char* LinearPath();
// Tests: makes Linear run `name` ("avx512", "avx2", "scalar") if this CPU has it; false
// otherwise. Not thread-safe (no Linear may run meanwhile).
bool SetLinearPathForTesting(const std::string& name);

// Σ a[i]·b[i] in the fixed 8-lane order.
float Dot(const float* a, const float* b, int64_t n);

// out = x / sqrt(mean(x²) + eps) · w (n values).
void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out);

// Hugging Face Llama "rotate half" on one head of `head_dim` values: for i < head_dim/2,
// (x[i], x[i+half]) ← (x[i]·cos[i] − x[i+half]·sin[i], x[i+half]·cos[i] + x[i]·sin[i]).
void ApplyRope(float* x, int64_t head_dim, const float* cos, const float* sin);

// The rotary angles of one position: inv_freq[i] = theta^(−2i/head_dim) (Llama 3 scaled
// when `scaling_factor` > 0), cos/sin of position·inv_freq[i] for i < head_dim/2.
struct RopeParams {
  double theta = 10000.0;
  int64_t head_dim = 0;
  double scaling_factor = 0, low_freq_factor = 1, high_freq_factor = 4;
  int64_t original_max_positions = 8192;
};
void RopeAngles(const RopeParams& p, int64_t position, float* cos, float* sin);

// out[i] = silu(gate[i]) · up[i], silu(g) = g / (1 + e^−g).
void SiluMul(const float* gate, const float* up, int64_t n, float* out);

// One layer of one context's KV in the block layout of model.h, fp32 or bf16 elements.
struct KvLayerView {
  float* const* blocks = nullptr;  // block base addresses (of bf16 elements when dtype is)
  int64_t block_tokens = 16;
  int64_t kv_dim = 0;  // kv_heads · head_dim
  int64_t layer = 0;
  DType dtype = DType::kF32;
  // Elements of (pos, kv): T = float for fp32 KV, uint16_t (bf16 bits) for bf16 KV.
  template <typename T>
  T* Ptr(int64_t pos, int kv) const {
    return reinterpret_cast<T*>(blocks[pos / block_tokens]) +
           ((layer * 2 + kv) * block_tokens + pos % block_tokens) * kv_dim;
  }
  float* K(int64_t pos) const { return At(pos, 0); }  // fp32 KV only
  float* V(int64_t pos) const { return At(pos, 1); }
  float* At(int64_t pos, int kv) const { return Ptr<float>(pos, kv); }
};

// Causal GQA of one row at `position`: q holds heads·head_dim values (after rotary), out
// receives heads·head_dim values; KV of positions 0..position must be in `kv` (bf16 KV is
// widened as it is read: the same orders as fp32). `scores`
// has room for min(heads / kv_heads, 4) · AttendScoresFloats(position) floats (scores
// are computed eight at a time, of up to four heads before their V sums).
inline int64_t AttendScoresFloats(int64_t position) { return (position + 8) / 8 * 8; }
void Attend(const float* q, const KvLayerView& kv, int64_t position, int64_t heads,
            int64_t kv_heads, int64_t head_dim, float* scores, float* out);

}  // namespace switchyard::cpu_engine
