#include "executors/simulated.h"

#include <algorithm>

namespace switchyard::executors {

SimulatedModelExecutor::SimulatedModelExecutor(EventLoop* loop,
                                               const scheduler::ComputeCostModel* cost, Options o)
    : loop_(loop), cost_(cost), options_(std::move(o)) {
  if (options_.chunk_tokens <= 0) options_.chunk_tokens = 2048;
}

void SimulatedModelExecutor::Start(const std::string& key, const scheduler::Command& place,
                                   const v1::ProgramNode& node, int64_t context_tokens,
                                   LlmReport report) {
  Stop(key);
  const v1::Hints& h = node.hints();
  int64_t fresh = 0;
  if (node.cache_refs_size() == 0) {
    fresh = h.prompt_tokens();
  } else if (node.cache_refs(0).mode() == v1::CacheRef::CREATE) {
    fresh = std::max(h.prompt_tokens(), h.extend_tokens());
  } else if (node.cache_refs(0).mode() == v1::CacheRef::EXTEND) {
    fresh = h.extend_tokens();
  }
  int64_t total = place.recompute_tokens + std::max<int64_t>(0, fresh - place.prefill_done);
  int64_t out = options_.output_tokens ? options_.output_tokens(node)
                                       : std::max<int64_t>(1, h.max_output_tokens());
  uint64_t gen = next_gen_++;
  runs_[key] = Run{kNoTimer, gen};
  int64_t cached = std::max<int64_t>(0, context_tokens - place.recompute_tokens);
  Chunk(key, gen, 0, total, cached, out, Duration(0), std::move(report));
}

// Runs one prefill chunk (or, when prefill is done, the decode) as a timer.
void SimulatedModelExecutor::Chunk(const std::string& key, uint64_t gen, int64_t done,
                                   int64_t total, int64_t ctx, int64_t out, Duration used,
                                   LlmReport report) {
  auto it = runs_.find(key);
  if (it == runs_.end() || it->second.gen != gen) return;
  if (done < total) {
    int64_t n = std::min(options_.chunk_tokens, total - done);
    Duration d = cost_->PrefillTime(n, ctx + done);
    it->second.timer = loop_->PostAfter(d, [=, this]() mutable {
      int64_t now_done = done + n;
      if (now_done < total && report.step) report.step(now_done);
      Chunk(key, gen, now_done, total, ctx, out, used + d, report);
    });
    return;
  }
  Duration d = cost_->DecodeTime(out, ctx + total);
  it->second.timer = loop_->PostAfter(d, [=, this]() {
    auto r = runs_.find(key);
    if (r == runs_.end() || r->second.gen != gen) return;
    runs_.erase(r);
    Status st = options_.fault ? options_.fault(key) : Status::OK();
    report.done(st, st.ok() ? out : 0, used + d);
  });
}

void SimulatedModelExecutor::Stop(const std::string& key) {
  auto it = runs_.find(key);
  if (it == runs_.end()) return;
  if (it->second.timer != kNoTimer) loop_->Cancel(it->second.timer);
  runs_.erase(it);
}

void SimulatedToolWaiter::Start(const std::string& key, const v1::ProgramNode& node,
                                std::function<void()> started, std::function<void(Status)> done) {
  ToolOutcome o = outcome_(key, node);
  loop_->Post(std::move(started));
  loop_->PostAfter(o.duration, [done = std::move(done), st = o.status]() { done(st); });
}

void SimulatedKvMover::Move(const scheduler::Command& move, std::function<void(Status)> done) {
  scheduler::TransferEstimate e =
      planner_->Estimate(move.src, move.dst, move.bytes, move.grant.traffic_class);
  Status fault = fault_ ? fault_(move) : Status::OK();
  if (!e.reachable && fault.ok())
    fault = Status::Unavailable("simulated mover: no path " + scheduler::LocationString(move.src) +
                                " -> " + scheduler::LocationString(move.dst));
  Duration took = duration_ ? duration_(move) : Duration{0};
  if (took <= Duration{0}) took = e.duration;
  uint64_t id = move.transfer_id;
  TimerId t = loop_->PostAfter(took, [this, id, fault]() {
    auto it = moves_.find(id);
    if (it == moves_.end()) return;
    auto cb = std::move(it->second.done);
    moves_.erase(it);
    cb(fault);
  });
  moves_[id] = InFlight{t, std::move(done)};
}

bool SimulatedKvMover::Cancel(uint64_t transfer_id) {
  auto it = moves_.find(transfer_id);
  if (it == moves_.end()) return false;
  loop_->Cancel(it->second.timer);
  auto cb = std::move(it->second.done);
  moves_.erase(it);
  loop_->Post([cb = std::move(cb), transfer_id]() {
    cb(Status::Cancelled("transfer " + std::to_string(transfer_id) + " cancelled"));
  });
  return true;
}

}  // namespace switchyard::executors
