#include "executors/cpu/model.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "executors/cpu/kernels.h"
#include "executors/cpu/safetensors.h"

namespace switchyard::executors::cpu {
namespace {

std::vector<float> Concat(std::initializer_list<const std::vector<float>*> parts) {
  std::vector<float> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

std::string RowName(size_t i) { return "row " + std::to_string(i); }

}  // namespace

uint64_t KvBlockFloats(const ModelShape& s, int64_t block_tokens) {
  return static_cast<uint64_t>(block_tokens) * s.kv_bytes_per_token() / sizeof(float);
}

// Rows per pass of a layer: any split gives the same bits (Linear is row-count invariant);
// it bounds the scratch. A call of n rows runs ceil(n / kMaxChunkRows) near-equal chunks.
constexpr int64_t kMaxChunkRows = 256;

int64_t ChunkRows(int64_t n) {
  if (n <= 0) return kBlockRows;
  const int64_t chunks = (n + kMaxChunkRows - 1) / kMaxChunkRows;
  const int64_t per = (n + chunks - 1) / chunks;
  return (per + kBlockRows - 1) / kBlockRows * kBlockRows;
}

// Per-call buffers of one chunk of rows.
struct Model::Scratch {
  Scratch(const ModelShape& s, int64_t rows)
      : xn(rows * s.hidden),
        qkv(rows * (s.q_dim() + 2 * s.kv_dim())),
        attn(rows * s.q_dim()),
        out(rows * s.hidden),
        gate_up(rows * 2 * s.intermediate),
        act(rows * s.intermediate) {}
  std::vector<float> xn, qkv, attn, out, gate_up, act;
};

Result<std::unique_ptr<Model>> Model::Load(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return LoadCheckpoint(path);
  SY_ASSIGN_OR_RETURN(ModelShape shape, LoadShapeFile(path));
  if (!shape.random_weights)
    return Status::InvalidArgument(path +
                                   ": field 'randomWeights' is false, but a shape file holds "
                                   "no weights (give a checkpoint directory)");
  return Random(shape);
}

Result<std::unique_ptr<Model>> Model::Random(const ModelShape& shape) {
  SY_RETURN_IF_ERROR(ValidateShape(shape, "model shape '" + shape.name + "'"));
  ModelShape s = shape;
  s.random_weights = true;
  return FromWeights(s, RandomWeights(s));
}

Result<std::unique_ptr<Model>> Model::LoadCheckpoint(const std::string& dir) {
  SY_ASSIGN_OR_RETURN(ModelShape shape, LoadHfConfig(dir + "/config.json"));
  shape.name = std::filesystem::path(dir).lexically_normal().filename().string();
  if (shape.name.empty()) shape.name = dir;
  auto st = SafetensorsSet::OpenDir(dir);
  if (!st.ok()) return st.status();
  auto w = ReadWeights(shape, **st);
  if (!w.ok()) return w.status().Annotate(dir);
  if (w->lm_head.empty()) shape.tie_embeddings = true;
  return FromWeights(shape, std::move(*w));
}

Result<std::unique_ptr<Model>> Model::FromWeights(const ModelShape& shape, Weights w) {
  SY_RETURN_IF_ERROR(ValidateShape(shape, "model shape '" + shape.name + "'"));
  SY_RETURN_IF_ERROR(CheckWeights(shape, w, "weights of '" + shape.name + "'"));
  std::unique_ptr<Model> m(new Model());
  const ModelShape& s = shape;
  m->shape_ = shape;
  m->shape_.tie_embeddings = w.lm_head.empty();
  m->final_norm_ = std::move(w.final_norm);
  if (w.lm_head.empty()) {  // tied: one packed copy serves the head and the lookups
    m->head_ = PackedMatrix(w.embed.data(), s.vocab_size, s.hidden);
  } else {
    m->head_ = PackedMatrix(w.lm_head.data(), s.vocab_size, s.hidden);
    m->embed_ = std::move(w.embed);
  }
  w.embed = w.lm_head = {};
  const int64_t qkvd = s.q_dim() + 2 * s.kv_dim();
  for (LayerWeights& l : w.layers) {
    Layer f;
    f.attn_norm = std::move(l.attn_norm);
    f.wqkv = PackedMatrix(Concat({&l.q, &l.k, &l.v}).data(), qkvd, s.hidden);
    f.wo = PackedMatrix(l.o.data(), s.hidden, s.q_dim());
    f.mlp_norm = std::move(l.mlp_norm);
    f.wgate_up = PackedMatrix(Concat({&l.gate, &l.up}).data(), 2 * s.intermediate, s.hidden);
    f.wdown = PackedMatrix(l.down.data(), s.hidden, s.intermediate);
    l = LayerWeights();  // free as we go
    m->layers_.push_back(std::move(f));
  }
  const unsigned hw = std::thread::hardware_concurrency();
  m->SetThreads(static_cast<int>(std::clamp(hw, 1u, 8u)));
  return m;
}

uint64_t Model::weight_bytes() const { return shape_.parameters() * sizeof(float); }

int Model::threads() const { return pool_->threads(); }

void Model::SetThreads(int threads) { pool_ = std::make_unique<ThreadPool>(std::max(1, threads)); }

Status Model::Validate(std::span<const Row> rows) const {
  std::map<const float* const*, int64_t> last;  // context -> its previous row's position
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    if (r.token < 0 || r.token >= shape_.vocab_size)
      return Status::InvalidArgument(RowName(i) + ": token " + std::to_string(r.token) +
                                     " outside the vocab [0, " + std::to_string(shape_.vocab_size) +
                                     ")");
    if (r.position < 0 || r.position >= shape_.max_positions)
      return Status::InvalidArgument(RowName(i) + ": position " + std::to_string(r.position) +
                                     " outside [0, " + std::to_string(shape_.max_positions) + ")");
    const KvBlocks& kv = r.kv;
    if (!kv.blocks || kv.block_tokens <= 0 || r.position >= kv.num_blocks * kv.block_tokens)
      return Status::InvalidArgument(RowName(i) + ": position " + std::to_string(r.position) +
                                     " is not covered by its " + std::to_string(kv.num_blocks) +
                                     " KV blocks of " + std::to_string(kv.block_tokens) +
                                     " tokens");
    for (int64_t b = 0; b <= r.position / kv.block_tokens; ++b)
      if (!kv.blocks[b])
        return Status::InvalidArgument(RowName(i) + ": KV block " + std::to_string(b) + " is null");
    auto [it, fresh] = last.try_emplace(kv.blocks, r.position);
    if (!fresh) {
      if (r.position != it->second + 1)
        return Status::InvalidArgument(RowName(i) + ": position " + std::to_string(r.position) +
                                       " does not follow its context's previous row (" +
                                       std::to_string(it->second) + ")");
      it->second = r.position;
    }
  }
  return Status::OK();
}

Status Model::Forward(std::span<const Row> rows, std::vector<float>* logits) const {
  logits->clear();
  SY_RETURN_IF_ERROR(Validate(rows));
  if (rows.empty()) return Status::OK();
  const ModelShape& s = shape_;
  const int64_t n = static_cast<int64_t>(rows.size()), half = s.head_dim / 2;
  // Residual stream and each row's rotary cos/sin (shared by every layer and head).
  std::vector<float> x(static_cast<size_t>(n * s.hidden));
  std::vector<float> rope(static_cast<size_t>(n * 2 * half));
  const RopeParams rp{s.rope_theta,
                      s.head_dim,
                      s.rope_scaling_factor,
                      s.rope_low_freq_factor,
                      s.rope_high_freq_factor,
                      s.rope_original_max_positions};
  for (int64_t i = 0; i < n; ++i) {
    const Row& r = rows[static_cast<size_t>(i)];
    float* xr = &x[i * s.hidden];
    if (embed_.empty()) {
      for (int64_t d = 0; d < s.hidden; ++d) xr[d] = head_.At(r.token, d);
    } else {
      std::memcpy(xr, &embed_[r.token * s.hidden], s.hidden * sizeof(float));
    }
    RopeAngles(rp, r.position, &rope[i * 2 * half], &rope[i * 2 * half + half]);
  }
  const int64_t chunk = ChunkRows(n);
  Scratch scratch(s, chunk);
  for (int64_t l = 0; l < s.layers; ++l)
    for (int64_t r0 = 0; r0 < n; r0 += chunk)
      RunLayer(l, rows, r0, std::min(chunk, n - r0), rope, x, scratch);
  LmHead(rows, x, scratch, logits);
  return Status::OK();
}

// Rows [r0, r0 + n) through layer l. Earlier chunks of this layer have written their KV,
// so a row sees every earlier position of its context.
void Model::RunLayer(int64_t l, std::span<const Row> rows, int64_t r0, int64_t n,
                     const std::vector<float>& rope, std::vector<float>& xall, Scratch& sc) const {
  const ModelShape& s = shape_;
  const Layer& w = layers_[static_cast<size_t>(l)];
  const int64_t h = s.hidden, q = s.q_dim(), kvd = s.kv_dim(), qkvd = q + 2 * kvd,
                in = s.intermediate, half = s.head_dim / 2;
  const float eps = static_cast<float>(s.rms_eps);
  ThreadPool* pool = pool_.get();
  float* x = &xall[r0 * h];
  // Attention block: norm, fused QKV, rotary, KV write, attention, output projection.
  for (int64_t i = 0; i < n; ++i) RmsNorm(&x[i * h], w.attn_norm.data(), h, eps, &sc.xn[i * h]);
  Linear(sc.xn.data(), n, w.wqkv, sc.qkv.data(), qkvd, pool);
  for (int64_t i = 0; i < n; ++i) {
    const Row& r = rows[static_cast<size_t>(r0 + i)];
    float* qr = &sc.qkv[i * qkvd];
    const float* cs = &rope[(r0 + i) * 2 * half];
    for (int64_t hd = 0; hd < s.heads + s.kv_heads; ++hd)  // Q heads then K heads
      ApplyRope(qr + hd * s.head_dim, s.head_dim, cs, cs + half);
    const KvLayerView view{r.kv.blocks, r.kv.block_tokens, kvd, l};
    std::memcpy(view.K(r.position), qr + q, kvd * sizeof(float));
    std::memcpy(view.V(r.position), qr + q + kvd, kvd * sizeof(float));
  }
  pool->ParallelFor(n, [&](int64_t i) {  // one row per task, its own fixed order
    const Row& r = rows[static_cast<size_t>(r0 + i)];
    const KvLayerView view{r.kv.blocks, r.kv.block_tokens, kvd, l};
    thread_local std::vector<float> scores;
    const auto need = static_cast<size_t>(std::min<int64_t>(s.heads / s.kv_heads, 4) *
                                          AttendScoresFloats(r.position));
    if (scores.size() < need) scores.resize(need);
    Attend(&sc.qkv[i * qkvd], view, r.position, s.heads, s.kv_heads, s.head_dim, scores.data(),
           &sc.attn[i * q]);
  });
  Linear(sc.attn.data(), n, w.wo, sc.out.data(), h, pool);
  for (int64_t i = 0; i < n * h; ++i) x[i] += sc.out[i];
  // MLP block: norm, fused gate/up, SwiGLU, down projection.
  for (int64_t i = 0; i < n; ++i) RmsNorm(&x[i * h], w.mlp_norm.data(), h, eps, &sc.xn[i * h]);
  Linear(sc.xn.data(), n, w.wgate_up, sc.gate_up.data(), 2 * in, pool);
  pool->ParallelFor(n, [&](int64_t i) {
    SiluMul(&sc.gate_up[i * 2 * in], &sc.gate_up[i * 2 * in + in], in, &sc.act[i * in]);
  });
  Linear(sc.act.data(), n, w.wdown, sc.out.data(), h, pool);
  for (int64_t i = 0; i < n * h; ++i) x[i] += sc.out[i];
}

void Model::LmHead(std::span<const Row> rows, const std::vector<float>& x, Scratch& sc,
                   std::vector<float>* logits) const {
  const ModelShape& s = shape_;
  const int64_t h = s.hidden, v = s.vocab_size;
  std::vector<int64_t> want;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].want_logits) want.push_back(static_cast<int64_t>(i));
  logits->resize(want.size() * static_cast<size_t>(v));
  const int64_t n = static_cast<int64_t>(want.size());
  const int64_t chunk = std::min(ChunkRows(n), static_cast<int64_t>(sc.xn.size()) / h);
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t used = std::min(chunk, n - t0);
    for (int64_t i = 0; i < used; ++i)
      RmsNorm(&x[want[t0 + i] * h], final_norm_.data(), h, static_cast<float>(s.rms_eps),
              &sc.xn[i * h]);
    Linear(sc.xn.data(), used, head_, logits->data() + t0 * v, v, pool_.get());
  }
}

}  // namespace switchyard::executors::cpu
