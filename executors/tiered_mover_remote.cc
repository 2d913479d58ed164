// TieredKvMover's moves into and out of remote pools: the pools of engines in other
// processes (Options::remote_kv), reached through their workers' KV stores. See "Remote
// pools" in tiered_mover.h.
#include <utility>

#include "executors/tiered_mover.h"

namespace switchyard::executors {

void TieredKvMover::MoveRemote(const scheduler::Command& move, RemoteEngineKv* src,
                               RemoteEngineKv* dst, std::function<void(Status)> done) {
  auto body = [this, move, src, dst, done](Status st) {
    if (!st.ok()) return done(st);
    if (dst && !src) {  // the context's real KV must be where the move starts
      EngineKv* local = options_.engine_kv ? options_.engine_kv(move.src) : nullptr;
      Result<std::string> from = options_.tier_of(move.src);
      auto it = ctxs_.find(move.context);
      bool real = it != ctxs_.end() && it->second.valid_tokens >= 0 && from.ok() &&
                  it->second.tier == *from && !it->second.blocks.empty();
      if (!local && !real)
        return done(Status::NotFound("no real KV of " + move.context + " at " +
                                     scheduler::LocationString(move.src)));
    }
    if (!dst) return MoveLocal(move, false, done);
    MoveLocal(move, true, [this, move, dst, done](Status st) {
      if (!st.ok()) return done(st);
      ImportRemote(move, dst, done);
    });
  };
  if (src) return ExportRemote(move, src, body);
  body(Status::OK());
}

void TieredKvMover::ExportRemote(const scheduler::Command& move, RemoteEngineKv* src,
                                 std::function<void(Status)> done) {
  auto fail = [&](Status st) { loop_->Post([done, st]() { done(st); }); };
  Result<std::string> tier = options_.tier_of(move.src);
  if (!tier.ok()) return fail(tier.status());
  Ctx& ctx = ctxs_[move.context];
  if (ctx.moving)
    return fail(Status::FailedPrecondition("context " + move.context + " is already moving"));
  const int64_t n = src->kv_blocks(move.context);
  if (n < 0) return fail(Status::NotFound(src->kv_pool_name() + " does not hold " + move.context));
  EvictAll(ctx.blocks);  // a stale copy elsewhere
  ctx = Ctx{};
  std::vector<BlockId> ids;
  std::vector<kv_tiers::Extent> extents;
  Status st;
  for (uint32_t i = 0; i < static_cast<uint32_t>(n) && st.ok(); ++i) {
    Result<BlockId> id = manager_->Allocate(SpecOf(move, i), *tier);
    if (!id.ok()) {
      st = id.status();
      break;
    }
    ids.push_back(*id);
    st = manager_->BeginWrite(*id);
    Result<kv_tiers::Extent> e = st.ok() ? manager_->ExtentOf(*id) : Result<kv_tiers::Extent>(st);
    if (e.ok()) extents.push_back(*e);
    st = e.status();
  }
  if (!st.ok()) {
    EvictAll(ids);
    ctxs_.erase(move.context);
    return fail(st.Annotate("exporting " + move.context + " from " + src->kv_pool_name()));
  }
  ctxs_[move.context].moving = true;
  src->Export(
      move.context, std::move(extents),
      [this, move, ids, tier = *tier, pool = src->kv_pool_name(),
       done](Result<RemoteEngineKv::Exported> r) {
        Ctx& c = ctxs_[move.context];
        c.moving = false;
        Status st = r.status();
        if (st.ok() && r->checksums.size() != ids.size())
          st = Status::Internal(pool + " exported " + std::to_string(r->checksums.size()) +
                                " blocks of " + std::to_string(ids.size()));
        for (size_t i = 0; i < ids.size() && st.ok(); ++i) {
          st = manager_->AcceptWrite(ids[i], r->checksums[i]);
          if (st.ok()) st = manager_->FinishWrite(ids[i]);
          if (st.ok()) st = manager_->Commit(ids[i]);
        }
        const bool discarded = c.discard_after;
        if (!st.ok() || discarded) {
          EvictAll(ids);
          ctxs_.erase(move.context);
          return done(
              discarded
                  ? Status::Cancelled(move.context + " was discarded while it was exported")
                  : st.Annotate("exporting " + move.context + " from " + pool + " into " + tier));
        }
        c.blocks = ids;
        c.tier = tier;
        c.valid_tokens = r->valid_tokens;
        const uint64_t bytes = manager_->layout().bytes_per_block() * ids.size();
        bytes_moved_ += bytes;
        real_by_dst_[tier] += bytes;
        done(Status::OK());
      });
}

void TieredKvMover::ImportRemote(const scheduler::Command& move, RemoteEngineKv* dst,
                                 std::function<void(Status)> done) {
  auto it = ctxs_.find(move.context);
  if (it == ctxs_.end() || it->second.landed.empty() || it->second.valid_tokens < 0)
    return done(
        Status::NotFound("no real KV of " + move.context + " landed for " + dst->kv_pool_name()));
  Ctx& ctx = it->second;
  std::vector<kv_tiers::Extent> extents;
  std::vector<uint64_t> sums;
  for (BlockId b : ctx.landed) {
    Result<kv_tiers::Extent> e = manager_->ExtentOf(b);
    Result<v1::KvBlockMeta> meta = manager_->Meta(b);
    if (!e.ok() || !meta.ok()) {
      EvictAll(ctx.landed);
      ctx.landed.clear();
      return done((!e.ok() ? e.status() : meta.status()).Annotate("importing " + move.context));
    }
    extents.push_back(*e);
    sums.push_back(meta->checksum());
  }
  ctx.moving = true;
  const uint64_t bytes = manager_->layout().bytes_per_block() * ctx.landed.size();
  dst->Import(move.context, std::move(extents), std::move(sums), ctx.valid_tokens,
              [this, move, done, bytes, pool = dst->kv_pool_name()](Status st) {
                auto it = ctxs_.find(move.context);
                if (it == ctxs_.end()) return done(st);
                Ctx& c = it->second;
                c.moving = false;
                EvictAll(c.landed);  // read into the pool, or failed: the store copies go
                c.landed.clear();
                if (st.ok()) {  // the context lives in the pool now
                  EvictAll(c.blocks);
                  ctxs_.erase(it);
                  bytes_moved_ += bytes;
                  real_by_dst_[pool] += bytes;
                  return done(Status::OK());
                }
                if (c.blocks.empty())
                  ctxs_.erase(it);
                else if (c.discard_after)
                  Discard(move.context);
                done(st.Annotate("importing " + move.context + " into " + pool));
              });
}

}  // namespace switchyard::executors
