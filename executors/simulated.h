// Executors the runtime drives, and their simulated implementations (virtual or real time).
//
//   ModelExecutor  runs an LLM node placed on a worker; reports each prefill chunk boundary
//                  (EngineStep) and the end of the call.
//   ToolWaiter     starts a tool node (the agent framework runs real tools; the runtime
//                  only waits) and reports its start and its end.
//   KvMover        carries out a demote/prefetch/peer move and reports completion only once
//                  the destination has committed the blocks (invariant 3).
// The simulated implementations schedule their completions as timers on a base::EventLoop:
//   SimulatedModelExecutor  chunked prefill + decode timed by a ComputeCostModel (the
//                           roofline "simulated model executor cost model" in model_cost.h);
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
#include "proto/switchyard/v1/workflow.pb.h"
#include "scheduler/environment.h"
#include "scheduler/events.h"

namespace switchyard::executors {

struct LlmReport {
  std::function<void(int64_t tokens_done)> step;  // after each prefill chunk but the last
  std::function<void(Status, int64_t output_tokens, Duration model_time)> done;
};

class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;
  virtual std::string_view name() const = 0;
  // `key` identifies the run ("wf/node"); a Start for a running key replaces it.
  virtual void Start(const std::string& key, const scheduler::Command& place,
                     const v1::ProgramNode& node, int64_t context_tokens, LlmReport report) = 0;
  // Stops at once; no further callbacks for this run.
  virtual void Stop(const std::string& key) = 0;
};

class ToolWaiter {
 public:
  virtual ~ToolWaiter() = default;
  virtual void Start(const std::string& key, const v1::ProgramNode& node,
                     std::function<void()> started, std::function<void(Status)> done) = 0;
};

class KvMover {
 public:
  virtual ~KvMover() = default;
  virtual void Move(const scheduler::Command& move, std::function<void(Status)> done) = 0;
  // Cancels an in-flight move; its `done` runs with Cancelled. False if unknown.
  virtual bool Cancel(uint64_t transfer_id) = 0;
  // The core dropped the context: free whatever holds its bytes (after an in-flight move
  // ends, if one is running). Movers that hold nothing ignore it.
  virtual void Discard(const std::string& context) {}
};

class SimulatedModelExecutor final : public ModelExecutor {
 public:
  struct Options {
    int64_t chunk_tokens = 2048;  // chunked prefill size (vLLM-style)
    // Optional fault injection: a non-OK status fails the call at its end.
    std::function<Status(const std::string& key)> fault;
    // Output tokens actually generated (default: the node's max_output_tokens hint).
    std::function<int64_t(const v1::ProgramNode&)> output_tokens;
  };
  SimulatedModelExecutor(EventLoop* loop, const scheduler::ComputeCostModel* cost, Options o);
  std::string_view name() const override { return "simulated model executor"; }
  void Start(const std::string& key, const scheduler::Command& place, const v1::ProgramNode& node,
             int64_t context_tokens, LlmReport report) override;
  void Stop(const std::string& key) override;

 private:
  struct Run {
    TimerId timer = kNoTimer;
    uint64_t gen = 0;
  };
  void Chunk(const std::string& key, uint64_t gen, int64_t done, int64_t total, int64_t ctx,
             int64_t out, Duration used, LlmReport report);
  EventLoop* loop_;
  const scheduler::ComputeCostModel* cost_;
  Options options_;
  std::map<std::string, Run> runs_;
  uint64_t next_gen_ = 1;
};

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
