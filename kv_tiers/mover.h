// Mover: asynchronous copies of KV bytes between two tiers, returning move-only handles.
//
// A MoveRequest is a descriptor list (src extent, dst extent, bytes) between two tiers
// plus per-operation options (traffic class, deadline, priority: the hook through which
// net_budget will govern every transfer). Submit() starts the copy and returns a
// MoveHandle at once; when the copy ends (done, failed or cancelled) the mover
// (1) completes the handle and (2) posts `on_complete(status)` to the EventLoop it was
// built with. A mover never frees or reuses either buffer; keeping the source alive until
// completion is the caller's job (the BlockManager pins it, docs/design.md invariant 2). A
// failed or cancelled move may leave the destination partially written: the destination
// must not be exposed (the BlockManager rejects it).
//
// Implementations: "local" (chunked memcpy on a small worker pool), "cuda"
// (cudaMemcpyAsync on streams with events; CUDA builds), "disk" (RocksDB block I/O), and
// movers over KV stores in other processes (kv_tiers/remote: "direct"). They are selected by
// capability through MoverSet.
//
// Thread-safety: Submit may be called from any thread; a MoveHandle is used from one
// thread at a time. Completion callbacks run on the EventLoop.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/event_loop.h"
#include "base/ids.h"
#include "base/mutex.h"
#include "base/result.h"
#include "base/time.h"
#include "kv_tiers/tier.h"
#include "proto/switchyard/v1/kv.pb.h"

namespace switchyard::kv_tiers {

// Per-operation options (rocksdb IOOptions style).
struct MoveOptions {
  v1::TrafficClass traffic_class = v1::THROUGHPUT;
  Time deadline = Time::Max();
  int priority = 0;        // higher runs first where a mover queues work
  TransferId transfer_id;  // for logs; optional
};

struct MoveSegment {
  Extent src;
  Extent dst;
  uint64_t bytes = 0;
  // The source block's stored checksum (BlockChecksum), when known: passed to a tier
  // that verifies writes (TierCapabilities::verifies_writes).
  std::optional<uint64_t> checksum;
  // The block as the BlockManager knows it (owner, epoch, generation, index), for a mover
  // that hands the move to another process (a direct put between two peers) and its logs.
  v1::KvBlockMeta meta;
};

struct MoveRequest {
  Tier* src = nullptr;
  Tier* dst = nullptr;
  std::vector<MoveSegment> segments;
  MoveOptions options;
  uint64_t total_bytes() const;
};

// Shared completion state between a mover and its handle. Movers call Complete() once;
// it notifies under the mutex so a waiter cannot miss it.
class MoveState {
 public:
  // First call wins; returns false if already complete.
  bool Complete(Status status);
  bool done() const;
  Status status() const;  // OK-until-done is not meaningful: check done() first
  void Wait() const;
  bool WaitFor(Duration timeout) const;
  // Cancellation request, read by workers between chunks (relaxed is enough: it is a
  // hint; the final status is set under the mutex).
  void RequestCancel() { cancel_.store(true, std::memory_order_relaxed); }
  bool cancel_requested() const { return cancel_.load(std::memory_order_relaxed); }

 private:
  mutable Mutex mu_;
  mutable CondVar cv_;
  bool done_ GUARDED_BY(mu_) = false;
  Status status_ GUARDED_BY(mu_);
  std::atomic<bool> cancel_{false};
};

// Move-only handle. The destructor cancels a move still in flight and waits for it to
// stop, so no worker touches the buffers after the handle is gone.
class MoveHandle {
 public:
  MoveHandle() = default;
  explicit MoveHandle(std::shared_ptr<MoveState> state) : state_(std::move(state)) {}
  ~MoveHandle();
  MoveHandle(MoveHandle&&) noexcept = default;
  MoveHandle& operator=(MoveHandle&& other) noexcept;
  MoveHandle(const MoveHandle&) = delete;
  MoveHandle& operator=(const MoveHandle&) = delete;

  bool valid() const { return state_ != nullptr; }
  bool done() const { return state_ && state_->done(); }
  // Blocks until the move ends; its final status.
  Status wait();
  // The final status if the move ended within `timeout`, nullopt otherwise.
  std::optional<Status> wait_for(Duration timeout);
  // Asks the move to stop; wait() then returns Cancelled (or the status it ended with).
  void Cancel();

 private:
  std::shared_ptr<MoveState> state_;
};

using MoveCallback = std::function<void(const Status&)>;

class Mover {
 public:
  virtual ~Mover() = default;
  virtual std::string name() const = 0;
  // True when this mover can copy from `src` to `dst` here (capabilities, device).
  virtual bool Supports(const Tier& src, const Tier& dst) const = 0;
  // Validates the request (tiers supported, segment sizes within extents) and starts it.
  virtual Result<MoveHandle> Submit(MoveRequest request, MoveCallback on_complete) = 0;
};

// The movers available to a BlockManager, chosen by capability: Select() returns the
// first mover, in descending preference, that Supports(src, dst).
class MoverSet {
 public:
  void Add(std::shared_ptr<Mover> mover, int preference = 0);
  Result<Mover*> Select(const Tier& src, const Tier& dst) const;
  std::vector<Mover*> movers() const;

 private:
  std::vector<std::pair<int, std::shared_ptr<Mover>>> movers_;
};

// Factories for the built-in movers. Options shared by movers that use worker threads.
struct MoverEnv {
  EventLoop* loop = nullptr;       // required: completions are posted here
  int worker_threads = 2;          // local mover pool size
  uint64_t chunk_bytes = 1 << 20;  // local mover: bytes per memcpy task
  // Local mover: moves of at most this many bytes are copied on the submitting thread (a
  // hand-off to the pool costs more than copying a few cache-resident MiB: on the 2-core
  // VM a 2 MiB move split over the pool measured 0.23-0.27x memcpy, inline 0.95-1.02x);
  // the completion is still posted to the loop. 0 sends every move through the pool.
  uint64_t inline_bytes = 4 << 20;
};

struct MoverImplementation {
  std::string name;  // "local", "disk", "cuda"
  int preference = 0;
  std::function<Status()> probe;
  std::function<Result<std::unique_ptr<Mover>>(const MoverEnv&)> factory;
};

// Registry of mover implementations (CUDA ones register themselves in CUDA builds).
class MoverRegistry {
 public:
  static MoverRegistry& Global();
  void Register(MoverImplementation impl);
  std::vector<MoverImplementation> Implementations() const;
  Result<std::unique_ptr<Mover>> Create(const std::string& name, const MoverEnv& env) const;
  // A MoverSet with every available implementation (probe OK), by preference.
  Result<MoverSet> CreateAvailable(const MoverEnv& env) const;

 private:
  mutable Mutex mu_;
  std::vector<MoverImplementation> impls_ GUARDED_BY(mu_);
};

struct MoverRegistrar {
  explicit MoverRegistrar(MoverImplementation impl);
};

}  // namespace switchyard::kv_tiers
