// TieredKvMover: carries out the core's demote/prefetch commands through kv_tiers.
//
// Each context the core moves is a list of KV blocks in a kv_tiers::BlockManager. A move
// copies every block of the context from the source tier to the destination tier with
// BlockManager::Move (the destination is validated — length, checksum, owner, epoch,
// generation — and committed by the manager), all or nothing: the sources stay pinned and
// readable until every destination block committed, and only then are they evicted; when
// any block fails or the move is cancelled, the destination copies are evicted and the
// sources stay (invariants 1-3). The runtime hears of the move only after that point.
//
// Real bytes. Where a Location is the pool of an engine that computes (Options::engine_kv
// returns its EngineKv, engine_kv.h), the mover copies that engine's real blocks: a
// demotion writes each block into a new BlockManager block of the destination tier
// (checksummed, validated and committed under the commit rule); a prefetch reads each
// committed block of the source tier through BlockManager::Read — the commit rule's
// owner, epoch and generation checks, so a block of an older model epoch fails the move and
// the context is recomputed — into the blocks the engine reserved, then commits them in
// the engine; a move between two engines copies pool to pool. These copies run on the loop
// thread (kv_tiers' movers are not used on this path).
//
// Remote pools. Where a Location is the pool of an engine in another process
// (Options::remote_kv, engine_kv.h's RemoteEngineKv: a joined worker's CPU engine), its
// tier is that worker's KV store. A move out of it first has the worker export the
// context's pool blocks into store blocks allocated here (written and verified there,
// committed here with the checksums the store verified), then runs as a move out of that
// tier; a move into it runs as a move into that tier — the sources kept — then has the
// worker import the landed blocks into its pool; only when the import committed are the
// sources and the landed store blocks evicted (a failed import leaves the context where
// it was). A move between two such pools is export, a store-to-store move, import.
//
// Emulation, named so: the simulated engine writes no KV, so the first time a
// context is moved out of a tier the mover materialises its blocks there (a deterministic
// pattern, validated and committed like any write), and it carries 1/`bytes_scale` of
// the context's bytes (the service's emulated tiers live in host memory on small
// machines). With a real engine, the engine would write these blocks instead.
//
// Ownership: borrows the EventLoop and the BlockManager (which runs on that loop). Thread-safety:
// loop thread only (BlockManager completions are posted there).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "executors/engine_kv.h"
#include "executors/kv_mover.h"
#include "kv_tiers/block_manager.h"

namespace switchyard::executors {

class TieredKvMover final : public KvMover {
 public:
  struct Options {
    // The BlockManager tier name of a Location; an error fails the move (e.g. no peer
    // tier in this process).
    std::function<Result<std::string>(const scheduler::Location&)> tier_of;
    uint64_t bytes_scale = 1;  // emulated bytes = ceil(bytes / bytes_scale)
    // The tenant a workflow's blocks are charged to (its tier quotas apply); unset or ""
    // from it: `tenant`.
    std::function<std::string(const std::string& workflow_id)> tenant_of;
    std::string tenant = "default";
    // The engine whose real KV pool a Location is (null: an emulated tier).
    std::function<EngineKv*(const scheduler::Location&)> engine_kv;
    // The engine in another process whose real KV pool a Location is (null: none); the
    // Location's tier (tier_of) is then that worker's KV store. See "Remote pools" above.
    std::function<RemoteEngineKv*(const scheduler::Location&)> remote_kv;
    // Set: the emulated fill of a context whose blocks live in a tier reached only
    // through block I/O (a joined worker's KV store, RocksDB) is written here first, a
    // host-addressable tier, and moved there by the BlockManager's movers on their
    // threads, so the scheduler's thread never waits on that tier; then the move runs.
    // Empty: the fill is written straight into the tier, on the calling thread.
    std::string fill_staging_tier;
    // Threads beside the scheduler's that copy and checksum an engine context's blocks
    // when it is exported (the scheduler's thread takes a share too and waits for the
    // rest); -1: one fewer than the machine's cores, at most 3; 0: the scheduler's only.
    int copy_threads = -1;
  };
  TieredKvMover(EventLoop* loop, kv_tiers::BlockManager* manager, Options options);
  ~TieredKvMover() override;

  void Move(const scheduler::Command& move, std::function<void(Status)> done) override;
  bool Cancel(uint64_t transfer_id) override;
  void Discard(const std::string& context) override;

  // Where a context's blocks are committed ("" when it has none) and how many.
  std::string TierOf(const std::string& context) const;
  size_t BlocksOf(const std::string& context) const;
  uint64_t bytes_moved() const { return bytes_moved_; }
  // Real bytes moved (the engine_kv path), by destination: a tier name or an engine pool's.
  const std::map<std::string, uint64_t>& real_bytes_by_destination() const { return real_by_dst_; }
  size_t in_flight() const { return moves_.size(); }

  // What kv_tiers recorded of a finished move (invariant 3's first two events): the last
  // block's transport completion and validation (unset when no block got there; the
  // real-bytes path copies, validates and commits in one step, at one time), how many
  // blocks and bytes it committed. Kept for the last kKeptMoves moves, failed ones too.
  struct MoveTimes {
    std::optional<Time> transport_completed, validated;
    uint32_t blocks = 0;
    uint64_t bytes = 0;
  };
  static constexpr size_t kKeptMoves = 4096;
  std::optional<MoveTimes> TimesOf(uint64_t transfer_id) const;
  // Invariant 3's fourth event: the node that read the move's data finished. Marks each
  // block transfer of the move consumed (BlockManager::MarkConsumed) and forgets the move;
  // false when it is not kept (unknown, or older than kKeptMoves moves).
  bool MarkConsumed(uint64_t transfer_id);

 private:
  struct Ctx {
    std::string tier;
    std::vector<BlockId> blocks;
    int64_t valid_tokens = -1;  // real bytes: tokens with KV computed (-1: emulated)
    // A move into a remote pool: the blocks committed in its worker's store, awaiting the
    // import (the sources above stay until it committed).
    std::vector<BlockId> landed;
    bool moving = false;
    bool discard_after = false;
  };
  struct InFlight {
    std::string context;
    std::string dst_tier;
    std::vector<TransferId> transfers;
    std::vector<BlockId> committed;  // destination blocks that committed
    size_t pending = 0;
    MoveTimes times;
    Status failure;
    bool keep_sources = false;  // a move into a remote pool: the committed ones land
    std::function<void(Status)> done;
  };
  // The move between tiers or local engine pools; keep_sources: its destination is a
  // remote pool's store (the committed blocks land, the sources stay).
  void MoveLocal(const scheduler::Command& move, bool keep_sources,
                 std::function<void(Status)> done);
  // MoveLocal where a Location is a local engine's pool (engine_kv): the real-bytes move,
  // posted (the runtime reserves the destination's blocks after this call returns);
  // FinishEngineKv is its posted half: the copy, the move's times and the context's place.
  void MoveEngineKv(const scheduler::Command& move, EngineKv* src_kv, EngineKv* dst_kv,
                    bool keep_sources, std::function<void(Status)> done);
  void FinishEngineKv(const scheduler::Command& move, EngineKv* src_kv, EngineKv* dst_kv,
                      uint64_t transfer_id, bool keep_sources);
  // MoveLocal between two tiers: the emulated fill first where it lacks, then every block
  // through BlockManager::Move (OnBlockDone, Finish).
  void MoveTiers(const scheduler::Command& move, bool keep_sources,
                 std::function<void(Status)> done);
  // Remote pools (see above; tiered_mover_remote.cc).
  void MoveRemote(const scheduler::Command& move, RemoteEngineKv* src, RemoteEngineKv* dst,
                  std::function<void(Status)> done);
  void ExportRemote(const scheduler::Command& move, RemoteEngineKv* src,
                    std::function<void(Status)> done);
  void ImportRemote(const scheduler::Command& move, RemoteEngineKv* dst,
                    std::function<void(Status)> done);
  Status Materialise(const scheduler::Command& move, const std::string& tier, Ctx& ctx);
  // Blocks of the emulated fill `ctx` lacks in `tier` (0 for real bytes).
  uint32_t MissingBlocks(const scheduler::Command& move, const std::string& tier,
                         const Ctx& ctx) const;
  // The staged fill (Options::fill_staging_tier) of `tier`, then Move(move, done) again.
  void StageFill(const scheduler::Command& move, const std::string& tier,
                 std::function<void(Status)> done);
  void OnBlockDone(uint64_t transfer_id, const kv_tiers::TransferRecord& r);
  void Finish(uint64_t transfer_id);
  void EvictAll(const std::vector<BlockId>& blocks);
  void Keep(uint64_t transfer_id, const InFlight& m);  // into done_ (bounded)
  std::string TenantOf(const std::string& workflow_id) const;
  Result<BlockId> WriteBlock(const scheduler::Command& move, const std::string& tier,
                             uint32_t index, const void* data);
  // The real-bytes path (see above); runs posted, after the runtime's Import.
  Status MoveReal(const scheduler::Command& move, EngineKv* src, EngineKv* dst);
  Status ExportToTier(const scheduler::Command& move, EngineKv* src, const std::string& tier);
  Status ImportFromTier(const scheduler::Command& move, const std::string& tier, EngineKv* dst);

  EventLoop* loop_;
  kv_tiers::BlockManager* manager_;
  Options options_;
  std::map<std::string, Ctx> ctxs_;
  std::map<uint64_t, InFlight> moves_;
  struct Done {
    MoveTimes times;
    std::vector<TransferId> transfers;
  };
  std::map<uint64_t, Done> done_;
  std::deque<uint64_t> done_order_;
  uint64_t bytes_moved_ = 0;
  std::map<std::string, uint64_t> real_by_dst_;
  std::unique_ptr<kv_tiers::WorkerPool> copy_pool_;  // created by the first export
  kv_tiers::WorkerPool* CopyPool();
  kv_tiers::BlockSpec SpecOf(const scheduler::Command& move, uint32_t index) const;
};

}  // namespace switchyard::executors
