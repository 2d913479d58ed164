#include "cpu_engine/model_shape.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cpu_engine/internal/json_fields.h"

namespace switchyard::cpu_engine {
namespace {

using internal::Fields;
using internal::Json;

Status CheckPositive(const std::string& where, const char* field, int64_t v) {
  if (v > 0) return Status::OK();
  return Status::InvalidArgument(where + ": field '" + field + "' must be positive (got " +
                                 std::to_string(v) + ")");
}

Status ReadDType(const Fields& f, const char* key, DType* out) {
  std::string text;
  SY_RETURN_IF_ERROR(f.String(key, &text));
  if (text.empty()) return Status::OK();
  std::optional<DType> t = ParseDType(text);
  if (!t) return f.Bad(key, "must be \"fp32\" or \"bf16\" (got \"" + text + "\")");
  *out = *t;
  return Status::OK();
}

}  // namespace

const char* ArchName(Arch a) {
  switch (a) {
    case Arch::kQwen2:
      return "qwen2";
    case Arch::kQwen3:
      return "qwen3";
    case Arch::kLlama:
      break;
  }
  return "llama";
}

std::optional<Arch> ParseArch(const std::string& s) {
  for (Arch a : {Arch::kLlama, Arch::kQwen2, Arch::kQwen3})
    if (s == ArchName(a)) return a;
  return std::nullopt;
}

bool ModelShape::IsEos(int32_t token) const {
  if (token < 0) return false;
  return token == eos_id || std::find(eos_ids.begin(), eos_ids.end(), token) != eos_ids.end();
}

uint64_t ModelShape::kv_bytes_per_token() const {
  return static_cast<uint64_t>(layers * 2 * kv_heads * head_dim) *
         static_cast<uint64_t>(DTypeBytes(kv_dtype));
}

uint64_t ModelShape::parameters() const {
  const uint64_t h = static_cast<uint64_t>(hidden);
  const uint64_t q = static_cast<uint64_t>(q_dim()), kv = static_cast<uint64_t>(kv_dim());
  uint64_t per_layer =
      h * (q + 2 * kv) + q * h + 3 * h * static_cast<uint64_t>(intermediate) + 2 * h;
  if (qkv_bias()) per_layer += q + 2 * kv;
  if (qk_norm()) per_layer += 2 * static_cast<uint64_t>(head_dim);
  const uint64_t embed = static_cast<uint64_t>(vocab_size) * h;
  return embed * (tie_embeddings ? 1 : 2) + static_cast<uint64_t>(layers) * per_layer + h;
}

std::string ModelShape::Describe() const {
  std::ostringstream s;
  s << name << " ("
    << (random_weights ? "random weights, seed " + std::to_string(seed)
                       : std::string("checkpoint weights"))
    << "): " << ArchName(arch) << ", " << layers << " layers, hidden " << hidden << ", " << heads
    << " heads, " << kv_heads << " KV heads, head_dim " << head_dim << ", intermediate "
    << intermediate << ", vocab " << vocab_size << ", " << parameters() << " parameters, "
    << DTypeName(weight_dtype) << " weights, " << DTypeName(kv_dtype) << " KV";
  if (mean_answer_tokens > 0) s << ", answers of " << mean_answer_tokens << " tokens on average";
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
  auto outside = [&s](int32_t id) { return id < -1 || id >= s.vocab_size; };
  if (outside(s.eos_id) || std::any_of(s.eos_ids.begin(), s.eos_ids.end(), outside))
    return bad(key("eosId", "eos_token_id"), "is outside the vocab");
  return Status::OK();
}

namespace {

Status ReadShapeSizes(const Fields& f, ModelShape* s) {
  SY_RETURN_IF_ERROR(f.Int("vocabSize", &s->vocab_size, true));
  SY_RETURN_IF_ERROR(f.Int("hiddenSize", &s->hidden, true));
  SY_RETURN_IF_ERROR(f.Int("numLayers", &s->layers, true));
  SY_RETURN_IF_ERROR(f.Int("numAttentionHeads", &s->heads, true));
  SY_RETURN_IF_ERROR(f.Int("numKvHeads", &s->kv_heads, true));
  SY_RETURN_IF_ERROR(f.Int("intermediateSize", &s->intermediate, true));
  SY_RETURN_IF_ERROR(CheckPositive(f.path(), "hiddenSize", s->hidden));
  SY_RETURN_IF_ERROR(CheckPositive(f.path(), "numAttentionHeads", s->heads));
  if (!f.Find("headDim") && s->hidden % s->heads != 0)
    return f.Bad("numAttentionHeads", "must divide hiddenSize when headDim is not given");
  s->head_dim = s->hidden / s->heads;
  SY_RETURN_IF_ERROR(f.Int("headDim", &s->head_dim, false));
  SY_RETURN_IF_ERROR(f.Int("maxPositions", &s->max_positions, false));
  SY_RETURN_IF_ERROR(f.Double("ropeTheta", &s->rope_theta, false));
  return f.Double("rmsNormEps", &s->rms_eps, false);
}

}  // namespace

Result<ModelShape> LoadShapeFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  return ParseShapeFile(text.str(), path);
}

Result<ModelShape> ParseShapeFile(const std::string& text, const std::string& path) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(path + ": not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument(path + ": not a JSON object");
  Fields f(j, path);
  ModelShape s;
  s.name = path;
  SY_RETURN_IF_ERROR(f.String("name", &s.name));
  std::string arch = "llama";
  SY_RETURN_IF_ERROR(f.String("arch", &arch));
  std::optional<Arch> a = ParseArch(arch);
  if (!a) return f.Bad("arch", "must be \"llama\", \"qwen2\" or \"qwen3\" (got \"" + arch + "\")");
  s.arch = *a;
  SY_RETURN_IF_ERROR(ReadShapeSizes(f, &s));
  SY_RETURN_IF_ERROR(f.Int32("bosId", &s.bos_id, false));
  SY_RETURN_IF_ERROR(f.Ids("eosId", &s.eos_ids));
  s.eos_id = s.eos_ids.empty() ? -1 : s.eos_ids[0];
  SY_RETURN_IF_ERROR(f.Bool("randomWeights", &s.random_weights));
  SY_RETURN_IF_ERROR(f.Bool("tieEmbeddings", &s.tie_embeddings));
  SY_RETURN_IF_ERROR(ReadDType(f, "weightDtype", &s.weight_dtype));
  SY_RETURN_IF_ERROR(ReadDType(f, "kvDtype", &s.kv_dtype));
  int64_t seed = 0;
  SY_RETURN_IF_ERROR(f.Int("seed", &seed, false));
  if (seed < 0) return f.Bad("seed", "must not be negative");
  s.seed = static_cast<uint64_t>(seed);
  SY_RETURN_IF_ERROR(f.Int("meanAnswerTokens", &s.mean_answer_tokens, false));
  if (s.mean_answer_tokens < 0) return f.Bad("meanAnswerTokens", "must not be negative");
  if (s.mean_answer_tokens > 0 && !s.random_weights)
    return f.Bad("meanAnswerTokens", "applies to random weights only");
  std::string tokenizer;
  SY_RETURN_IF_ERROR(f.String("tokenizer", &tokenizer));
  if (!tokenizer.empty())
    s.tokenizer_paths = {
        (std::filesystem::path(path).parent_path() / tokenizer).lexically_normal().string()};
  SY_RETURN_IF_ERROR(ValidateShape(s, path, false));
  return s;
}

}  // namespace switchyard::cpu_engine
