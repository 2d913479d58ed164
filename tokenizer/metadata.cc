#include "tokenizer/metadata.h"

#include <algorithm>

namespace switchyard::tokenizer {

int32_t TokenizerMetadata::AddedTokenId(std::string_view content) const {
  auto it = id_of_content_.find(std::string(content));
  return it == id_of_content_.end() ? -1 : it->second;
}

std::string_view TokenizerMetadata::AddedTokenContent(int32_t id) const {
  auto it = index_of_id_.find(id);
  return it == index_of_id_.end() ? std::string_view() : added_tokens[it->second].content;
}

bool TokenizerMetadata::IsEos(int32_t id) const {
  return std::find(eos_ids.begin(), eos_ids.end(), id) != eos_ids.end();
}

void TokenizerMetadata::IndexAddedTokens() {
  id_of_content_.clear();
  index_of_id_.clear();
  for (size_t i = 0; i < added_tokens.size(); ++i) {
    id_of_content_[added_tokens[i].content] = added_tokens[i].id;
    index_of_id_[added_tokens[i].id] = i;
  }
}

}  // namespace switchyard::tokenizer
