#include "executors/simulated.h"

#include <algorithm>

namespace switchyard::executors {

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
