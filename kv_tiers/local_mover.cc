#include "kv_tiers/local_mover.h"

#include <atomic>
#include <cstring>

namespace switchyard::kv_tiers {
namespace {

bool HostAddressable(const Tier& t) {
  auto c = t.capabilities();
  return c.addressable && !c.device_memory && !c.remote;
}

struct Chunk {
  const char* src;
  char* dst;
  uint64_t bytes;
};

// Shared by the workers of one local move. Each worker claims chunks by index until none
// is left; the worker that finishes the last chunk ends the move.
struct LocalMove {
  std::shared_ptr<MoveState> state;
  MoveCallback on_complete;
  EventLoop* loop = nullptr;
  std::vector<Chunk> chunks;
  std::atomic<size_t> next{0};
  std::atomic<size_t> remaining{0};
  std::atomic<bool> cancelled{false};
};

// Copies (or, once cancellation was asked, skips) chunks of `move` until none is left to
// claim. Safe to run on any number of threads at once, and after the move ended.
void RunChunks(LocalMove& move) {
  const size_t n = move.chunks.size();
  for (size_t i = move.next.fetch_add(1, std::memory_order_relaxed); i < n;
       i = move.next.fetch_add(1, std::memory_order_relaxed)) {
    const Chunk& c = move.chunks[i];
    if (move.state->cancel_requested()) {
      move.cancelled.store(true, std::memory_order_relaxed);
    } else {
      std::memcpy(c.dst, c.src, c.bytes);
    }
    // acq_rel: the last chunk sees every other chunk's copy and cancel flag.
    if (move.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      Status st = move.cancelled.load(std::memory_order_relaxed)
                      ? Status::Cancelled("local mover: move cancelled")
                      : Status::OK();
      FinishMove(move.loop, move.state, move.on_complete, std::move(st));
    }
  }
}

}  // namespace

Status ValidateMoveRequest(const MoveRequest& request, const std::string& mover) {
  if (request.src == nullptr || request.dst == nullptr) {
    return Status::InvalidArgument(mover + " mover: null source or destination tier");
  }
  if (request.segments.empty()) return Status::InvalidArgument(mover + " mover: no segments");
  for (size_t i = 0; i < request.segments.size(); ++i) {
    const auto& s = request.segments[i];
    if (s.bytes == 0 || s.bytes > s.src.bytes || s.bytes > s.dst.bytes) {
      return Status::InvalidArgument(mover + " mover: segment " + std::to_string(i) + " moves " +
                                     std::to_string(s.bytes) + " B but its extents hold " +
                                     std::to_string(s.src.bytes) + " / " +
                                     std::to_string(s.dst.bytes) + " B");
    }
  }
  return Status::OK();
}

void FinishMove(EventLoop* loop, const std::shared_ptr<MoveState>& state,
                const MoveCallback& on_complete, Status status) {
  // Post first: once the state completes, a waiting handle may be destroyed and with it
  // anything the caller owns; after Complete() this thread touches nothing of theirs.
  if (on_complete) loop->Post([cb = on_complete, status] { cb(status); });
  state->Complete(std::move(status));
}

LocalMover::LocalMover(const MoverEnv& env)
    : env_(env), pool_(std::make_unique<WorkerPool>(env.worker_threads)) {}

bool LocalMover::Supports(const Tier& src, const Tier& dst) const {
  return HostAddressable(src) && HostAddressable(dst);
}

Result<MoveHandle> LocalMover::Submit(MoveRequest request, MoveCallback on_complete) {
  SY_RETURN_IF_ERROR(ValidateMoveRequest(request, "local"));
  if (!Supports(*request.src, *request.dst)) {
    return Status::NotSupported("local mover: cannot copy " + request.src->name() + " -> " +
                                request.dst->name());
  }
  auto move = std::make_shared<LocalMove>();
  uint64_t total = 0;
  for (const auto& s : request.segments) total += s.bytes;
  const uint64_t chunk =
      total <= env_.inline_bytes ? UINT64_MAX : std::max<uint64_t>(env_.chunk_bytes, 4096);
  for (const auto& s : request.segments) {
    auto* src = static_cast<const char*>(request.src->Data(s.src));
    auto* dst = static_cast<char*>(request.dst->Data(s.dst));
    if (src == nullptr || dst == nullptr) {
      return Status::InvalidArgument("local mover: extent not addressable in its tier");
    }
    for (uint64_t off = 0; off < s.bytes; off += chunk) {
      move->chunks.push_back({src + off, dst + off, std::min(chunk, s.bytes - off)});
    }
  }
  move->state = std::make_shared<MoveState>();
  move->on_complete = std::move(on_complete);
  move->loop = env_.loop;
  move->remaining.store(move->chunks.size(), std::memory_order_relaxed);
  MoveHandle handle(move->state);
  if (total <= env_.inline_bytes) {  // small: copy here, no hand-off
    RunChunks(*move);
    return handle;
  }
  // One task per worker (not per chunk): two queue operations and wake-ups per move, and
  // a worker that is scheduled late finds the chunks already taken by the other.
  const size_t tasks = std::min<size_t>(static_cast<size_t>(pool_->size()), move->chunks.size());
  for (size_t t = 0; t < tasks; ++t) pool_->Submit([move] { RunChunks(*move); });
  return handle;
}

namespace {

// Copies a request's segments on `pool` through the block I/O of its far tier (the
// persistent or remote one): Write() into it when `into_far`, else Read() out of it; the
// near tier is host-addressable. Shared by the disk and peer movers.
Result<MoveHandle> SubmitBlockIo(const char* mover, bool into_far, WorkerPool* pool,
                                 EventLoop* loop, MoveRequest request, MoveCallback on_complete) {
  auto state = std::make_shared<MoveState>();
  MoveHandle handle(state);
  pool->Submit(
      [state, loop, mover, into_far, req = std::move(request), cb = std::move(on_complete)] {
        if (state->cancel_requested()) {
          FinishMove(loop, state, cb, Status::Cancelled(std::string(mover) + ": move cancelled"));
          return;
        }
        Status st;
        if (into_far) {
          std::vector<BlockWrite> writes;
          for (const auto& s : req.segments)
            writes.push_back({s.dst, req.src->Data(s.src), s.bytes, s.checksum});
          st = req.dst->Write(writes);
        } else {
          std::vector<BlockRead> reads;
          for (const auto& s : req.segments)
            reads.push_back({s.src, req.dst->Data(s.dst), s.bytes});
          st = req.src->Read(reads);
        }
        FinishMove(loop, state, cb, std::move(st));
      });
  return handle;
}

}  // namespace

DiskMover::DiskMover(const MoverEnv& env) : env_(env), pool_(std::make_unique<WorkerPool>(1)) {}

bool DiskMover::Supports(const Tier& src, const Tier& dst) const {
  bool to_disk = HostAddressable(src) && dst.capabilities().persistent;
  bool from_disk = src.capabilities().persistent && HostAddressable(dst);
  return to_disk || from_disk;
}

Result<MoveHandle> DiskMover::Submit(MoveRequest request, MoveCallback on_complete) {
  SY_RETURN_IF_ERROR(ValidateMoveRequest(request, "disk"));
  if (!Supports(*request.src, *request.dst)) {
    return Status::NotSupported("disk mover: cannot copy " + request.src->name() + " -> " +
                                request.dst->name());
  }
  bool into_disk = request.dst->capabilities().persistent;
  return SubmitBlockIo("disk mover", into_disk, pool_.get(), env_.loop, std::move(request),
                       std::move(on_complete));
}

PeerMover::PeerMover(const MoverEnv& env) : env_(env), pool_(std::make_unique<WorkerPool>(1)) {}

bool PeerMover::Supports(const Tier& src, const Tier& dst) const {
  bool to_peer = HostAddressable(src) && dst.capabilities().remote;
  bool from_peer = src.capabilities().remote && HostAddressable(dst);
  return to_peer || from_peer;
}

Result<MoveHandle> PeerMover::Submit(MoveRequest request, MoveCallback on_complete) {
  SY_RETURN_IF_ERROR(ValidateMoveRequest(request, "peer"));
  if (!Supports(*request.src, *request.dst)) {
    return Status::NotSupported("peer mover: cannot copy " + request.src->name() + " -> " +
                                request.dst->name());
  }
  bool into_peer = request.dst->capabilities().remote;
  return SubmitBlockIo("peer mover", into_peer, pool_.get(), env_.loop, std::move(request),
                       std::move(on_complete));
}

RelayMover::RelayMover(const MoverEnv& env) : env_(env), pool_(std::make_unique<WorkerPool>(1)) {}

bool RelayMover::Supports(const Tier& src, const Tier& dst) const {
  auto far = [](const Tier& t) { return t.capabilities().remote || t.capabilities().persistent; };
  return far(src) && far(dst) && &src != &dst;
}

Result<MoveHandle> RelayMover::Submit(MoveRequest request, MoveCallback on_complete) {
  SY_RETURN_IF_ERROR(ValidateMoveRequest(request, "relay"));
  if (!Supports(*request.src, *request.dst)) {
    return Status::NotSupported("relay mover: cannot copy " + request.src->name() + " -> " +
                                request.dst->name());
  }
  auto state = std::make_shared<MoveState>();
  MoveHandle handle(state);
  pool_->Submit([state, loop = env_.loop, req = std::move(request), cb = std::move(on_complete)] {
    Status st;
    std::vector<char> staging;
    for (const auto& s : req.segments) {
      if (state->cancel_requested()) {
        st = Status::Cancelled("relay mover: move cancelled");
        break;
      }
      staging.resize(s.bytes);
      BlockRead r{s.src, staging.data(), s.bytes};
      st = req.src->Read(std::span<const BlockRead>(&r, 1));
      if (!st.ok()) break;
      BlockWrite w{s.dst, staging.data(), s.bytes, s.checksum};
      st = req.dst->Write(std::span<const BlockWrite>(&w, 1));
      if (!st.ok()) break;
    }
    FinishMove(loop, state, cb, std::move(st));
  });
  return handle;
}

}  // namespace switchyard::kv_tiers
