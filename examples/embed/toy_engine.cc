#include "toy_engine.h"

#include <algorithm>
#include <functional>

namespace toy {

using sy::Status;
namespace ex = sy::executors;
namespace cpu = sy::cpu_engine;

namespace {

int32_t SyntheticToken(const std::string& context, int64_t position, int64_t vocab) {
  uint64_t h = std::hash<std::string>{}(context) ^ (uint64_t(position) * 0x9E3779B97F4A7C15ULL);
  h ^= h >> 29;
  return static_cast<int32_t>(h % uint64_t(std::min<int64_t>(vocab, 256)));
}

}  // namespace

ToyRunner::ToyRunner(sy::EventLoop* loop, const cpu::Model* model, int64_t pool_blocks,
                     int64_t block_tokens)
    : loop_(loop), model_(model) {
  const uint64_t block_floats = cpu::KvBlockFloats(model->shape(), block_tokens);
  memory_.assign(static_cast<size_t>(block_floats * uint64_t(pool_blocks)), 0.0f);
  ex::RegisteredKvPool::Options o;
  o.name = "toy engine KV buffer";
  o.block_bytes = block_floats * sizeof(float);
  o.block_tokens = block_tokens;
  o.regions.push_back({memory_.data(), memory_.size() * sizeof(float), "cpu"});
  auto pool = ex::RegisteredKvPool::Create(o);
  if (pool.ok())
    pool_ = std::move(*pool);
  else
    error_ = pool.status();
}

std::vector<int32_t>& ToyRunner::Log(const std::string& context, int64_t at_least) {
  std::vector<int32_t>& l = tokens_[context];
  for (int64_t p = static_cast<int64_t>(l.size()); p < at_least; ++p)
    l.push_back(SyntheticToken(context, p, model_->shape().vocab_size));
  return l;
}

Status ToyRunner::OnAdmit(const ex::SequenceSpec& spec, const std::string& primary,
                          int64_t fresh_from) {
  int64_t rebuilt = 0;
  for (const ex::SeqContext& c : spec.contexts) {
    Log(c.key, c.tokens);
    if (!c.resident) rebuilt += c.tokens;
  }
  std::vector<int32_t>& l = Log(primary, fresh_from);
  l.resize(static_cast<size_t>(fresh_from));
  Log(primary, fresh_from + spec.prefill_tokens - rebuilt);  // the node's new tokens
  return Status::OK();
}

void ToyRunner::OnResize(const std::string& context, int64_t tokens) {
  (void)pool_->Resize(context, tokens);  // the engine's accounting stays within the pool
  if (tokens == 0) tokens_.erase(context);
}

void ToyRunner::OnEmitted(const std::string& primary, int64_t position, int32_t token) {
  std::vector<int32_t>& l = tokens_[primary];
  l.resize(static_cast<size_t>(position));
  l.push_back(token);
}

void ToyRunner::Run(const ex::StepShape&, std::vector<ex::StepItem>* items,
                    std::function<void()> done) {
  std::vector<std::vector<float*>> tables;  // block tables of the step's rows
  tables.reserve(items->size() * 2);
  std::vector<cpu::Row> rows;
  std::vector<size_t> emitting;  // items whose logits row comes next
  std::vector<std::pair<std::string, int64_t>> valid;
  for (size_t i = 0; i < items->size(); ++i) {
    ex::StepItem& it = (*items)[i];
    for (size_t k = 0; k < it.spans.size(); ++k) {
      const ex::StepSpan& s = it.spans[k];
      tables.emplace_back();
      for (void* b : pool_->Blocks(*s.context)) tables.back().push_back(static_cast<float*>(b));
      const std::vector<int32_t>& l = Log(*s.context, s.to);
      const bool logits = it.emits && k + 1 == it.spans.size() && s.context == it.primary;
      // From what the context has computed: a finished call's last token is fed in now.
      int64_t from = std::min(s.from, std::max<int64_t>(0, pool_->valid_tokens(*s.context)));
      for (int64_t p = from; p < s.to; ++p) {
        cpu::Row r;
        r.token = l[static_cast<size_t>(p)];
        r.position = p;
        r.kv = cpu::KvBlocks{tables.back().data(), static_cast<int64_t>(tables.back().size()),
                             pool_->block_tokens()};
        r.want_logits = logits && p == s.to - 1;
        rows.push_back(r);
      }
      if (logits && from < s.to) emitting.push_back(i);
      valid.emplace_back(*s.context, s.to);
    }
  }
  std::vector<float> out;
  Status st = rows.empty() ? Status::OK() : model_->Forward(rows, &out);
  const int64_t vocab = model_->shape().vocab_size;
  for (size_t k = 0; k < emitting.size() && st.ok(); ++k) {
    ex::StepItem& it = (*items)[emitting[k]];
    it.token = cpu::Argmax(std::span<const float>(out.data() + k * vocab, size_t(vocab)));
    it.eos = it.token == model_->shape().eos_id;
  }
  for (ex::StepItem& it : *items) {
    if (!st.ok()) it.status = st;
    if (st.ok() && it.emits && it.token < 0) it.eos = true;  // nothing to feed: end it
  }
  if (st.ok())
    for (const auto& [ctx, to] : valid)
      (void)pool_->SetValid(ctx, std::max(pool_->valid_tokens(ctx), to));
  loop_->Post([alive = alive_, done = std::move(done)]() {
    if (*alive) done();
  });
}

uint64_t ToyEngine::Checksum(const std::string& context, int64_t blocks, int64_t* covered) {
  std::vector<void*> b = pool()->Blocks(context);
  if (blocks >= 0 && blocks < static_cast<int64_t>(b.size())) b.resize(size_t(blocks));
  uint64_t h = 1469598103934665603ULL;
  for (void* p : b)
    for (uint64_t i = 0; i < pool()->kv_block_bytes(); ++i) {
      h ^= static_cast<unsigned char*>(p)[i];
      h *= 1099511628211ULL;
    }
  *covered = static_cast<int64_t>(b.size());
  return h;
}

}  // namespace toy
