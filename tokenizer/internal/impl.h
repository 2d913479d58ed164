// The parts of a loaded BpeTokenizer (bpe_tokenizer.h), shared by its source files:
// load.cc builds them, bpe_tokenizer.cc encodes with them, decode.cc decodes.
//
// Thread-safety: immutable once Load returns.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/internal/added_tokens.h"
#include "tokenizer/internal/bpe_model.h"
#include "tokenizer/internal/normalizer.h"
#include "tokenizer/internal/pre_tokenizer.h"

namespace switchyard::tokenizer {

struct BpeTokenizer::Impl {
  internal::Normalizer normalizer;
  internal::AddedVocabulary added;
  internal::PreTokenizer pre_tokenizer;
  std::unique_ptr<internal::BpeModel> model;
  std::vector<bool> special;  // by id: what skip_special_tokens leaves out
  TokenizerMetadata metadata;
};

}  // namespace switchyard::tokenizer
