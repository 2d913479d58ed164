// Tokenizers of the CPU engine: text ↔ token ids.
//
//   * ByteTokenizer: ids 0..255 are the bytes of UTF-8 text, then the specials bos = 256
//     and eos = 257; vocab_size is max(258, the model's vocab) and ids ≥ 258 decode to
//     nothing. The tokenizer of the random-weight tiny models (configs/models/tiny-*.json).
//   * SentencePieceTokenizer: sentencepiece::SentencePieceProcessor over a checkpoint's
//     tokenizer.model (Llama 2 style), through the shim of spm_shim.h (sentencepiece.cc).
//
// Encode adds no BOS/EOS (callers prepend bos_id() when they want one). Decode always
// returns valid UTF-8: byte sequences that are not (random-weight models emit them) become
// U+FFFD, special and out-of-range ids are skipped.
//
// Thread-safety: immutable after construction; Encode/Decode may run on several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "executors/cpu/model_shape.h"

namespace switchyard::executors::cpu {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string_view name() const = 0;  // "byte", "sentencepiece"
  virtual int64_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;
  // InvalidArgument naming the byte offset for text that is not valid UTF-8.
  virtual Result<std::vector<int32_t>> Encode(std::string_view text) const = 0;
  // Always valid UTF-8 (see above).
  virtual std::string Decode(std::span<const int32_t> ids) const = 0;
};

class ByteTokenizer : public Tokenizer {
 public:
  static constexpr int32_t kBos = 256, kEos = 257, kMinVocab = 258;
  explicit ByteTokenizer(int64_t vocab_size = kMinVocab)
      : vocab_size_(vocab_size < kMinVocab ? kMinVocab : vocab_size) {}
  std::string_view name() const override { return "byte"; }
  int64_t vocab_size() const override { return vocab_size_; }
  int32_t bos_id() const override { return kBos; }
  int32_t eos_id() const override { return kEos; }
  Result<std::vector<int32_t>> Encode(std::string_view text) const override;
  std::string Decode(std::span<const int32_t> ids) const override;

 private:
  int64_t vocab_size_;
};

// Loads `model_file` (a SentencePiece model proto). NotFound / InvalidArgument naming it;
// Unavailable when the sentencepiece shim cannot be loaded (sentencepiece.cc says why).
Result<std::unique_ptr<Tokenizer>> LoadSentencePiece(const std::string& model_file);

// SentencePiece when `model_path` is a directory holding tokenizer.model, else a byte
// tokenizer over shape.vocab_size (InvalidArgument when that is below 258). A
// SentencePiece vocab larger than the model's is refused.
Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& model_path,
                                                 const ModelShape& shape);

// The offset of the first byte of `text` that is not part of well-formed UTF-8 (no
// overlong forms, surrogates or code points past U+10FFFF), or -1 when it is valid.
int64_t FirstInvalidUtf8(std::string_view text);
// `bytes` with each ill-formed sequence (a maximal invalid subpart) replaced by U+FFFD.
std::string SanitizeUtf8(std::string_view bytes);

}  // namespace switchyard::executors::cpu
