// Simulated implementations of the executors the runtime drives besides the engines
// (executors/tool_waiter.h, executors/kv_mover.h), in virtual or real time. They schedule
// their completions as timers on a base::EventLoop:
//   SimulatedToolWaiter     durations and outcomes from a caller-supplied function;
//   SimulatedKvMover        move times from a TransferPlanner (SimulatedFabric or an adapter
//                           over net_budget's planner), failures from an optional function.
// Every callback runs on the event loop, never synchronously inside Start/Move.
//
// Thread-safety: loop-thread only.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/event_loop.h"
#include "executors/kv_mover.h"
#include "executors/tool_waiter.h"
#include "proto/switchyard/v1/workflow.pb.h"
#include "scheduler/environment.h"
#include "scheduler/events.h"

namespace switchyard::executors {

struct ToolOutcome {
  Duration duration{0};
  Status status;
};

class SimulatedToolWaiter final : public ToolWaiter {
 public:
  using OutcomeFn = std::function<ToolOutcome(const std::string& key, const v1::ProgramNode&)>;
  SimulatedToolWaiter(EventLoop* loop, OutcomeFn outcome)
      : loop_(loop), outcome_(std::move(outcome)) {}
  void Start(const std::string& key, const v1::ProgramNode& node, std::function<void()> started,
             std::function<void(Status)> done) override;

 private:
  EventLoop* loop_;
  OutcomeFn outcome_;
};

class SimulatedKvMover final : public KvMover {
 public:
  using FaultFn = std::function<Status(const scheduler::Command&)>;
  // Duration of a move whose grant already holds its bytes (e.g.
  // NetBudgetEnvironment::PlannedDuration of move.grant.id); zero or unset: the planner's
  // estimate at Move time.
  using DurationFn = std::function<Duration(const scheduler::Command&)>;
  SimulatedKvMover(EventLoop* loop, const scheduler::TransferPlanner* planner, FaultFn fault = {},
                   DurationFn duration = {})
      : loop_(loop), planner_(planner), fault_(std::move(fault)), duration_(std::move(duration)) {}
  void Move(const scheduler::Command& move, std::function<void(Status)> done) override;
  bool Cancel(uint64_t transfer_id) override;
  size_t in_flight() const { return moves_.size(); }

 private:
  struct InFlight {
    TimerId timer;
    std::function<void(Status)> done;
  };
  EventLoop* loop_;
  const scheduler::TransferPlanner* planner_;
  FaultFn fault_;
  DurationFn duration_;
  std::map<uint64_t, InFlight> moves_;
};

}  // namespace switchyard::executors
