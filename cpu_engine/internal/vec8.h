// 8-lane float vectors (GCC vector extensions) shared by the CPU kernels that must give
// the same bits in every lane and on every row: the exponential, the fixed summation
// trees, loads of fp32 and of bf16 (widened exactly). Internal to cpu_engine/
// (kernels.cc, attention.cc).
//
// These helpers are always inlined into their callers (each built for its own target), so
// their by-value vectors never cross a call: GCC's -Wpsabi note about passing them without
// AVX does not apply (it is silenced for the files that include this header). No lambda
// may take or return one: a lambda is a function of the default target, and without
// inlining (-O0) a target clone that passes it a vector in an AVX register while it reads
// the vector from memory computes garbage (Debug builds on AVX2 machines did, before these
// were named functions).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <cstring>

#pragma GCC diagnostic ignored "-Wpsabi"

namespace switchyard::cpu_engine::internal {

typedef float V8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));
typedef uint32_t U8 __attribute__((vector_size(32)));
typedef uint16_t H8 __attribute__((vector_size(16)));

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

// Eight bf16 values widened to fp32 (exact: a bf16 value is the top half of an fp32).
[[gnu::always_inline]] inline V8 Load8(const uint16_t* p) {
  H8 h;
  std::memcpy(&h, p, sizeof(h));
  const U8 bits = __builtin_convertvector(h, U8) << 16;
  V8 v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

}  // namespace switchyard::cpu_engine::internal
