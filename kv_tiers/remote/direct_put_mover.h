// DirectPutMover ("direct"): moves blocks between two workers' KV stores (two
// KvStoreTiers) with no byte crossing this process. Where RelayMover reads each block
// out of the source store and writes it into the destination (twice the traffic, this
// host's NIC in the middle), this mover orders the worker holding the source store to put
// the blocks straight into the destination store (DirectPutOrder: source and destination
// as the tiers know them, the blocks with their ids, generations and stored checksums, the
// move's traffic class) and ends the move on that worker's report.
//
// PutOrderer abstracts how an order reaches the source's worker and how its outcome comes
// back: serve sends it over that worker's control connection (workers/put_orders.h); a
// test can run a DirectPutter in process.
//
// Completion (invariants 1 and 3): the move is OK only when the report says the
// destination's transport completed, it validated and it committed every block, each with
// the source's stored checksum. Only then does the BlockManager validate (the tier
// verifies writes) and commit the destination block: serve commits on the report, never
// on the send. The destination tier records the committed generation (so reads get it) —
// also when the outcome is unknown (sent, and the report lost with its worker, or late),
// so that the BlockManager's drop of the failed destination frees whatever landed there.
// A destination whose worker was lost is not recorded (its store went with it).
// Fallback: for a worker that takes no orders Supports() is false, so MoverSet picks the
// next mover (serve's RelayMover). A destination store the source's worker could not
// reach (its report says unreachable; nothing was sent) makes Supports() false for that
// pair from then on, and the move itself is handed to `fallback` when one is given (else
// it fails). Deadline: an order not reported within its timeout (the move's deadline,
// else Options::order_timeout) plus Options::grace is abandoned: the move fails.
// Cancellation: a put in flight cannot be withdrawn; a cancelled move ends with its report
// (or the deadline), and the BlockManager drops the destination then.
//
// Ownership: shares the orderer; its state outlives the mover while orders are out.
// Thread-safety: Submit/Supports from any thread; completions are posted to env.loop.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "kv_store/direct_order.h"
#include "kv_tiers/mover.h"
#include "kv_tiers/remote/kv_store_tier.h"

namespace switchyard::kv_tiers::remote {

class PutOrderer {
 public:
  using Done = std::function<void(kv_store::DirectPutOutcome)>;
  virtual ~PutOrderer() = default;
  // Whether the worker holding `src`'s store takes put orders and can be pointed at
  // `dst`'s store (capabilities; a lost worker fails the order instead).
  virtual bool Reaches(const KvStoreTier& src, const KvStoreTier& dst) const = 0;
  // Sends `order` to the worker holding `src`'s store. `done` runs once, on any thread:
  // with that worker's outcome, or with an error when either worker is lost (the outcome
  // says which) or the order is abandoned. An error return: nothing was sent and `done`
  // never runs.
  virtual Status Order(const KvStoreTier& src, const KvStoreTier& dst,
                       kv_store::DirectPutOrder order, Done done) = 0;
  // Ends order `order_id` with `why` unless its outcome came (its `done` runs now, with
  // the events unknown); false when it had ended.
  virtual bool Abandon(uint64_t order_id, const Status& why) = 0;
};

struct DirectPutMoverStats {
  uint64_t orders = 0;
  uint64_t committed = 0;
  uint64_t failed = 0;
  uint64_t bytes_committed = 0;
  uint64_t fell_back = 0;  // moves handed to the fallback mover (unreachable destination)
};

class DirectPutMover final : public Mover {
 public:
  struct Options {
    Duration order_timeout = Seconds(10);  // for moves without a deadline
    Duration grace = Seconds(5);           // beyond the timeout before the order is abandoned
    // Abandon unreported orders (a timer on env.loop). Off on a virtual loop, whose time
    // jumps to the timer while the report is still on its way in real time.
    bool watchdog = true;
  };
  DirectPutMover(const MoverEnv& env, std::shared_ptr<PutOrderer> orderer, Options options,
                 std::shared_ptr<Mover> fallback = nullptr);
  DirectPutMover(const MoverEnv& env, std::shared_ptr<PutOrderer> orderer,
                 std::shared_ptr<Mover> fallback = nullptr)
      : DirectPutMover(env, std::move(orderer), Options(), std::move(fallback)) {}
  std::string name() const override { return "direct"; }
  bool Supports(const Tier& src, const Tier& dst) const override;
  Result<MoveHandle> Submit(MoveRequest request, MoveCallback on_complete) override;
  DirectPutMoverStats stats() const;

  struct Shared;  // what completions need (direct_put_mover.cc)

 private:
  MoverEnv env_;
  Options options_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace switchyard::kv_tiers::remote
