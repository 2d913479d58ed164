#include "executors/cpu/cpu_engine.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "base/thread_name.h"

namespace switchyard::executors::cpu {

namespace {
uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
}  // namespace

v1::ModelConfig ToModelConfig(const ModelShape& s) {
  v1::ModelConfig m;
  m.set_name(s.name + (s.random_weights ? " (random weights)" : ""));
  m.set_num_layers(static_cast<uint32_t>(s.layers));
  m.set_num_kv_heads(static_cast<uint32_t>(s.kv_heads));
  m.set_head_dim(static_cast<uint32_t>(s.head_dim));
  m.set_kv_dtype(v1::FP32);
  m.set_hidden_size(static_cast<uint32_t>(s.hidden));
  m.set_num_attention_heads(static_cast<uint32_t>(s.heads));
  m.set_intermediate_size(static_cast<uint32_t>(s.intermediate));
  m.set_vocab_size(static_cast<uint32_t>(s.vocab_size));
  m.set_num_parameters(s.parameters());
  m.set_tensor_parallel(1);
  return m;
}

const std::vector<int32_t>* TokenLog::Find(const std::string& context) const {
  auto it = logs_.find(context);
  return it == logs_.end() ? nullptr : &it->second;
}

int32_t TokenLog::Synthetic(const std::string& context, int64_t position, int64_t vocab) {
  uint64_t h = Mix(std::hash<std::string>{}(context) ^ Mix(static_cast<uint64_t>(position)));
  // Byte-range ids (below 256) where the vocabulary has them: decodable as text.
  int64_t range = std::min<int64_t>(vocab, 256);
  return static_cast<int32_t>(h % static_cast<uint64_t>(std::max<int64_t>(1, range)));
}

// ---- The runner ------------------------------------------------------------------------

// Computes steps on its own thread; holds every context's blocks in the pool.
class CpuStepRunner final : public StepRunner {
 public:
  struct Ctx {
    std::vector<kv_tiers::Extent> extents;
    std::vector<float*> blocks;
    int64_t tokens = 0;  // token slots the engine's accounting gives it
    int64_t valid = 0;   // tokens with KV computed
  };

  CpuStepRunner(EventLoop* loop, const Model* model, TokenLog* log,
                std::unique_ptr<kv_tiers::ArenaTier> pool, int64_t block_tokens, std::string tenant,
                std::vector<std::vector<bool>> masks)
      : masks_(std::move(masks)),
        loop_(loop),
        model_(model),
        log_(log),
        pool_(std::move(pool)),
        block_tokens_(block_tokens),
        block_bytes_(KvBlockFloats(model->shape(), block_tokens) * sizeof(float)),
        tenant_(std::move(tenant)),
        alive_(std::make_shared<std::atomic<bool>>(true)) {
    thread_ = std::thread([this]() { Work(); });
  }
  ~CpuStepRunner() override { Stop(); }

  std::string_view engine_name() const override { return "cpu engine"; }
  bool computes() const override { return true; }
  Status OnAdmit(const SequenceSpec& spec, const std::string& primary, int64_t fresh_from) override;
  void OnResize(const std::string& context, int64_t tokens) override;
  void OnEmitted(const std::string& primary, int64_t position, int32_t token) override;
  void OnLeave(const std::string& seq) override { params_.erase(seq); }
  void Run(const StepShape& shape, std::vector<StepItem>* items,
           std::function<void()> done) override;
  void Stop() override;

  const Model& model() const { return *model_; }
  kv_tiers::ArenaTier& pool() { return *pool_; }
  uint64_t block_bytes() const { return block_bytes_; }
  const Ctx* Find(const std::string& context) const {
    auto it = ctxs_.find(context);
    return it == ctxs_.end() ? nullptr : &it->second;
  }
  Ctx* Find(const std::string& context) {
    auto it = ctxs_.find(context);
    return it == ctxs_.end() ? nullptr : &it->second;
  }
  bool busy(const std::string& context) const { return busy_.count(context) > 0; }
  // Gives the context every block its tokens need; ResourceExhausted when the pool has none.
  Status EnsureBlocks(const std::string& key, Ctx& c);

 private:
  struct Params {
    double temperature = 0, top_p = 1;
    uint64_t seed = 0;
    bool stop_at_eos = true;
    int mask = -1;
  };
  struct Emit {
    size_t item = 0;
    Params params;
    int64_t position = 0;
  };
  struct Job {
    std::vector<std::vector<float*>> tables;  // block tables, snapshotted
    std::vector<Row> rows;
    std::vector<Emit> emits;                             // in the order of their logits rows
    std::vector<std::pair<std::string, int64_t>> spans;  // (context, to): valid after
    std::vector<int32_t> tokens;                         // out: per emit
    Status status;
  };

  void Free(const std::string& key, const kv_tiers::Extent& e);
  Status AddSpan(const StepSpan& span, bool logits, Job* job);
  void Compute(Job* job) const;
  void Finish(std::vector<StepItem>* items, Job& job);
  void Work();

  const std::vector<std::vector<bool>> masks_;
  EventLoop* loop_;
  const Model* model_;
  TokenLog* log_;
  std::unique_ptr<kv_tiers::ArenaTier> pool_;
  int64_t block_tokens_;
  uint64_t block_bytes_;
  std::string tenant_;
  std::unordered_map<std::string, Ctx> ctxs_;
  std::unordered_map<std::string, Params> params_;
  std::unordered_set<std::string> busy_;    // contexts the running step writes
  std::vector<kv_tiers::Extent> deferred_;  // their freed blocks, returned at its end

  std::shared_ptr<std::atomic<bool>> alive_;  // false once stopped: late completions drop
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

Status CpuStepRunner::OnAdmit(const SequenceSpec& spec, const std::string& primary,
                              int64_t fresh_from) {
  const int64_t vocab = model_->shape().vocab_size;
  int64_t rebuild = 0;
  for (const SeqContext& c : spec.contexts) {
    std::vector<int32_t>& l = log_->Of(c.key);
    for (int64_t p = static_cast<int64_t>(l.size()); p < c.tokens; ++p)
      l.push_back(TokenLog::Synthetic(c.key, p, vocab));  // a context this engine never saw
    if (!c.resident) rebuild += c.tokens;
  }
  const int64_t fresh = spec.prefill_tokens - rebuild;
  const auto& ids = spec.prompt_token_ids;
  if (!ids.empty() && static_cast<int64_t>(ids.size()) != fresh)
    return Status::InvalidArgument("cpu engine: sequence '" + spec.key + "' has " +
                                   std::to_string(ids.size()) + " prompt token ids for " +
                                   std::to_string(fresh) + " new tokens");
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      return Status::InvalidArgument(
          "cpu engine: sequence '" + spec.key + "': prompt token " + std::to_string(i) + " is " +
          std::to_string(ids[i]) + ", outside the model's vocabulary of " + std::to_string(vocab));
  std::vector<int32_t>& l = log_->Of(primary);
  for (int64_t p = static_cast<int64_t>(l.size()); p < fresh_from; ++p)
    l.push_back(TokenLog::Synthetic(primary, p, vocab));
  l.resize(static_cast<size_t>(fresh_from));
  for (int64_t i = 0; i < fresh; ++i)
    l.push_back(ids.empty() ? TokenLog::Synthetic(primary, fresh_from + i, vocab) : ids[i]);
  params_[spec.key] =
      Params{spec.temperature, spec.top_p, spec.sampling_seed, spec.stop_at_eos, spec.token_mask};
  return Status::OK();
}

void CpuStepRunner::Free(const std::string& key, const kv_tiers::Extent& e) {
  if (busy(key))
    deferred_.push_back(e);
  else
    (void)pool_->Free(e);
}

Status CpuStepRunner::EnsureBlocks(const std::string& key, Ctx& c) {
  const size_t need = static_cast<size_t>(BlocksFor(c.tokens, block_tokens_));
  while (c.blocks.size() < need) {
    Result<kv_tiers::Extent> e = pool_->Allocate(tenant_, block_bytes_);
    if (!e.ok())
      return Status::ResourceExhausted("cpu engine: no free block in the KV pool for '" + key +
                                       "': " + e.status().message());
    c.extents.push_back(*e);
    c.blocks.push_back(static_cast<float*>(pool_->Data(*e)));
  }
  return Status::OK();
}

void CpuStepRunner::OnResize(const std::string& context, int64_t tokens) {
  Ctx& c = ctxs_[context];
  c.tokens = tokens;
  c.valid = std::min(c.valid, tokens);
  const size_t need = static_cast<size_t>(BlocksFor(tokens, block_tokens_));
  while (c.extents.size() > need) {
    Free(context, c.extents.back());
    c.extents.pop_back();
    c.blocks.pop_back();
  }
  if (tokens == 0) {
    ctxs_.erase(context);
    return;
  }
  (void)EnsureBlocks(context, c);  // a shortfall (frees deferred by a step) is retried in Run
}

void CpuStepRunner::OnEmitted(const std::string& primary, int64_t position, int32_t token) {
  std::vector<int32_t>& l = log_->Of(primary);
  l.resize(static_cast<size_t>(position));
  l.push_back(token);
}

// ---- Steps -----------------------------------------------------------------------------

Status CpuStepRunner::AddSpan(const StepSpan& span, bool logits, Job* job) {
  const std::string& key = *span.context;
  Ctx* c = Find(key);
  if (!c) return Status::Internal("cpu engine: context '" + key + "' has no KV in the pool");
  SY_RETURN_IF_ERROR(EnsureBlocks(key, *c));
  const std::vector<int32_t>* l = log_->Find(key);
  if (!l || static_cast<int64_t>(l->size()) < span.to)
    return Status::Internal("cpu engine: context '" + key + "' has no token id at position " +
                            std::to_string(span.to - 1));
  const int64_t from = std::min(span.from, c->valid);  // and what an earlier call left
  job->tables.push_back(c->blocks);
  const std::vector<float*>& t = job->tables.back();
  for (int64_t p = from; p < span.to; ++p) {
    Row r;
    r.token = (*l)[p];
    r.position = p;
    r.kv = KvBlocks{t.data(), static_cast<int64_t>(t.size()), block_tokens_};
    r.want_logits = logits && p == span.to - 1;
    job->rows.push_back(r);
  }
  job->spans.emplace_back(key, span.to);
  busy_.insert(key);
  return Status::OK();
}

void CpuStepRunner::Run(const StepShape&, std::vector<StepItem>* items,
                        std::function<void()> done) {
  auto job = std::make_shared<Job>();
  size_t rows = 0;
  for (const StepItem& it : *items)
    for (const StepSpan& s : it.spans) rows += static_cast<size_t>(s.to - s.from);
  job->tables.reserve(items->size() * 2);
  job->rows.reserve(rows + items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    StepItem& it = (*items)[i];
    bool has_logits = false;
    for (size_t k = 0; k < it.spans.size() && it.status.ok(); ++k) {
      bool last = it.emits && k + 1 == it.spans.size() && it.spans[k].context == it.primary;
      it.status = AddSpan(it.spans[k], last, job.get());
      has_logits |= last && it.status.ok();
    }
    if (!it.status.ok() || !it.emits) continue;
    if (!has_logits) {  // nothing to feed (an empty context): end the sequence
      it.token = model_->shape().eos_id;
      it.eos = true;
      continue;
    }
    auto p = params_.find(*it.seq);
    job->emits.push_back(Emit{i, p == params_.end() ? Params{} : p->second, it.emit_position});
  }
  auto alive = alive_;
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back([this, job, items, alive, done = std::move(done)]() {
    Compute(job.get());
    loop_->Post([this, job, items, alive, done]() {
      if (!alive->load()) return;
      Finish(items, *job);
      done();
    });
  });
  cv_.notify_one();
}

void CpuStepRunner::Compute(Job* job) const {
  std::vector<float> logits;
  if (!job->rows.empty()) job->status = model_->Forward(job->rows, &logits);
  if (!job->status.ok()) return;
  const size_t vocab = static_cast<size_t>(model_->shape().vocab_size);
  job->tokens.resize(job->emits.size());
  for (size_t k = 0; k < job->emits.size(); ++k) {
    float* row = logits.data() + k * vocab;
    const int mask = std::max(0, job->emits[k].params.mask);
    if (mask < static_cast<int>(masks_.size())) {
      const std::vector<bool>& allowed = masks_[mask];
      for (size_t t = 0; t < vocab; ++t)
        if (t >= allowed.size() || !allowed[t]) row[t] = -std::numeric_limits<float>::infinity();
    }
    std::span<const float> l(row, vocab);
    const Params& p = job->emits[k].params;
    uint64_t seed = Mix(p.seed ^ Mix(static_cast<uint64_t>(job->emits[k].position)));
    job->tokens[k] = p.temperature > 0 ? Sample(l, p.temperature, p.top_p, seed) : Argmax(l);
  }
}

void CpuStepRunner::Finish(std::vector<StepItem>* items, Job& job) {
  const int32_t eos = model_->shape().eos_id;
  for (size_t k = 0; k < job.emits.size(); ++k) {
    StepItem& it = (*items)[job.emits[k].item];
    if (!job.status.ok()) continue;
    it.token = job.tokens[k];
    it.eos = job.emits[k].params.stop_at_eos && eos >= 0 && it.token == eos;
  }
  if (!job.status.ok())
    for (StepItem& it : *items)
      if (it.status.ok()) it.status = job.status;
  if (job.status.ok())
    for (const auto& [key, to] : job.spans)
      if (Ctx* c = Find(key)) c->valid = std::max(c->valid, std::min(to, c->tokens));
  busy_.clear();
  for (const kv_tiers::Extent& e : deferred_) (void)pool_->Free(e);
  deferred_.clear();
}

void CpuStepRunner::Work() {
  SetThreadName("sy-cpu-engine");
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this]() { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

void CpuStepRunner::Stop() {
  alive_->store(false);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// ---- The engine ------------------------------------------------------------------------

Result<std::unique_ptr<CpuEngine>> CpuEngine::Create(EventLoop* loop, int worker,
                                                     EngineLimits limits, Options o) {
  if (!o.model || !o.tokens)
    return Status::InvalidArgument("cpu engine: a model and a token log are required");
  limits.block_tokens = std::max<int64_t>(1, limits.block_tokens);
  limits.pool_blocks = std::max<int64_t>(1, limits.pool_blocks);
  const uint64_t bpb = KvBlockFloats(o.model->shape(), limits.block_tokens) * sizeof(float);
  kv_tiers::TierOptions to;
  to.slot_bytes = bpb;
  to.capacity_bytes = bpb * static_cast<uint64_t>(limits.pool_blocks);
  kv_tiers::ArenaBackend b = kv_tiers::HostBackend();
  b.name = "cpu engine KV pool (worker " + std::to_string(worker) + ")";
  b.kind = v1::TIER_HBM;
  SY_ASSIGN_OR_RETURN(std::unique_ptr<kv_tiers::ArenaTier> pool,
                      kv_tiers::ArenaTier::Create(to, std::move(b)));
  auto runner = std::make_unique<CpuStepRunner>(loop, o.model, o.tokens, std::move(pool),
                                                limits.block_tokens, o.tenant, o.token_masks);
  return std::unique_ptr<CpuEngine>(
      new CpuEngine(loop, worker, limits, std::move(runner), std::move(o)));
}

CpuEngine::CpuEngine(EventLoop* loop, int worker, EngineLimits limits,
                     std::unique_ptr<CpuStepRunner> r, Options o)
    : BatchingEngine(loop, worker, limits, std::move(r), std::move(o.batching)),
      cpu_(static_cast<CpuStepRunner*>(runner())) {}

const Model& CpuEngine::model() const { return cpu_->model(); }
kv_tiers::Tier& CpuEngine::pool() { return cpu_->pool(); }
uint64_t CpuEngine::pool_capacity_bytes() const { return cpu_->pool().capacity_bytes(); }
uint64_t CpuEngine::pool_used_bytes() const { return cpu_->pool().used_bytes(); }
std::string CpuEngine::kv_pool_name() const { return cpu_->pool().name(); }
uint64_t CpuEngine::kv_block_bytes() const { return cpu_->block_bytes(); }

int64_t CpuEngine::valid_tokens(const std::string& context) const {
  const CpuStepRunner::Ctx* c = cpu_->Find(context);
  return c ? c->valid : -1;
}

Result<ContextKvView> CpuEngine::ExportKv(const std::string& context) const {
  const CpuStepRunner::Ctx* c = cpu_->Find(context);
  if (!c) return Status::NotFound(kv_pool_name() + " does not hold " + context);
  if (cpu_->busy(context))
    return Status::FailedPrecondition(kv_pool_name() + ": a step computes into " + context);
  if (static_cast<int64_t>(c->blocks.size()) < BlocksFor(c->tokens, limits().block_tokens))
    return Status::Internal(kv_pool_name() + ": " + context + " lacks blocks");
  ContextKvView v;
  v.tokens = c->tokens;
  v.valid_tokens = c->valid;
  v.blocks.assign(c->blocks.begin(), c->blocks.end());
  return v;
}

Result<std::vector<void*>> CpuEngine::ImportTargets(const std::string& context) {
  CpuStepRunner::Ctx* c = cpu_->Find(context);
  if (!c) return Status::NotFound(kv_pool_name() + " reserved no blocks for " + context);
  SY_RETURN_IF_ERROR(cpu_->EnsureBlocks(context, *c));
  c->valid = 0;  // nothing readable until the move commits
  return std::vector<void*>(c->blocks.begin(), c->blocks.end());
}

Status CpuEngine::CommitImport(const std::string& context, int64_t valid_tokens) {
  CpuStepRunner::Ctx* c = cpu_->Find(context);
  if (!c) return Status::NotFound(kv_pool_name() + " reserved no blocks for " + context);
  c->valid = std::clamp<int64_t>(valid_tokens, 0, c->tokens);
  return Status::OK();
}

}  // namespace switchyard::executors::cpu
