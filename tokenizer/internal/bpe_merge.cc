// The merge loop of BpeModel (bpe_model.h): a scan over the pair ranks for short words, a
// heap with lazy deletion for long ones. Both merge the lowest-ranked adjacent pair, the
// leftmost on a tie, so they give the same tokens.
#include <queue>

#include "tokenizer/internal/bpe_model.h"

namespace switchyard::tokenizer::internal {
namespace {

// Words up to this many bytes are merged by scanning (quadratic, but no allocation churn).
constexpr size_t kShortWord = 48;
constexpr int32_t kNoRank = INT32_MAX;

}  // namespace

void BpeModel::Encode(std::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (word.size() == 1) {
    const int32_t id = byte_id_[static_cast<unsigned char>(word[0])];
    if (id >= 0 || unk_id_ >= 0) out->push_back(id >= 0 ? id : unk_id_);
    return;
  }
  const uint64_t hash = HashBytes(word);
  if (ignore_merges_) {
    const int32_t id = IdOfBytes(word, hash);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  if (cache_.Get(word, hash, out)) return;
  std::vector<int32_t> syms(word.size());
  for (size_t i = 0; i < word.size(); ++i) syms[i] = byte_id_[static_cast<unsigned char>(word[i])];
  if (syms.size() <= kShortWord) {
    MergeShort(&syms);
  } else {
    MergeLong(&syms);
  }
  size_t kept = 0;
  for (int32_t id : syms) {
    if (id >= 0 || unk_id_ >= 0) syms[kept++] = id >= 0 ? id : unk_id_;
  }
  cache_.Put(word, hash, syms.data(), kept);
  out->insert(out->end(), syms.begin(), syms.begin() + static_cast<long>(kept));
}

void BpeModel::MergeShort(std::vector<int32_t>* syms) const {
  std::vector<int32_t>& s = *syms;
  // rank[i], merged[i]: the merge of the pair (s[i], s[i + 1]).
  int32_t rank[kShortWord], merged[kShortWord];
  size_t n = s.size();
  auto look = [&](size_t i) {
    const MergeTable::Merge m = merges_.Find(s[i], s[i + 1]);
    rank[i] = m.rank >= 0 ? m.rank : kNoRank;
    merged[i] = m.merged;
  };
  for (size_t i = 0; i + 1 < n; ++i) look(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
      if (rank[i] < rank[best]) best = i;
    }
    if (rank[best] == kNoRank) break;
    s[best] = merged[best];
    for (size_t i = best + 1; i + 1 < n; ++i) {
      s[i] = s[i + 1];
      rank[i] = rank[i + 1];
      merged[i] = merged[i + 1];
    }
    --n;
    if (best > 0) look(best - 1);
    if (best + 1 < n) look(best);
  }
  s.resize(n);
}

void BpeModel::MergeLong(std::vector<int32_t>* syms) const {
  std::vector<int32_t>& s = *syms;
  const auto n = static_cast<int32_t>(s.size());
  std::vector<int32_t> next(n), prev(n);
  for (int32_t i = 0; i < n; ++i) next[i] = i + 1 < n ? i + 1 : -1, prev[i] = i - 1;
  // A candidate: (rank, position of the left symbol, the pair's ids when it was queued).
  struct Candidate {
    int32_t rank, pos, left, right, merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto offer = [&](int32_t i) {
    if (i < 0 || next[i] < 0) return;
    const MergeTable::Merge m = merges_.Find(s[i], s[next[i]]);
    if (m.rank >= 0) heap.push({m.rank, i, s[i], s[next[i]], m.merged});
  };
  for (int32_t i = 0; i + 1 < n; ++i) offer(i);
  constexpr int32_t kGone = -2;
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const int32_t j = next[c.pos];
    if (s[c.pos] != c.left || j < 0 || s[j] != c.right) continue;  // stale
    s[c.pos] = c.merged;
    s[j] = kGone;
    next[c.pos] = next[j];
    if (next[j] >= 0) prev[next[j]] = c.pos;
    offer(prev[c.pos]);
    offer(c.pos);
  }
  size_t kept = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (s[i] != kGone) s[kept++] = s[i];
  }
  s.resize(kept);
}

}  // namespace switchyard::tokenizer::internal
