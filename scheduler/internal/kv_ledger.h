// KvLedger: where every KV context of the scheduler core lives and how much room each
// worker's tiers have (the core's counterpart of vLLM V1's KVCacheManager beside its
// scheduler). Internal to scheduler::Core: only the core's .cc files include it.
//
// It owns
//   * the contexts (`"<wf>/<ctx>"` -> CtxRec): model, epoch, tokens, bytes (whole blocks),
//     committed Location, the move in flight, the running nodes reading them;
//   * the moves in flight (transfer id -> XferRec: context, source, destination, bytes,
//     the grant the core took for it);
//   * the shared-prefix copies ((PrefixKey, worker) -> PrefixRec): blocks charged once in
//     that worker's HBM, the contexts resident there that reference them, their readers
//     and the node still computing them;
//   * per worker (WorkerKv): HBM `used`, host and disk `used`, the contexts committed in
//     its HBM (`resident`) and in its host or disk tier (`offloaded`);
//   * the KV geometry: HBM capacity per worker, host / disk capacity, block size, bytes per
//     token of each model.
// and answers what the core asks about room: Free, HasRoom, the eviction candidates of a
// worker, the idle prefix copies, the bytes leaving a worker's HBM.
//
// Invariants (kept by its methods; the core never writes the fields they name):
//   1. used(w) = bytes of the contexts committed in w's HBM (tier hbm, or peer copies held
//      there) + bytes of moves in flight into w's HBM + w's shared-prefix copies + the
//      growth reserved by nodes running on w (Reserve / Unreserve). A move holds its
//      destination from BeginMove and releases its source only when it commits (invariant
//      2: a source buffer lives until its transfer has completed). host_used / disk_used
//      likewise for w's offload tiers. The core admits work only into Free(w), so `used`
//      stays within capacity except for decode growth the engine reports, which the core
//      answers by eviction and preemption.
//   2. resident(w) holds exactly the contexts whose committed location is hbm or peer on
//      w, offloaded(w) those on w's host or disk tier (SetLoc keeps both).
//   3. c.transfer != 0 exactly while a move of c is in flight; at most one per context.
//   4. A context references (prefix_worker) the copy of its shared prefix on the worker
//      whose HBM holds it, if that worker has one, and is among that copy's holders.
//   5. A context whose workflow ended (`dead`) is erased once no move of it is in flight.
//   6. Pure bookkeeping: no commands, no policy, no clock (the core gives it `now`), no
//      threads or I/O. What the ledger drops (a discarded context, a prefix copy) the core
//      announces with a kDiscard.
//   7. changes() grows whenever room that nodes may be waiting for appears (a prefix copy
//      goes idle, is dropped or is finished).
//
// A CtxRec's remaining fields (tool wait, timed prefetch and re-evaluation, deferrals,
// pins, the workflow it belongs to) are the core's decision state about the context: the
// ledger stores them with it and reads `evict_pending` (a deferred eviction counts as room
// on its way), but never decides on them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/time.h"
#include "scheduler/core.h"
#include "scheduler/types.h"

namespace switchyard::scheduler::internal {

struct WfRec;  // core_state.h: the workflow a context belongs to (stored, never read here)

struct CtxRec {
  std::string key, wf, model;
  std::string name;  // the context's name within its workflow
  uint64_t epoch = 0;
  // KV facts: changed only through KvLedger.
  int64_t tokens = 0;
  uint64_t bytes = 0;
  Location loc;           // committed location (kNone: must be recomputed)
  uint64_t transfer = 0;  // in-flight transfer id, 0 if none
  int users = 0;          // running nodes reading/extending it
  bool dead = false;      // workflow ended; erased when no transfer is in flight
  Time idle_since{0};
  // Moves out of HBM that failed in a row (the tier refused the blocks): after a few, no
  // more are tried until one succeeds, so a refusing tier cannot cause endless retries.
  int failed_moves = 0;
  // The tenant's shared prefix the context starts with (CoreOptions::share_prefixes): its
  // key (PrefixKey) and tokens; `tokens` and `bytes` above are then the context's own,
  // after the prefix. prefix_worker: the worker whose copy this context references (-1:
  // none; a context references the copy on the worker whose HBM holds it).
  std::string prefix;
  int64_t prefix_tokens = 0;
  int prefix_worker = -1;

  // The core's decision state about the context.
  WfRec* owner = nullptr;  // its workflow (WfRec addresses are stable in the core's map)
  Time prefetch_at = Time::Max();
  Time reeval_at = Time::Max();
  Time wait_started{0};
  int wait_tool = -1;  // tool node the context is waiting on
  int home = -1;       // worker whose HBM it left when demoted
  // A demotion the policy chose but the link budget refused for now (its class is in debt
  // from earlier moves): retried at reeval_at instead of falling back to discard.
  int deferrals = 0;
  Time grant_refused_since = Time::Max();  // first refused grant of the move still wanted
  bool evict_pending = false;              // the deferred demotion was an eviction
  Time pinned_until{0};                    // WaitDecision::pin_for of the last keep
  Time retain_until{0};      // the wait's Hints.retain_ms: not dropped for recompute before
  int prefetch_retries = 0;  // timed reloads waiting for room (OnPrefetchTimer)
};

// One worker's copy of a tenant's shared prefix: its blocks, committed in that worker's
// HBM and charged there once, however many contexts start with it. `holders` are the
// contexts resident on the worker that reference it; `users` the running nodes reading
// it. With neither it is idle: kept (a later context may hit it) until an eviction needs
// the room. `builder` is the node computing it (its prefill has not covered it yet): no
// other node reads it until then.
struct PrefixRec {
  std::string key;  // PrefixKey: also the engine's context key of these blocks
  std::string model;
  uint64_t epoch = 0;
  int worker = -1;
  int64_t tokens = 0;
  uint64_t bytes = 0;
  std::unordered_set<CtxRec*> holders;
  int users = 0;
  Time idle_since{0};
  std::pair<std::string, int> builder{"", -1};  // (workflow, node index); node -1: built
  bool idle() const { return holders.empty() && users == 0 && builder.second < 0; }
};

struct XferRec {
  std::string ctx;
  Location src, dst;
  uint64_t bytes = 0;
  uint64_t grant = 0;
  bool discard_on_done = false;
};

// One worker's KV room.
struct WorkerKv {
  uint64_t used = 0;                      // HBM (invariant 1)
  uint64_t host_used = 0, disk_used = 0;  // held in its host and disk offload tiers
  std::unordered_set<CtxRec*> resident;   // contexts committed in this HBM
  std::unordered_set<CtxRec*> offloaded;  // committed in its host or disk tier
};

class KvLedger {
 public:
  // `options` with its per-worker lists already sized to `workers`; `cost` prices every
  // model options.model_costs does not name.
  KvLedger(const CoreOptions& options, const ComputeCostModel* cost, size_t workers);
  KvLedger(const KvLedger&) = delete;
  KvLedger& operator=(const KvLedger&) = delete;

  void SetNow(Time now) { now_ = now; }
  uint64_t changes() const { return changes_; }  // invariant 7

  // Geometry.
  int workers() const { return static_cast<int>(workers_.size()); }
  uint64_t Capacity(int w) const { return hbm_capacity_[static_cast<size_t>(w)]; }
  uint64_t BytesPerToken(const std::string& model) const;
  // Bytes of the whole KV blocks that `tokens` tokens of `model` occupy.
  uint64_t BlockBytes(int64_t tokens, const std::string& model) const {
    int64_t b = std::max<int64_t>(1, block_tokens_);
    return tokens <= 0 ? 0 : static_cast<uint64_t>((tokens + b - 1) / b * b) * BytesPerToken(model);
  }

  // Room.
  uint64_t Used(int w) const { return workers_[static_cast<size_t>(w)].used; }
  uint64_t Free(int w) const {
    uint64_t cap = Capacity(w), used = Used(w);
    return used >= cap ? 0 : cap - used;
  }
  // `l` is a worker's HBM (a context there, or a peer copy held in it).
  bool HbmAccounted(const Location& l) const {
    return (l.tier == Tier::kHbm || l.tier == Tier::kPeer) && l.worker >= 0 && l.worker < workers();
  }
  // Room for `bytes` in a worker's host or disk tier (always, when not modelled).
  bool OffloadRoom(const Location& l, uint64_t bytes) const;
  // Room for `bytes` more at `dst`: free HBM there, or room in its offload tier.
  bool HasRoom(const Location& dst, uint64_t bytes) const {
    return !(HbmAccounted(dst) && Free(dst.worker) < bytes) && OffloadRoom(dst, bytes);
  }
  // Holds (`delta` > 0) or releases bytes at `l` (HBM, host or disk of its worker).
  void Hold(const Location& l, int64_t delta);
  // Growth a running node reserves in w's HBM beyond its contexts' blocks, and its release.
  void Reserve(int w, uint64_t bytes) { workers_[static_cast<size_t>(w)].used += bytes; }
  void Unreserve(int w, uint64_t bytes) {
    uint64_t& used = workers_[static_cast<size_t>(w)].used;
    used -= std::min(used, bytes);
  }
  const std::unordered_set<CtxRec*>& Resident(int w) const {
    return workers_[static_cast<size_t>(w)].resident;
  }
  const std::unordered_set<CtxRec*>& Offloaded(int w) const {
    return workers_[static_cast<size_t>(w)].offloaded;
  }

  // Contexts.
  bool Has(const std::string& key) const { return ctxs_.count(key) > 0; }
  CtxRec* Find(const std::string& key);
  const CtxRec* Find(const std::string& key) const;
  CtxRec& At(const std::string& key) { return ctxs_.at(key); }  // known to exist
  CtxRec& Create(const std::string& key);                       // empty, committed nowhere
  // Commits `c` at `l` (resident / offloaded sets, the prefix copy it references).
  void SetLoc(CtxRec& c, const Location& l);
  // The context grows by `tokens`; returns the bytes its blocks grew by, held where it
  // lives when `hold` (else the caller holds them).
  uint64_t Grow(CtxRec& c, int64_t tokens, bool hold);
  // The context is cut to its first `tokens`; the freed blocks are released where it
  // lives when `release` (a copy the engine cuts too), else only no longer counted.
  void Truncate(CtxRec& c, int64_t tokens, bool release);
  // A running node computes `c` into w's HBM (it was nowhere, empty, or a peer copy,
  // which is released there).
  void CommitInHbm(CtxRec& c, int w);
  void AddUser(CtxRec& c) { c.users++; }
  void RemoveUser(CtxRec& c) {
    c.users = std::max(0, c.users - 1);
    c.idle_since = now_;
  }
  // Drops the context's blocks (a move in flight drops them when it ends). The location it
  // is dropped from, or nothing when there was nothing to drop.
  std::optional<Location> Discard(CtxRec& c);
  // Its workflow ended: dead, and erased now unless a move of it is in flight.
  void Retire(CtxRec& c);
  // Erases a dead context with no move in flight; true when erased.
  bool EraseIfRetired(CtxRec& c);
  // Keys of the contexts stored on worker w (any tier), sorted.
  std::vector<std::string> ContextsOn(int w) const;
  // Keys of the live contexts of `model` with an epoch older than `epoch` that hold KV or
  // are moving, sorted.
  std::vector<std::string> StaleContexts(const std::string& model, uint64_t epoch) const;

  // Moves.
  // Records a move of `c` to `dst` under `grant`, holding its destination; its id.
  uint64_t BeginMove(CtxRec& c, const Location& dst, uint64_t grant);
  // Takes a move out of the ledger (nothing: not in flight).
  std::optional<XferRec> TakeMove(uint64_t id);
  // Settles a move TakeMove returned: commits it at its destination (`ok`) or releases the
  // destination, drops a context discarded meanwhile, erases a dead one. The context when
  // it now holds the moved copy, else null.
  CtxRec* SettleMove(const XferRec& x, bool ok);
  // Ends every move to or from worker w (it was lost) and returns them in id order; their
  // destinations are released, contexts discarded meanwhile dropped.
  std::vector<XferRec> AbortMovesTouching(int w);
  // A move in flight reads or writes w's HBM (or a peer copy held there).
  bool MovesTouchHbm(int w) const;
  // Bytes of the moves in flight out of w's HBM to another tier.
  uint64_t BytesLeavingHbm(int w) const;

  // Eviction candidates of worker w: the bytes already leaving its HBM (moves out, or
  // deferred evictions) and its idle resident contexts (no move, no reader, not dead, not
  // in `keep`), in no particular order.
  struct EvictionView {
    uint64_t leaving = 0;
    std::vector<CtxRec*> idle;
  };
  EvictionView EvictionCandidates(int w, const std::vector<std::string>& keep) const;

  // Shared-prefix copies.
  PrefixRec* FindPrefix(const std::string& key, int worker);
  const PrefixRec* FindPrefix(const std::string& key, int worker) const;
  bool PrefixBuilding(const std::string& key, int worker) const;
  // Creates the copy on `worker`, built by `builder`; charges its bytes there.
  PrefixRec& AddPrefix(const std::string& key, int64_t tokens, int worker,
                       std::pair<std::string, int> builder, const std::string& model,
                       uint64_t epoch);
  void PrefixBuilt(PrefixRec& p);  // its builder's prefill covered it: readable
  void AddPrefixUser(PrefixRec& p) { p.users++; }
  void RemovePrefixUser(PrefixRec& p);
  void AttachPrefix(CtxRec& c);  // references the copy where c is resident, if any
  void DetachPrefix(CtxRec& c);
  // Drops the copy and detaches its holders (the core emits the kDiscard).
  void DropPrefix(PrefixRec& p);
  // Worker w was lost: its copies are forgotten (nothing to release or announce).
  void ForgetPrefixesOn(int w);
  uint64_t IdlePrefixBytes(int w) const;
  std::vector<PrefixRec*> IdlePrefixesLru(int w);  // least recently used first
  std::vector<PrefixRec*> StalePrefixes(const std::string& model, uint64_t epoch);
  int64_t PrefixTokensOn(const std::string& key, int worker) const;  // -1: none there

  // Workers.
  void ClearWorker(int w);  // lost: nothing of its HBM, host or disk counts
  void ResetWorker(int w);  // back as a new incarnation: empty

 private:
  std::vector<uint64_t> hbm_capacity_;
  uint64_t host_capacity_ = 0, disk_capacity_ = 0;  // per worker; 0: not modelled
  int64_t block_tokens_ = 1;
  std::map<std::string, const ComputeCostModel*> model_costs_;
  const ComputeCostModel* cost_;
  Time now_{0};
  uint64_t changes_ = 0;
  uint64_t next_xfer_ = 1;
  // Hash maps (element addresses are stable; nothing depends on their iteration order:
  // code that walks them sorts what it collects).
  std::unordered_map<std::string, CtxRec> ctxs_;
  std::map<uint64_t, XferRec> xfers_;
  std::map<std::pair<std::string, int>, PrefixRec> prefixes_;  // (prefix key, worker)
  std::vector<WorkerKv> workers_;
};

}  // namespace switchyard::scheduler::internal
