// DirectPutMover (direct_put_mover.h).
#include "kv_tiers/remote/direct_put_mover.h"

#include <algorithm>
#include <vector>

#include "base/ids.h"
#include "base/mutex.h"
#include "kv_tiers/local_mover.h"

namespace switchyard::kv_tiers::remote {

struct DirectPutMover::Shared {
  EventLoop* loop = nullptr;
  std::shared_ptr<PutOrderer> orderer;
  std::shared_ptr<Mover> fallback;
  std::atomic<uint64_t> next_order{1};
  mutable Mutex mu;
  std::set<std::pair<std::string, std::string>> unreachable
      GUARDED_BY(mu);  // (src, dst) tier names
  DirectPutMoverStats stats GUARDED_BY(mu);
};

namespace {

// One move in flight: what its completion needs.
struct DirectMove {
  std::shared_ptr<MoveState> state;
  MoveCallback on_complete;
  MoveRequest request;  // for the fallback
  MoveHandle fallback;  // the fallback's move, when it took over
  KvStoreTier* src = nullptr;
  KvStoreTier* dst = nullptr;
  std::vector<Extent> dst_extents;
  std::vector<KvStoreTier::DirectEnd> dst_ends;
  kv_store::DirectPutOrder order;
  std::atomic<TimerId> timer{0};
};

// What the report must say before the destination may be committed here: the destination's
// three events, and every block committed under its id with the source's stored checksum.
Status CheckReport(const kv_store::DirectPutOutcome& o, const kv_store::DirectPutOrder& order) {
  const std::string what =
      "direct move: order " + std::to_string(order.order_id) + " to " + order.destination.address;
  if (!o.events.receiver_transport_complete || !o.events.validated || !o.events.committed)
    return Status::DataLoss(what +
                                " reported success without the destination's transport "
                                "completion, validation and commit",
                            ErrorScope::kTransfer);
  if (o.blocks.size() != order.blocks.size())
    return Status::DataLoss(what + " reported " + std::to_string(o.blocks.size()) +
                                " blocks committed of " + std::to_string(order.blocks.size()),
                            ErrorScope::kTransfer);
  for (size_t i = 0; i < o.blocks.size(); ++i) {
    const kv_store::DirectBlock& b = order.blocks[i];
    if (o.blocks[i].block_id != b.block_id)
      return Status::DataLoss(what + " reported block " + std::to_string(o.blocks[i].block_id) +
                                  " where block " + std::to_string(b.block_id) + " was ordered",
                              ErrorScope::kTransfer);
    if (b.checksum && o.blocks[i].checksum != *b.checksum)
      return Status::DataLoss(what + ": block " + std::to_string(b.block_id) + " committed with " +
                                  HexId(o.blocks[i].checksum) + ", the source's is " +
                                  HexId(*b.checksum),
                              ErrorScope::kBlock);
  }
  return Status::OK();
}

}  // namespace

DirectPutMover::DirectPutMover(const MoverEnv& env, std::shared_ptr<PutOrderer> orderer,
                               Options options, std::shared_ptr<Mover> fallback)
    : env_(env), options_(options), shared_(std::make_shared<Shared>()) {
  shared_->loop = env.loop;
  shared_->orderer = std::move(orderer);
  shared_->fallback = std::move(fallback);
}

bool DirectPutMover::Supports(const Tier& src, const Tier& dst) const {
  auto* s = dynamic_cast<const KvStoreTier*>(&src);
  auto* d = dynamic_cast<const KvStoreTier*>(&dst);
  if (s == nullptr || d == nullptr || s == d || !shared_->orderer->Reaches(*s, *d)) return false;
  MutexLock l(&shared_->mu);
  return shared_->unreachable.count({s->name(), d->name()}) == 0;
}

DirectPutMoverStats DirectPutMover::stats() const {
  MutexLock l(&shared_->mu);
  return shared_->stats;
}

namespace {

void OnOutcome(const std::shared_ptr<DirectPutMover::Shared>& sh,
               const std::shared_ptr<DirectMove>& m, kv_store::DirectPutOutcome o);

}  // namespace

Result<MoveHandle> DirectPutMover::Submit(MoveRequest request, MoveCallback on_complete) {
  SY_RETURN_IF_ERROR(ValidateMoveRequest(request, "direct"));
  if (!Supports(*request.src, *request.dst))
    return Status::NotSupported("direct mover: cannot order " + request.src->name() + " -> " +
                                request.dst->name());
  auto m = std::make_shared<DirectMove>();
  m->src = static_cast<KvStoreTier*>(request.src);
  m->dst = static_cast<KvStoreTier*>(request.dst);
  kv_store::DirectPutOrder& order = m->order;
  for (size_t i = 0; i < request.segments.size(); ++i) {
    const MoveSegment& seg = request.segments[i];
    SY_ASSIGN_OR_RETURN(KvStoreTier::DirectEnd s, m->src->DirectSource(seg.src, seg.bytes));
    SY_ASSIGN_OR_RETURN(KvStoreTier::DirectEnd d, m->dst->DirectDestination(seg.dst, seg.bytes));
    if (i == 0) {
      order.source = s.store;
      order.destination = d.store;
      order.generation = d.generation;
    } else if (d.generation != order.generation) {
      return Status::InvalidArgument(
          "direct mover: the segments of one move take one generation at the destination "
          "(segment " +
          std::to_string(i) + " takes " + std::to_string(d.generation) + ", the first " +
          std::to_string(order.generation) + ")");
    }
    order.blocks.push_back(
        {s.block_id, s.generation, d.block_id, seg.bytes, seg.checksum, seg.meta});
    m->dst_extents.push_back(seg.dst);
    m->dst_ends.push_back(std::move(d));
  }
  order.order_id = shared_->next_order.fetch_add(1);
  order.transfer_id = request.options.transfer_id.value;
  order.traffic_class = request.options.traffic_class;
  order.flow_key = request.options.transfer_id.value;
  const Time now = env_.loop->Now();
  order.timeout = request.options.deadline == Time::Max()
                      ? options_.order_timeout
                      : std::max<Duration>(request.options.deadline - now, Millis(1));
  m->state = std::make_shared<MoveState>();
  m->on_complete = std::move(on_complete);
  m->request = std::move(request);
  const uint64_t id = order.order_id;
  const Duration wait = order.timeout + options_.grace;
  std::shared_ptr<Shared> sh = shared_;
  SY_RETURN_IF_ERROR(sh->orderer->Order(
      *m->src, *m->dst, order,
      [sh, m](kv_store::DirectPutOutcome o) { OnOutcome(sh, m, std::move(o)); }));
  {
    MutexLock l(&sh->mu);
    ++sh->stats.orders;
  }
  if (!options_.watchdog) return MoveHandle(m->state);
  // The report may already have come: then the timer finds the order ended.
  m->timer = env_.loop->PostAt(now + wait, [sh, id, wait] {
    sh->orderer->Abandon(
        id, Status::DeadlineExceeded("direct move: no report of order " + std::to_string(id) +
                                     " within " + std::to_string(ToSeconds(wait)) + " s")
                .WithScope(ErrorScope::kTransfer));
  });
  return MoveHandle(m->state);
}

namespace {

// Hands the move to the fallback mover (the relay): it ends when the fallback's does.
void FallBack(const std::shared_ptr<DirectPutMover::Shared>& sh,
              const std::shared_ptr<DirectMove>& m) {
  auto h = sh->fallback->Submit(
      m->request, [sh, m](const Status& s) { FinishMove(sh->loop, m->state, m->on_complete, s); });
  if (!h.ok()) return FinishMove(sh->loop, m->state, m->on_complete, h.status());
  m->fallback = std::move(*h);
}

void OnOutcome(const std::shared_ptr<DirectPutMover::Shared>& sh,
               const std::shared_ptr<DirectMove>& m, kv_store::DirectPutOutcome o) {
  if (TimerId t = m->timer.load(); t != 0) sh->loop->Cancel(t);
  Status st = o.status;
  if (st.ok()) st = CheckReport(o, m->order);
  // What the destination may hold: what its report says it committed (whether or not the
  // check above passed), or an unknown outcome (sent, and no report). Recorded, so that
  // the BlockManager's drop of a failed destination frees it there.
  const bool unknown = !o.status.ok() && o.events.posted && !o.events.rejected && !o.unreachable &&
                       !o.destination_lost;
  if (o.status.ok() || unknown) {
    for (size_t i = 0; i < m->dst_extents.size(); ++i)
      m->dst->RecordDirectWrite(m->dst_extents[i], m->dst_ends[i], o.events);
  }
  {
    MutexLock l(&sh->mu);
    if (st.ok()) {
      ++sh->stats.committed;
      sh->stats.bytes_committed += o.bytes;
    } else {
      ++sh->stats.failed;
    }
    if (o.unreachable) sh->unreachable.insert({m->src->name(), m->dst->name()});
    if (o.unreachable && sh->fallback) ++sh->stats.fell_back;
  }
  if (o.unreachable && sh->fallback) return FallBack(sh, m);
  FinishMove(sh->loop, m->state, m->on_complete, std::move(st));
}

}  // namespace

}  // namespace switchyard::kv_tiers::remote
