// BpeTokenizer: encoding and the accessors (loading: load.cc, decoding: decode.cc).
#include "tokenizer/bpe_tokenizer.h"

#include <deque>

#include "tokenizer/internal/impl.h"
#include "tokenizer/internal/regex_syntax.h"
#include "tokenizer/internal/unicode.h"

namespace switchyard::tokenizer {
namespace {

constexpr size_t kMaxText = size_t{1} << 31;  // ICU's string lengths are int32

Status EncodeStretch(const BpeTokenizer::Impl& impl, std::string_view text,
                     std::vector<int32_t>* ids) {
  std::vector<std::string_view> words;
  std::deque<std::string> storage;
  SY_RETURN_IF_ERROR(impl.pre_tokenizer.Run(text, &words, &storage));
  for (std::string_view w : words) impl.model->Encode(w, ids);
  return Status::OK();
}

// One stretch of raw text between non-normalized added tokens.
Status EncodeSection(const BpeTokenizer::Impl& impl, std::string_view raw, bool split_special,
                     std::vector<int32_t>* ids) {
  std::string scratch;
  SY_ASSIGN_OR_RETURN(std::string_view text, impl.normalizer.Apply(raw, &scratch));
  if (text.empty()) return Status::OK();
  if (!impl.added.has_normalized()) return EncodeStretch(impl, text, ids);
  std::vector<internal::Segment> parts;
  impl.added.SplitNormalized(text, split_special, &parts);
  for (const auto& p : parts) {
    if (p.token >= 0) {
      ids->push_back(p.token);
    } else {
      SY_RETURN_IF_ERROR(EncodeStretch(impl, p.text, ids));
    }
  }
  return Status::OK();
}

}  // namespace

Status BpeTokenizer::EncodeTo(std::string_view text, const EncodeOptions& options,
                              std::vector<int32_t>* ids) const {
  if (text.size() >= kMaxText) {
    return Status::InvalidArgument("text of " + std::to_string(text.size()) +
                                   " bytes is too long to encode (limit 2 GiB)");
  }
  if (const int64_t bad = internal::FirstInvalidUtf8(text); bad >= 0) {
    return Status::InvalidArgument("text is not UTF-8: byte 0x" +
                                   internal::Hex(static_cast<unsigned char>(text[bad])) +
                                   " at offset " + std::to_string(bad));
  }
  const size_t before = ids->size();
  std::vector<internal::Segment> sections;
  impl_->added.SplitRaw(text, options.split_special_tokens, &sections);
  for (const auto& s : sections) {
    Status st = s.token >= 0 ? (ids->push_back(s.token), Status::OK())
                             : EncodeSection(*impl_, s.text, options.split_special_tokens, ids);
    if (!st.ok()) {
      ids->resize(before);
      return st;
    }
  }
  return Status::OK();
}

Result<std::vector<int32_t>> BpeTokenizer::Encode(std::string_view text,
                                                  const EncodeOptions& options) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  SY_RETURN_IF_ERROR(EncodeTo(text, options, &ids));
  return ids;
}

std::string_view BpeTokenizer::TokenBytes(int32_t id) const {
  if (const internal::AddedToken* t = impl_->added.Find(id)) return t->content;
  return impl_->model->TokenBytes(id);
}

bool BpeTokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special.size() && impl_->special[id];
}

int32_t BpeTokenizer::TokenToId(std::string_view token) const {
  const int32_t added = impl_->added.IdOf(token);
  return added >= 0 ? added : impl_->model->IdOfText(token);
}

int64_t BpeTokenizer::vocab_size() const { return impl_->metadata.vocab_size; }

const TokenizerMetadata& BpeTokenizer::metadata() const { return impl_->metadata; }

}  // namespace switchyard::tokenizer
