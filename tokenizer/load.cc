// BpeTokenizer::Load: tokenizer.json into the parts of BpeTokenizer::Impl, then the
// checkpoint's metadata files (internal/checkpoint_config.h).
#include <algorithm>
#include <filesystem>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/internal/checkpoint_config.h"
#include "tokenizer/internal/impl.h"
#include "tokenizer/internal/json_file.h"

namespace switchyard::tokenizer {
namespace {

using internal::Describe;
using internal::Json;
using internal::JsonInvalid;
using internal::JsonUnsupported;

std::string TypeOf(const Json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>()
                                                                      : "";
}

// Only the ByteLevel decoder (its options change nothing when decoding).
Status CheckDecoder(const Json& j, const std::string& file) {
  if (TypeOf(j) == "ByteLevel") return Status::OK();
  return JsonUnsupported(file, j.is_object() ? "decoder.type" : "decoder",
                         Describe(j.is_object() && j.contains("type") ? j["type"] : j) +
                             " is not supported (supported: \"ByteLevel\")");
}

// The post-processor is not applied (Encode adds no specials); it is read for the token its
// single-sequence template starts with, and refused when it is of another kind.
Status ReadPostProcessor(const Json& j, const std::string& file, const std::string& path,
                         std::string* first_token) {
  const std::string type = TypeOf(j);
  if (j.is_null() || type == "ByteLevel") return Status::OK();
  if (type == "Sequence" && j.contains("processors") && j["processors"].is_array()) {
    for (size_t i = 0; i < j["processors"].size(); ++i) {
      SY_RETURN_IF_ERROR(ReadPostProcessor(
          j["processors"][i], file, path + ".processors[" + std::to_string(i) + "]", first_token));
    }
    return Status::OK();
  }
  if (type == "TemplateProcessing") {
    auto single = j.find("single");
    if (single != j.end() && single->is_array() && !single->empty()) {
      const Json& first = (*single)[0];
      if (first.is_object() && first.contains("SpecialToken") &&
          first["SpecialToken"].is_object() && first["SpecialToken"].contains("id") &&
          first["SpecialToken"]["id"].is_string()) {
        *first_token = first["SpecialToken"]["id"].get<std::string>();
      }
    }
    return Status::OK();
  }
  return JsonUnsupported(file, path + (j.is_object() ? ".type" : ""),
                         Describe(j.is_object() && j.contains("type") ? j["type"] : j) +
                             " is not supported (supported: null, \"ByteLevel\", "
                             "\"TemplateProcessing\", \"Sequence\" of those)");
}

// Encoding options of tokenizer.json that would change the ids and are not implemented.
Status CheckTopLevel(const Json& j, const std::string& file) {
  if (!j.is_object()) return JsonInvalid(file, "", "must be a JSON object");
  for (const char* key : {"truncation", "padding"}) {
    if (j.contains(key) && !j[key].is_null()) {
      return JsonUnsupported(file, key, "is not supported (must be null)");
    }
  }
  if (!j.contains("model")) return JsonInvalid(file, "model", "is missing");
  return Status::OK();
}

Status BuildParts(const Json& j, const std::string& file, BpeTokenizer::Impl* impl,
                  std::string* template_first) {
  SY_RETURN_IF_ERROR(CheckTopLevel(j, file));
  SY_ASSIGN_OR_RETURN(impl->model, internal::BpeModel::FromJson(j["model"], file));
  SY_ASSIGN_OR_RETURN(impl->normalizer,
                      internal::Normalizer::FromJson(j.value("normalizer", Json()), file));
  SY_ASSIGN_OR_RETURN(impl->pre_tokenizer,
                      internal::PreTokenizer::FromJson(j.value("pre_tokenizer", Json()), file));
  SY_RETURN_IF_ERROR(CheckDecoder(j.value("decoder", Json()), file));
  SY_RETURN_IF_ERROR(
      ReadPostProcessor(j.value("post_processor", Json()), file, "post_processor", template_first));
  SY_ASSIGN_OR_RETURN(impl->added, internal::AddedVocabulary::FromJson(
                                       j.value("added_tokens", Json()), file, impl->normalizer));
  return Status::OK();
}

// Fills the metadata's vocabulary facts and the special-token table.
void IndexTokens(BpeTokenizer::Impl* impl) {
  int64_t size = impl->model->size();
  for (const auto& t : impl->added.tokens()) size = std::max<int64_t>(size, t.id + 1);
  TokenizerMetadata& md = impl->metadata;
  md.vocab_size = size;
  for (const auto& t : impl->added.tokens())
    md.added_tokens.push_back({t.id, t.content, t.special});
  std::sort(md.added_tokens.begin(), md.added_tokens.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  md.IndexAddedTokens();
  impl->special.assign(size, false);
  for (const auto& t : impl->added.tokens()) impl->special[t.id] = t.special;
}

}  // namespace

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpeTokenizer::~BpeTokenizer() = default;

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::Load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  const std::string file = is_dir ? (fs::path(path) / "tokenizer.json").string() : path;
  const std::string dir = is_dir ? path : fs::path(path).parent_path().string();
  SY_ASSIGN_OR_RETURN(Json j, internal::ReadJsonFile(file));
  auto impl = std::make_unique<Impl>();
  std::string template_first;
  try {
    SY_RETURN_IF_ERROR(BuildParts(j, file, impl.get(), &template_first));
  } catch (const Json::exception& e) {  // a value of an unexpected type the checks missed
    return Status::InvalidArgument(file + ": " + e.what());
  }
  IndexTokens(impl.get());
  std::unique_ptr<BpeTokenizer> tok(new BpeTokenizer(std::move(impl)));
  internal::CheckpointInputs in{dir.empty() ? "." : dir,
                                [t = tok.get()](std::string_view s) { return t->TokenToId(s); },
                                template_first};
  std::vector<int32_t> extra_special;
  SY_RETURN_IF_ERROR(internal::ReadCheckpointConfig(in, &tok->impl_->metadata, &extra_special));
  for (int32_t id : extra_special) tok->impl_->special[id] = true;
  return tok;
}

}  // namespace switchyard::tokenizer
