// LocalMover ("local"): copies between byte-addressable host-visible tiers (host,
// emulated-hbm, pinned-host) with memcpy, in chunks spread over a small worker pool so a
// large move uses every core it is given. Cancellation is checked between chunks.
//
// DiskMover ("disk"): copies between an addressable host-visible tier and a persistent
// tier (RocksDB) through the tier's batched block I/O (WriteBatches / one Get per block, per
// move), on its own worker thread.
//
// Thread-safety: Submit is thread-safe; completions are posted to env.loop.
#pragma once

#include <memory>

#include "kv_tiers/mover.h"
#include "kv_tiers/worker_pool.h"

namespace switchyard::kv_tiers {

class LocalMover final : public Mover {
 public:
  explicit LocalMover(const MoverEnv& env);
  std::string name() const override { return "local"; }
  bool Supports(const Tier& src, const Tier& dst) const override;
  Result<MoveHandle> Submit(MoveRequest request, MoveCallback on_complete) override;

 private:
  MoverEnv env_;
  std::unique_ptr<WorkerPool> pool_;
};

class DiskMover final : public Mover {
 public:
  explicit DiskMover(const MoverEnv& env);
  std::string name() const override { return "disk"; }
  bool Supports(const Tier& src, const Tier& dst) const override;
  Result<MoveHandle> Submit(MoveRequest request, MoveCallback on_complete) override;

 private:
  MoverEnv env_;
  std::unique_ptr<WorkerPool> pool_;
};

// PeerMover ("peer"): copies between an addressable host-visible tier and a remote tier
// (capabilities().remote, e.g. a peer's host tier) through the remote tier's block I/O,
// which returns once the peer has acknowledged (put) or the bytes arrived validated (get),
// on its own worker thread. The BlockManager then validates the destination as for any
// move (length, checksum, owner, epoch, generation) before committing it.
class PeerMover final : public Mover {
 public:
  explicit PeerMover(const MoverEnv& env);
  std::string name() const override { return "peer"; }
  bool Supports(const Tier& src, const Tier& dst) const override;
  Result<MoveHandle> Submit(MoveRequest request, MoveCallback on_complete) override;

 private:
  MoverEnv env_;
  std::unique_ptr<WorkerPool> pool_;
};

// RelayMover ("relay"): copies between two tiers that are each reached only through block
// I/O (remote or persistent, e.g. two peers' host tiers, or a peer and the RocksDB tier)
// by staging each block in this process: Read() it out of the source (validated), then
// Write() it into the destination with the source's checksum, on its own worker thread.
// Every byte crosses this host (twice the traffic of a direct peer-to-peer copy); the
// BlockManager validates and commits the destination as for any move.
class RelayMover final : public Mover {
 public:
  explicit RelayMover(const MoverEnv& env);
  std::string name() const override { return "relay"; }
  bool Supports(const Tier& src, const Tier& dst) const override;
  Result<MoveHandle> Submit(MoveRequest request, MoveCallback on_complete) override;

 private:
  MoverEnv env_;
  std::unique_ptr<WorkerPool> pool_;
};

// Checks a request against its tiers: non-null tiers, at least one segment, each
// segment's bytes within both extents. Shared by movers.
Status ValidateMoveRequest(const MoveRequest& request, const std::string& mover);

// Ends a move: posts `on_complete(status)` to the loop, then completes the handle state.
void FinishMove(EventLoop* loop, const std::shared_ptr<MoveState>& state,
                const MoveCallback& on_complete, Status status);

}  // namespace switchyard::kv_tiers
