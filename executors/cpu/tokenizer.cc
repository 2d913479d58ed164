#include "executors/cpu/tokenizer.h"

#include <filesystem>

namespace switchyard::executors::cpu {
namespace {

// What a lead byte allows: the sequence length (0: not a lead byte) and the range of the
// second byte (which excludes overlong forms, surrogates and code points past U+10FFFF).
struct Lead {
  size_t len = 0;
  int lo = 0x80, hi = 0xbf;
};

Lead LeadOf(unsigned char c) {
  if (c < 0x80) return {1};
  if (c >= 0xc2 && c <= 0xdf) return {2};
  if (c >= 0xe0 && c <= 0xef) return {3, c == 0xe0 ? 0xa0 : 0x80, c == 0xed ? 0x9f : 0xbf};
  if (c >= 0xf0 && c <= 0xf4) return {4, c == 0xf0 ? 0x90 : 0x80, c == 0xf4 ? 0x8f : 0xbf};
  return {};
}

// How many bytes from text[i] belong to the longest prefix of a well-formed sequence
// (at most lead.len), at least 1.
size_t ValidPrefix(std::string_view text, size_t i, const Lead& lead) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  if (lead.len <= 1) return 1;
  size_t k = 1;
  if (i + k < text.size() && b(i + k) >= lead.lo && b(i + k) <= lead.hi) {
    ++k;
    while (k < lead.len && i + k < text.size() && b(i + k) >= 0x80 && b(i + k) <= 0xbf) ++k;
  }
  return k;
}

// The length of the well-formed UTF-8 sequence starting at text[i], or 0 if none does.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const Lead lead = LeadOf(static_cast<unsigned char>(text[i]));
  if (lead.len == 0) return 0;
  return ValidPrefix(text, i, lead) == lead.len ? lead.len : 0;
}

// The bytes one U+FFFD replaces: the maximal subpart of an ill-formed sequence (Unicode's
// recommended practice), at least one byte.
size_t InvalidSubpartLength(std::string_view text, size_t i) {
  return ValidPrefix(text, i, LeadOf(static_cast<unsigned char>(text[i])));
}

}  // namespace

int64_t FirstInvalidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) return static_cast<int64_t>(i);
    i += len;
  }
  return -1;
}

std::string SanitizeUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    if (const size_t len = Utf8SequenceLength(bytes, i); len > 0) {
      out.append(bytes.substr(i, len));
      i += len;
    } else {
      out.append("\xef\xbf\xbd");  // U+FFFD
      i += InvalidSubpartLength(bytes, i);
    }
  }
  return out;
}

Result<std::vector<int32_t>> ByteTokenizer::Encode(std::string_view text) const {
  if (int64_t bad = FirstInvalidUtf8(text); bad >= 0)
    return Status::InvalidArgument("text is not valid UTF-8 at byte offset " + std::to_string(bad));
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::string ByteTokenizer::Decode(std::span<const int32_t> ids) const {
  std::string bytes;
  for (int32_t id : ids)
    if (id >= 0 && id < 256) bytes.push_back(static_cast<char>(id));
  return SanitizeUtf8(bytes);
}

Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& model_path,
                                                 const ModelShape& shape) {
  std::error_code ec;
  const std::string sp_file = model_path + "/tokenizer.model";
  if (std::filesystem::is_directory(model_path, ec) && std::filesystem::exists(sp_file, ec)) {
    SY_ASSIGN_OR_RETURN(auto tok, LoadSentencePiece(sp_file));
    if (tok->vocab_size() > shape.vocab_size)
      return Status::InvalidArgument(sp_file + ": vocab of " + std::to_string(tok->vocab_size()) +
                                     " pieces exceeds the model's " +
                                     std::to_string(shape.vocab_size));
    return tok;
  }
  if (shape.vocab_size < ByteTokenizer::kMinVocab)
    return Status::InvalidArgument(model_path + ": a byte tokenizer needs a vocab of at least " +
                                   std::to_string(ByteTokenizer::kMinVocab) + " (the model has " +
                                   std::to_string(shape.vocab_size) + ")");
  return std::unique_ptr<Tokenizer>(new ByteTokenizer(shape.vocab_size));
}

}  // namespace switchyard::executors::cpu
