#include "executors/tiered_mover.h"

#include <algorithm>

namespace switchyard::executors {
namespace {

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

}  // namespace

TieredKvMover::TieredKvMover(EventLoop* loop, kv_tiers::BlockManager* manager, Options options)
    : loop_(loop), manager_(manager), options_(std::move(options)) {
  options_.bytes_scale = std::max<uint64_t>(1, options_.bytes_scale);
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

void TieredKvMover::EvictAll(const std::vector<BlockId>& blocks) {
  for (BlockId b : blocks) (void)manager_->Evict(b);
}

// Writes the blocks the context lacks in `tier` (all of them when it lives elsewhere).
Status TieredKvMover::Materialise(const scheduler::Command& move, const std::string& tier,
                                  Ctx& ctx) {
  if (ctx.tier != tier) {
    EvictAll(ctx.blocks);
    ctx.blocks.clear();
    ctx.tier = tier;
  }
  uint64_t bpb = manager_->layout().bytes_per_block();
  uint64_t want = (move.bytes + options_.bytes_scale - 1) / options_.bytes_scale;
  uint64_t have = ctx.blocks.size() * bpb;
  for (uint32_t i = static_cast<uint32_t>(ctx.blocks.size()); have < want; ++i) {
    kv_tiers::BlockSpec spec{.tenant = options_.tenant,
                             .workflow_id = move.workflow_id,
                             .context_id = move.context,
                             .index = i,
                             .num_tokens = manager_->layout().tokens_per_block(),
                             .bytes = bpb};
    SY_ASSIGN_OR_RETURN(BlockId id, manager_->Allocate(spec, tier));
    std::vector<char> data = Fill(bpb, std::hash<std::string>{}(move.context) + i);
    Status st = manager_->BeginWrite(id);
    if (st.ok()) st = manager_->WriteBytes(id, data.data(), data.size());
    if (st.ok()) st = manager_->FinishWrite(id);
    if (st.ok()) st = manager_->Commit(id);
    if (!st.ok()) {
      (void)manager_->Evict(id);
      return st.Annotate("materialising block " + std::to_string(i) + " of " + move.context);
    }
    ctx.blocks.push_back(id);
    have += bpb;
  }
  return Status::OK();
}

void TieredKvMover::Move(const scheduler::Command& move, std::function<void(Status)> done) {
  auto fail = [&](Status st) { loop_->Post([done, st]() { done(st); }); };
  Result<std::string> src = options_.tier_of(move.src);
  Result<std::string> dst = options_.tier_of(move.dst);
  if (!src.ok() || !dst.ok()) return fail(!src.ok() ? src.status() : dst.status());
  Ctx& ctx = ctxs_[move.context];
  if (ctx.moving) {
    return fail(Status::FailedPrecondition("context " + move.context + " is already moving"));
  }
  Status st = Materialise(move, *src, ctx);
  if (!st.ok()) return fail(st);
  uint64_t id = move.transfer_id;
  InFlight& m = moves_[id];
  m.context = move.context;
  m.dst_tier = *dst;
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
  if (r.state == v1::COMMITTED) {
    m.committed.push_back(r.destination);
    bytes_moved_ += r.bytes;
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
  if (m.failure.ok() && m.committed.size() == ctx.blocks.size()) {
    EvictAll(ctx.blocks);  // every destination committed: the sources may go now
    ctx.blocks = std::move(m.committed);
    ctx.tier = m.dst_tier;
  } else {
    EvictAll(m.committed);  // all or nothing: the sources stay where they were
    if (m.failure.ok()) m.failure = Status::Aborted("not every block of the context moved");
  }
  if (ctx.discard_after) Discard(m.context);
  m.done(m.failure);
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
  ctxs_.erase(it);
}

}  // namespace switchyard::executors
