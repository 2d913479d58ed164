// LoadHfConfig (model_shape.h): a Hugging Face config.json (+ generation_config.json).
#include <algorithm>
#include <filesystem>

#include "cpu_engine/internal/json_fields.h"
#include "cpu_engine/model_shape.h"

namespace switchyard::cpu_engine {
namespace {

using internal::Fields;
using internal::Json;

const char* CausalLmClass(Arch a) {
  switch (a) {
    case Arch::kQwen2:
      return "Qwen2ForCausalLM";
    case Arch::kQwen3:
      return "Qwen3ForCausalLM";
    case Arch::kLlama:
      break;
  }
  return "LlamaForCausalLM";
}

// model_type (or, without it, architectures[0]) names a supported family; architectures,
// when given, must include its causal-LM class.
Result<Arch> ReadArch(const Fields& f) {
  std::string type;
  SY_RETURN_IF_ERROR(f.String("model_type", &type));
  const Json* archs = f.Find("architectures");
  if (archs && !archs->is_null() && !archs->is_array())
    return f.Bad("architectures", "must be a list of class names");
  if (type.empty() && archs && archs->is_array()) {
    for (Arch a : {Arch::kLlama, Arch::kQwen2, Arch::kQwen3})
      for (const Json& c : *archs)
        if (c.is_string() && c.get<std::string>() == CausalLmClass(a)) type = ArchName(a);
  }
  if (type.empty()) return f.Bad("model_type", "is missing");
  std::optional<Arch> arch = ParseArch(type);
  if (!arch)
    return f.Unsupported("model_type",
                         "is '" + type + "': not a supported architecture (llama, qwen2, qwen3)");
  if (archs && archs->is_array() && !archs->empty()) {
    bool found = false;
    for (const Json& c : *archs)
      found |= c.is_string() && c.get<std::string>() == CausalLmClass(*arch);
    if (!found)
      return f.Unsupported("architectures", "is " + archs->dump() + ": a " + type +
                                                " checkpoint must be a " + CausalLmClass(*arch));
  }
  return *arch;
}

Status ReadRopeScaling(const Fields& f, ModelShape* s) {
  const Json* rs = f.Find("rope_scaling");
  if (!rs || rs->is_null()) return Status::OK();
  if (!rs->is_object()) return f.Bad("rope_scaling", "must be an object or null");
  Fields r(*rs, f.path() + ": rope_scaling");
  std::string type;
  SY_RETURN_IF_ERROR(r.String("rope_type", &type));
  if (type.empty()) SY_RETURN_IF_ERROR(r.String("type", &type));
  if (type == "default") return Status::OK();
  if (type != "llama3")
    return f.Unsupported("rope_scaling",
                         "type '" + type + "' is not supported (only llama3, default or null)");
  SY_RETURN_IF_ERROR(r.Double("factor", &s->rope_scaling_factor, true));
  SY_RETURN_IF_ERROR(r.Double("low_freq_factor", &s->rope_low_freq_factor, true));
  SY_RETURN_IF_ERROR(r.Double("high_freq_factor", &s->rope_high_freq_factor, true));
  SY_RETURN_IF_ERROR(
      r.Int("original_max_position_embeddings", &s->rope_original_max_positions, true));
  if (!(s->rope_scaling_factor > 0) || !(s->rope_high_freq_factor > s->rope_low_freq_factor))
    return f.Bad("rope_scaling", "has inconsistent factors");
  return Status::OK();
}

// Fields whose math the engine does not implement, refused by name (README, "Refused").
Status RefuseUnsupported(const Fields& f, Arch arch) {
  bool flag = false;
  SY_RETURN_IF_ERROR(f.Bool("attention_bias", &flag));
  // Qwen2's attention always has q/k/v biases and ignores this field; elsewhere it would
  // add biases to every projection, o_proj included.
  if (flag && arch != Arch::kQwen2)
    return f.Unsupported("attention_bias", "is true: projection biases are not supported on a " +
                                               std::string(ArchName(arch)) + " model");
  flag = false;
  SY_RETURN_IF_ERROR(f.Bool("mlp_bias", &flag));
  if (flag) return f.Unsupported("mlp_bias", "is true: MLP biases are not supported");
  flag = false;
  SY_RETURN_IF_ERROR(f.Bool("use_sliding_window", &flag));
  if (flag) return f.Unsupported("use_sliding_window", "is true: sliding-window attention");
  if (const Json* lt = f.Find("layer_types"); lt && lt->is_array())
    for (const Json& t : *lt)
      if (!t.is_string() || t.get<std::string>() != "full_attention")
        return f.Unsupported("layer_types", "has " + t.dump() + ": only full_attention layers");
  std::string act = "silu";
  SY_RETURN_IF_ERROR(f.String("hidden_act", &act));
  if (act != "silu") return f.Unsupported("hidden_act", "is \"" + act + "\": only silu");
  if (const Json* p = f.Find("partial_rotary_factor");
      p && !p->is_null() && !(p->is_number() && p->get<double>() == 1.0))
    return f.Unsupported("partial_rotary_factor",
                         "is " + p->dump() + ": rotary over all dims only");
  if (const Json* q = f.Find("quantization_config"); q && !q->is_null())
    return f.Unsupported("quantization_config", "is present: quantized weights");
  return Status::OK();
}

Status ReadSizes(const Fields& f, Arch arch, ModelShape* s) {
  SY_RETURN_IF_ERROR(f.Int("vocab_size", &s->vocab_size, true));
  SY_RETURN_IF_ERROR(f.Int("hidden_size", &s->hidden, true));
  SY_RETURN_IF_ERROR(f.Int("num_hidden_layers", &s->layers, true));
  SY_RETURN_IF_ERROR(f.Int("num_attention_heads", &s->heads, true));
  SY_RETURN_IF_ERROR(f.Int("intermediate_size", &s->intermediate, true));
  if (s->heads <= 0)
    return f.Bad("num_attention_heads", "must be positive (got " + std::to_string(s->heads) + ")");
  s->kv_heads = s->heads;
  if (const Json* kv = f.Find("num_key_value_heads"); kv && !kv->is_null())
    SY_RETURN_IF_ERROR(f.Int("num_key_value_heads", &s->kv_heads, false));
  s->head_dim = s->hidden / s->heads;
  if (const Json* hd = f.Find("head_dim"); hd && !hd->is_null())
    SY_RETURN_IF_ERROR(f.Int("head_dim", &s->head_dim, false));
  else if (arch == Arch::kQwen3)  // Qwen3Config's default (128) is not hidden / heads
    return f.Bad("head_dim", "is missing (a qwen3 config states it)");
  else if (s->hidden % s->heads != 0)
    return f.Bad("num_attention_heads", "must divide hidden_size when head_dim is not given");
  SY_RETURN_IF_ERROR(f.Int("max_position_embeddings", &s->max_positions, false));
  SY_RETURN_IF_ERROR(f.Double("rope_theta", &s->rope_theta, false));
  return f.Double("rms_norm_eps", &s->rms_eps, false);
}

// eos ids: config.json's, then generation_config.json's not already listed.
Status ReadStopIds(const Fields& f, const std::string& config_path, ModelShape* s) {
  std::vector<int32_t> bos;
  SY_RETURN_IF_ERROR(f.Ids("bos_token_id", &bos));
  if (!bos.empty()) s->bos_id = bos[0];
  SY_RETURN_IF_ERROR(f.Ids("eos_token_id", &s->eos_ids));
  const std::filesystem::path gen =
      std::filesystem::path(config_path).parent_path() / "generation_config.json";
  std::error_code ec;
  if (std::filesystem::exists(gen, ec)) {
    SY_ASSIGN_OR_RETURN(Json g, internal::ReadJson(gen.string()));
    Fields gf(g, gen.string());
    std::vector<int32_t> more;
    SY_RETURN_IF_ERROR(gf.Ids("eos_token_id", &more));
    for (int32_t id : more)
      if (std::find(s->eos_ids.begin(), s->eos_ids.end(), id) == s->eos_ids.end())
        s->eos_ids.push_back(id);
  }
  s->eos_id = s->eos_ids.empty() ? -1 : s->eos_ids[0];
  return Status::OK();
}

}  // namespace

Result<ModelShape> LoadHfConfig(const std::string& path) {
  SY_ASSIGN_OR_RETURN(Json j, internal::ReadJson(path));
  Fields f(j, path);
  SY_ASSIGN_OR_RETURN(Arch arch, ReadArch(f));
  SY_RETURN_IF_ERROR(RefuseUnsupported(f, arch));
  ModelShape s;
  s.arch = arch;
  s.random_weights = false;
  s.name = path;
  s.rms_eps = 1e-6;  // LlamaConfig's, Qwen2Config's and Qwen3Config's default
  SY_RETURN_IF_ERROR(ReadSizes(f, arch, &s));
  SY_RETURN_IF_ERROR(ReadStopIds(f, path, &s));
  SY_RETURN_IF_ERROR(f.Bool("tie_word_embeddings", &s.tie_embeddings));
  std::string dtype;
  SY_RETURN_IF_ERROR(f.String("torch_dtype", &dtype));
  if (dtype.empty()) SY_RETURN_IF_ERROR(f.String("dtype", &dtype));
  s.weight_dtype = dtype == "bfloat16" ? DType::kBf16 : DType::kF32;
  SY_RETURN_IF_ERROR(ReadRopeScaling(f, &s));
  SY_RETURN_IF_ERROR(ValidateShape(s, path, true));
  return s;
}

}  // namespace switchyard::cpu_engine
