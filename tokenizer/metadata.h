// TokenizerMetadata: what a checkpoint directory says about its tokenizer beyond the
// encoding itself — special token ids, the chat template, limits — read by
// BpeTokenizer::Load (bpe_tokenizer.h) from:
//   - tokenizer_config.json: bos_token, eos_token, pad_token (a string or {"content": ...},
//     resolved to ids), add_bos_token, chat_template (a string, or a list of {name,
//     template} of which "default" is taken), model_max_length,
//     clean_up_tokenization_spaces, split_special_tokens, additional_special_tokens;
//   - chat_template.jinja: when present, the chat template (overrides the config's);
//   - generation_config.json: eos_token_id (an id or a list: every one is an EOS id),
//     bos_token_id and pad_token_id (used when the tokenizer config names none).
// Absent files leave the defaults below. A file that exists but cannot be parsed, a value
// of the wrong type, or a token name that is not in the vocabulary is an error naming the
// file and the key (BpeTokenizer::Load returns it).
//
// Thread-safety: a plain value; const access from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace switchyard::tokenizer {

struct AddedTokenInfo {
  int32_t id = -1;
  std::string content;
  bool special = false;
};

struct TokenizerMetadata {
  int32_t bos_id = -1;           // -1: none
  std::vector<int32_t> eos_ids;  // tokenizer_config's first, then generation_config's
  int32_t pad_id = -1;           // -1: none
  // Whether encoding a prompt should start with bos_id: tokenizer_config's add_bos_token,
  // else whether tokenizer.json's post-processor template starts with the BOS token.
  // Encode itself never adds it.
  bool add_bos_token = false;
  std::string chat_template;  // "" when the checkpoint has none
  // Every named template of a list-form chat_template ("default" included).
  std::map<std::string, std::string> named_chat_templates;
  int64_t model_max_length = 0;  // 0: unset, or HF's "no limit" sentinel (>= 1e18)
  // tokenizer_config's values, for callers that want HF's decode / encode defaults
  // (DecodeOptions / EncodeOptions default to false).
  bool clean_up_tokenization_spaces = false;
  bool split_special_tokens = false;
  int64_t vocab_size = 0;  // largest id + 1, added tokens included

  std::vector<AddedTokenInfo> added_tokens;  // ordered by id

  // The id of the added token with this content, or -1.
  int32_t AddedTokenId(std::string_view content) const;
  // The content of added token `id`, or "" when `id` is not an added token.
  std::string_view AddedTokenContent(int32_t id) const;
  bool IsEos(int32_t id) const;

  // Rebuilds the lookups after added_tokens changed (Load calls it).
  void IndexAddedTokens();

 private:
  std::unordered_map<std::string, int32_t> id_of_content_;
  std::unordered_map<int32_t, size_t> index_of_id_;
};

}  // namespace switchyard::tokenizer
