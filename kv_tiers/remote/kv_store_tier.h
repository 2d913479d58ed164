// KvStoreTier: a kv_tiers::PeerTier backed by a KV store — its blocks live in another
// process's KV store (a `switchyard worker`'s KvStoreServer, kv_store/) and move
// through a KvStoreClient with the commit rule end to end: per-destination credit -> post -> the
// worker validates length, checksum, owner, epochs and generation -> commits -> acks, returning the
// credit -> only then does Write() return OK (so the BlockManager may let the sender free its copy,
// invariant 2). A write that carries the block's stored checksum sends it as the block's wire
// checksum (no hashing here) and the worker verifies the bytes against it, so the tier reports
// verifies_writes and a move into it is validated without reading the block back.
// Read() is a validated get (owner, epochs, generation, length, checksum checked by the
// requester before any byte is reported usable).
//
// Mapping: an Extent's slot is the block id at the worker; the owner sent with every
// transfer is (workflow id = the tenant, context id = `context` below), so a block is
// only ever served back to the tier that wrote it; each Write of a slot uses a newer
// generation, so an older copy is never served after a rewrite (the worker rejects a
// stale generation). Free() asks the worker to drop the block. Capacity and quotas are
// accounted here (capacity_bytes should not exceed the worker's); the worker enforces its
// own capacity too (a put it cannot hold is rejected with `capacity`).
//
// A worker that restarts comes back as a new process with an empty store: Reconnect points
// the tier at it. Slots allocated before stay allocated (their owner frees them) but hold
// nothing there: a read of one is DataLoss (block scope), its free drops only the
// accounting, and a new write of it commits at the new worker as usual.
//
// Ownership: the tier owns its KvStoreClient (and through it the connection).
// Thread-safety: as Tier; slot bookkeeping is under a mutex, transfers run unlocked (on
// the client current when they started: a reconnect does not cut one short).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "base/mutex.h"
#include "kv_store/direct_order.h"
#include "kv_store/kv_store_client.h"
#include "kv_tiers/peer_tier.h"

namespace switchyard::kv_tiers::remote {

struct KvStoreTierOptions {
  std::string context = "peer-tier";    // the owner's context id at the worker
  transport::TransferOptions transfer;  // class, deadline, flow key of block transfers
  switchyard::PeerId peer_id;           // this peer's identity in the caller's terms
};

class KvStoreTier final : public kv_tiers::PeerTier {
 public:
  // Connects to the worker at `address` ("HOST:PORT").
  static Result<std::unique_ptr<KvStoreTier>> Connect(
      const std::string& address, const TierOptions& tier_options,
      const kv_store::KvStoreClientOptions& client = {}, KvStoreTierOptions options = {});

  // "peer:<address at Connect>": fixed for the tier's life (the block manager knows the
  // tier by it), also after a Reconnect to another address; endpoint() is the current one.
  std::string name() const override { return name_; }
  TierCapabilities capabilities() const override;
  switchyard::PeerId peer() const override { return options_.peer_id; }
  std::string endpoint() const override {
    std::shared_ptr<kv_store::KvStoreClient> c = Client();
    return c ? c->address() : std::string();
  }
  TierKind remote_kind() const override { return v1::TIER_HOST; }

  Result<Extent> Allocate(const std::string& tenant, uint64_t bytes) override;
  Status Free(const Extent& extent) override;
  Status Write(std::span<const BlockWrite> writes) override;
  Status Read(std::span<const BlockRead> reads) override;

  // A tier with no worker yet (a spare slot of serve's): every transfer is Unavailable
  // until Reconnect names one; its name is "peer:detached-<context>" for its life.
  static std::unique_ptr<KvStoreTier> Detached(const TierOptions& tier_options,
                                               KvStoreTierOptions options);

  // The worker's client now (a reconnect replaces it; null while detached).
  std::shared_ptr<kv_store::KvStoreClient> client() const { return Client(); }
  // A new incarnation of the worker listens at `address` (see above). InvalidArgument when
  // it holds less than this tier's capacity; the connect's error otherwise. On an error
  // the tier keeps its current client.
  Status Reconnect(const std::string& address, const kv_store::KvStoreClientOptions& client);
  uint64_t incarnation() const;  // 0, then +1 per Reconnect
  // The events of the last transfer of `slot` (tests and metrics: invariant 3).
  Result<kv_store::TransferEvents> LastEvents(uint64_t slot) const;
  // Direct moves between two workers' stores (direct_put_mover.h: the source's worker
  // puts straight into the destination's store; no byte crosses this process).
  // An end of such a put: the slot's block id and generation there, its bytes, the store
  // as this tier talks to it (address, transport, incarnation, model epoch, owner), and
  // the tier's incarnation count.
  struct DirectEnd {
    uint64_t block_id = 0;
    uint64_t generation = 0;  // source: the committed copy's; destination: the one to write
    uint64_t bytes = 0;
    kv_store::StoreRef store;
    uint64_t incarnation = 0;
  };
  // `extent` as a direct put's source: DataLoss (block scope) when nothing is stored there,
  // or only at an earlier incarnation of the worker.
  Result<DirectEnd> DirectSource(const Extent& extent, uint64_t bytes) const;
  // `extent` as a direct put's destination: the generation the put writes is one above
  // the committed copy's (a rewrite supersedes it).
  Result<DirectEnd> DirectDestination(const Extent& extent, uint64_t bytes) const;
  // The worker committed `written` (a DirectDestination answer) through a direct put, or
  // may have (the put's outcome is unknown): recorded as a Write's commit is, so that a
  // Read gets that generation and Free drops the block at the worker (freeing a block it
  // does not hold is a no-op there). Ignored for another incarnation or a freed slot.
  void RecordDirectWrite(const Extent& extent, const DirectEnd& written,
                         const kv_store::TransferEvents& events);

  // Puts and gets posted so far (each Write/Read block is one).
  uint64_t puts_posted() const { return puts_.load(std::memory_order_relaxed); }
  uint64_t gets_posted() const { return gets_.load(std::memory_order_relaxed); }

 private:
  KvStoreTier(const TierOptions& tier_options, std::unique_ptr<kv_store::KvStoreClient> client,
              KvStoreTierOptions options);
  struct Slot {
    std::string tenant;
    uint64_t bytes = 0;
    uint64_t generation = 0;  // of the committed copy at the worker; 0: never written
    kv_store::TransferEvents last;
    uint64_t incarnation = 0;  // of the worker that holds the committed copy
  };
  Result<Slot> Lookup(const Extent& extent, uint64_t bytes) const;
  Result<DirectEnd> DirectEndOf(const Extent& extent, uint64_t bytes, bool source) const;
  std::shared_ptr<kv_store::KvStoreClient> Client() const;
  Status NoWorker() const;

  const std::string name_;
  std::shared_ptr<kv_store::KvStoreClient> client_ GUARDED_BY(mu_);  // under mu_
  uint64_t incarnation_ GUARDED_BY(mu_) = 0;                         // under mu_
  KvStoreTierOptions options_;
  mutable Mutex mu_;
  std::map<uint64_t, Slot> slots_ GUARDED_BY(mu_);
  uint64_t next_slot_ GUARDED_BY(mu_) = 1;
  std::atomic<uint64_t> puts_{0}, gets_{0};
};

}  // namespace switchyard::kv_tiers::remote
