// DirectPutter: the sender side of a direct worker-to-worker put. A worker copies
// committed blocks of its own KV store (its KvStoreServer, read in process) into another
// worker's store over the KV-store protocol (a KvStoreClient: the destination grants and
// enforces credit, validates and commits), as serve orders it (worker control protocol,
// PutBlocks). Serve's DirectPutMover (kv_tiers/remote/direct_put_mover.h) orders the put and
// commits the destination block in its BlockManager on the outcome; this class carries the order
// out.
//
// Source (invariant 1): an order names each source block as serve knows it (id, owner,
// communicator and model epoch, generation, checksum). A block that is not committed with
// exactly those (ReadCommitted: the checks of a get), or whose stored checksum differs
// from serve's, fails the order naming it, and nothing is sent. The pinned copies keep
// the bytes alive until the put ends (invariant 2).
// Destination: named with the incarnation (communicator epoch) serve's tier of it talks
// to; a session that finds another incarnation fails the order before anything is sent
// (invariant 4). A store that cannot be reached fails it as `unreachable` (serve may then
// relay the move instead). The blocks go as one put under the destination's owner, model
// epoch and the order's generation, in the order's traffic class (invariant 6), under the
// credit the destination granted this sender (invariant 7): without credit left the put
// waits for some to return; a put the destination refuses for credit (its incast limit,
// shared with other senders) is re-sent once credit returned, until the order's deadline.
// The outcome keeps the destination's events apart (transport complete, validated,
// committed: invariant 3); only all three make it OK.
//
// Threads: Submit only queues. A sender thread reads the source, connects (one KvStoreClient
// per destination address, kept while it works) and posts; a completion thread waits for
// the acks in posting order and calls `done`. Several orders are in flight at once, up to
// the destination's credit; orders are started in arrival order (one waiting for credit
// holds up the ones behind it).
// Ownership: borrows the KvStoreServer (it must outlive the putter). Thread-safety: Submit and
// stats() are thread-safe; `done` runs on the putter's threads. The destructor finishes
// what was posted (each put ends by its deadline) and reports orders not started as
// Cancelled.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/time.h"
#include "kv_store/direct_order.h"
#include "kv_store/kv_store_client.h"
#include "kv_store/kv_store_server.h"

namespace switchyard::kv_store {

struct DirectPutterOptions {
  std::string sender_name = "direct-put";  // this sender at the destinations (logs)
  Duration default_timeout = Seconds(10);
};

struct DirectPutStats {
  uint64_t orders = 0;
  uint64_t puts_committed = 0;
  uint64_t orders_failed = 0;
  uint64_t bytes_committed = 0;
  uint64_t credit_retries = 0;  // puts re-sent after the destination refused them for credit
};

class DirectPutter {
 public:
  using Done = std::function<void(DirectPutOutcome)>;
  DirectPutter(KvStoreServer* source, DirectPutterOptions options = {});
  ~DirectPutter();
  DirectPutter(const DirectPutter&) = delete;
  DirectPutter& operator=(const DirectPutter&) = delete;

  // Queues the order; `done` is called once with its outcome.
  void Submit(DirectPutOrder order, Done done);
  DirectPutStats stats() const;

 private:
  struct Job;
  struct Posted {
    std::shared_ptr<Job> job;
    std::optional<PendingPut> put;
  };
  void SendLoop();
  void CompleteLoop();
  // Pins the source blocks and finds the destination's session; the put is then built.
  Status Prepare(Job& job);
  Status PinSource(Job& job);
  Result<std::shared_ptr<KvStoreClient>> ClientFor(const StoreRef& dst, Duration timeout);
  // PostPut, waiting for credit the destination granted this sender while none is left.
  Result<PendingPut> PostWithCredit(Job& job);
  void OnAcked(std::shared_ptr<Job> job, Result<TransferEvents> ev);
  void Finish(Job& job, Status status);

  KvStoreServer* const source_;
  const DirectPutterOptions options_;
  mutable Mutex mu_;
  CondVar send_cv_, complete_cv_, credit_cv_;
  std::deque<std::shared_ptr<Job>> queue_
      GUARDED_BY(mu_);                            // to post (a credit refusal goes back in front)
  std::deque<Posted> posted_ GUARDED_BY(mu_);     // waiting for their acks, in posting order
  std::set<std::string> broken_ GUARDED_BY(mu_);  // destinations whose session failed
  uint64_t acks_ GUARDED_BY(mu_) = 0;             // acks seen (credit may have returned)
  bool stop_ GUARDED_BY(mu_) = false;
  bool sender_done_ GUARDED_BY(mu_) =
      false;  // the sender thread ended (destructor): nothing more is posted
  DirectPutStats stats_ GUARDED_BY(mu_);
  // The sender thread's sessions, by destination address.
  std::map<std::string, std::shared_ptr<KvStoreClient>> clients_;
  std::thread sender_, completer_;
};

}  // namespace switchyard::kv_store
