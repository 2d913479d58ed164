// TokenTrie (token_trie.h).
#include "cpu_engine/token_trie.h"

#include <algorithm>
#include <numeric>

namespace switchyard::cpu_engine {

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes) : vocab_(token_bytes.size()) {
  std::vector<int32_t> ids;
  ids.reserve(token_bytes.size());
  for (size_t t = 0; t < token_bytes.size(); ++t)
    if (!token_bytes[t].empty() && token_bytes[t].size() <= 0xFFFF)
      ids.push_back(static_cast<int32_t>(t));
  // Sorted by bytes, a prefix comes before every token it starts; equal bytes by id.
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int32_t a, int32_t b) { return token_bytes[a] < token_bytes[b]; });
  std::vector<uint32_t> open;  // the nodes of the current path; open[d - 1] at depth d
  const std::string* prev = nullptr;
  for (int32_t id : ids) {
    const std::string& s = token_bytes[id];
    if (prev && s == *prev) {  // another id with the same bytes: the same node
      tokens_.push_back(id);
      nodes_[open.back()].tokens_end = static_cast<uint32_t>(tokens_.size());
      continue;
    }
    size_t lcp = 0;
    if (prev)
      while (lcp < s.size() && lcp < prev->size() && s[lcp] == (*prev)[lcp]) ++lcp;
    for (; open.size() > lcp; open.pop_back())
      nodes_[open.back()].end = static_cast<uint32_t>(nodes_.size());
    for (size_t d = lcp; d < s.size(); ++d) {
      Node n;
      n.depth = static_cast<uint16_t>(d + 1);
      n.byte = static_cast<uint8_t>(s[d]);
      n.tokens_begin = n.tokens_end = static_cast<uint32_t>(tokens_.size());
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(n);
    }
    tokens_.push_back(id);
    nodes_.back().tokens_end = static_cast<uint32_t>(tokens_.size());
    max_depth_ = std::max(max_depth_, s.size());
    prev = &s;
  }
  for (; !open.empty(); open.pop_back())
    nodes_[open.back()].end = static_cast<uint32_t>(nodes_.size());
}

}  // namespace switchyard::cpu_engine
