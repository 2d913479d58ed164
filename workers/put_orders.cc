// ControlPutOrderer (put_orders.h).
#include "workers/put_orders.h"

#include <utility>

#include "base/mutex.h"
#include "workers/control_msgs.h"

namespace switchyard::workers {

namespace kv_store = kv_store;

namespace {

// Ends an order serve gave up on (a lost worker, no report in time): sent, so what reached
// the destination is unknown.
void End(uint64_t id, const PutOrderDone& done, Status why, bool destination_lost) {
  kv_store::DirectPutOutcome o;
  o.order_id = id;
  o.status = std::move(why);
  o.events.posted = true;
  o.destination_lost = destination_lost;
  done(std::move(o));
}

}  // namespace

void ControlPutOrderer::AddStore(const kv_tiers::remote::KvStoreTier* tier, RemoteWorker* worker) {
  MutexLock l(&mu_);
  stores_[tier] = worker;
}

void ControlPutOrderer::Attach(const std::shared_ptr<ControlPutOrderer>& orderer,
                               RemoteWorker* worker) {
  RemoteWorker::KvSink sink;
  sink.on_done = [orderer](int index, const v1::PutBlocksDone& m) { orderer->OnDone(index, m); };
  sink.on_lost = [orderer](int index, const Status& why) { orderer->OnLost(index, why); };
  worker->SetKvSink(std::move(sink));
}

RemoteWorker* ControlPutOrderer::WorkerOf(const kv_tiers::remote::KvStoreTier& tier) const {
  MutexLock l(&mu_);
  auto it = stores_.find(&tier);
  return it == stores_.end() ? nullptr : it->second;
}

bool ControlPutOrderer::Reaches(const kv_tiers::remote::KvStoreTier& src,
                                const kv_tiers::remote::KvStoreTier& dst) const {
  RemoteWorker* from = WorkerOf(src);
  RemoteWorker* to = WorkerOf(dst);
  return from != nullptr && to != nullptr && from != to && from->hello().kv_direct_puts();
}

Status ControlPutOrderer::Order(const kv_tiers::remote::KvStoreTier& src,
                                const kv_tiers::remote::KvStoreTier& dst,
                                kv_store::DirectPutOrder order, Done done) {
  RemoteWorker* from = WorkerOf(src);
  RemoteWorker* to = WorkerOf(dst);
  if (from == nullptr || to == nullptr)
    return Status::FailedPrecondition("direct put: no joined worker holds store " +
                                      (from ? dst.name() : src.name()));
  const std::string from_id = from->hello().worker_id(), to_id = to->hello().worker_id();
  for (RemoteWorker* w : {from, to})
    if (w->lost())
      return Status::Unavailable("direct put: worker " + w->hello().worker_id() + " (" +
                                     (w == from ? "source" : "destination") + ") is lost",
                                 ErrorScope::kRemote);
  const uint64_t id = order.order_id;
  v1::WorkerControl m;
  ToPutBlocks(order, m.mutable_put_blocks());
  {
    MutexLock l(&mu_);
    if (closed_)
      return Status::Unavailable("direct put: serve is stopping (order " + std::to_string(id) +
                                 " not sent)");
    pending_[id] = Pending{from->index(), to->index(), from_id, to_id, std::move(done)};
    ++sent_[from->index()];
  }
  Status st = from->Send(m);
  if (!st.ok()) {
    MutexLock l(&mu_);
    // Not sent: the caller fails the move. Already ended by a loss: its done ran (dropped
    // by Close: it never runs, so the caller fails the move too).
    if (pending_.erase(id) > 0 || closed_)
      return st.Annotate("direct put: order to worker " + from_id).WithScope(ErrorScope::kRemote);
    return Status::OK();
  }
  // A loss between the check above and the order's entry did not see it.
  if (from->lost())
    Fail(id,
         Status::Unavailable("direct put: worker " + from_id + " (source) is lost",
                             ErrorScope::kRemote),
         false);
  if (to->lost())
    Fail(id,
         Status::Unavailable("direct put: worker " + to_id + " (destination) is lost",
                             ErrorScope::kRemote),
         true);
  return Status::OK();
}

ControlPutOrderer::Done ControlPutOrderer::TakeLocked(std::map<uint64_t, Pending>::iterator it) {
  Done done = std::move(it->second.done);
  pending_.erase(it);
  ++running_;
  return done;
}

void ControlPutOrderer::Finished(size_t n) {
  MutexLock l(&mu_);
  running_ -= n;
  if (running_ == 0) idle_cv_.SignalAll();
}

bool ControlPutOrderer::Fail(uint64_t id, const Status& why, bool destination_lost) {
  Done done;
  {
    MutexLock l(&mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return false;  // ended (or dropped by Close)
    done = TakeLocked(it);
  }
  End(id, done, why, destination_lost);
  Finished(1);
  return true;
}

bool ControlPutOrderer::Abandon(uint64_t order_id, const Status& why) {
  return Fail(order_id, why, false);
}

void ControlPutOrderer::OnDone(int index, const v1::PutBlocksDone& m) {
  Done done;
  {
    MutexLock l(&mu_);
    auto it = pending_.find(m.order_id());
    if (it == pending_.end() || it->second.src != index) return;  // late, or not its order
    done = TakeLocked(it);
  }
  done(FromPutBlocksDone(m));
  Finished(1);
}

void ControlPutOrderer::OnLost(int index, const Status& why) {
  std::vector<std::pair<uint64_t, Pending>> ended;
  {
    MutexLock l(&mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.src == index || it->second.dst == index) {
        ended.emplace_back(it->first, std::move(it->second));
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    running_ += ended.size();
  }
  for (auto& [id, p] : ended) {
    const bool dst = p.dst == index;
    End(id, p.done,
        Status::Unavailable("direct put: worker " + (dst ? p.dst_id : p.src_id) + " (" +
                                (dst ? "destination" : "source") +
                                ") lost mid-move: " + why.message(),
                            ErrorScope::kRemote),
        dst);
  }
  if (!ended.empty()) Finished(ended.size());
}

void ControlPutOrderer::Close() {
  std::map<uint64_t, Pending> ended;
  {
    MutexLock l(&mu_);
    if (closed_) return;
    closed_ = true;
    ended.swap(pending_);
    running_ += ended.size();
  }
  // Ended now, while the service they call into still lives: a move left waiting would
  // hold its BlockManager's destructor (MoveHandle waits for the move) forever.
  for (auto& [id, p] : ended)
    End(id, p.done,
        Status::Aborted("direct put: serve is stopping; order " + std::to_string(id) +
                        " to worker " + p.src_id + " abandoned")
            .WithScope(ErrorScope::kTransfer),
        false);
  MutexLock l(&mu_);
  running_ -= ended.size();
  while (running_ != 0) idle_cv_.Wait(&mu_);
}

uint64_t ControlPutOrderer::orders_sent(int index) const {
  MutexLock l(&mu_);
  auto it = sent_.find(index);
  return it == sent_.end() ? 0 : it->second;
}

}  // namespace switchyard::workers
