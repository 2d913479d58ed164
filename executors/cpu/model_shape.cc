#include "executors/cpu/model_shape.h"

#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

namespace switchyard::executors::cpu {
namespace {

using Json = nlohmann::json;

Result<Json> ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open");
  Json j = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(path + ": not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument(path + ": not a JSON object");
  return j;
}

// Reads one field of a JSON object; errors name the file and the field.
class Fields {
 public:
  Fields(const Json& j, std::string path) : j_(j), path_(std::move(path)) {}

  Status Int(const char* key, int64_t* out, bool required) const {
    const Json* v = Find(key);
    if (!v) return required ? Missing(key) : Status::OK();
    if (v->is_number_integer()) {
      *out = v->get<int64_t>();
      return Status::OK();
    }
    if (v->is_string()) {  // proto3 JSON writes 64-bit integers as strings
      std::istringstream s(v->get<std::string>());
      int64_t x = 0;
      if (s >> x && s.eof()) {
        *out = x;
        return Status::OK();
      }
    }
    return Bad(key, "must be an integer");
  }
  Status Int32(const char* key, int32_t* out, bool required) const {
    int64_t x = *out;
    SY_RETURN_IF_ERROR(Int(key, &x, required));
    if (x < INT32_MIN || x > INT32_MAX) return Bad(key, "is out of range");
    *out = static_cast<int32_t>(x);
    return Status::OK();
  }
  Status Double(const char* key, double* out, bool required) const {
    const Json* v = Find(key);
    if (!v) return required ? Missing(key) : Status::OK();
    if (!v->is_number()) return Bad(key, "must be a number");
    *out = v->get<double>();
    return Status::OK();
  }
  Status Bool(const char* key, bool* out) const {
    const Json* v = Find(key);
    if (!v) return Status::OK();
    if (!v->is_boolean()) return Bad(key, "must be true or false");
    *out = v->get<bool>();
    return Status::OK();
  }
  Status String(const char* key, std::string* out) const {
    const Json* v = Find(key);
    if (!v) return Status::OK();
    if (!v->is_string()) return Bad(key, "must be a string");
    *out = v->get<std::string>();
    return Status::OK();
  }
  // An id that may be a list (HF eos_token_id): the first entry. Null keeps -1.
  Status FirstId(const char* key, int32_t* out) const {
    const Json* v = Find(key);
    if (!v || v->is_null()) return Status::OK();
    if (v->is_array()) {
      if (v->empty() || !(*v)[0].is_number_integer()) return Bad(key, "must list integer ids");
      *out = (*v)[0].get<int32_t>();
      return Status::OK();
    }
    return Int32(key, out, false);
  }
  const Json* Find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  Status Bad(const char* key, const std::string& what) const {
    return Status::InvalidArgument(path_ + ": field '" + key + "' " + what);
  }

 private:
  Status Missing(const char* key) const { return Bad(key, "is missing"); }
  const Json& j_;
  std::string path_;
};

Status CheckPositive(const std::string& where, const char* field, int64_t v) {
  if (v > 0) return Status::OK();
  return Status::InvalidArgument(where + ": field '" + field + "' must be positive (got " +
                                 std::to_string(v) + ")");
}

}  // namespace

uint64_t ModelShape::kv_bytes_per_token() const {
  return static_cast<uint64_t>(layers * 2 * kv_heads * head_dim) * sizeof(float);
}

uint64_t ModelShape::parameters() const {
  const uint64_t h = static_cast<uint64_t>(hidden);
  const uint64_t per_layer = h * static_cast<uint64_t>(q_dim() + 2 * kv_dim()) +
                             static_cast<uint64_t>(q_dim()) * h +
                             3 * h * static_cast<uint64_t>(intermediate) + 2 * h;
  const uint64_t embed = static_cast<uint64_t>(vocab_size) * h;
  return embed * (tie_embeddings ? 1 : 2) + static_cast<uint64_t>(layers) * per_layer + h;
}

std::string ModelShape::Describe() const {
  std::ostringstream s;
  s << name << " ("
    << (random_weights ? "random weights, seed " + std::to_string(seed)
                       : std::string("checkpoint weights"))
    << "): " << layers << " layers, hidden " << hidden << ", " << heads << " heads, " << kv_heads
    << " KV heads, head_dim " << head_dim << ", intermediate " << intermediate << ", vocab "
    << vocab_size << ", " << parameters() << " parameters";
  return s.str();
}

Status ValidateShape(const ModelShape& s, const std::string& where, bool hf_names) {
  // Field names as the file spells them: a shape file's camelCase or config.json's.
  auto key = [hf_names](const char* camel, const char* hf) { return hf_names ? hf : camel; };
  SY_RETURN_IF_ERROR(CheckPositive(where, key("vocabSize", "vocab_size"), s.vocab_size));
  SY_RETURN_IF_ERROR(CheckPositive(where, key("hiddenSize", "hidden_size"), s.hidden));
  SY_RETURN_IF_ERROR(CheckPositive(where, key("numLayers", "num_hidden_layers"), s.layers));
  SY_RETURN_IF_ERROR(
      CheckPositive(where, key("numAttentionHeads", "num_attention_heads"), s.heads));
  SY_RETURN_IF_ERROR(CheckPositive(where, key("numKvHeads", "num_key_value_heads"), s.kv_heads));
  SY_RETURN_IF_ERROR(CheckPositive(where, key("headDim", "head_dim"), s.head_dim));
  SY_RETURN_IF_ERROR(
      CheckPositive(where, key("intermediateSize", "intermediate_size"), s.intermediate));
  SY_RETURN_IF_ERROR(
      CheckPositive(where, key("maxPositions", "max_position_embeddings"), s.max_positions));
  auto bad = [&](const char* field, const std::string& what) {
    return Status::InvalidArgument(where + ": field '" + field + "' " + what);
  };
  if (s.heads % s.kv_heads != 0)
    return bad(key("numKvHeads", "num_key_value_heads"),
               "must divide the number of attention heads (" + std::to_string(s.heads) + ")");
  if (s.head_dim % 2 != 0)
    return bad(key("headDim", "head_dim"), "must be even (rotary embeddings)");
  if (!(s.rope_theta > 0)) return bad(key("ropeTheta", "rope_theta"), "must be positive");
  if (!(s.rms_eps > 0)) return bad(key("rmsNormEps", "rms_norm_eps"), "must be positive");
  if (s.bos_id < -1 || s.bos_id >= s.vocab_size)
    return bad(key("bosId", "bos_token_id"), "is outside the vocab");
  if (s.eos_id < -1 || s.eos_id >= s.vocab_size)
    return bad(key("eosId", "eos_token_id"), "is outside the vocab");
  return Status::OK();
}

Result<ModelShape> LoadShapeFile(const std::string& path) {
  SY_ASSIGN_OR_RETURN(Json j, ReadJson(path));
  Fields f(j, path);
  ModelShape s;
  s.name = path;
  SY_RETURN_IF_ERROR(f.String("name", &s.name));
  SY_RETURN_IF_ERROR(f.Int("vocabSize", &s.vocab_size, true));
  SY_RETURN_IF_ERROR(f.Int("hiddenSize", &s.hidden, true));
  SY_RETURN_IF_ERROR(f.Int("numLayers", &s.layers, true));
  SY_RETURN_IF_ERROR(f.Int("numAttentionHeads", &s.heads, true));
  SY_RETURN_IF_ERROR(f.Int("numKvHeads", &s.kv_heads, true));
  SY_RETURN_IF_ERROR(f.Int("intermediateSize", &s.intermediate, true));
  SY_RETURN_IF_ERROR(CheckPositive(path, "hiddenSize", s.hidden));
  SY_RETURN_IF_ERROR(CheckPositive(path, "numAttentionHeads", s.heads));
  if (!f.Find("headDim") && s.hidden % s.heads != 0)
    return f.Bad("numAttentionHeads", "must divide hiddenSize when headDim is not given");
  s.head_dim = s.hidden / s.heads;
  SY_RETURN_IF_ERROR(f.Int("headDim", &s.head_dim, false));
  SY_RETURN_IF_ERROR(f.Int("maxPositions", &s.max_positions, false));
  SY_RETURN_IF_ERROR(f.Double("ropeTheta", &s.rope_theta, false));
  SY_RETURN_IF_ERROR(f.Double("rmsNormEps", &s.rms_eps, false));
  SY_RETURN_IF_ERROR(f.Int32("bosId", &s.bos_id, false));
  SY_RETURN_IF_ERROR(f.Int32("eosId", &s.eos_id, false));
  SY_RETURN_IF_ERROR(f.Bool("randomWeights", &s.random_weights));
  SY_RETURN_IF_ERROR(f.Bool("tieEmbeddings", &s.tie_embeddings));
  int64_t seed = 0;
  SY_RETURN_IF_ERROR(f.Int("seed", &seed, false));
  if (seed < 0) return f.Bad("seed", "must not be negative");
  s.seed = static_cast<uint64_t>(seed);
  SY_RETURN_IF_ERROR(ValidateShape(s, path, false));
  return s;
}

namespace {

Status ReadRopeScaling(const Fields& f, const std::string& path, ModelShape* s) {
  const Json* rs = f.Find("rope_scaling");
  if (!rs || rs->is_null()) return Status::OK();
  if (!rs->is_object()) return f.Bad("rope_scaling", "must be an object or null");
  Fields r(*rs, path + ": rope_scaling");
  std::string type;
  SY_RETURN_IF_ERROR(r.String("rope_type", &type));
  if (type.empty()) SY_RETURN_IF_ERROR(r.String("type", &type));
  if (type == "default") return Status::OK();
  if (type != "llama3")
    return Status::NotSupported(path + ": field 'rope_scaling' type '" + type +
                                "' is not supported (only llama3)");
  SY_RETURN_IF_ERROR(r.Double("factor", &s->rope_scaling_factor, true));
  SY_RETURN_IF_ERROR(r.Double("low_freq_factor", &s->rope_low_freq_factor, true));
  SY_RETURN_IF_ERROR(r.Double("high_freq_factor", &s->rope_high_freq_factor, true));
  SY_RETURN_IF_ERROR(
      r.Int("original_max_position_embeddings", &s->rope_original_max_positions, true));
  if (!(s->rope_scaling_factor > 0) || !(s->rope_high_freq_factor > s->rope_low_freq_factor))
    return f.Bad("rope_scaling", "has inconsistent factors");
  return Status::OK();
}

}  // namespace

Result<ModelShape> LoadHfConfig(const std::string& path) {
  SY_ASSIGN_OR_RETURN(Json j, ReadJson(path));
  Fields f(j, path);
  std::string type;
  SY_RETURN_IF_ERROR(f.String("model_type", &type));
  if (type != "llama")
    return Status::NotSupported(path + ": field 'model_type' is '" + type +
                                "'; only Llama checkpoints (\"llama\") are supported");
  ModelShape s;
  s.random_weights = false;
  s.name = path;
  s.rms_eps = 1e-6;  // LlamaConfig's default
  SY_RETURN_IF_ERROR(f.Int("vocab_size", &s.vocab_size, true));
  SY_RETURN_IF_ERROR(f.Int("hidden_size", &s.hidden, true));
  SY_RETURN_IF_ERROR(f.Int("num_hidden_layers", &s.layers, true));
  SY_RETURN_IF_ERROR(f.Int("num_attention_heads", &s.heads, true));
  SY_RETURN_IF_ERROR(f.Int("intermediate_size", &s.intermediate, true));
  SY_RETURN_IF_ERROR(CheckPositive(path, "num_attention_heads", s.heads));
  s.kv_heads = s.heads;
  SY_RETURN_IF_ERROR(f.Int("num_key_value_heads", &s.kv_heads, false));
  s.head_dim = s.hidden / s.heads;
  if (const Json* hd = f.Find("head_dim"); hd && !hd->is_null())
    SY_RETURN_IF_ERROR(f.Int("head_dim", &s.head_dim, false));
  else if (s.hidden % s.heads != 0)
    return f.Bad("num_attention_heads", "must divide hidden_size when head_dim is not given");
  SY_RETURN_IF_ERROR(f.Int("max_position_embeddings", &s.max_positions, false));
  SY_RETURN_IF_ERROR(f.Double("rope_theta", &s.rope_theta, false));
  SY_RETURN_IF_ERROR(f.Double("rms_norm_eps", &s.rms_eps, false));
  SY_RETURN_IF_ERROR(f.FirstId("bos_token_id", &s.bos_id));
  SY_RETURN_IF_ERROR(f.FirstId("eos_token_id", &s.eos_id));
  SY_RETURN_IF_ERROR(f.Bool("tie_word_embeddings", &s.tie_embeddings));
  bool bias = false;
  SY_RETURN_IF_ERROR(f.Bool("attention_bias", &bias));
  bool mlp_bias = false;
  SY_RETURN_IF_ERROR(f.Bool("mlp_bias", &mlp_bias));
  if (bias || mlp_bias)
    return Status::NotSupported(path +
                                ": field 'attention_bias'/'mlp_bias': biases are not "
                                "supported");
  std::string act = "silu";
  SY_RETURN_IF_ERROR(f.String("hidden_act", &act));
  if (act != "silu") return f.Bad("hidden_act", "must be \"silu\" (got \"" + act + "\")");
  SY_RETURN_IF_ERROR(ReadRopeScaling(f, path, &s));
  SY_RETURN_IF_ERROR(ValidateShape(s, path, true));
  return s;
}

}  // namespace switchyard::executors::cpu
