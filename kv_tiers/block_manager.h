// BlockManager: the block state machine and the commit rule (docs/design.md invariants 1-4).
//
// Every block copy lives in one tier and walks
//   FREE -> ALLOCATED -> WRITING | TRANSFERRING -> VALIDATED -> COMMITTED
//        -> DEMOTING (copied down, still readable) | EVICTING (no new readers) -> FREE.
// The manager refuses every other transition (FailedPrecondition naming both states).
// Commit rule: Read() returns a lease only when the block is COMMITTED and the reader's
// workflow/context, model_epoch and generation all match. BumpModelEpoch() invalidates
// every block of the old epoch; Rewrite() bumps the generation; FinishWrite() and move
// validation verify an XXH3-64 checksum; a failed, partial, corrupted or stale move
// never becomes readable. Sources of in-flight moves are pinned until the move completes
// or is cancelled (invariant 2). Each transfer records its four events separately
// (invariant 3): transport completion, receiver validation, runtime commit, consumer
// completion (MarkConsumed).
//
// Prefix blocks (spec.prefix_hash != 0) are shared within a tenant: FindPrefix() adds a
// reference, Release() drops one, and the block is freed when the last one goes. Private
// blocks are keyed by (context, index, generation).
//
// Ownership: the manager owns its records and the extents it allocated; it borrows the
// tiers, movers, eviction policy and loop, which must outlive it. Destruction cancels
// and waits for in-flight moves and returns memory extents; blocks on persistent tiers
// are left for Recover() in the next process.
// Thread-safety: not thread-safe. Call it from the EventLoop thread; mover completions
// are posted there.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/event_loop.h"
#include "base/ids.h"
#include "base/result.h"
#include "kv_tiers/eviction.h"
#include "kv_tiers/layout.h"
#include "kv_tiers/mover.h"
#include "kv_tiers/tier.h"
#include "kv_tiers/worker_pool.h"
#include "proto/switchyard/v1/kv.pb.h"

namespace switchyard::kv_tiers {

struct BlockSpec {
  std::string tenant;
  std::string workflow_id;
  std::string context_id;
  uint32_t index = 0;
  uint64_t prefix_hash = 0;  // non-zero: a shared, content-addressed prefix block
  uint32_t num_tokens = 0;
  uint64_t bytes = 0;  // 0: the layout's bytes_per_block
};

// What a reader presents; all must match the block (invariant 1). A private block's owner
// is its (workflow_id, context_id); a shared prefix block's owner is its tenant.
struct ReadRequest {
  std::string tenant;
  std::string workflow_id;
  std::string context_id;
  uint64_t model_epoch = 0;
  uint64_t generation = 0;
};

// The four events of one transfer (invariant 3), recorded separately.
struct TransferRecord {
  TransferId id;
  BlockId source;
  BlockId destination;
  std::string source_tier;
  std::string destination_tier;
  uint64_t bytes = 0;
  uint64_t model_epoch = 0;
  uint64_t generation = 0;
  v1::TrafficClass traffic_class = v1::TRAFFIC_CLASS_UNSPECIFIED;
  v1::CompletionState state = v1::POSTED;
  Status status;  // why it was rejected / failed / cancelled
  Time posted_at;
  std::optional<Time> transport_completed_at;
  std::optional<Time> validated_at;
  std::optional<Time> committed_at;
  std::optional<Time> consumed_at;
};

class BlockManager;

// A pin on a committed block while it is read. Move-only; releasing it unpins.
class ReadLease {
 public:
  ReadLease() = default;
  ~ReadLease() { Release(); }
  ReadLease(ReadLease&& o) noexcept;
  ReadLease& operator=(ReadLease&& o) noexcept;
  ReadLease(const ReadLease&) = delete;
  ReadLease& operator=(const ReadLease&) = delete;

  BlockId id() const { return id_; }
  // Addressable tiers: the block bytes (device memory for a CUDA tier); null otherwise.
  const void* data() const { return data_; }
  uint64_t bytes() const { return bytes_; }
  // Copies the bytes into host memory `dst` (any tier).
  Status CopyTo(void* dst, uint64_t bytes) const;
  void Release();

 private:
  friend class BlockManager;
  BlockManager* manager_ = nullptr;
  BlockId id_;
  const void* data_ = nullptr;
  uint64_t bytes_ = 0;
};

struct BlockManagerOptions {
  uint64_t model_epoch = 1;
  bool reclaim_on_high_watermark = true;  // evict down to the low watermark after alloc
};

class BlockManager {
 public:
  using TransferCallback = std::function<void(const TransferRecord&)>;

  BlockManager(KvLayout layout, EventLoop* loop, MoverSet movers,
               std::unique_ptr<EvictionPolicy> eviction = nullptr,
               BlockManagerOptions options = {});
  ~BlockManager();
  BlockManager(const BlockManager&) = delete;
  BlockManager& operator=(const BlockManager&) = delete;

  // Tiers by name (tier->name()); the manager borrows them.
  Status AddTier(Tier* tier);
  Tier* tier(const std::string& name) const;

  // FREE -> ALLOCATED in `tier`, generation 1, current epoch. Evicts by policy when the
  // tier or the tenant's quota is full; ResourceExhausted if that is not enough.
  Result<BlockId> Allocate(const BlockSpec& spec, const std::string& tier);
  // ALLOCATED -> WRITING.
  Status BeginWrite(BlockId id);
  // WRITING only, addressable tiers: the bytes to fill.
  Result<std::span<std::byte>> WritableBytes(BlockId id);
  // WRITING only: copies `bytes` from host memory into the block (any tier).
  Status WriteBytes(BlockId id, const void* src, uint64_t bytes);
  // WriteBytes of several WRITING blocks (srcs[i] -> ids[i], each a whole block), the
  // copies and their checksums spread over `pool`'s threads and the caller's (null pool:
  // all on the caller's). Returns once all ended; the first error by position (every
  // block is still WRITING then: the caller evicts them). The tiers' writes are
  // thread-safe; the manager's own state is touched only on the calling thread.
  Status WriteBytesMany(std::span<const BlockId> ids, std::span<const void* const> srcs,
                        WorkerPool* pool);
  // WRITING only, a tier that verifies writes (TierCapabilities::verifies_writes): the
  // block's bytes were written into its extent by another party (a worker process writing
  // its own KV store), which hashed and verified them against `checksum` before it
  // committed them there. FinishWrite then takes that checksum instead of reading the
  // block back. FailedPrecondition for any other tier or state.
  Status AcceptWrite(BlockId id, uint64_t checksum);
  // WRITING -> VALIDATED: computes the checksum; when `expected` is given and differs,
  // the block goes back to ALLOCATED and DataLoss is returned (nothing is exposed).
  Status FinishWrite(BlockId id, std::optional<uint64_t> expected_checksum = std::nullopt);
  // VALIDATED -> COMMITTED (epoch must still be current). Persists metadata on
  // persistent tiers.
  Status Commit(BlockId id);
  // COMMITTED -> WRITING with generation + 1 (no reader may hold it). Returns the new
  // generation; readers of the old one are refused from now on.
  Result<uint64_t> Rewrite(BlockId id);

  // The commit rule. FailedPrecondition / PermissionDenied naming the clause that fails.
  Result<ReadLease> Read(BlockId id, const ReadRequest& request);

  // Prefix sharing: the committed prefix block of `tenant` with `prefix_hash` in the
  // current epoch, with one more reference; NotFound when none.
  Result<BlockId> FindPrefix(const std::string& tenant, uint64_t prefix_hash);
  // Drops one reference; at zero the block is evicted and freed (EVICTING -> FREE).
  Status Release(BlockId id);
  // Explicit eviction: COMMITTED/VALIDATED/ALLOCATED -> EVICTING -> FREE (refused while
  // pinned by a reader or a move).
  Status Evict(BlockId id);

  // Copies a committed block to `dst_tier` as a new block (same owner, index,
  // generation, epoch). The source is pinned (DEMOTING) until the move ends. On
  // completion the destination is validated (length, checksum, owner, epoch,
  // generation) and committed, or rejected and freed. With `demote` the source is freed
  // after a successful commit. `done` runs on the loop with the final record.
  Result<TransferId> Move(BlockId src, const std::string& dst_tier, const MoveOptions& options,
                          bool demote = false, TransferCallback done = nullptr);
  // Cancels an in-flight transfer (its destination is never exposed).
  Status CancelTransfer(TransferId id);
  // Invariant 3's fourth event: the consuming node finished with the data.
  Status MarkConsumed(TransferId id);
  Result<TransferRecord> Transfer(TransferId id) const;

  // Invalidates every block of the current epoch (freed now, or when unpinned) and
  // returns the new epoch.
  uint64_t BumpModelEpoch();
  uint64_t model_epoch() const { return options_.model_epoch; }

  // Persistent tiers: lists blocks that survived a restart, re-validates each one
  // (checksum of its bytes, current epoch) and commits those that pass; the rest are
  // freed. Returns the ids of the recovered, committed blocks.
  Result<std::vector<BlockId>> Recover(const std::string& tier);

  // Evicts blocks of `tier` (of `tenant` if non-empty) by policy until `bytes` are free
  // for that scope; ResourceExhausted when not enough can be evicted.
  Status Reclaim(const std::string& tier, const std::string& tenant, uint64_t bytes);

  Result<v1::KvBlockMeta> Meta(BlockId id) const;
  // Where the block lives in its tier (for a party that writes or reads it there itself).
  Result<Extent> ExtentOf(BlockId id) const;
  Result<v1::BlockState> State(BlockId id) const;
  // Blocks of a (context, index) across tiers, any state.
  std::vector<BlockId> FindBlocks(const std::string& context_id, uint32_t index) const;
  size_t num_blocks() const { return blocks_.size(); }
  EvictionPolicy* eviction() { return eviction_.get(); }
  const KvLayout& layout() const { return layout_; }

 private:
  struct Record;
  struct InFlight;
  friend class ReadLease;

  Record* Find(BlockId id) const;
  Status Transition(Record& r, v1::BlockState to);
  void Unpin(BlockId id);
  void FreeRecord(BlockId id);
  void MaybeFreeStale(Record& r);
  Status CheckReadable(const Record& r, const ReadRequest& req) const;
  void OnMoveDone(TransferId tid, Status status);
  Status ValidateMoved(const InFlight& f, Record& dst);
  void FinishTransfer(TransferId tid, v1::CompletionState state, Status status);
  Result<Extent> AllocateExtent(Tier* tier, const std::string& tenant, uint64_t bytes);
  Result<uint64_t> ChecksumOf(const Record& r) const;
  void SyncEviction(Record& r);
  void Invalidate(Record& r);
  void InvalidateOlderGenerations(const Record& r);
  Record& NewRecord(const v1::KvBlockMeta& meta, Tier* tier, const Extent& extent);
  Status FailMove(TransferId tid, BlockId src, BlockId dst, Status why);

  KvLayout layout_;
  EventLoop* loop_;
  MoverSet movers_;
  std::unique_ptr<EvictionPolicy> eviction_;
  BlockManagerOptions options_;
  std::map<std::string, Tier*> tiers_;
  std::unordered_map<BlockId, std::unique_ptr<Record>> blocks_;
  std::map<std::pair<std::string, uint64_t>, BlockId> prefixes_;  // (tenant, hash)
  // Latest generation of each private (context, index): older copies are never served.
  std::map<std::pair<std::string, uint32_t>, uint64_t> latest_generation_;
  std::map<TransferId, TransferRecord> transfers_;
  std::map<TransferId, std::unique_ptr<InFlight>> in_flight_;
  uint64_t next_block_ = 1;
  uint64_t next_transfer_ = 1;
  std::shared_ptr<bool> alive_;  // guards callbacks posted after destruction
};

}  // namespace switchyard::kv_tiers
