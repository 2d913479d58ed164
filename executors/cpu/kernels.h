// The CPU engine's numeric kernels, written so that every output element has one fixed
// reduction order whatever else is computed alongside it (batch and chunk invariance):
//
//   * LinearTile: y = x · wᵀ for exactly kTileRows rows, one cblas_sgemm call shape per
//     weight matrix, the rows as OpenBLAS's M dimension (its vector lanes: one 16-row
//     micro-tile), so a row's outputs depend neither on the other rows of the tile nor on
//     the slot it occupies (tests/cpu/kernels_test.cc and model_test.cc check it bit for
//     bit). Callers pad the last tile with zero rows. BLAS runs single-threaded
//     (UseSingleThreadedBlas) so that thread partitioning never changes a kernel path.
//   * Dot / RmsNorm: 8 interleaved partial sums combined in a fixed tree (vectorisable,
//     no reassociation by the compiler: no -ffast-math).
//   * Attend: one row's causal grouped-query attention over its context's KV blocks,
//     scores over positions 0..p in order, max-subtracted softmax, weighted sum in order
//     (one vector lane per dimension). Built twice (x86-64-v3 with FMA, and baseline), the
//     clone chosen once per process: within a process every row runs the same code; two
//     machines may differ in the last bits.
//
// Thread-safety: pure functions over caller-owned memory.
#pragma once

#include <cstdint>

namespace switchyard::executors::cpu {

inline constexpr int64_t kTileRows = 16;  // rows per sgemm call of every linear layer

// Sets OpenBLAS to one thread (once per process; later calls do nothing).
void UseSingleThreadedBlas();

// y[kTileRows × out] = x[kTileRows × in] · w[out × in]ᵀ (row-major, as Hugging Face stores
// linear weights).
void LinearTile(const float* x, const float* w, int64_t in, int64_t out, float* y);

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

// One layer of one context's KV in the block layout of model.h.
struct KvLayerView {
  float* const* blocks = nullptr;
  int64_t block_tokens = 16;
  int64_t kv_dim = 0;  // kv_heads · head_dim
  int64_t layer = 0;
  float* K(int64_t pos) const { return At(pos, 0); }
  float* V(int64_t pos) const { return At(pos, 1); }
  float* At(int64_t pos, int kv) const {
    return blocks[pos / block_tokens] +
           ((layer * 2 + kv) * block_tokens + pos % block_tokens) * kv_dim;
  }
};

// Causal GQA of one row at `position`: q holds heads·head_dim values (after rotary), out
// receives heads·head_dim values; KV of positions 0..position must be in `kv`. `scores`
// has room for position + 1 floats.
void Attend(const float* q, const KvLayerView& kv, int64_t position, int64_t heads,
            int64_t kv_heads, int64_t head_dim, float* scores, float* out);

}  // namespace switchyard::executors::cpu
