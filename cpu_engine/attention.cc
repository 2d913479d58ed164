// Attend (kernels.h): one row's causal grouped-query attention over its context's KV
// blocks, fp32 or bf16 KV (widened exactly where read).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu_engine/internal/vec8.h"
#include "cpu_engine/kernels.h"

namespace switchyard::cpu_engine {

using internal::Exp8;
using internal::Load8;
using internal::Tree8;
using internal::V8;

namespace {

// Dot's order (8 partial sums, fixed tree) over a KV row of either type.
template <typename T>
float DotWiden(const float* a, const T* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * Widen(b[i + l]);
  for (int l = 0; i < n; ++i, ++l) acc[l] += a[i] * Widen(b[i]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

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
template <typename T, int HD>
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
    const T* kb = one_block ? kv.Ptr<T>(j0, 0) + off : nullptr;
    V8 acc[8];
    for (int r = 0; r < 8; ++r) {
      const int64_t j = std::min<int64_t>(j0 + r, position);
      const T* k = one_block ? kb + (j - j0) * kv.kv_dim : kv.Ptr<T>(j, 0) + off;
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
template <typename T, int HD, int G>
[[gnu::always_inline]] inline void WeightedV(const KvLayerView& kv, int64_t position, int64_t off,
                                             const float* e, int64_t stride, const float* inv,
                                             float* out) {
  constexpr int kChunks = HD / 8;
  constexpr int kParts = G * kChunks >= 8 ? 1 : 8 / (G * kChunks);
  static_assert(kParts == 1 || kParts == 2 || kParts == 4);
  const int64_t n = position + 1;
  V8 acc[kParts][G][kChunks] = {};
  for (int64_t j0 = 0; j0 < n; j0 += kv.block_tokens) {  // block by block
    const T* v = kv.Ptr<T>(j0, 1) + off;
    const int64_t end = std::min(n, j0 + kv.block_tokens);
    auto add = [&](V8(*a)[kChunks], int64_t j) __attribute__((always_inline)) {
      const T* vj = v + (j - j0) * kv.kv_dim;
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
template <typename T, int HD, int G>
[[gnu::always_inline]] inline int64_t AttendHeads(const float* q, const KvLayerView& kv,
                                                  int64_t position, int64_t group, int64_t off,
                                                  int64_t g, float* scores, float* out) {
  const int64_t stride = AttendScoresFloats(position);
  float inv[G];
  for (; g + G <= group; g += G) {
    for (int i = 0; i < G; ++i)
      inv[i] = SoftmaxHead<T, HD>(q + (g + i) * HD, kv, position, off, scores + i * stride);
    WeightedV<T, HD, G>(kv, position, off, scores, stride, inv, out + g * HD);
  }
  return g;
}

template <typename T, int HD>
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
      g = AttendHeads<T, HD, 4>(q, kv, position, group, off, g, scores, out);
    if constexpr (kTogether >= 2)
      g = AttendHeads<T, HD, 2>(q, kv, position, group, off, g, scores, out);
    AttendHeads<T, HD, 1>(q, kv, position, group, off, g, scores, out);
  } else {
    const int64_t hd = hd_rt;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (int64_t g = 0; g < group; ++g) {
      const float* qh = q + g * hd;
      float* __restrict o = out + g * hd;
      float max = -INFINITY;
      for (int64_t j = 0; j <= position; ++j) {
        scores[j] = DotWiden(qh, kv.Ptr<T>(j, 0) + off, hd) * scale;
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
        const T* __restrict v = kv.Ptr<T>(j, 1) + off;
        const float p = scores[j];
        for (int64_t d = 0; d < hd; ++d) o[d] += p * Widen(v[d]);
      }
      for (int64_t d = 0; d < hd; ++d) o[d] *= inv;
    }
  }
}

// One KV element type's attention: every KV head's group of query heads.
template <typename T>
[[gnu::always_inline]] inline void AttendAll(const float* q, const KvLayerView& kv,
                                             int64_t position, int64_t heads, int64_t kv_heads,
                                             int64_t head_dim, float* scores, float* out) {
  const int64_t group = heads / kv_heads;
  for (int64_t k = 0; k < kv_heads; ++k) {
    const float* qk = q + k * group * head_dim;
    float* ok = out + k * group * head_dim;
    const int64_t off = k * head_dim;
    switch (head_dim) {
      case 16:
        AttendGroup<T, 16>(qk, kv, position, group, off, 16, scores, ok);
        break;
      case 32:
        AttendGroup<T, 32>(qk, kv, position, group, off, 32, scores, ok);
        break;
      case 64:
        AttendGroup<T, 64>(qk, kv, position, group, off, 64, scores, ok);
        break;
      case 128:
        AttendGroup<T, 128>(qk, kv, position, group, off, 128, scores, ok);
        break;
      default:
        AttendGroup<T, 0>(qk, kv, position, group, off, head_dim, scores, ok);
        break;
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
  if (kv.dtype == DType::kBf16)
    AttendAll<uint16_t>(q, kv, position, heads, kv_heads, head_dim, scores, out);
  else
    AttendAll<float>(q, kv, position, heads, kv_heads, head_dim, scores, out);
}

}  // namespace switchyard::cpu_engine
