// executors::Runtime: the event loop shell around scheduler::Core.
//
// The runtime turns API calls and executor/tool/mover callbacks into scheduler Events,
// feeds them one at a time to Core::handle() with the loop's time, and carries out the
// returned Commands: place -> ModelExecutor::Start, preempt -> Stop, admit -> ToolWaiter,
// demote/prefetch -> KvMover::Move, discard of a context in flight -> KvMover::Cancel,
// fail/complete -> the workflow's recorded outcome. When the core asks for a wakeup it
// posts a deadline tick at that time. The same runtime runs on base::VirtualEventLoop
// (tests, replay) and base::AsioEventLoop (the service); only the executors differ.
//
// Ownership: borrows the loop, core and executors; they must outlive the runtime.
// Thread-safety: public methods post onto the loop and may be called from any thread;
// everything else runs on the loop thread.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "base/event_loop.h"
#include "executors/simulated.h"
#include "scheduler/core.h"

namespace switchyard::executors {

struct WorkflowOutcome {
  scheduler::CommandKind kind = scheduler::CommandKind::kComplete;  // kComplete or kFail
  std::string reason;  // empty: completed; "cancelled"; or why it failed
  Time at{0};
};

class Runtime {
 public:
  using Observer =
      std::function<void(const scheduler::Event&, const scheduler::Commands&, Time now)>;

  Runtime(EventLoop* loop, scheduler::Core* core, ModelExecutor* model, ToolWaiter* tools,
          KvMover* mover);

  void Submit(v1::Workflow workflow);
  void Append(const std::string& workflow_id, v1::ProgramNode node);
  void Close(const std::string& workflow_id);
  void Cancel(const std::string& workflow_id);
  // Membership and model changes, and any other event (e.g. from a real engine).
  void PeerLost(int worker);
  void ModelEpochChanged(const std::string& model_id, uint64_t epoch);
  void Inject(scheduler::Event e);

  // Called after every handled event with the commands it produced (metrics, checks).
  void SetObserver(Observer o) { observer_ = std::move(o); }
  const std::map<std::string, WorkflowOutcome>& outcomes() const { return outcomes_; }
  uint64_t events_handled() const { return events_; }

 private:
  void Feed(const scheduler::Event& e);
  void Execute(const scheduler::Command& c);
  void StartLlm(const scheduler::Command& c);
  void StartTool(const scheduler::Command& c);
  void ScheduleTick(Time at);

  EventLoop* loop_;
  scheduler::Core* core_;
  ModelExecutor* model_;
  ToolWaiter* tools_;
  KvMover* mover_;
  Observer observer_;
  // Node specs by workflow, then node id: looked up per event, never iterated (hashed).
  std::unordered_map<std::string, std::unordered_map<std::string, v1::ProgramNode>> specs_;
  std::map<int, std::set<std::string>> running_on_;  // worker -> "wf/node" keys
  std::map<std::string, WorkflowOutcome> outcomes_;
  TimerId tick_ = kNoTimer;
  Time tick_at_ = Time::Max();
  uint64_t events_ = 0;
};

}  // namespace switchyard::executors
