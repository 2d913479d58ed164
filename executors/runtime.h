// executors::Runtime: the event loop shell around scheduler::Core.
//
// The runtime turns API calls and engine/tool/mover callbacks into scheduler Events,
// feeds them one at a time to Core::handle() with the loop's time, and carries out the
// returned Commands on one executors::Engine per worker (engine.h): place -> Engine::Admit
// of a sequence, preempt -> Engine::Preempt; admit -> ToolWaiter; demote/prefetch ->
// KvMover::Move, with the engines' KV pools kept in step with the moves (a prefetch or a
// demotion to a peer's HBM Imports blocks at its destination when it starts; the source's
// blocks are Released when the move commits; a failed move Releases its destination);
// discard -> KvMover::Cancel of a move in flight and Engine::Release; fail/complete -> the
// workflow's recorded outcome. Each engine step report becomes one kEngineReport event
// (progress of the nodes still running, and those that found no free KV block) followed
// by one kLlmFinished per sequence that ended in the step. When the core asks for a
// wakeup it posts a deadline tick at that time. The same runtime runs on
// base::VirtualEventLoop (tests, replay) and base::AsioEventLoop (the service); only the
// engines and executors differ.
//
// Ownership: borrows the loop, core, engines and executors; they must outlive the runtime.
// Thread-safety: public methods post onto the loop and may be called from any thread;
// everything else runs on the loop thread.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/event_loop.h"
#include "executors/engine.h"
#include "executors/kv_mover.h"
#include "executors/tool_waiter.h"
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

  // One engine per worker of the core (engines[w] runs worker w's sequences).
  Runtime(EventLoop* loop, scheduler::Core* core, std::vector<Engine*> engines, ToolWaiter* tools,
          KvMover* mover);

  void Submit(v1::Workflow workflow);
  void Append(const std::string& workflow_id, v1::ProgramNode node);
  void Close(const std::string& workflow_id);
  void Cancel(const std::string& workflow_id);
  // Membership and model changes, and any other event (e.g. from a real engine).
  void WorkerLost(int worker);
  // A lost worker is back (its engine is empty: a new process, or the lost one's sequences
  // and blocks were all dropped at the loss): the core places on it again, in `role` where
  // given (prefill/decode disaggregation; none: the role it had).
  void WorkerJoined(int worker, std::optional<scheduler::WorkerRole> role = std::nullopt);
  // Draining (`on`): the core places nothing more on the worker and moves its idle
  // contexts off (Core::drained tells when it is empty); off: in service again. Running
  // sequences finish where they are.
  void Drain(int worker, bool on);
  // Feeds kWorkerLoad: what the worker's engine reported of its load.
  void ReportLoad(int worker, const scheduler::ReportedLoad& load);
  // Feeds kContextEvicted: the worker's engine no longer holds the context's KV.
  void ReportContextEvicted(const std::string& context, int worker);
  void ModelEpochChanged(const std::string& model_id, uint64_t epoch);
  void Inject(scheduler::Event e);

  // Called after every handled event with the commands it produced (metrics, checks).
  void SetObserver(Observer o) { observer_ = std::move(o); }
  // Called after the commands of every handled event were carried out (ledger checks:
  // the core's and the engines' KV accounting are then comparable).
  void SetAfterCommands(std::function<void(Time now)> f) { after_ = std::move(f); }
  // Output length an LLM node really produces, for simulated engines (an oracle the
  // engine stops at; never shown to the core). Unset or 0: the engine decodes to the cap.
  void SetOutputOracle(std::function<int64_t(const std::string& wf, const v1::ProgramNode&)> f) {
    oracle_ = std::move(f);
  }
  // Completes a node's SequenceSpec before Admit (an engine that computes: its prompt
  // token ids and sampling parameters, which the workflow API does not carry).
  void SetSpecHook(
      std::function<void(const std::string& wf, const v1::ProgramNode&, SequenceSpec*)> f) {
    spec_hook_ = std::move(f);
  }
  // Sees every engine step report before the core hears of it (tokens as they are
  // emitted: SeqProgress::token).
  void SetStepObserver(std::function<void(const StepReport&)> f) { step_observer_ = std::move(f); }
  Engine* engine(int worker) const;
  const std::map<std::string, WorkflowOutcome>& outcomes() const { return outcomes_; }
  uint64_t events_handled() const { return events_; }

 private:
  // Handles `e` and carries out its commands; `then` runs between the two (it sees the
  // core's state after the event, before any command touches an engine).
  void Feed(const scheduler::Event& e, const std::function<void()>& then = {});
  void Execute(const scheduler::Command& c);
  void StartLlm(const scheduler::Command& c);
  void OnStep(const StepReport& r);
  void OnMoveDone(uint64_t id, Status st);
  // After a preemption or a failed call: the engine's copies of the node's contexts are
  // cut back to what the core kept (tokens, and where).
  void SyncContexts(const std::string& wf, const std::string& node, int worker);
  void Release(const std::string& context, int worker);  // worker -1: wherever it is held
  void StartTool(const scheduler::Command& c);
  void ScheduleTick(Time at);

  EventLoop* loop_;
  scheduler::Core* core_;
  std::vector<Engine*> engines_;
  ToolWaiter* tools_;
  KvMover* mover_;
  Observer observer_;
  std::function<void(Time)> after_;
  std::function<int64_t(const std::string&, const v1::ProgramNode&)> oracle_;
  std::function<void(const std::string&, const v1::ProgramNode&, SequenceSpec*)> spec_hook_;
  std::function<void(const StepReport&)> step_observer_;
  // Moves in flight (their command), and discards waiting for a move's end to Release.
  std::unordered_map<uint64_t, scheduler::Command> moves_;
  std::set<uint64_t> release_after_;
  struct Seq {
    std::string wf, node;
    Time admitted{0};
  };
  std::unordered_map<std::string, Seq> seqs_;  // running sequence key -> its node
  // Node specs by workflow, then node id: looked up per event, never iterated (hashed).
  std::unordered_map<std::string, std::unordered_map<std::string, v1::ProgramNode>> specs_;
  // worker -> running "wf/node" keys (looked up, never iterated in an order that matters)
  std::map<int, std::unordered_set<std::string>> running_on_;
  std::map<std::string, WorkflowOutcome> outcomes_;
  TimerId tick_ = kNoTimer;
  Time tick_at_ = Time::Max();
  uint64_t events_ = 0;
};

}  // namespace switchyard::executors
