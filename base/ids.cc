#include "base/ids.h"
#include "base/mutex.h"

namespace switchyard {

std::string HexId(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[i] = kDigits[v & 0xf];
    v >>= 4;
  }
  return out;
}

std::string IdGenerator::NextString(std::string_view prefix) {
  uint64_t r;
  {
    MutexLock lock(&mu_);
    r = rng_();
  }
  std::string out(prefix);
  out += '_';
  out += HexId(r);
  return out;
}

}  // namespace switchyard
