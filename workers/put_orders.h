// ControlPutOrderer: serve's side of direct worker-to-worker puts — the PutOrderer of
// kv_tiers' DirectPutMover (kv_tiers/remote/direct_put_mover.h) over the worker
// control protocol. An order goes to the worker holding the source store as a PutBlocks
// on that worker's control connection; the worker's PutBlocksDone comes back to the mover
// as the order's outcome (workers/worker_agent.h carries the order out).
//
// Stores: serve registers each joined worker's KV store (its HBM tier, a KvStoreTier)
// as it connects it. Reaches(src, dst): two registered stores of two different workers,
// and the source's hello says it takes put orders (kv_direct_puts); otherwise the mover
// set falls back to serve's relay.
// Failure (invariant 5): an order to or from a worker already lost is refused
// (Unavailable, nothing sent). A worker lost with orders out ends them at once
// (Unavailable, remote scope, naming the worker and why): the ones it was to carry out (its
// report will never come; what it sent is unknown) and the ones putting into its store
// (the outcome says destination_lost: the store went with it). A report from a worker
// for an order it was not given is ignored, as is a late one for an ended order.
//
// Teardown: Close() (serve's service is about to go: the `done` callbacks reach its loop
// and tiers) ends the orders still out at once (Aborted, "serve is stopping": their moves
// fail while the service still lives, so no BlockManager waits for them), refuses later
// orders (Unavailable, nothing sent) and ignores later reports and losses — so the bye
// serve's JoinServer sends its workers afterwards (RemoteWorker::Shutdown, a loss to this
// orderer) runs no callback into the freed service. Close returns once every `done`
// running on another thread has returned.
//
// Ownership: borrows the RemoteWorkers (the JoinServer's; they outlive the orderer's use).
// Thread-safety: all methods are thread-safe; `done` callbacks run without the orderer's
// lock, on the caller's thread or a connection's, and must not call Close.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "kv_tiers/remote/direct_put_mover.h"
#include "workers/join_server.h"

namespace switchyard::workers {

using PutOrderDone = kv_tiers::remote::PutOrderer::Done;

class ControlPutOrderer final : public kv_tiers::remote::PutOrderer {
 public:
  // `worker`'s KV store is `tier`.
  void AddStore(const kv_tiers::remote::KvStoreTier* tier, RemoteWorker* worker);
  // Routes `worker`'s reports and loss here (RemoteWorker::SetKvSink).
  static void Attach(const std::shared_ptr<ControlPutOrderer>& orderer, RemoteWorker* worker);

  bool Reaches(const kv_tiers::remote::KvStoreTier& src,
               const kv_tiers::remote::KvStoreTier& dst) const override;
  Status Order(const kv_tiers::remote::KvStoreTier& src, const kv_tiers::remote::KvStoreTier& dst,
               kv_store::DirectPutOrder order, Done done) override;
  bool Abandon(uint64_t order_id, const Status& why) override;

  // Worker `index`'s report of an order.
  void OnDone(int index, const v1::PutBlocksDone& m);
  // Worker `index` was lost (or serve stops): its orders end.
  void OnLost(int index, const Status& why);
  // Orders sent to worker `index` (as the source of a move).
  uint64_t orders_sent(int index) const;
  // Ends the orderer's use (see the header comment). Idempotent.
  void Close();

 private:
  struct Pending {
    int src = -1, dst = -1;
    std::string src_id, dst_id;
    Done done;
  };
  RemoteWorker* WorkerOf(const kv_tiers::remote::KvStoreTier& tier) const;
  // Removes order `id` and ends it with `why` (unknown events), unless it ended.
  bool Fail(uint64_t id, const Status& why, bool destination_lost);
  // Takes order `it`'s `done` out of pending_ (under mu_) and counts it running until
  // Finished(): Close waits for it.
  Done TakeLocked(std::map<uint64_t, Pending>::iterator it) REQUIRES(mu_);
  void Finished(size_t n);

  mutable Mutex mu_;
  CondVar idle_cv_;  // running_ fell to 0
  bool closed_ GUARDED_BY(mu_) = false;
  size_t running_ GUARDED_BY(mu_) = 0;  // `done` callbacks running now
  std::map<const kv_tiers::remote::KvStoreTier*, RemoteWorker*> stores_ GUARDED_BY(mu_);
  std::map<uint64_t, Pending> pending_ GUARDED_BY(mu_);
  std::map<int, uint64_t> sent_ GUARDED_BY(mu_);
};

}  // namespace switchyard::workers
