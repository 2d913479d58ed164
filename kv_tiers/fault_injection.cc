#include "kv_tiers/fault_injection.h"

#include <vector>

#include "base/mutex.h"

namespace switchyard::kv_tiers {

Status CorruptOneByte(Tier& tier, const Extent& extent, uint64_t offset) {
  if (extent.bytes == 0) return Status::InvalidArgument("corrupt: empty extent");
  offset %= extent.bytes;
  auto caps = tier.capabilities();
  if (void* p = tier.Data(extent); p != nullptr && !caps.device_memory) {
    static_cast<unsigned char*>(p)[offset] ^= 0x5a;
    return Status::OK();
  }
  std::vector<unsigned char> buf(extent.bytes);
  BlockRead r{extent, buf.data(), buf.size()};
  SY_RETURN_IF_ERROR(tier.Read(std::span<const BlockRead>(&r, 1)));
  buf[offset] ^= 0x5a;
  BlockWrite w{extent, buf.data(), buf.size()};
  return tier.Write(std::span<const BlockWrite>(&w, 1));
}

FaultyMover::FaultyMover(std::shared_ptr<Mover> inner, FaultSpec spec, EventLoop* loop)
    : inner_(std::move(inner)),
      spec_(spec),
      loop_(loop),
      dice_(spec),
      watchers_(std::make_unique<WorkerPool>(2)) {}

FaultyMover::~FaultyMover() { watchers_.reset(); }

FaultDice::Fault FaultDice::Draw() {
  MutexLock lock(&mu_);
  uint64_t n = calls_.fetch_add(1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double fail_draw = u(rng_), corrupt_draw = u(rng_);
  if (spec_.fail_after >= 0 && n >= static_cast<uint64_t>(spec_.fail_after)) return Fault::kFail;
  if (fail_draw < spec_.fail_rate) return Fault::kFail;
  if (corrupt_draw < spec_.corrupt_rate) return Fault::kCorrupt;
  return Fault::kNone;
}

Result<MoveHandle> FaultyMover::Submit(MoveRequest request, MoveCallback on_complete) {
  Fault fault = dice_.Draw();
  Tier* dst = request.dst;
  Extent first = request.segments.empty() ? Extent{} : request.segments.front().dst;
  if (fault == Fault::kFail) {
    failures_.fetch_add(1);
    if (!spec_.partial) {
      auto state = std::make_shared<MoveState>();
      Status st = Status::Unavailable("fault injection: move failed", ErrorScope::kTransfer);
      if (on_complete) loop_->PostAfter(spec_.delay, [cb = on_complete, st] { cb(st); });
      state->Complete(st);
      return MoveHandle(state);
    }
    // A partial copy: half of the first segment lands, the rest never does.
    request.segments.resize(1);
    request.segments[0].bytes = std::max<uint64_t>(1, request.segments[0].bytes / 2);
  }
  SY_ASSIGN_OR_RETURN(MoveHandle inner, inner_->Submit(std::move(request), nullptr));
  auto state = std::make_shared<MoveState>();
  auto shared_inner = std::make_shared<MoveHandle>(std::move(inner));
  if (fault == Fault::kCorrupt) corruptions_.fetch_add(1);
  watchers_->Submit([this, state, shared_inner, fault, dst, first, cb = std::move(on_complete)] {
    // Wait for the inner move, passing a cancellation through.
    std::optional<Status> st;
    while (!(st = shared_inner->wait_for(Millis(1)))) {
      if (state->cancel_requested()) shared_inner->Cancel();
    }
    Status result = *st;
    if (result.ok() && fault == Fault::kFail) {
      result = Status::Unavailable("fault injection: move failed after a partial copy",
                                   ErrorScope::kTransfer);
    } else if (result.ok() && fault == Fault::kCorrupt) {
      Status c = CorruptOneByte(*dst, first, first.bytes / 3);
      if (!c.ok()) result = c;
    }
    if (cb) loop_->PostAfter(spec_.delay, [cb, result] { cb(result); });
    state->Complete(result);
  });
  return MoveHandle(state);
}

}  // namespace switchyard::kv_tiers
