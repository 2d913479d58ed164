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
// Emulation, named so: the simulated engine writes no KV, so the first time a
// context is moved out of a tier the mover materialises its blocks there (a deterministic
// pattern, validated and committed like any write), and it carries 1/`bytes_scale` of
// the context's bytes (the service's emulated tiers live in host memory on small
// machines). With a real engine, the engine would write these blocks instead.
//
// Ownership: borrows the EventLoop and the BlockManager (which runs on that loop). Thread-safety:
// loop thread only (BlockManager completions are posted there).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "executors/simulated.h"
#include "kv_tiers/block_manager.h"

namespace switchyard::executors {

class TieredKvMover final : public KvMover {
 public:
  struct Options {
    // The BlockManager tier name of a Location; an error fails the move (e.g. no peer
    // tier in this process).
    std::function<Result<std::string>(const scheduler::Location&)> tier_of;
    uint64_t bytes_scale = 1;  // emulated bytes = ceil(bytes / bytes_scale)
    std::string tenant = "default";
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
  size_t in_flight() const { return moves_.size(); }

 private:
  struct Ctx {
    std::string tier;
    std::vector<BlockId> blocks;
    bool moving = false;
    bool discard_after = false;
  };
  struct InFlight {
    std::string context;
    std::string dst_tier;
    std::vector<TransferId> transfers;
    std::vector<BlockId> committed;  // destination blocks that committed
    size_t pending = 0;
    Status failure;
    std::function<void(Status)> done;
  };
  Status Materialise(const scheduler::Command& move, const std::string& tier, Ctx& ctx);
  void OnBlockDone(uint64_t transfer_id, const kv_tiers::TransferRecord& r);
  void Finish(uint64_t transfer_id);
  void EvictAll(const std::vector<BlockId>& blocks);

  EventLoop* loop_;
  kv_tiers::BlockManager* manager_;
  Options options_;
  std::map<std::string, Ctx> ctxs_;
  std::map<uint64_t, InFlight> moves_;
  uint64_t bytes_moved_ = 0;
};

}  // namespace switchyard::executors
