// The BPE model of a byte-level tokenizer.json: the vocabulary (token id ↔ the bytes it
// stands for), the merges ranked by their order in the file, and the merge loop.
//
// Merging follows Hugging Face's BPE: the word starts as one symbol per byte; the adjacent
// pair with the lowest merge rank is merged (the leftmost on a tie) until no pair has a
// merge. With `ignore_merges` (Llama-3) a word that is itself in the vocabulary is that one
// token. Merges are held as a hash of (left id, right id) → (rank, merged id); results are
// cached per word (word_cache.h). Refused when loading: model types other than BPE, dropout,
// byte_fallback, fuse_unk, non-empty continuing_subword_prefix / end_of_word_suffix (each
// NotSupported naming its JSON path); merges whose parts or result are not in the
// vocabulary, repeated ids (InvalidArgument naming the entry).
//
// Thread-safety: immutable after FromJson (the cache is internally synchronized); Encode
// may run on several threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "tokenizer/internal/json_file.h"
#include "tokenizer/internal/word_cache.h"

namespace switchyard::tokenizer::internal {

// Open-addressing hash of merges: key (left << 32 | right) → (rank, merged id).
class MergeTable {
 public:
  struct Merge {
    int32_t rank = -1;
    int32_t merged = -1;
  };
  void Reserve(size_t n);
  void Put(int32_t left, int32_t right, Merge m);  // a repeated pair: the later one wins
  Merge Find(int32_t left, int32_t right) const;

 private:
  struct Slot {
    uint64_t key = kEmpty;
    Merge value;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  size_t SlotOf(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ULL) >> shift_; }
  std::vector<Slot> slots_;
  int shift_ = 64;
};

class BpeModel {
 public:
  // `model` is tokenizer.json's "model" member.
  static Result<std::unique_ptr<BpeModel>> FromJson(const Json& model, const std::string& file);

  // Appends the ids of one pre-token (its raw bytes) to *out. Bytes whose symbol is not in
  // the vocabulary become the unk token, or nothing without one (as the JS port does).
  void Encode(std::string_view word, std::vector<int32_t>* out) const;

  // One past the largest id of the vocabulary.
  int32_t size() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  bool Has(int32_t id) const { return id >= 0 && id < size() && present_[id]; }
  // The bytes token `id` stands for ("" when the id has no token).
  std::string_view TokenBytes(int32_t id) const;
  // The id of the token whose byte-level text is `text`, or -1.
  int32_t IdOfText(std::string_view text) const;

 private:
  BpeModel() = default;
  using TextIds = std::unordered_map<std::string_view, int32_t>;
  Status ReadVocab(const Json& vocab, const std::string& file, TextIds* ids);
  Status ReadMerges(const Json& merges, const std::string& file, const TextIds& ids);
  void MergeShort(std::vector<int32_t>* syms) const;
  void MergeLong(std::vector<int32_t>* syms) const;
  // The id of the byte-level token whose bytes are `bytes` (HashBytes `hash`), or -1.
  int32_t IdOfBytes(std::string_view bytes, uint64_t hash) const;
  void IndexBytes(int32_t id);

  std::vector<char> arena_;        // every token's bytes, back to back
  std::vector<uint32_t> offsets_;  // token id → its bytes in arena_ (size() + 1 entries)
  std::vector<bool> present_;
  // Open-addressing index of the byte-level tokens by their bytes: (hash tag, id), id -1
  // for an empty slot.
  struct Slot {
    uint32_t tag = 0;
    int32_t id = -1;
  };
  std::vector<Slot> index_;
  std::array<int32_t, 256> byte_id_{};
  MergeTable merges_;
  bool ignore_merges_ = false;
  int32_t unk_id_ = -1;
  WordCache cache_;
};

}  // namespace switchyard::tokenizer::internal
