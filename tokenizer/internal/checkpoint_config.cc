#include "tokenizer/internal/checkpoint_config.h"

#include <algorithm>
#include <filesystem>

#include "tokenizer/internal/json_file.h"
#include "tokenizer/internal/unicode.h"

namespace switchyard::tokenizer::internal {
namespace {

struct Ctx {
  const CheckpointInputs& in;
  const TokenizerMetadata& md;
  std::string file;
};

// A token named by a string or {"content": string}; -1 for null or absent.
Result<int32_t> NamedToken(const Ctx& c, const Json& j, const std::string& key) {
  if (j.is_null()) return -1;
  const Json* text = &j;
  if (j.is_object() && j.contains("content")) text = &j["content"];
  if (!text->is_string()) {
    return JsonInvalid(c.file, key,
                       "must be a token string or {\"content\": ...}, not " + Describe(j));
  }
  const int32_t id = c.in.token_id(text->get_ref<const std::string&>());
  if (id < 0)
    return JsonInvalid(c.file, key, Describe(*text) + " is not a token of tokenizer.json");
  return id;
}

// An id of generation_config.json, checked against the vocabulary.
Result<int32_t> IdValue(const Ctx& c, const Json& j, const std::string& key) {
  if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() >= c.md.vocab_size) {
    return JsonInvalid(c.file, key,
                       Describe(j) + " is not a token id below the vocabulary size " +
                           std::to_string(c.md.vocab_size));
  }
  return static_cast<int32_t>(j.get<int64_t>());
}

void AddEos(int32_t id, TokenizerMetadata* md) {
  if (id >= 0 && !md->IsEos(id)) md->eos_ids.push_back(id);
}

Status ReadChatTemplate(const Ctx& c, const Json& j, TokenizerMetadata* md) {
  if (j.is_null()) return Status::OK();
  if (j.is_string()) {
    md->chat_template = j.get<std::string>();
    return Status::OK();
  }
  if (!j.is_array()) {
    return JsonInvalid(c.file, "chat_template", "must be a string or a list of {name, template}");
  }
  for (size_t i = 0; i < j.size(); ++i) {
    const Json& e = j[i];
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
        !e.contains("template") || !e["template"].is_string()) {
      return JsonInvalid(c.file, "chat_template[" + std::to_string(i) + "]",
                         "must be {\"name\": string, \"template\": string}");
    }
    md->named_chat_templates[e["name"].get<std::string>()] = e["template"].get<std::string>();
  }
  auto def = md->named_chat_templates.find("default");
  if (def != md->named_chat_templates.end()) md->chat_template = def->second;
  return Status::OK();
}

Status ReadLimits(const Ctx& c, const Json& cfg, TokenizerMetadata* md) {
  auto it = cfg.find("model_max_length");
  if (it == cfg.end() || it->is_null()) return Status::OK();
  if (!it->is_number() || it->get<double>() < 0) {
    return JsonInvalid(c.file, "model_max_length", "must be a number >= 0, not " + Describe(*it));
  }
  const double v = it->get<double>();
  md->model_max_length = v >= 1e18 ? 0 : static_cast<int64_t>(v);
  return Status::OK();
}

Status ReadAdditionalSpecial(const Ctx& c, const Json& cfg, std::vector<int32_t>* extra) {
  auto it = cfg.find("additional_special_tokens");
  if (it == cfg.end() || it->is_null()) return Status::OK();
  if (!it->is_array()) return JsonInvalid(c.file, "additional_special_tokens", "must be a list");
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string key = "additional_special_tokens[" + std::to_string(i) + "]";
    SY_ASSIGN_OR_RETURN(int32_t id, NamedToken(c, (*it)[i], key));
    if (id < 0) return JsonInvalid(c.file, key, "must name a token");
    extra->push_back(id);
  }
  return Status::OK();
}

Status ReadTokenizerConfig(const Ctx& c, const Json& cfg, TokenizerMetadata* md,
                           std::vector<int32_t>* extra) {
  if (!cfg.is_object()) return JsonInvalid(c.file, "", "must be a JSON object");
  for (const char* key : {"remove_space", "do_lowercase_and_remove_accent"}) {
    bool on = false;
    SY_RETURN_IF_ERROR(ReadBool(cfg, key, c.file, "", &on));
    if (on) return JsonUnsupported(c.file, key, "true is not supported");
  }
  SY_ASSIGN_OR_RETURN(md->bos_id, NamedToken(c, cfg.value("bos_token", Json()), "bos_token"));
  SY_ASSIGN_OR_RETURN(int32_t eos, NamedToken(c, cfg.value("eos_token", Json()), "eos_token"));
  AddEos(eos, md);
  SY_ASSIGN_OR_RETURN(md->pad_id, NamedToken(c, cfg.value("pad_token", Json()), "pad_token"));
  const int32_t first = c.in.token_id(c.in.template_first_token);
  md->add_bos_token = md->bos_id >= 0 && first == md->bos_id;
  SY_RETURN_IF_ERROR(ReadBool(cfg, "add_bos_token", c.file, "", &md->add_bos_token));
  SY_RETURN_IF_ERROR(
      ReadBool(cfg, "clean_up_tokenization_spaces", c.file, "", &md->clean_up_tokenization_spaces));
  SY_RETURN_IF_ERROR(ReadBool(cfg, "split_special_tokens", c.file, "", &md->split_special_tokens));
  SY_RETURN_IF_ERROR(ReadChatTemplate(c, cfg.value("chat_template", Json()), md));
  SY_RETURN_IF_ERROR(ReadLimits(c, cfg, md));
  return ReadAdditionalSpecial(c, cfg, extra);
}

Status ReadGenerationConfig(const Ctx& c, const Json& cfg, TokenizerMetadata* md) {
  if (!cfg.is_object()) return JsonInvalid(c.file, "", "must be a JSON object");
  auto eos = cfg.find("eos_token_id");
  if (eos != cfg.end() && eos->is_array()) {
    for (size_t i = 0; i < eos->size(); ++i) {
      SY_ASSIGN_OR_RETURN(int32_t id,
                          IdValue(c, (*eos)[i], "eos_token_id[" + std::to_string(i) + "]"));
      AddEos(id, md);
    }
  } else if (eos != cfg.end() && !eos->is_null()) {
    SY_ASSIGN_OR_RETURN(int32_t id, IdValue(c, *eos, "eos_token_id"));
    AddEos(id, md);
  }
  for (auto [key, field] :
       {std::pair{"bos_token_id", &md->bos_id}, {"pad_token_id", &md->pad_id}}) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) continue;
    SY_ASSIGN_OR_RETURN(int32_t id, IdValue(c, *it, key));
    if (*field < 0) *field = id;
  }
  return Status::OK();
}

// Runs `read` over a JSON file of the directory when it exists.
template <typename F>
Status WithJsonFile(const CheckpointInputs& in, const TokenizerMetadata& md, const char* name,
                    F read) {
  Ctx c{in, md, (std::filesystem::path(in.dir) / name).string()};
  SY_ASSIGN_OR_RETURN(std::optional<Json> j, ReadOptionalJsonFile(c.file));
  if (!j) return Status::OK();
  try {
    return read(c, *j);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(c.file + ": " + e.what());
  }
}

}  // namespace

Status ReadCheckpointConfig(const CheckpointInputs& in, TokenizerMetadata* md,
                            std::vector<int32_t>* extra_special) {
  SY_RETURN_IF_ERROR(WithJsonFile(
      in, *md, "tokenizer_config.json",
      [&](const Ctx& c, const Json& j) { return ReadTokenizerConfig(c, j, md, extra_special); }));
  SY_RETURN_IF_ERROR(
      WithJsonFile(in, *md, "generation_config.json",
                   [&](const Ctx& c, const Json& j) { return ReadGenerationConfig(c, j, md); }));
  const std::string jinja = (std::filesystem::path(in.dir) / "chat_template.jinja").string();
  if (!FileExists(jinja)) return Status::OK();
  SY_ASSIGN_OR_RETURN(std::string text, ReadFileBytes(jinja));
  if (const int64_t bad = FirstInvalidUtf8(text); bad >= 0) {
    return Status::InvalidArgument(jinja + ": not UTF-8 at byte offset " + std::to_string(bad));
  }
  md->chat_template = std::move(text);
  return Status::OK();
}

}  // namespace switchyard::tokenizer::internal
