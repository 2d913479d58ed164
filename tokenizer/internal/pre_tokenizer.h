// The pre-tokenizer of a byte-level tokenizer.json: zero or more Split stages, then
// ByteLevel — either a Sequence of those, or a bare ByteLevel (GPT-2 style).
//
//   - Split: a {"Regex": ...} pattern (translated for PCRE2, regex_translate.h) or a
//     {"String": ...}; behavior "Isolated" and invert false only (matches and the text
//     between them are both pieces). Each stage splits every piece of the stage before.
//   - ByteLevel: add_prefix_space (a space before every piece that does not start with
//     one), use_regex (split each piece again with the GPT-2 pattern); the byte-to-character
//     mapping itself is implicit: pieces stay bytes and the BPE model starts from bytes.
// Every other type or option is refused with NotSupported naming the file and JSON path.
//
// Thread-safety: immutable after FromJson; Run may run on several threads.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tokenizer/internal/json_file.h"
#include "tokenizer/internal/regex.h"

namespace switchyard::tokenizer::internal {

class PreTokenizer {
 public:
  // `j` is tokenizer.json's "pre_tokenizer" member.
  static Result<PreTokenizer> FromJson(const Json& j, const std::string& file);

  // Appends the pre-tokens of `text` to *words: views of `text`, or of strings appended
  // to *storage (pieces given a prefix space).
  Status Run(std::string_view text, std::vector<std::string_view>* words,
             std::deque<std::string>* storage) const;

 private:
  Status ReadSplit(const Json& j, const std::string& file, const std::string& path);
  Status ReadByteLevel(const Json& j, const std::string& file, const std::string& path);

  std::vector<Regex> splits_;
  bool add_prefix_space_ = false;
  std::vector<Regex> gpt2_;  // one pattern when use_regex
};

}  // namespace switchyard::tokenizer::internal
