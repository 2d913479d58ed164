// The checkpoint files beside tokenizer.json that make up TokenizerMetadata (metadata.h):
// tokenizer_config.json, generation_config.json, chat_template.jinja.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/metadata.h"

namespace switchyard::tokenizer::internal {

struct CheckpointInputs {
  std::string dir;
  // A token's id by its tokenizer.json text, or -1.
  std::function<int32_t(std::string_view)> token_id;
  // The token the post-processor's template starts with ("" when none).
  std::string template_first_token;
};

// Fills *md from the files of `in.dir` (vocab_size and added_tokens must already be set);
// the ids of additional_special_tokens go to *extra_special.
Status ReadCheckpointConfig(const CheckpointInputs& in, TokenizerMetadata* md,
                            std::vector<int32_t>* extra_special);

}  // namespace switchyard::tokenizer::internal
