// Storage types of the CPU engine: how weights (packed panels, the embedding table) and
// KV blocks hold their values. Computation is always fp32: a bf16 value is widened to
// fp32 (exactly: bf16 is the top half of an fp32) where it is read, so a weight stored as
// bf16 gives the same bits as the same value stored as fp32.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace switchyard::cpu_engine {

enum class DType { kF32, kBf16 };

inline int DTypeBytes(DType t) { return t == DType::kBf16 ? 2 : 4; }
// "fp32" or "bf16" (the spelling shape files and descriptions use).
const char* DTypeName(DType t);
// "fp32"/"f32"/"float32" or "bf16"/"bfloat16", any case; nullopt for anything else.
std::optional<DType> ParseDType(const std::string& s);

// bf16 bits → fp32 (exact).
float Bf16ToFloat(uint16_t v);
// fp32 → bf16 bits, rounded to nearest, ties to even (NaN stays NaN). Exact for a value
// that is already a bf16 value.
inline uint16_t FloatToBf16(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40);
  return static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
// f rounded to the nearest bf16 value, as fp32.
inline float RoundToBf16(float f) { return Bf16ToFloat(FloatToBf16(f)); }
// An element stored as fp32 or as bf16 bits, as fp32 (for kernels templated on either).
inline float Widen(float x) { return x; }
inline float Widen(uint16_t x) { return Bf16ToFloat(x); }

}  // namespace switchyard::cpu_engine
