// CpuStepRunner's KV (cpu_step_runner.h): the blocks each context holds, the pool as
// EngineKv, and automatic prefix caching (the live index, kept blocks, MatchPrefix).
#include <algorithm>
#include <cstring>

#include "cpu_engine/cpu_engine.h"
#include "cpu_engine/cpu_step_runner.h"

namespace switchyard::cpu_engine {

void CpuStepRunner::FreeLast(const std::string& key, Ctx& c) {
  const size_t i = c.extents.size() - 1;
  Freed f{c.extents[i], 0, c.priority};
  if (i < c.hashes.size()) {  // a whole computed block: kept for prefix caching
    f.hash = c.hashes[i];
    f.offload =
        c.offload_limit < 0 || static_cast<int64_t>(i + 1) * block_tokens_ <= c.offload_limit;
    Unindex(c, i);
  }
  c.extents.pop_back();
  c.blocks.pop_back();
  if (busy(key))
    deferred_.push_back(f);
  else
    Return(f);
}

void CpuStepRunner::Return(const Freed& f) {
  if (f.hash != 0 && f.offload && offload_) offload_->Store(f.hash, pool_->Data(f.extent));
  if (f.hash != 0)
    (void)pool_->Keep(f.extent, f.hash, f.priority);
  else
    (void)pool_->Free(f.extent);
}

Status CpuStepRunner::EnsureBlocks(const std::string& key, Ctx& c) {
  const size_t need = static_cast<size_t>(executors::BlocksFor(c.tokens, block_tokens_));
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

CpuStepRunner::Ctx& CpuStepRunner::CtxFor(const std::string& context) {
  auto [it, created] = ctxs_.try_emplace(context);
  Ctx& c = it->second;
  if (auto p = pending_tags_.find(context); created && p != pending_tags_.end()) {
    c.priority = p->second.priority;
    c.offload_limit = p->second.offload_limit;
  }
  return c;
}

void CpuStepRunner::OnResize(const std::string& context, int64_t tokens) {
  Ctx& c = CtxFor(context);
  c.tokens = tokens;
  const size_t need = static_cast<size_t>(executors::BlocksFor(tokens, block_tokens_));
  while (c.extents.size() > need) FreeLast(context, c);
  Invalidate(c, tokens);
  if (tokens == 0) {
    ctxs_.erase(context);
    return;
  }
  (void)EnsureBlocks(context, c);  // a shortfall (frees deferred by a step) is retried in Run
}

Result<std::unique_ptr<CpuStepRunner>> CpuStepRunner::Create(
    EventLoop* loop, const Model* model, TokenLog* log, int64_t block_tokens, int64_t pool_blocks,
    const std::string& pool_name, std::string tenant, std::vector<std::vector<bool>> masks,
    std::vector<std::string> token_bytes, bool prefix_caching, uint64_t offload_bytes) {
  if (!model || !log)
    return Status::InvalidArgument("cpu engine: a model and a token log are required");
  block_tokens = std::max<int64_t>(1, block_tokens);
  const uint64_t bpb = KvBlockBytes(model->shape(), block_tokens);
  kv_tiers::TierOptions to;
  to.slot_bytes = bpb;
  to.capacity_bytes = bpb * static_cast<uint64_t>(std::max<int64_t>(1, pool_blocks));
  kv_tiers::ArenaBackend b = kv_tiers::HostBackend();
  b.name = pool_name;
  b.kind = v1::TIER_HBM;
  SY_ASSIGN_OR_RETURN(std::unique_ptr<KvPool> pool, KvPool::Create(to, std::move(b)));
  return std::make_unique<CpuStepRunner>(loop, model, log, std::move(pool), block_tokens,
                                         std::move(tenant), std::move(masks),
                                         std::move(token_bytes), prefix_caching, offload_bytes);
}

// ---- The pool as EngineKv -------------------------------------------------------------

Result<executors::ContextKvView> CpuStepRunner::ExportKv(const std::string& context) const {
  const Ctx* c = Find(context);
  if (!c) return Status::NotFound(kv_pool_name() + " does not hold " + context);
  if (busy(context))
    return Status::FailedPrecondition(kv_pool_name() + ": a step computes into " + context);
  if (static_cast<int64_t>(c->blocks.size()) < executors::BlocksFor(c->tokens, block_tokens_))
    return Status::Internal(kv_pool_name() + ": " + context + " lacks blocks");
  executors::ContextKvView v;
  v.tokens = c->tokens;
  v.valid_tokens = c->valid;
  v.blocks.assign(c->blocks.begin(), c->blocks.end());
  return v;
}

Result<std::vector<void*>> CpuStepRunner::ImportTargets(const std::string& context) {
  Ctx* c = Find(context);
  if (!c) return Status::NotFound(kv_pool_name() + " reserved no blocks for " + context);
  SY_RETURN_IF_ERROR(EnsureBlocks(context, *c));
  Invalidate(*c, 0);  // nothing readable until the move commits
  return std::vector<void*>(c->blocks.begin(), c->blocks.end());
}

Status CpuStepRunner::CommitImport(const std::string& context, int64_t valid_tokens) {
  Ctx* c = Find(context);
  if (!c) return Status::NotFound(kv_pool_name() + " reserved no blocks for " + context);
  c->valid = std::clamp<int64_t>(valid_tokens, 0, c->tokens);
  Index(context, *c);
  return Status::OK();
}

// ---- Automatic prefix caching -----------------------------------------------------------

void CpuStepRunner::Index(const std::string& key, Ctx& c) {
  if (!prefix_ || !c.indexable) return;
  const std::vector<int32_t>* ids = log_->Find(key);
  if (!ids) return;
  const int64_t computed = std::min<int64_t>(c.valid, static_cast<int64_t>(ids->size()));
  const size_t whole = std::min(static_cast<size_t>(computed / block_tokens_), c.blocks.size());
  const size_t bt = static_cast<size_t>(block_tokens_);
  while (c.hashes.size() < whole) {
    const size_t i = c.hashes.size();
    const uint64_t parent = i == 0 ? prefix_->seed() : c.hashes.back();
    c.hashes.push_back(prefix_->Hash(parent, std::span<const int32_t>(ids->data() + i * bt, bt)));
    prefix_->AddLive(c.hashes.back(), PrefixCache::Live{&c, i, c.blocks[i]});
  }
}

void CpuStepRunner::Unindex(Ctx& c, size_t keep) {
  while (c.hashes.size() > keep) {
    if (prefix_) prefix_->RemoveLive(c.hashes.back(), &c, c.hashes.size() - 1);
    c.hashes.pop_back();
  }
}

void CpuStepRunner::Invalidate(Ctx& c, int64_t upto) {
  if (upto < c.valid) ++c.cuts;
  c.valid = std::clamp<int64_t>(upto, 0, c.valid);
  Unindex(c, static_cast<size_t>(c.valid / block_tokens_));
  if (c.valid == 0) c.indexable = true;  // whatever it holds next is of the current epoch
}

void CpuStepRunner::CopyPositions(float* dst, const float* src, int64_t from_in_block) const {
  if (from_in_block <= 0) {
    std::memcpy(dst, src, block_bytes_);
    return;
  }
  // Per (layer, K/V) the block's positions are consecutive rows (model.h's layout).
  const ModelShape& s = model_->shape();
  const size_t row = static_cast<size_t>(s.kv_dim()) * static_cast<size_t>(DTypeBytes(s.kv_dtype));
  const size_t bt = static_cast<size_t>(block_tokens_), t0 = static_cast<size_t>(from_in_block);
  for (size_t lk = 0; lk < static_cast<size_t>(s.layers) * 2; ++lk) {
    const size_t off = (lk * bt + t0) * row;
    std::memcpy(reinterpret_cast<char*>(dst) + off, reinterpret_cast<const char*>(src) + off,
                (bt - t0) * row);
  }
}

bool CpuStepRunner::HostHas(uint64_t hash) const {
  return offload_ && load_host_ && (load_budget_ < 0 || load_budget_ >= block_tokens_) &&
         offload_->Contains(hash);
}

const float* CpuStepRunner::LoadHost(uint64_t hash) {
  if (load_budget_ >= 0) load_budget_ -= block_tokens_;
  return static_cast<const float*>(offload_->Load(hash));
}

bool CpuStepRunner::Place(Ctx& c, size_t index, uint64_t hash, int64_t from) {
  const PrefixCache::Live live = prefix_->FindLive(hash);  // never c's own: not indexed yet
  const float* src = live.data ? live.data : static_cast<const float*>(pool_->FindKept(hash));
  const bool kept = !live.data && src;
  // Else the host tier's copy, taken (and its budget charged) only once it has a slot:
  // copied in below, as a live block's bytes are.
  const bool host = !src && HostHas(hash);
  if (!src && !host) return false;
  const int64_t in_block = from - static_cast<int64_t>(index) * block_tokens_;
  if (index < c.blocks.size()) {  // a block the context holds: copy what is new
    CopyPositions(c.blocks[index], host ? LoadHost(hash) : src, in_block);
    return true;
  }
  std::optional<kv_tiers::Extent> e;
  if (kept) {  // a kept block: adopted as it is
    e = pool_->TakeKept(hash, tenant_);
  } else if (Result<kv_tiers::Extent> a = pool_->Allocate(tenant_, block_bytes_); a.ok()) {
    e = *a;
    CopyPositions(static_cast<float*>(pool_->Data(*e)), host ? LoadHost(hash) : src, 0);
  }
  if (!e) return false;
  c.extents.push_back(*e);
  c.blocks.push_back(static_cast<float*>(pool_->Data(*e)));
  return true;
}

int64_t CpuStepRunner::MatchPrefix(const std::string& context, int64_t from, int64_t to,
                                   int priority) {
  if (!prefix_ || busy(context)) return from;
  Ctx& c = CtxFor(context);
  c.priority = priority;
  Invalidate(c, from);
  const std::vector<int32_t>* ids = log_->Find(context);
  if (c.valid < from || !c.indexable || !ids || static_cast<int64_t>(ids->size()) < to)
    return from;      // a hole before `from`, KV of an earlier epoch, or ids not recorded
  Index(context, c);  // the whole blocks before `from`: the chain continues from them
  const size_t bt = static_cast<size_t>(block_tokens_);
  int64_t end = from;
  for (size_t i = c.hashes.size(); static_cast<int64_t>((i + 1) * bt) <= to; ++i) {
    const uint64_t parent = i == 0 ? prefix_->seed() : c.hashes.back();
    const uint64_t h = prefix_->Hash(parent, std::span<const int32_t>(ids->data() + i * bt, bt));
    if (!Place(c, i, h, from)) break;
    end = c.valid = static_cast<int64_t>((i + 1) * bt);
    c.hashes.push_back(h);
    prefix_->AddLive(h, PrefixCache::Live{&c, i, c.blocks[i]});
  }
  return end;
}

int64_t CpuStepRunner::CachedPrefix(std::span<const int32_t> ids) const {
  if (!prefix_) return 0;
  const size_t bt = static_cast<size_t>(block_tokens_);
  uint64_t parent = prefix_->seed();
  size_t i = 0;
  for (; (i + 1) * bt <= ids.size(); ++i) {
    parent = prefix_->Hash(parent, ids.subspan(i * bt, bt));
    if (!prefix_->FindLive(parent).data && !pool_->FindKept(parent) &&
        !(offload_ && offload_->Contains(parent)))
      break;
  }
  return static_cast<int64_t>(i * bt);
}

void CpuStepRunner::OnModelEpoch(uint64_t epoch) {
  if (!prefix_) return;
  prefix_->SetEpoch(epoch);  // empties the live index
  for (auto& [key, c] : ctxs_) {
    c.hashes.clear();
    c.indexable = c.valid == 0;
  }
  for (Freed& f : deferred_) f.hash = 0;
  pool_->DropKept();
  if (offload_) offload_->Clear();
}

}  // namespace switchyard::cpu_engine
