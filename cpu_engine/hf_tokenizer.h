// BpeTokenizer: the CPU engine's Tokenizer (tokenizer.h) over a Hugging Face tokenizer.json
// — tokenizer::BpeTokenizer (tokenizer/bpe_tokenizer.h) and the checkpoint's metadata
// (tokenizer_config.json, generation_config.json, chat_template.jinja beside it).
//
//   Encode: special tokens written in the text become their ids (split_special_tokens
//           off, as Hugging Face encodes a rendered chat template); no BOS is added.
//   Decode: special tokens left out (skip_special_tokens), valid UTF-8.
//   eos_ids: tokenizer_config's eos_token, then generation_config's eos_token_id ids (then
//           what AddEosIds adds: LoadTokenizer adds the model's).
//   add_bos: the metadata's add_bos_token; bos_token / eos_token: their text.
//
// Thread-safety: immutable after construction (AddEosIds aside, at load); Encode and
// Decode may run on several threads (tokenizer::BpeTokenizer's cache is synchronized).
#pragma once

#include <memory>
#include <string>

#include "cpu_engine/tokenizer.h"
#include "tokenizer/bpe_tokenizer.h"

namespace switchyard::cpu_engine {

class BpeTokenizer : public Tokenizer {
 public:
  // `path`: a checkpoint directory holding tokenizer.json, or a tokenizer.json file.
  // tokenizer::BpeTokenizer::Load's errors (each names the file).
  static Result<std::unique_ptr<BpeTokenizer>> Load(const std::string& path);
  explicit BpeTokenizer(std::unique_ptr<tokenizer::BpeTokenizer> tok);

  std::string_view name() const override { return "bpe"; }
  int64_t vocab_size() const override { return tok_->vocab_size(); }
  int32_t bos_id() const override { return tok_->metadata().bos_id; }
  int32_t eos_id() const override { return eos_ids_.empty() ? -1 : eos_ids_.front(); }
  bool add_bos() const override { return tok_->metadata().add_bos_token && bos_id() >= 0; }
  bool IsSpecial(int32_t id) const override { return tok_->IsSpecial(id); }
  bool IsAddedToken(int32_t id) const override;
  std::string TokenBytes(int32_t id) const override { return std::string(tok_->TokenBytes(id)); }
  const std::string& chat_template() const override { return tok_->metadata().chat_template; }
  std::string bos_token() const override { return TokenBytes(bos_id()); }
  std::string eos_token() const override { return TokenBytes(eos_id()); }
  Result<std::vector<int32_t>> Encode(std::string_view text) const override;
  std::string Decode(std::span<const int32_t> ids) const override;

  const tokenizer::BpeTokenizer& hf() const { return *tok_; }

 private:
  std::unique_ptr<tokenizer::BpeTokenizer> tok_;
};

}  // namespace switchyard::cpu_engine
