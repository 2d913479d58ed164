// The added tokens of tokenizer.json ("added_tokens": special and not) and their matching
// in text, before normalization and BPE, with the semantics of Hugging Face's tokenizers:
//   - tokens with `normalized: false` are found in the raw text; those with `normalized:
//     true` in each normalized stretch between them, by their normalized content;
//   - leftmost-longest matching, non-overlapping, left to right;
//   - `single_word`: a match with a word character (\w) right before or after it is not a
//     token (the text stays text, and matching resumes after it);
//   - `lstrip` / `rstrip`: the White_Space before / after the token is part of it (so it is
//     not tokenized), never reaching back into an earlier token;
//   - with split_special_tokens, special tokens are not matched at all.
//
// Thread-safety: immutable after FromJson; Split may run on several threads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "tokenizer/internal/json_file.h"
#include "tokenizer/internal/normalizer.h"

namespace switchyard::tokenizer::internal {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// A stretch of text, or one added token (`token` >= 0; `text` is what it covered).
struct Segment {
  std::string_view text;
  int32_t token = -1;
};

// Finds a set of strings in text: a byte trie, leftmost-longest.
class TokenTrie {
 public:
  void Add(std::string_view key, int32_t value);
  // The value and length of the longest key that starts text[at], or {-1, 0}.
  std::pair<int32_t, size_t> Longest(std::string_view text, size_t at) const;
  bool MayStart(unsigned char b) const { return first_[b]; }
  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;
    int32_t value = -1;
  };
  std::vector<Node> nodes_ = std::vector<Node>(1);
  std::array<bool, 256> first_{};
};

class AddedVocabulary {
 public:
  // `j` is tokenizer.json's "added_tokens" array; normalized contents use `normalizer`.
  static Result<AddedVocabulary> FromJson(const Json& j, const std::string& file,
                                          const Normalizer& normalizer);

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  // The added token with this id, or nullptr.
  const AddedToken* Find(int32_t id) const;
  // The id of the added token with this content, or -1.
  int32_t IdOf(std::string_view content) const;

  // Splits raw text on the non-normalized tokens / a normalized stretch on the normalized
  // ones, appending to *out.
  void SplitRaw(std::string_view text, bool split_special, std::vector<Segment>* out) const;
  void SplitNormalized(std::string_view text, bool split_special, std::vector<Segment>* out) const;
  bool has_normalized() const { return !normalized_[0].empty(); }

 private:
  void Split(const TokenTrie& trie, std::string_view text, std::vector<Segment>* out) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_map<std::string, int32_t> by_content_;
  // [0]: every token of the kind; [1]: without the special ones (split_special_tokens).
  std::array<TokenTrie, 2> raw_, normalized_;
};

}  // namespace switchyard::tokenizer::internal
