// Model construction (model.h): from a shape file, random weights, a checkpoint directory
// or given weights; the packing of the weights as the shape's storage type.
#include <algorithm>
#include <filesystem>
#include <thread>

#include "cpu_engine/model.h"
#include "cpu_engine/safetensors.h"

namespace switchyard::cpu_engine {
namespace {

std::vector<float> Concat(std::initializer_list<const std::vector<float>*> parts) {
  std::vector<float> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

// bf16 when every weight of the checkpoint is BF16 (then bf16 storage is exact); the
// rotary buffers the loader ignores do not count.
DType CheckpointDtype(const SafetensorsSet& st) {
  for (const auto& [name, t] : st.tensors())
    if (t.dtype != "BF16" && !name.ends_with("rotary_emb.inv_freq")) return DType::kF32;
  return DType::kBf16;
}

uint64_t FloatBytes(const std::vector<float>& v) { return v.size() * sizeof(float); }

}  // namespace

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return LoadCheckpoint(path, options);
  SY_ASSIGN_OR_RETURN(ModelShape shape, LoadModelShape(path));
  if (!shape.random_weights)
    return Status::InvalidArgument(path +
                                   ": field 'randomWeights' is false, but a shape file holds "
                                   "no weights (give a checkpoint directory)");
  shape.weight_dtype = options.weight_dtype.value_or(shape.weight_dtype);
  shape.kv_dtype = options.kv_dtype.value_or(shape.kv_dtype);
  return Random(shape);
}

Result<std::unique_ptr<Model>> Model::Random(const ModelShape& shape) {
  SY_RETURN_IF_ERROR(ValidateShape(shape, "model shape '" + shape.name + "'"));
  ModelShape s = shape;
  s.random_weights = true;
  return FromWeights(s, RandomWeights(s));
}

Result<std::unique_ptr<Model>> Model::LoadCheckpoint(const std::string& dir,
                                                     const LoadOptions& options) {
  SY_ASSIGN_OR_RETURN(ModelShape shape, LoadHfConfig(dir + "/config.json"));
  shape.name = std::filesystem::path(dir).lexically_normal().filename().string();
  if (shape.name.empty()) shape.name = dir;
  auto st = SafetensorsSet::OpenDir(dir);
  if (!st.ok()) return st.status();
  shape.weight_dtype = options.weight_dtype.value_or(CheckpointDtype(**st));
  shape.kv_dtype = options.kv_dtype.value_or(DType::kF32);
  // Layer by layer: each is packed as soon as it is read, so the fp32 copy of the whole
  // model never exists (a bf16 checkpoint needs about its own size, not twice it).
  std::unique_ptr<Model> m(new Model());
  m->shape_ = shape;
  Weights rest;
  Status read = ReadWeightsByLayer(
      shape, **st,
      [&m](int64_t, LayerWeights& l) {
        m->PackLayer(l);
        return Status::OK();
      },
      &rest);
  if (!read.ok()) return read.Annotate(dir);
  m->PackRest(rest);
  const unsigned hw = std::thread::hardware_concurrency();
  m->SetThreads(static_cast<int>(std::clamp(hw, 1u, 8u)));
  return m;
}

Result<std::unique_ptr<Model>> Model::FromWeights(const ModelShape& shape, Weights w) {
  SY_RETURN_IF_ERROR(ValidateShape(shape, "model shape '" + shape.name + "'"));
  SY_RETURN_IF_ERROR(CheckWeights(shape, w, "weights of '" + shape.name + "'"));
  std::unique_ptr<Model> m(new Model());
  m->shape_ = shape;
  for (LayerWeights& l : w.layers) m->PackLayer(l);
  m->PackRest(w);
  const unsigned hw = std::thread::hardware_concurrency();
  m->SetThreads(static_cast<int>(std::clamp(hw, 1u, 8u)));
  return m;
}

void Model::PackLayer(LayerWeights& l) {
  const ModelShape& s = shape_;
  const DType dt = s.weight_dtype;
  const int64_t qkvd = s.q_dim() + 2 * s.kv_dim();
  Layer f;
  f.attn_norm = std::move(l.attn_norm);
  f.wqkv = PackedMatrix(Concat({&l.q, &l.k, &l.v}).data(), qkvd, s.hidden, dt);
  f.wo = PackedMatrix(l.o.data(), s.hidden, s.q_dim(), dt);
  if (s.qkv_bias()) f.qkv_bias = Concat({&l.q_bias, &l.k_bias, &l.v_bias});
  f.q_norm = std::move(l.q_norm);
  f.k_norm = std::move(l.k_norm);
  f.mlp_norm = std::move(l.mlp_norm);
  f.wgate_up = PackedMatrix(Concat({&l.gate, &l.up}).data(), 2 * s.intermediate, s.hidden, dt);
  f.wdown = PackedMatrix(l.down.data(), s.hidden, s.intermediate, dt);
  l = LayerWeights();  // free as we go
  layers_.push_back(std::move(f));
}

void Model::PackRest(Weights& w) {
  const ModelShape& s = shape_;
  const DType dt = s.weight_dtype;
  shape_.tie_embeddings = w.lm_head.empty();
  final_norm_ = std::move(w.final_norm);
  if (w.lm_head.empty()) {  // tied: one packed copy serves the head and the lookups
    head_ = PackedMatrix(w.embed.data(), s.vocab_size, s.hidden, dt);
  } else {
    head_ = PackedMatrix(w.lm_head.data(), s.vocab_size, s.hidden, dt);
    if (dt == DType::kBf16) {
      embed_bf16_.resize(w.embed.size());
      std::transform(w.embed.begin(), w.embed.end(), embed_bf16_.begin(), FloatToBf16);
    } else {
      embed_ = std::move(w.embed);
    }
  }
  w.embed = w.lm_head = {};
}

uint64_t Model::weight_bytes() const {
  uint64_t b = head_.bytes() + FloatBytes(embed_) + embed_bf16_.size() * sizeof(uint16_t) +
               FloatBytes(final_norm_);
  for (const Layer& l : layers_)
    b += l.wqkv.bytes() + l.wo.bytes() + l.wgate_up.bytes() + l.wdown.bytes() +
         FloatBytes(l.attn_norm) + FloatBytes(l.mlp_norm) + FloatBytes(l.qkv_bias) +
         FloatBytes(l.q_norm) + FloatBytes(l.k_norm);
  return b;
}

Status Model::AddEosIds(std::span<const int32_t> ids) {
  for (int32_t id : ids) {
    if (id < 0 || id >= shape_.vocab_size)
      return Status::InvalidArgument("stop id " + std::to_string(id) + " is outside model '" +
                                     shape_.name + "''s vocab of " +
                                     std::to_string(shape_.vocab_size));
    if (!shape_.IsEos(id)) shape_.eos_ids.push_back(id);
  }
  if (shape_.eos_id < 0 && !shape_.eos_ids.empty()) shape_.eos_id = shape_.eos_ids.front();
  return Status::OK();
}

int Model::threads() const { return pool_->threads(); }

void Model::SetThreads(int threads) { pool_ = std::make_unique<ThreadPool>(std::max(1, threads)); }

}  // namespace switchyard::cpu_engine
