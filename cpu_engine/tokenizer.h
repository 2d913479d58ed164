// Tokenizers of the CPU engine: text ↔ token ids.
//
//   * ByteTokenizer: ids 0..255 are the bytes of UTF-8 text, then the specials bos = 256
//     and eos = 257; vocab_size is max(258, the model's vocab) and ids ≥ 258 decode to
//     nothing. The tokenizer of the random-weight tiny models (configs/models/tiny-*.json).
//   * SentencePieceTokenizer: sentencepiece::SentencePieceProcessor over a checkpoint's
//     tokenizer.model (Llama 2 style), through the shim of spm_shim.h (sentencepiece.cc).
//   * BpeTokenizer (hf_tokenizer.h): a Hugging Face tokenizer.json (SmolLM2, Llama-3,
//     Qwen2/3) through tokenizer::BpeTokenizer, with the checkpoint's metadata (special
//     ids, chat template).
//
// Encode adds no BOS/EOS (callers prepend bos_id() when add_bos() says so); a bpe
// tokenizer turns special tokens written in the text into their ids (as Hugging Face
// encodes a rendered chat template). Decode always returns valid UTF-8: byte sequences that
// are not (random-weight models emit them) become U+FFFD; special and out-of-range ids are
// skipped (Hugging Face's skip_special_tokens).
//
// Stop ids: eos_ids() is every id that ends a generation. LoadTokenizer adds the model's
// own (ModelShape::eos_ids) to the tokenizer's, and the engine's loader adds the result to
// the model (Model::AddEosIds): the engine and every caller of IsEos stop on one set.
//
// Thread-safety: immutable after LoadTokenizer returns it (AddEosIds is load-time only);
// every const method may run on several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "cpu_engine/model_shape.h"

namespace switchyard::cpu_engine {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string_view name() const = 0;  // "byte", "sentencepiece", "bpe"
  virtual int64_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1: none
  virtual int32_t eos_id() const = 0;  // the first of eos_ids() (-1: none)
  // Every id that ends a generation, eos_id() first, without repeats; the engine stops on
  // exactly this set (see above).
  virtual std::vector<int32_t> eos_ids() const;
  bool IsEos(int32_t id) const;
  // Adds stop ids (ones already there are kept once). Load time only: not thread-safe.
  void AddEosIds(std::span<const int32_t> ids);
  // Whether a prompt starts with bos_id() (bpe: the checkpoint's add_bos_token; byte and
  // sentencepiece: true).
  virtual bool add_bos() const { return true; }
  // A special token (what Decode leaves out); default false.
  virtual bool IsSpecial(int32_t id) const;
  // An added token of the vocabulary, special or not (bpe: <think>, <tool_call>, ...: text
  // with a meaning to chat templates and output parsers); default IsSpecial.
  virtual bool IsAddedToken(int32_t id) const { return IsSpecial(id); }
  // The raw bytes of one id, which need not be UTF-8 alone ("" for none): the byte
  // tokenizer's byte, a bpe token's bytes or a bpe special token's text. sentencepiece: "".
  virtual std::string TokenBytes(int32_t id) const;
  // The checkpoint's chat template ("" when none).
  virtual const std::string& chat_template() const;
  // The text of BOS / EOS as a chat template's context wants them ("" none).
  virtual std::string bos_token() const { return ""; }
  virtual std::string eos_token() const { return ""; }
  // InvalidArgument naming the byte offset for text that is not valid UTF-8.
  virtual Result<std::vector<int32_t>> Encode(std::string_view text) const = 0;
  // Always valid UTF-8, special tokens left out (see above).
  virtual std::string Decode(std::span<const int32_t> ids) const = 0;

 protected:
  // The stop ids when set (a subclass with several seeds it; AddEosIds adds to it); empty:
  // eos_id() alone.
  std::vector<int32_t> eos_ids_;
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
  bool IsSpecial(int32_t id) const override { return id == kBos || id == kEos; }
  std::string TokenBytes(int32_t id) const override;
  Result<std::vector<int32_t>> Encode(std::string_view text) const override;
  std::string Decode(std::span<const int32_t> ids) const override;

 private:
  int64_t vocab_size_;
};

// Loads `model_file` (a SentencePiece model proto). NotFound / InvalidArgument naming it;
// Unavailable when the sentencepiece shim cannot be loaded (sentencepiece.cc says why).
Result<std::unique_ptr<Tokenizer>> LoadSentencePiece(const std::string& model_file);

// The tokenizer of the model at `model_path` (shape: the model's, already loaded):
//   * a checkpoint directory: its tokenizer.json (bpe), else its tokenizer.model
//     (sentencepiece); NotFound naming the directory and both files when it has neither,
//     and the loader's error (naming the file) for one that does not load;
//   * otherwise (a shape file, the embedded demo model): the tokenizer the shape names
//     (ModelShape::tokenizer_paths: the first that exists; NotFound naming them and saying
//     to run scripts/bootstrap.sh when none does), else a byte tokenizer over
//     shape.vocab_size (InvalidArgument when that is below 258).
// A tokenizer whose vocab is larger than the model's is refused (InvalidArgument). The
// shape's stop ids are added to the tokenizer's (eos_ids()).
Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& model_path,
                                                 const ModelShape& shape);

// The output sets of a model with random weights (SequenceSpec::token_mask, CpuEngine::
// Options::token_masks), over shape.vocab_size ids, from tok.TokenBytes:
//   0: tokens whose bytes are all printable ASCII (space included), '\n' or '\t' — text a
//      client echoes unchanged — plus the stop ids;
//   1: tokens whose bytes are all printable ASCII but '"' and '\\' (text a JSON string
//      holds unescaped: generated tool arguments).
// Added tokens (tok.IsAddedToken: specials, <think>, <tool_call>, ...) are in neither
// (but for stop ids in set 0), nor is an id with no bytes.
std::vector<std::vector<bool>> TextMasks(const Tokenizer& tok, const ModelShape& shape);

// The raw bytes of each of the model's `vocab` ids for constrained decoding
// (CpuEngine::Options::token_bytes): TokenBytes, but "" for special tokens (an EOS or a
// chat template's markers are never part of generated JSON) and ids past the tokenizer's
// vocabulary.
std::vector<std::string> ConstraintTokenBytes(const Tokenizer& tok, int64_t vocab);

// The offset of the first byte of `text` that is not part of well-formed UTF-8 (no
// overlong forms, surrogates or code points past U+10FFFF), or -1 when it is valid.
int64_t FirstInvalidUtf8(std::string_view text);
// `bytes` with each ill-formed sequence (a maximal invalid subpart) replaced by U+FFFD.
std::string SanitizeUtf8(std::string_view bytes);

}  // namespace switchyard::cpu_engine
