// Which bytes of a streamed answer are settled (see stream_text.h).
#include "frontends/stream_text.h"

#include <algorithm>

namespace switchyard::frontends {

size_t UnsettledTail(std::string_view text, const std::vector<std::string>& stops) {
  constexpr std::string_view kReplacement = "\xef\xbf\xbd";
  size_t hold = 0;
  while (text.size() >= hold + kReplacement.size() &&
         text.substr(text.size() - hold - kReplacement.size(), kReplacement.size()) == kReplacement)
    hold += kReplacement.size();
  for (const std::string& stop : stops) {
    for (size_t k = std::min(stop.size() - (stop.empty() ? 0 : 1), text.size()); k > hold; --k)
      if (text.compare(text.size() - k, k, stop, 0, k) == 0) {
        hold = k;
        break;
      }
  }
  return hold;
}

size_t Utf8SafePrefix(std::string_view text) {
  size_t i = text.size();
  size_t back = 0;
  while (i > 0 && back < 3 && (static_cast<unsigned char>(text[i - 1]) & 0xC0) == 0x80) {
    --i;
    ++back;
  }
  if (i == 0) return text.size();
  unsigned char lead = static_cast<unsigned char>(text[i - 1]);
  size_t need = lead < 0x80           ? 1
                : (lead >> 5) == 0x6  ? 2
                : (lead >> 4) == 0xE  ? 3
                : (lead >> 3) == 0x1E ? 4
                                      : 1;
  return text.size() - (i - 1) < need ? i - 1 : text.size();
}

}  // namespace switchyard::frontends
