// BpeTokenizer: a Hugging Face byte-level BPE tokenizer (GPT-2, Llama-3, Qwen2/3 style)
// loaded from a checkpoint's tokenizer.json, encoding and decoding as the Hugging Face
// libraries do (checked token for token against @huggingface/tokenizers, the JS port; see
// tokenizer/README.md for what is supported and what is refused).
//
// Encode: added tokens (special and not) are found first, with their lstrip / rstrip /
// single_word / normalized flags; the text between them is normalized (none or NFC),
// pre-tokenized (Split patterns, ByteLevel) and merged by the BPE model. Encode adds no
// BOS/EOS and applies no post-processor: callers prepend metadata().bos_id when
// metadata().add_bos_token says so.
//
// Decode: regular tokens become their bytes; the bytes of each run of regular tokens are
// made valid UTF-8 (each ill-formed subpart becomes U+FFFD, as the JS port's TextDecoder
// does); added tokens become their content. Ids with no token are skipped. TokenBytes gives
// the raw bytes of one id, which need not be UTF-8 on their own (streaming detokenization,
// constrained decoding).
//
// Thread-safety: immutable after Load; Encode, Decode and every accessor may run on several
// threads at once (the per-word cache inside is synchronized).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "tokenizer/metadata.h"

namespace switchyard::tokenizer {

struct EncodeOptions {
  // Special added tokens written in the text are tokenized as plain text instead of
  // becoming their ids (HF's split_special_tokens); non-special added tokens still match.
  bool split_special_tokens = false;
};

struct DecodeOptions {
  // Leave out special tokens (special added tokens and tokenizer_config's
  // additional_special_tokens).
  bool skip_special_tokens = false;
  // HF's clean_up_tokenization_spaces: " ." → ".", " n't" → "n't", ... (lossy; off by
  // default, metadata() has the checkpoint's own setting).
  bool clean_up_tokenization_spaces = false;
};

class BpeTokenizer {
 public:
  // `path`: a checkpoint directory holding tokenizer.json (and optionally
  // tokenizer_config.json, generation_config.json, chat_template.jinja), or a
  // tokenizer.json file, whose directory is read for the others. NotFound when
  // tokenizer.json is missing; InvalidArgument for a file that cannot be parsed or holds a
  // wrong value; NotSupported for a model, normalizer, pre-tokenizer, decoder or
  // post-processor this implementation does not have. Every message names the file and
  // the JSON path.
  static Result<std::unique_ptr<BpeTokenizer>> Load(const std::string& path);
  ~BpeTokenizer();
  BpeTokenizer(const BpeTokenizer&) = delete;
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  // The token ids of `text`. InvalidArgument naming the byte offset when `text` is not
  // valid UTF-8.
  Result<std::vector<int32_t>> Encode(std::string_view text,
                                      const EncodeOptions& options = {}) const;
  // The same, appended to *ids (which keeps its earlier contents on error too).
  Status EncodeTo(std::string_view text, const EncodeOptions& options,
                  std::vector<int32_t>* ids) const;

  // Always valid UTF-8 (see above).
  std::string Decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;

  // The raw bytes of token `id` (an added token's content); "" for an id with no token.
  // The view lives as long as the tokenizer.
  std::string_view TokenBytes(int32_t id) const;
  // Whether `id` is a special token (what skip_special_tokens leaves out).
  bool IsSpecial(int32_t id) const;
  // The id of a token by its text in tokenizer.json (an added token's content, or a
  // vocabulary entry in its byte-level spelling such as "Ġthe"), or -1.
  int32_t TokenToId(std::string_view token) const;

  int64_t vocab_size() const;
  const TokenizerMetadata& metadata() const;

  struct Impl;

 private:
  explicit BpeTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::tokenizer
