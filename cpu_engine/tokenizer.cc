#include "cpu_engine/tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "cpu_engine/hf_tokenizer.h"

namespace switchyard::cpu_engine {
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

std::vector<int32_t> Tokenizer::eos_ids() const {
  if (!eos_ids_.empty()) return eos_ids_;
  if (eos_id() >= 0) return {eos_id()};
  return {};
}

bool Tokenizer::IsEos(int32_t id) const {
  if (id < 0) return false;
  const std::vector<int32_t> ids = eos_ids();
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

void Tokenizer::AddEosIds(std::span<const int32_t> ids) {
  if (eos_ids_.empty() && eos_id() >= 0) eos_ids_.push_back(eos_id());
  for (int32_t id : ids)
    if (id >= 0 && std::find(eos_ids_.begin(), eos_ids_.end(), id) == eos_ids_.end())
      eos_ids_.push_back(id);
}

bool Tokenizer::IsSpecial(int32_t) const { return false; }

std::string Tokenizer::TokenBytes(int32_t) const { return ""; }

const std::string& Tokenizer::chat_template() const {
  static const std::string* const none = new std::string();
  return *none;
}

std::string ByteTokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= 256) return "";
  return std::string(1, static_cast<char>(id));
}

namespace {

namespace fs = std::filesystem;

// The tokenizer of a checkpoint directory: tokenizer.json, else tokenizer.model.
Result<std::unique_ptr<Tokenizer>> LoadCheckpointTokenizer(const std::string& dir) {
  std::error_code ec;
  const std::string json = (fs::path(dir) / "tokenizer.json").string();
  const std::string sp = (fs::path(dir) / "tokenizer.model").string();
  if (fs::exists(json, ec)) {
    SY_ASSIGN_OR_RETURN(std::unique_ptr<BpeTokenizer> tok, BpeTokenizer::Load(json));
    return std::unique_ptr<Tokenizer>(std::move(tok));
  }
  if (fs::exists(sp, ec)) return LoadSentencePiece(sp);
  return Status::NotFound(dir +
                          ": the checkpoint has no tokenizer (looked for tokenizer.json, a "
                          "Hugging Face tokenizer, and tokenizer.model, a SentencePiece model)");
}

// The tokenizer a shape names (the first of its paths that exists).
Result<std::unique_ptr<Tokenizer>> LoadNamedTokenizer(const ModelShape& shape) {
  std::error_code ec;
  std::string tried;
  for (const std::string& path : shape.tokenizer_paths) {
    if (fs::exists(path, ec)) {
      SY_ASSIGN_OR_RETURN(std::unique_ptr<BpeTokenizer> tok, BpeTokenizer::Load(path));
      return std::unique_ptr<Tokenizer>(std::move(tok));
    }
    tried += (tried.empty() ? "" : ", ") + path;
  }
  return Status::NotFound("the tokenizer of model '" + shape.name + "' is missing (looked for " +
                          tried + "): run scripts/bootstrap.sh, which installs it");
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& model_path,
                                                 const ModelShape& shape) {
  std::error_code ec;
  std::unique_ptr<Tokenizer> tok;
  std::string where = model_path;
  if (fs::is_directory(model_path, ec)) {
    SY_ASSIGN_OR_RETURN(tok, LoadCheckpointTokenizer(model_path));
  } else if (!shape.tokenizer_paths.empty()) {
    SY_ASSIGN_OR_RETURN(tok, LoadNamedTokenizer(shape));
    where = "the tokenizer of '" + shape.name + "'";
  } else {
    if (shape.vocab_size < ByteTokenizer::kMinVocab)
      return Status::InvalidArgument(model_path + ": a byte tokenizer needs a vocab of at least " +
                                     std::to_string(ByteTokenizer::kMinVocab) + " (the model has " +
                                     std::to_string(shape.vocab_size) + ")");
    tok = std::make_unique<ByteTokenizer>(shape.vocab_size);
  }
  if (tok->vocab_size() > shape.vocab_size)
    return Status::InvalidArgument(where + ": the " + std::string(tok->name()) +
                                   " tokenizer's vocab of " + std::to_string(tok->vocab_size()) +
                                   " tokens exceeds the model's " +
                                   std::to_string(shape.vocab_size));
  std::vector<int32_t> stops = shape.eos_ids;
  if (shape.eos_id >= 0) stops.insert(stops.begin(), shape.eos_id);
  tok->AddEosIds(stops);
  return tok;
}

namespace {

bool Printable(unsigned char c) { return c >= 32 && c < 127; }

}  // namespace

std::vector<std::string> ConstraintTokenBytes(const Tokenizer& tok, int64_t vocab) {
  std::vector<std::string> bytes(static_cast<size_t>(std::max<int64_t>(vocab, 0)));
  const int64_t n = std::min(vocab, tok.vocab_size());
  for (int32_t id = 0; id < n; ++id)
    if (!tok.IsSpecial(id)) bytes[static_cast<size_t>(id)] = tok.TokenBytes(id);
  return bytes;
}

std::vector<std::vector<bool>> TextMasks(const Tokenizer& tok, const ModelShape& shape) {
  const int64_t vocab = shape.vocab_size;
  std::vector<bool> text(vocab, false), json(vocab, false);
  const int64_t n = std::min<int64_t>(vocab, tok.vocab_size());
  for (int32_t id = 0; id < n; ++id) {
    if (tok.IsAddedToken(id)) continue;
    const std::string b = tok.TokenBytes(id);
    if (b.empty()) continue;
    text[id] = std::all_of(b.begin(), b.end(), [](char c) {
      return Printable(static_cast<unsigned char>(c)) || c == '\n' || c == '\t';
    });
    json[id] = std::all_of(b.begin(), b.end(), [](char c) {
      return Printable(static_cast<unsigned char>(c)) && c != '"' && c != '\\';
    });
  }
  for (int32_t id : tok.eos_ids())
    if (id >= 0 && id < vocab) text[id] = true;
  for (int32_t id : shape.eos_ids)
    if (id >= 0 && id < vocab) text[id] = true;
  if (shape.eos_id >= 0 && shape.eos_id < vocab) text[shape.eos_id] = true;
  return {text, json};
}

}  // namespace switchyard::cpu_engine
