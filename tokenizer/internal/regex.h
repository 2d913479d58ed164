// A compiled PCRE2 pattern (JIT when the platform has it) that splits text the way the JS
// port's pre-tokenizers do.
//
// Split semantics (JS `String.prototype.matchAll` with the `u` flag): matches are found left
// to right; after an empty match the search resumes one code point later. A match never
// spans the end of the text it is given: the caller passes one section at a time.
//
// Thread-safety: immutable after Compile; Split may run on several threads at once (each
// thread matches with match data and a JIT stack of its own, made on first use).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/status.h"

namespace switchyard::tokenizer::internal {

class Regex {
 public:
  // `pattern` is PCRE2 syntax in UTF mode; InvalidArgument with PCRE2's message and offset
  // when it does not compile.
  static Result<Regex> Compile(const std::string& pattern);

  // Appends to *out the pieces of `text` (valid UTF-8): with `keep_gaps`, the text between
  // matches and every non-empty match, in order (Split, behaviour Isolated); without, only
  // the non-empty matches. Internal when PCRE2 fails (its JIT stack limit, for one).
  Status Split(std::string_view text, bool keep_gaps, std::vector<std::string_view>* out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  Regex(std::string pattern, std::shared_ptr<const Code> code)
      : pattern_(std::move(pattern)), code_(std::move(code)) {}
  std::string pattern_;
  std::shared_ptr<const Code> code_;
};

}  // namespace switchyard::tokenizer::internal
