// BpeTokenizer::Decode (bpe_tokenizer.h).
#include <array>
#include <utility>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/internal/impl.h"
#include "tokenizer/internal/unicode.h"

namespace switchyard::tokenizer {
namespace {

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  std::string out;
  size_t i = 0;
  for (size_t at; (at = s->find(from, i)) != std::string::npos; i = at + from.size()) {
    out.append(*s, i, at - i).append(to);
  }
  if (i == 0) return;
  out.append(*s, i, std::string::npos);
  s->swap(out);
}

// HF's clean_up_tokenization, in its order.
void CleanUpTokenizationSpaces(std::string* s) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kRules = {{
      {" .", "."},
      {" ?", "?"},
      {" !", "!"},
      {" ,", ","},
      {" ' ", "'"},
      {" n't", "n't"},
      {" 'm", "'m"},
      {" 's", "'s"},
      {" 've", "'ve"},
      {" 're", "'re"},
  }};
  for (const auto& [from, to] : kRules) ReplaceAll(s, from, to);
}

}  // namespace

std::string BpeTokenizer::Decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  std::string out, run;  // run: the bytes of the regular tokens since the last added token
  for (int32_t id : ids) {
    if (options.skip_special_tokens && IsSpecial(id)) continue;
    if (const internal::AddedToken* t = impl_->added.Find(id)) {
      internal::AppendSanitizedUtf8(run, &out);
      run.clear();
      out.append(t->content);
      continue;
    }
    run.append(impl_->model->TokenBytes(id));  // "" for an id with no token
  }
  internal::AppendSanitizedUtf8(run, &out);
  if (options.clean_up_tokenization_spaces) CleanUpTokenizationSpaces(&out);
  return out;
}

}  // namespace switchyard::tokenizer
