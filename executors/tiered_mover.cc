#include "executors/tiered_mover.h"

#include <algorithm>
#include <cstring>
#include <thread>

namespace switchyard::executors {
namespace {

// An export or import this large is copied on the copy threads too (smaller: the hand-off costs
// more than it saves).
constexpr uint64_t kParallelExportBytes = 1 << 20;

v1::TrafficClass ToProtoClass(scheduler::TrafficClass c) { return net_budget::ToProto(c); }

// A deterministic fill standing in for the KV an engine would have written.
std::vector<char> Fill(uint64_t bytes, uint64_t seed) {
  std::vector<char> v(bytes);
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (char& c : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return v;
}

// `done(st)`, posted to `loop` (never run inside the call that fails).
void PostStatus(EventLoop* loop, std::function<void(Status)> done, Status st) {
  loop->Post([done = std::move(done), st = std::move(st)]() { done(st); });
}

}  // namespace

TieredKvMover::TieredKvMover(EventLoop* loop, kv_tiers::BlockManager* manager, Options options)
    : loop_(loop), manager_(manager), options_(std::move(options)) {
  options_.bytes_scale = std::max<uint64_t>(1, options_.bytes_scale);
}

kv_tiers::WorkerPool* TieredKvMover::CopyPool() {
  if (!copy_pool_) {
    int n = options_.copy_threads;
    if (n < 0) n = std::min(3, static_cast<int>(std::thread::hardware_concurrency()) - 1);
    if (n <= 0) return nullptr;
    copy_pool_ = std::make_unique<kv_tiers::WorkerPool>(n);
  }
  return copy_pool_.get();
}

TieredKvMover::~TieredKvMover() {
  for (auto& [id, m] : moves_)
    for (TransferId t : m.transfers) (void)manager_->CancelTransfer(t);
}

std::string TieredKvMover::TierOf(const std::string& context) const {
  auto it = ctxs_.find(context);
  return it == ctxs_.end() || it->second.blocks.empty() ? "" : it->second.tier;
}

size_t TieredKvMover::BlocksOf(const std::string& context) const {
  auto it = ctxs_.find(context);
  return it == ctxs_.end() ? 0 : it->second.blocks.size();
}

std::string TieredKvMover::TenantOf(const std::string& workflow_id) const {
  std::string t = options_.tenant_of ? options_.tenant_of(workflow_id) : std::string();
  return t.empty() ? options_.tenant : t;
}

void TieredKvMover::EvictAll(const std::vector<BlockId>& blocks) {
  for (BlockId b : blocks) (void)manager_->Evict(b);
}

kv_tiers::BlockSpec TieredKvMover::SpecOf(const scheduler::Command& move, uint32_t index) const {
  return kv_tiers::BlockSpec{.tenant = TenantOf(move.workflow_id),
                             .workflow_id = move.workflow_id,
                             .context_id = move.context,
                             .index = index,
                             .num_tokens = manager_->layout().tokens_per_block(),
                             .bytes = manager_->layout().bytes_per_block()};
}

// Writes block `index` of the move's context into `tier` from `data` and commits it.
Result<BlockId> TieredKvMover::WriteBlock(const scheduler::Command& move, const std::string& tier,
                                          uint32_t index, const void* data) {
  const uint64_t bpb = manager_->layout().bytes_per_block();
  SY_ASSIGN_OR_RETURN(BlockId id, manager_->Allocate(SpecOf(move, index), tier));
  Status st = manager_->BeginWrite(id);
  if (st.ok()) st = manager_->WriteBytes(id, data, bpb);
  if (st.ok()) st = manager_->FinishWrite(id);
  if (st.ok()) st = manager_->Commit(id);
  if (!st.ok()) {
    (void)manager_->Evict(id);
    return st.Annotate("writing block " + std::to_string(index) + " of " + move.context + " to " +
                       tier);
  }
  return id;
}

uint32_t TieredKvMover::MissingBlocks(const scheduler::Command& move, const std::string& tier,
                                      const Ctx& ctx) const {
  if (ctx.valid_tokens >= 0 && ctx.tier == tier) return 0;  // real bytes: all there
  uint64_t bpb = manager_->layout().bytes_per_block();
  uint64_t want = (move.bytes + options_.bytes_scale - 1) / options_.bytes_scale;
  uint64_t have = ctx.tier == tier ? ctx.blocks.size() * bpb : 0;
  return have >= want ? 0 : static_cast<uint32_t>((want - have + bpb - 1) / bpb);
}

void TieredKvMover::StageFill(const scheduler::Command& move, const std::string& tier,
                              std::function<void(Status)> done) {
  Ctx& ctx = ctxs_[move.context];
  if (ctx.tier != tier) {
    EvictAll(ctx.blocks);
    ctx.blocks.clear();
    ctx.tier = tier;
  }
  ctx.moving = true;
  struct Staged {
    std::vector<BlockId> placed;  // by position, in `tier` once committed
    size_t pending = 0;
    Status failure;
  };
  auto fill = std::make_shared<Staged>();
  const uint32_t first = static_cast<uint32_t>(ctx.blocks.size());
  const uint32_t n = MissingBlocks(move, tier, ctx);
  fill->placed.assign(n, BlockId{});
  auto finish = [this, move, fill, done]() {
    Ctx& c = ctxs_[move.context];
    c.moving = false;
    if (!fill->failure.ok()) {
      for (BlockId b : fill->placed)
        if (b.valid()) (void)manager_->Evict(b);
      return done(fill->failure.Annotate("staging the emulated KV of " + move.context));
    }
    c.blocks.insert(c.blocks.end(), fill->placed.begin(), fill->placed.end());
    if (c.discard_after) {
      Discard(move.context);
      return done(Status::Cancelled(move.context + " was discarded while it was staged"));
    }
    Move(move, done);  // nothing is missing now: the move itself
  };
  kv_tiers::MoveOptions opts{.traffic_class = ToProtoClass(move.grant.traffic_class)};
  const uint64_t bpb = manager_->layout().bytes_per_block();
  for (uint32_t k = 0; k < n; ++k) {
    std::vector<char> data = Fill(bpb, std::hash<std::string>{}(move.context) + first + k);
    Result<BlockId> staged = WriteBlock(move, options_.fill_staging_tier, first + k, data.data());
    fill->pending++;  // before the Move: its completion is never counted early
    Result<TransferId> t =
        staged.ok() ? manager_->Move(*staged, tier, opts, /*demote=*/true,
                                     [fill, k, finish](const kv_tiers::TransferRecord& r) {
                                       if (r.state == v1::COMMITTED)
                                         fill->placed[k] = r.destination;
                                       else if (fill->failure.ok())
                                         fill->failure =
                                             r.status.ok()
                                                 ? Status::Aborted("a staged block did not commit")
                                                 : r.status;
                                       if (--fill->pending == 0) finish();
                                     })
                    : Result<TransferId>(staged.status());
    if (!t.ok()) {
      fill->pending--;
      if (staged.ok()) (void)manager_->Evict(*staged);
      if (fill->failure.ok()) fill->failure = t.status();
      break;
    }
  }
  if (fill->pending == 0) loop_->Post(finish);
}

// Writes the blocks the context lacks in `tier` (all of them when it lives elsewhere).
Status TieredKvMover::Materialise(const scheduler::Command& move, const std::string& tier,
                                  Ctx& ctx) {
  if (ctx.valid_tokens >= 0 && ctx.tier == tier) return Status::OK();  // real bytes
  if (ctx.tier != tier) {
    EvictAll(ctx.blocks);
    ctx.blocks.clear();
    ctx.tier = tier;
  }
  uint64_t bpb = manager_->layout().bytes_per_block();
  uint64_t want = (move.bytes + options_.bytes_scale - 1) / options_.bytes_scale;
  uint64_t have = ctx.blocks.size() * bpb;
  for (uint32_t i = static_cast<uint32_t>(ctx.blocks.size()); have < want; ++i) {
    std::vector<char> data = Fill(bpb, std::hash<std::string>{}(move.context) + i);
    SY_ASSIGN_OR_RETURN(BlockId id, WriteBlock(move, tier, i, data.data()));
    ctx.blocks.push_back(id);
    have += bpb;
  }
  return Status::OK();
}

// ---- Real bytes ---------------------------------------------------------------------------

Status TieredKvMover::ExportToTier(const scheduler::Command& move, EngineKv* src,
                                   const std::string& tier) {
  SY_ASSIGN_OR_RETURN(ContextKvView view, src->ExportKv(move.context));
  const uint64_t bpb = src->kv_block_bytes();
  if (bpb != manager_->layout().bytes_per_block())
    return Status::FailedPrecondition(src->kv_pool_name() + " blocks are " + std::to_string(bpb) +
                                      " bytes, the KV layout's " +
                                      std::to_string(manager_->layout().bytes_per_block()));
  Ctx& ctx = ctxs_[move.context];
  EvictAll(ctx.blocks);  // a stale copy elsewhere
  ctx.blocks.clear();
  // Allocate every block, copy and checksum them all (on the copy threads too), then
  // validate and commit each: none is readable before its own commit.
  std::vector<BlockId> written;
  Status st;
  for (uint32_t i = 0; i < view.blocks.size() && st.ok(); ++i) {
    Result<BlockId> id = manager_->Allocate(SpecOf(move, i), tier);
    if (!id.ok()) {
      st = id.status();
      break;
    }
    written.push_back(*id);
    st = manager_->BeginWrite(*id);
  }
  if (st.ok()) {
    std::vector<const void*> srcs(view.blocks.begin(), view.blocks.end());
    st = manager_->WriteBytesMany(
        written, srcs, written.size() * bpb >= kParallelExportBytes ? CopyPool() : nullptr);
  }
  for (size_t i = 0; i < written.size() && st.ok(); ++i) {
    st = manager_->FinishWrite(written[i]);
    if (st.ok()) st = manager_->Commit(written[i]);
  }
  if (!st.ok()) {
    EvictAll(written);
    ctxs_.erase(move.context);
    return st.Annotate("exporting " + move.context + " to " + tier);
  }
  ctx.blocks = std::move(written);
  ctx.tier = tier;
  ctx.valid_tokens = view.valid_tokens;
  bytes_moved_ += bpb * ctx.blocks.size();
  real_by_dst_[tier] += bpb * ctx.blocks.size();
  return Status::OK();
}

Status TieredKvMover::ImportFromTier(const scheduler::Command& move, const std::string& tier,
                                     EngineKv* dst) {
  auto it = ctxs_.find(move.context);
  if (it == ctxs_.end() || it->second.tier != tier || it->second.valid_tokens < 0)
    return Status::NotFound("no real KV of " + move.context + " in " + tier);
  Ctx& ctx = it->second;
  SY_ASSIGN_OR_RETURN(std::vector<void*> targets, dst->ImportTargets(move.context));
  const uint64_t bpb = dst->kv_block_bytes();
  if (targets.size() < ctx.blocks.size())
    return Status::FailedPrecondition(
        dst->kv_pool_name() + " reserved " + std::to_string(targets.size()) + " blocks for " +
        move.context + ", " + tier + " holds " + std::to_string(ctx.blocks.size()));
  // Leases on every block first (the commit rule's checks), then the copies, on the copy
  // threads too for a large context.
  std::vector<kv_tiers::ReadLease> leases;
  leases.reserve(ctx.blocks.size());
  for (size_t i = 0; i < ctx.blocks.size(); ++i) {
    SY_ASSIGN_OR_RETURN(v1::KvBlockMeta meta, manager_->Meta(ctx.blocks[i]));
    kv_tiers::ReadRequest rq{.tenant = TenantOf(move.workflow_id),
                             .workflow_id = move.workflow_id,
                             .context_id = move.context,
                             .model_epoch = manager_->model_epoch(),
                             .generation = meta.generation()};
    Result<kv_tiers::ReadLease> lease = manager_->Read(ctx.blocks[i], rq);
    if (!lease.ok())
      return lease.status().Annotate("reading block " + std::to_string(i) + " of " + move.context +
                                     " from " + tier);
    leases.push_back(std::move(*lease));
  }
  std::vector<Status> copied(leases.size());
  kv_tiers::ParallelFor(leases.size() * bpb >= kParallelExportBytes ? CopyPool() : nullptr,
                        leases.size(), [&](size_t from, size_t to) {
                          for (size_t i = from; i < to; ++i)
                            copied[i] = leases[i].CopyTo(targets[i], bpb);
                        });
  leases.clear();
  for (size_t i = 0; i < copied.size(); ++i)
    if (!copied[i].ok())
      return copied[i].Annotate("copying block " + std::to_string(i) + " of " + move.context +
                                " from " + tier);
  SY_RETURN_IF_ERROR(dst->CommitImport(move.context, ctx.valid_tokens));
  bytes_moved_ += bpb * ctx.blocks.size();
  real_by_dst_[dst->kv_pool_name()] += bpb * ctx.blocks.size();
  EvictAll(ctx.blocks);  // the context lives in the engine's pool now
  ctxs_.erase(it);
  return Status::OK();
}

Status TieredKvMover::MoveReal(const scheduler::Command& move, EngineKv* src, EngineKv* dst) {
  if (src && dst) {  // pool to pool
    SY_ASSIGN_OR_RETURN(ContextKvView view, src->ExportKv(move.context));
    SY_ASSIGN_OR_RETURN(std::vector<void*> targets, dst->ImportTargets(move.context));
    const uint64_t bpb = src->kv_block_bytes();
    if (bpb != dst->kv_block_bytes() || targets.size() < view.blocks.size())
      return Status::FailedPrecondition("pools of " + src->kv_pool_name() + " and " +
                                        dst->kv_pool_name() + " do not match for " + move.context);
    for (size_t i = 0; i < view.blocks.size(); ++i) std::memcpy(targets[i], view.blocks[i], bpb);
    SY_RETURN_IF_ERROR(dst->CommitImport(move.context, view.valid_tokens));
    bytes_moved_ += bpb * view.blocks.size();
    real_by_dst_[dst->kv_pool_name()] += bpb * view.blocks.size();
    return Status::OK();
  }
  if (src) {
    SY_ASSIGN_OR_RETURN(std::string tier, options_.tier_of(move.dst));
    return ExportToTier(move, src, tier);
  }
  SY_ASSIGN_OR_RETURN(std::string tier, options_.tier_of(move.src));
  return ImportFromTier(move, tier, dst);
}

// ---- Moves -------------------------------------------------------------------------------

void TieredKvMover::Move(const scheduler::Command& move, std::function<void(Status)> done) {
  RemoteEngineKv* rs = options_.remote_kv ? options_.remote_kv(move.src) : nullptr;
  RemoteEngineKv* rd = options_.remote_kv ? options_.remote_kv(move.dst) : nullptr;
  if (rs || rd) return MoveRemote(move, rs, rd, std::move(done));
  MoveLocal(move, false, std::move(done));
}

void TieredKvMover::MoveLocal(const scheduler::Command& move, bool keep_sources,
                              std::function<void(Status)> done) {
  EngineKv* src_kv = options_.engine_kv ? options_.engine_kv(move.src) : nullptr;
  EngineKv* dst_kv = options_.engine_kv ? options_.engine_kv(move.dst) : nullptr;
  if (src_kv || dst_kv) return MoveEngineKv(move, src_kv, dst_kv, keep_sources, std::move(done));
  MoveTiers(move, keep_sources, std::move(done));
}

void TieredKvMover::MoveEngineKv(const scheduler::Command& move, EngineKv* src_kv, EngineKv* dst_kv,
                                 bool keep_sources, std::function<void(Status)> done) {
  // Posted: the runtime reserves the destination's blocks (Engine::Import) after this
  // call returns.
  Ctx& ctx = ctxs_[move.context];
  if (ctx.moving) {
    return PostStatus(loop_, std::move(done),
                      Status::FailedPrecondition("context " + move.context + " is already moving"));
  }
  ctx.moving = true;
  uint64_t id = move.transfer_id;
  InFlight& m = moves_[id];
  m.context = move.context;
  m.done = std::move(done);
  loop_->Post([this, move, src_kv, dst_kv, id, keep_sources]() {
    FinishEngineKv(move, src_kv, dst_kv, id, keep_sources);
  });
}

void TieredKvMover::FinishEngineKv(const scheduler::Command& move, EngineKv* src_kv,
                                   EngineKv* dst_kv, uint64_t id, bool keep_sources) {
  auto it = moves_.find(id);
  if (it == moves_.end()) return;
  Status st = it->second.failure;  // cancelled meanwhile
  const uint64_t before = bytes_moved_;
  if (st.ok()) st = MoveReal(move, src_kv, dst_kv);
  InFlight m = std::move(it->second);
  moves_.erase(it);
  if (st.ok()) {  // copied, validated and committed in this one step
    m.times.transport_completed = m.times.validated = loop_->Now();
    m.times.bytes = bytes_moved_ - before;
    const uint64_t bpb = manager_->layout().bytes_per_block();
    m.times.blocks = static_cast<uint32_t>(bpb ? m.times.bytes / bpb : 0);
  }
  Keep(id, m);
  auto c = ctxs_.find(move.context);
  if (c != ctxs_.end() && st.ok() && keep_sources) {  // written into a remote pool's store
    c->second.landed = std::move(c->second.blocks);
    c->second.blocks.clear();
    c->second.tier.clear();
  }
  if (c != ctxs_.end()) {
    c->second.moving = false;
    if (c->second.blocks.empty() && c->second.valid_tokens < 0)
      ctxs_.erase(c);
    else if (c->second.discard_after)
      Discard(move.context);
  }
  m.done(st);
}

void TieredKvMover::MoveTiers(const scheduler::Command& move, bool keep_sources,
                              std::function<void(Status)> done) {
  auto fail = [&](Status st) { PostStatus(loop_, done, std::move(st)); };
  Result<std::string> src = options_.tier_of(move.src);
  Result<std::string> dst = options_.tier_of(move.dst);
  if (!src.ok() || !dst.ok()) return fail(!src.ok() ? src.status() : dst.status());
  Ctx& ctx = ctxs_[move.context];
  if (ctx.moving) {
    return fail(Status::FailedPrecondition("context " + move.context + " is already moving"));
  }
  if (!options_.fill_staging_tier.empty() && *src != options_.fill_staging_tier &&
      MissingBlocks(move, *src, ctx) > 0) {
    kv_tiers::Tier* t = manager_->tier(*src);
    if (t && !t->capabilities().addressable) return StageFill(move, *src, std::move(done));
  }
  Status st = Materialise(move, *src, ctx);
  if (!st.ok()) return fail(st);
  uint64_t id = move.transfer_id;
  InFlight& m = moves_[id];
  m.context = move.context;
  m.dst_tier = *dst;
  m.keep_sources = keep_sources;
  m.done = std::move(done);
  ctx.moving = true;
  kv_tiers::MoveOptions opts{.traffic_class = ToProtoClass(move.grant.traffic_class)};
  for (BlockId b : ctx.blocks) {
    Result<TransferId> t =
        manager_->Move(b, *dst, opts, /*demote=*/false,
                       [this, id](const kv_tiers::TransferRecord& r) { OnBlockDone(id, r); });
    if (!t.ok()) {
      m.failure = t.status();
      break;
    }
    m.transfers.push_back(*t);
    m.pending++;
  }
  if (m.pending == 0) loop_->Post([this, id]() { Finish(id); });
}

void TieredKvMover::OnBlockDone(uint64_t id, const kv_tiers::TransferRecord& r) {
  auto it = moves_.find(id);
  if (it == moves_.end()) return;
  InFlight& m = it->second;
  auto later = [](std::optional<Time>& into, const std::optional<Time>& t) {
    if (t && (!into || *into < *t)) into = t;
  };
  later(m.times.transport_completed, r.transport_completed_at);
  later(m.times.validated, r.validated_at);
  if (r.state == v1::COMMITTED) {
    m.committed.push_back(r.destination);
    bytes_moved_ += r.bytes;
    m.times.blocks++;
    m.times.bytes += r.bytes;
  } else if (m.failure.ok()) {
    m.failure = r.status.ok() ? Status::Aborted("block transfer ended " +
                                                std::string(v1::CompletionState_Name(r.state)))
                              : r.status;
  }
  if (--m.pending == 0) Finish(id);
}

void TieredKvMover::Finish(uint64_t id) {
  auto it = moves_.find(id);
  if (it == moves_.end()) return;
  InFlight m = std::move(it->second);
  moves_.erase(it);
  Ctx& ctx = ctxs_[m.context];
  ctx.moving = false;
  if (m.failure.ok() && m.committed.size() == ctx.blocks.size() && m.keep_sources) {
    ctx.landed = std::move(m.committed);  // the sources go once the import committed
  } else if (m.failure.ok() && m.committed.size() == ctx.blocks.size()) {
    EvictAll(ctx.blocks);  // every destination committed: the sources may go now
    ctx.blocks = std::move(m.committed);
    ctx.tier = m.dst_tier;
  } else {
    EvictAll(m.committed);  // all or nothing: the sources stay where they were
    if (m.failure.ok()) m.failure = Status::Aborted("not every block of the context moved");
  }
  Keep(id, m);
  if (ctx.discard_after) Discard(m.context);
  m.done(m.failure);
}

void TieredKvMover::Keep(uint64_t id, const InFlight& m) {
  done_[id] = Done{m.times, m.transfers};
  done_order_.push_back(id);
  while (done_order_.size() > kKeptMoves) {
    done_.erase(done_order_.front());
    done_order_.pop_front();
  }
}

std::optional<TieredKvMover::MoveTimes> TieredKvMover::TimesOf(uint64_t transfer_id) const {
  auto it = done_.find(transfer_id);
  if (it == done_.end()) return std::nullopt;
  return it->second.times;
}

bool TieredKvMover::MarkConsumed(uint64_t transfer_id) {
  auto it = done_.find(transfer_id);
  if (it == done_.end()) return false;
  // The manager may have dropped a block's record meanwhile: its copy is consumed anyway.
  for (TransferId t : it->second.transfers) (void)manager_->MarkConsumed(t);
  done_.erase(it);  // its place in done_order_ goes when it comes up
  return true;
}

bool TieredKvMover::Cancel(uint64_t transfer_id) {
  auto it = moves_.find(transfer_id);
  if (it == moves_.end()) return false;
  it->second.failure = Status::Cancelled("transfer " + std::to_string(transfer_id) + " cancelled");
  for (TransferId t : it->second.transfers) (void)manager_->CancelTransfer(t);
  return true;
}

void TieredKvMover::Discard(const std::string& context) {
  auto it = ctxs_.find(context);
  if (it == ctxs_.end()) return;
  if (it->second.moving) {
    it->second.discard_after = true;
    return;
  }
  EvictAll(it->second.blocks);
  EvictAll(it->second.landed);
  ctxs_.erase(it);
}

}  // namespace switchyard::executors
