#include "cpu_engine/model.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "cpu_engine/kernels.h"

namespace switchyard::cpu_engine {
namespace {

std::string RowName(size_t i) { return "row " + std::to_string(i); }

}  // namespace

uint64_t KvBlockBytes(const ModelShape& s, int64_t block_tokens) {
  return static_cast<uint64_t>(block_tokens) * s.kv_bytes_per_token();
}

uint64_t KvBlockFloats(const ModelShape& s, int64_t block_tokens) {
  return KvBlockBytes(s, block_tokens) / sizeof(float);
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
    Embed(r.token, &x[i * s.hidden]);
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

void Model::Embed(int32_t token, float* x) const {
  const int64_t h = shape_.hidden;
  if (!embed_.empty()) {
    std::memcpy(x, &embed_[token * h], h * sizeof(float));
  } else if (!embed_bf16_.empty()) {
    for (int64_t d = 0; d < h; ++d) x[d] = Bf16ToFloat(embed_bf16_[token * h + d]);
  } else {
    for (int64_t d = 0; d < h; ++d) x[d] = head_.At(token, d);
  }
}

void Model::PrepareQkv(const Layer& w, int64_t l, const Row& r, const float* rope,
                       float* qkv) const {
  const ModelShape& s = shape_;
  const int64_t q = s.q_dim(), kvd = s.kv_dim(), hd = s.head_dim, half = hd / 2;
  const float eps = static_cast<float>(s.rms_eps);
  if (!w.qkv_bias.empty())  // qwen2: y = x·wᵀ + b, the bias added once per element
    for (int64_t i = 0; i < q + 2 * kvd; ++i) qkv[i] += w.qkv_bias[i];
  if (!w.q_norm.empty()) {  // qwen3: RMSNorm over each head of q and of k
    for (int64_t h = 0; h < s.heads; ++h)
      RmsNorm(qkv + h * hd, w.q_norm.data(), hd, eps, qkv + h * hd);
    for (int64_t h = 0; h < s.kv_heads; ++h)
      RmsNorm(qkv + q + h * hd, w.k_norm.data(), hd, eps, qkv + q + h * hd);
  }
  for (int64_t h = 0; h < s.heads + s.kv_heads; ++h)  // Q heads then K heads
    ApplyRope(qkv + h * hd, hd, rope, rope + half);
  const KvLayerView view{r.kv.blocks, r.kv.block_tokens, kvd, l, s.kv_dtype};
  if (s.kv_dtype == DType::kBf16) {
    uint16_t* k = view.Ptr<uint16_t>(r.position, 0);
    uint16_t* v = view.Ptr<uint16_t>(r.position, 1);
    for (int64_t i = 0; i < kvd; ++i) k[i] = FloatToBf16(qkv[q + i]);
    for (int64_t i = 0; i < kvd; ++i) v[i] = FloatToBf16(qkv[q + kvd + i]);
  } else {
    std::memcpy(view.K(r.position), qkv + q, kvd * sizeof(float));
    std::memcpy(view.V(r.position), qkv + q + kvd, kvd * sizeof(float));
  }
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
  for (int64_t i = 0; i < n; ++i)
    PrepareQkv(w, l, rows[static_cast<size_t>(r0 + i)], &rope[(r0 + i) * 2 * half],
               &sc.qkv[i * qkvd]);
  pool->ParallelFor(n, [&](int64_t i) {  // one row per task, its own fixed order
    const Row& r = rows[static_cast<size_t>(r0 + i)];
    const KvLayerView view{r.kv.blocks, r.kv.block_tokens, kvd, l, s.kv_dtype};
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

}  // namespace switchyard::cpu_engine
