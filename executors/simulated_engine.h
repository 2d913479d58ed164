// SimulatedEngine: a BatchingEngine (batching_engine.h: continuous batching, chunked
// prefill, the KV block pool) whose steps compute nothing: each is a timer on the
// EventLoop as long as a StepCostModel (step_cost.h) prices its batch. Named "simulated
// engine" everywhere it shows. Output lengths come from the spec's actual_output_tokens
// (the trace's record) or the cap.
//
// Thread-safety: loop-thread only.
#pragma once

#include "executors/batching_engine.h"
#include "executors/step_cost.h"

namespace switchyard::executors {

class SimulatedEngine final : public BatchingEngine {
 public:
  // `loop` and `cost` must outlive the engine.
  SimulatedEngine(EventLoop* loop, int worker, EngineLimits limits, const StepCostModel* cost,
                  Options o = {});
};

// The pricing runner: a step lasts cost->StepTime(shape).
class CostStepRunner final : public StepRunner {
 public:
  CostStepRunner(EventLoop* loop, const StepCostModel* cost) : loop_(loop), cost_(cost) {}
  ~CostStepRunner() override { Stop(); }
  std::string_view engine_name() const override { return "simulated engine"; }
  bool computes() const override { return false; }
  void Run(const StepShape& shape, std::vector<StepItem>* items,
           std::function<void()> done) override;
  void Stop() override;

 private:
  EventLoop* loop_;
  const StepCostModel* cost_;
  TimerId timer_ = kNoTimer;
};

}  // namespace switchyard::executors
