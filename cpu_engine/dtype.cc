#include "cpu_engine/dtype.h"

#include <algorithm>
#include <cctype>

namespace switchyard::cpu_engine {

const char* DTypeName(DType t) { return t == DType::kBf16 ? "bf16" : "fp32"; }

std::optional<DType> ParseDType(const std::string& s) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  if (l == "fp32" || l == "f32" || l == "float32") return DType::kF32;
  if (l == "bf16" || l == "bfloat16") return DType::kBf16;
  return std::nullopt;
}

float Bf16ToFloat(uint16_t v) {
  const uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace switchyard::cpu_engine
