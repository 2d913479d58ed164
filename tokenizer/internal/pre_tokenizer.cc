#include "tokenizer/internal/pre_tokenizer.h"

#include "tokenizer/internal/regex_translate.h"

namespace switchyard::tokenizer::internal {
namespace {

std::string TypeOf(const Json& j) {
  auto it = j.find("type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

Status NotSupportedType(const Json& j, const std::string& file, const std::string& path) {
  return JsonUnsupported(file, path + ".type",
                         Describe(j.contains("type") ? j["type"] : Json("missing")) +
                             " is not supported here (supported: a Sequence of Split stages "
                             "ending in ByteLevel, or ByteLevel)");
}

// The PCRE2 pattern of a Split's "pattern" member.
Result<std::string> SplitPattern(const Json& j, const std::string& file, const std::string& path) {
  if (j.is_object() && j.contains("Regex") && j["Regex"].is_string()) {
    auto p = TranslatePattern(j["Regex"].get_ref<const std::string&>());
    if (!p.ok()) {
      return JsonUnsupported(file, path + ".Regex",
                             Describe(j["Regex"]) + ": " + p.status().message());
    }
    return *p;
  }
  if (j.is_object() && j.contains("String") && j["String"].is_string()) {
    if (j["String"].get_ref<const std::string&>().empty()) {
      return JsonInvalid(file, path + ".String", "must not be empty");
    }
    return QuoteLiteral(j["String"].get_ref<const std::string&>());
  }
  return JsonInvalid(file, path, "must be {\"Regex\": ...} or {\"String\": ...}");
}

}  // namespace

Result<PreTokenizer> PreTokenizer::FromJson(const Json& j, const std::string& file) {
  PreTokenizer p;
  const std::string type = j.is_object() ? TypeOf(j) : "";
  if (type == "ByteLevel") {
    SY_RETURN_IF_ERROR(p.ReadByteLevel(j, file, "pre_tokenizer"));
    return p;
  }
  if (type != "Sequence") {
    if (j.is_null()) {
      return JsonUnsupported(file, "pre_tokenizer",
                             "null is not supported (a byte-level tokenizer needs ByteLevel)");
    }
    return NotSupportedType(j, file, "pre_tokenizer");
  }
  auto list = j.find("pretokenizers");
  if (list == j.end() || !list->is_array() || list->empty()) {
    return JsonInvalid(file, "pre_tokenizer.pretokenizers", "must be a non-empty array");
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& e = (*list)[i];
    const std::string path = "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]";
    const std::string t = e.is_object() ? TypeOf(e) : "";
    const bool last = i + 1 == list->size();
    if (t == "Split" && !last) {
      SY_RETURN_IF_ERROR(p.ReadSplit(e, file, path));
    } else if (t == "ByteLevel" && last) {
      SY_RETURN_IF_ERROR(p.ReadByteLevel(e, file, path));
    } else {
      return NotSupportedType(e, file, path);
    }
  }
  return p;
}

Status PreTokenizer::ReadSplit(const Json& j, const std::string& file, const std::string& path) {
  auto behavior = j.find("behavior");
  if (behavior == j.end() || *behavior != "Isolated") {
    return JsonUnsupported(file, path + ".behavior",
                           (behavior == j.end() ? std::string("missing") : Describe(*behavior)) +
                               " is not supported (supported: \"Isolated\")");
  }
  bool invert = false;
  SY_RETURN_IF_ERROR(ReadBool(j, "invert", file, path, &invert));
  if (invert) return JsonUnsupported(file, path + ".invert", "true is not supported");
  if (!j.contains("pattern")) return JsonInvalid(file, path + ".pattern", "is missing");
  SY_ASSIGN_OR_RETURN(std::string pattern, SplitPattern(j["pattern"], file, path + ".pattern"));
  auto regex = Regex::Compile(pattern);
  if (!regex.ok()) {
    return JsonUnsupported(file, path + ".pattern",
                           regex.status().message() + " (translated: " + pattern + ")");
  }
  splits_.push_back(std::move(regex).value());
  return Status::OK();
}

Status PreTokenizer::ReadByteLevel(const Json& j, const std::string& file,
                                   const std::string& path) {
  if (!j.contains("add_prefix_space") || !j["add_prefix_space"].is_boolean()) {
    return JsonInvalid(file, path + ".add_prefix_space",
                       "must be true or false (HF's libraries disagree on its default)");
  }
  add_prefix_space_ = j["add_prefix_space"].get<bool>();
  bool use_regex = true;
  SY_RETURN_IF_ERROR(ReadBool(j, "use_regex", file, path, &use_regex));
  if (use_regex) {
    SY_ASSIGN_OR_RETURN(Regex gpt2, Regex::Compile(Gpt2Pattern()));
    gpt2_.push_back(std::move(gpt2));
  }
  return Status::OK();
}

Status PreTokenizer::Run(std::string_view text, std::vector<std::string_view>* words,
                         std::deque<std::string>* storage) const {
  std::vector<std::string_view> pieces{text}, next;
  for (const Regex& split : splits_) {
    next.clear();
    for (std::string_view piece : pieces) SY_RETURN_IF_ERROR(split.Split(piece, true, &next));
    pieces.swap(next);
  }
  for (std::string_view piece : pieces) {
    if (add_prefix_space_ && !piece.starts_with(' ')) {
      storage->push_back(" " + std::string(piece));
      piece = storage->back();
    }
    if (gpt2_.empty()) {
      words->push_back(piece);
    } else {
      SY_RETURN_IF_ERROR(gpt2_[0].Split(piece, false, words));
    }
  }
  return Status::OK();
}

}  // namespace switchyard::tokenizer::internal
