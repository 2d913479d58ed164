// BlockManager: moves between tiers (invariants 1-3 on the receive side) and recovery of
// persistent tiers after a restart (invariant 10: re-validated, never trusted).
#include <vector>

#include "base/logging.h"
#include "kv_tiers/block_manager.h"
#include "kv_tiers/internal/block_records.h"
#include "kv_tiers/prefix_hash.h"

namespace switchyard::kv_tiers {
namespace {

LogKeys TransferKeys(const TransferRecord& t, const v1::KvBlockMeta& meta) {
  LogKeys k;
  k.workflow_id = meta.workflow_id();
  k.transfer_id = std::to_string(t.id.value);
  k.model_epoch = t.model_epoch;
  k.With("source_tier", t.source_tier).With("destination_tier", t.destination_tier);
  return k;
}

}  // namespace

Result<TransferId> BlockManager::Move(BlockId src_id, const std::string& dst_tier,
                                      const MoveOptions& options, bool demote,
                                      TransferCallback done) {
  Record* src = Find(src_id);
  if (src == nullptr) {
    return Status::NotFound("block manager: no block " + std::to_string(src_id.value));
  }
  if (src->stale || src->state() != v1::BLOCK_COMMITTED) {
    return Status::FailedPrecondition(src->Name() + ": only a COMMITTED block can be moved (is " +
                                      v1::BlockState_Name(src->state()) + ")");
  }
  Tier* dst_t = tier(dst_tier);
  if (dst_t == nullptr) return Status::NotFound("block manager: no tier '" + dst_tier + "'");
  SY_ASSIGN_OR_RETURN(Mover * mover, movers_.Select(*src->tier, *dst_t));

  // Pin the source first so that making room in the destination cannot evict it.
  ++src->move_pins;
  SY_RETURN_IF_ERROR(Transition(*src, v1::BLOCK_DEMOTING));
  auto extent = AllocateExtent(dst_t, src->meta.tenant(), src->meta.bytes());
  src = Find(src_id);
  if (!extent.ok()) {
    --src->move_pins;
    (void)Transition(*src, v1::BLOCK_COMMITTED);
    return extent.status();
  }
  v1::KvBlockMeta meta = src->meta;
  meta.set_checksum(0);  // the destination earns its checksum at validation
  Record& dst = NewRecord(meta, dst_t, *extent);
  dst.move_pins = 1;
  (void)Transition(dst, v1::BLOCK_TRANSFERRING);

  TransferId tid{next_transfer_++};
  TransferRecord rec;
  rec.id = tid;
  rec.source = src_id;
  rec.destination = dst.id;
  rec.source_tier = src->tier->name();
  rec.destination_tier = dst_t->name();
  rec.bytes = src->meta.bytes();
  rec.model_epoch = src->meta.model_epoch();
  rec.generation = src->meta.generation();
  rec.traffic_class = options.traffic_class;
  rec.posted_at = loop_->Now();
  transfers_[tid] = rec;

  auto flight = std::make_unique<InFlight>();
  flight->id = tid;
  flight->src = src_id;
  flight->dst = dst.id;
  flight->checksum = src->meta.checksum();
  flight->demote = demote;
  flight->done = std::move(done);
  MoveRequest req;
  req.src = src->tier;
  req.dst = dst_t;
  req.segments.push_back(
      {src->extent, dst.extent, src->meta.bytes(), src->meta.checksum(), src->meta});
  req.options = options;
  req.options.transfer_id = tid;
  std::weak_ptr<bool> alive = alive_;
  auto handle = mover->Submit(std::move(req), [this, alive, tid](const Status& s) {
    if (alive.lock()) OnMoveDone(tid, s);
  });
  if (!handle.ok()) {
    in_flight_[tid] = std::move(flight);
    (void)FailMove(tid, src_id, dst.id, handle.status());
    return handle.status();
  }
  flight->handle = std::move(handle).value();
  in_flight_[tid] = std::move(flight);
  return tid;
}

Status BlockManager::FailMove(TransferId tid, BlockId src, BlockId dst, Status why) {
  OnMoveDone(tid, std::move(why));
  return Status::OK();
}

Status BlockManager::CancelTransfer(TransferId tid) {
  auto it = in_flight_.find(tid);
  if (it == in_flight_.end()) {
    return Status::NotFound("block manager: transfer " + std::to_string(tid.value) +
                            " is not in flight");
  }
  it->second->cancelled = true;  // honoured even if the bytes already arrived
  it->second->handle.Cancel();
  return Status::OK();
}

Status BlockManager::ValidateMoved(const InFlight& f, Record& dst) {
  const auto& m = dst.meta;
  if (dst.stale) return Status::Aborted("destination invalidated while in flight");
  if (m.model_epoch() != options_.model_epoch) {
    return Status::FailedPrecondition("model_epoch " + std::to_string(m.model_epoch()) +
                                      " is stale (current " + std::to_string(options_.model_epoch) +
                                      ")");
  }
  if (m.prefix_hash() == 0) {
    auto it = latest_generation_.find({m.context_id(), m.index()});
    if (it != latest_generation_.end() && it->second != m.generation()) {
      return Status::FailedPrecondition("generation " + std::to_string(m.generation()) +
                                        " superseded by " + std::to_string(it->second));
    }
  }
  // A tier that verifies writes stored the bytes only after checking them against the
  // source's checksum, which the move carried: reading them back to hash would move the
  // block a second time (over the network, for a peer).
  uint64_t sum = f.checksum;
  if (!dst.tier->capabilities().verifies_writes) {
    SY_ASSIGN_OR_RETURN(sum, ChecksumOf(dst));
  }
  if (sum != f.checksum) {
    return Status::DataLoss("checksum " + HexId(sum) + " != source " + HexId(f.checksum),
                            ErrorScope::kBlock);
  }
  dst.meta.set_checksum(sum);
  return Status::OK();
}

void BlockManager::OnMoveDone(TransferId tid, Status status) {
  auto it = in_flight_.find(tid);
  if (it == in_flight_.end()) return;
  std::unique_ptr<InFlight> f = std::move(it->second);
  in_flight_.erase(it);
  TransferRecord& rec = transfers_[tid];
  const Time now = loop_->Now();
  if (f->cancelled && status.ok()) status = Status::Cancelled("transfer cancelled");

  Record* src = Find(f->src);
  if (src != nullptr) {
    --src->move_pins;
    if (src->state() == v1::BLOCK_DEMOTING && !src->stale) {
      (void)Transition(*src, v1::BLOCK_COMMITTED);
    }
  }
  Record* dst = Find(f->dst);
  if (dst != nullptr) --dst->move_pins;

  v1::CompletionState final_state = v1::COMMITTED;
  if (!status.ok()) {
    final_state = status.IsCancelled() ? v1::CANCELLED : v1::FAILED;
  } else {
    rec.transport_completed_at = now;
    rec.state = v1::TRANSPORT_COMPLETE;
    Status valid = dst ? ValidateMoved(*f, *dst) : Status::Aborted("destination gone");
    if (!valid.ok()) {
      status = valid;
      final_state = v1::REJECTED;
    } else {
      (void)Transition(*dst, v1::BLOCK_VALIDATED);
      rec.validated_at = now;
      rec.state = v1::VALIDATED;
      status = Commit(dst->id);
      if (status.ok()) {
        rec.committed_at = now;
      } else {
        final_state = v1::REJECTED;
        dst = Find(f->dst);
      }
    }
  }
  if (final_state != v1::COMMITTED) {
    if (dst != nullptr) Invalidate(*dst);  // never exposed; freed
    Log(LogLevel::kWarn, "kv_tiers: transfer not committed: " + status.ToString(),
        TransferKeys(rec, src ? src->meta : v1::KvBlockMeta()));
  } else if (f->demote && src != nullptr) {
    // The block now lives below; hand over the prefix entry and references.
    auto p = prefixes_.find({src->meta.tenant(), src->meta.prefix_hash()});
    if (p != prefixes_.end() && p->second == src->id) p->second = dst->id;
    dst->refs = src->refs;
    SyncEviction(*dst);
    Invalidate(*src);  // freed now, or when its readers finish
  }
  if (src != nullptr && Find(f->src) != nullptr) MaybeFreeStale(*src);
  rec.state = final_state;
  rec.status = status;
  if (f->done) f->done(rec);
}

Status BlockManager::MarkConsumed(TransferId tid) {
  auto it = transfers_.find(tid);
  if (it == transfers_.end()) {
    return Status::NotFound("block manager: no transfer " + std::to_string(tid.value));
  }
  if (it->second.state != v1::COMMITTED) {
    return Status::FailedPrecondition(
        "transfer " + std::to_string(tid.value) + " is not committed (" +
        v1::CompletionState_Name(it->second.state) + "); its data cannot have been consumed");
  }
  it->second.consumed_at = loop_->Now();
  return Status::OK();
}

Result<TransferRecord> BlockManager::Transfer(TransferId tid) const {
  auto it = transfers_.find(tid);
  if (it == transfers_.end()) {
    return Status::NotFound("block manager: no transfer " + std::to_string(tid.value));
  }
  return it->second;
}

Result<std::vector<BlockId>> BlockManager::Recover(const std::string& tier_name) {
  Tier* t = tier(tier_name);
  if (t == nullptr) return Status::NotFound("block manager: no tier '" + tier_name + "'");
  SY_ASSIGN_OR_RETURN(auto found, t->Recover());
  std::vector<BlockId> recovered;
  for (auto& [extent, meta] : found) {
    Record& r = NewRecord(meta, t, extent);
    (void)Transition(r, v1::BLOCK_TRANSFERRING);  // bytes coming back from storage
    auto sum = ChecksumOf(r);
    std::string why;
    if (!sum.ok()) {
      why = sum.status().ToString();
    } else if (*sum != meta.checksum()) {
      why = "checksum " + HexId(*sum) + " != recorded " + HexId(meta.checksum());
    } else if (meta.model_epoch() != options_.model_epoch) {
      why = "model_epoch " + std::to_string(meta.model_epoch()) + " is not the current " +
            std::to_string(options_.model_epoch);
    } else if (meta.prefix_hash() != 0 && prefixes_.count({meta.tenant(), meta.prefix_hash()})) {
      why = "duplicate prefix block";
    }
    if (!why.empty()) {
      LogKeys keys;
      keys.workflow_id = meta.workflow_id();
      keys.model_epoch = meta.model_epoch();
      Log(LogLevel::kWarn, "kv_tiers: recovered block rejected: " + why, keys);
      Invalidate(r);
      continue;
    }
    (void)Transition(r, v1::BLOCK_VALIDATED);
    (void)Transition(r, v1::BLOCK_COMMITTED);
    if (meta.prefix_hash() != 0) {
      prefixes_[{meta.tenant(), meta.prefix_hash()}] = r.id;
    } else {
      auto& latest = latest_generation_[{meta.context_id(), meta.index()}];
      latest = std::max(latest, meta.generation());
    }
    recovered.push_back(r.id);
  }
  return recovered;
}

}  // namespace switchyard::kv_tiers
