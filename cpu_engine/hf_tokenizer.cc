// BpeTokenizer (hf_tokenizer.h).
#include "cpu_engine/hf_tokenizer.h"

namespace switchyard::cpu_engine {

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::Load(const std::string& path) {
  SY_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::BpeTokenizer> tok,
                      tokenizer::BpeTokenizer::Load(path));
  return std::make_unique<BpeTokenizer>(std::move(tok));
}

BpeTokenizer::BpeTokenizer(std::unique_ptr<tokenizer::BpeTokenizer> tok) : tok_(std::move(tok)) {
  std::vector<int32_t> eos = tok_->metadata().eos_ids;
  eos_ids_.clear();
  AddEosIds(eos);
}

bool BpeTokenizer::IsAddedToken(int32_t id) const {
  return tok_->IsSpecial(id) || !tok_->metadata().AddedTokenContent(id).empty();
}

Result<std::vector<int32_t>> BpeTokenizer::Encode(std::string_view text) const {
  return tok_->Encode(text, {.split_special_tokens = false});
}

std::string BpeTokenizer::Decode(std::span<const int32_t> ids) const {
  return tok_->Decode(ids, {.skip_special_tokens = true});
}

}  // namespace switchyard::cpu_engine
