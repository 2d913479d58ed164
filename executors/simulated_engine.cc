#include "executors/simulated_engine.h"

namespace switchyard::executors {

SimulatedEngine::SimulatedEngine(EventLoop* loop, int worker, EngineLimits limits,
                                 const StepCostModel* cost, Options o)
    : BatchingEngine(loop, worker, limits, std::make_unique<CostStepRunner>(loop, cost),
                     std::move(o)) {}

void CostStepRunner::Run(const StepShape& shape, std::vector<StepItem>*,
                         std::function<void()> done) {
  timer_ = loop_->PostAt(loop_->Now() + cost_->StepTime(shape), [this, done = std::move(done)]() {
    timer_ = kNoTimer;
    done();
  });
}

void CostStepRunner::Stop() {
  if (timer_ != kNoTimer) loop_->Cancel(timer_);
  timer_ = kNoTimer;
}

}  // namespace switchyard::executors
