// Executors that wait for reports instead of running anything: the service side of tool
// nodes (the agent framework runs the real tool) and of LLM nodes run by an engine.
//
//   ReportedToolWaiter   executors::ToolWaiter. When the scheduler admits a tool node it
//                        waits for the client's TOOL_STARTED / TOOL_FINISHED / TOOL_FAILED
//                        (POST /v1/workflows/{id}/events) and reports them to the runtime.
//                        There is no timeout: a tool runs as long as the client says.
//   ReportedEngine       executors::Engine for engines that report their own LLM results
//                        (embedding API or HTTP): Admit() records the sequence and waits
//                        for LLM_FINISHED / LLM_FAILED, which it hands to the runtime as a
//                        one-sequence step report. It computes nothing and holds no KV
//                        of its own: its pool is the scheduler core's accounting alone
//                        (Import/Release only count tokens per context).
// Reports can arrive before the scheduler admits or places the node (a client may start a
// tool the moment its deps are done): they are kept, keyed by "wf/node", and consumed in
// order by the next Start()/Admit(). Forget() drops what is kept for a workflow that ended.
// Completions are posted to the loop, never run inside Start() or Report().
//
// Thread-safety: loop-thread only (the service posts reports onto the loop).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/event_loop.h"
#include "executors/engine.h"
#include "executors/tool_waiter.h"
#include "proto/switchyard/v1/events.pb.h"

namespace switchyard::driver {

// One reported event about a node, as the waiters keep it.
struct NodeReport {
  v1::NodeEventType type = v1::NODE_EVENT_UNSPECIFIED;
  std::string error;
  int64_t output_tokens = 0;
};

class ReportedToolWaiter final : public executors::ToolWaiter {
 public:
  explicit ReportedToolWaiter(EventLoop* loop) : loop_(loop) {}
  void Start(const std::string& key, const v1::ProgramNode& node, std::function<void()> started,
             std::function<void(Status)> done) override;
  void Report(const std::string& key, NodeReport report);
  void Forget(const std::string& workflow_id);
  size_t waiting() const { return waiting_.size(); }
  size_t kept() const { return early_.size(); }

 private:
  struct Waiting {
    std::function<void()> started;
    std::function<void(Status)> done;
    bool started_sent = false;
  };
  // Applies one report to a waiting tool; true when the tool ended.
  bool Apply(Waiting& w, const NodeReport& r);

  EventLoop* loop_;
  std::map<std::string, Waiting> waiting_;
  std::map<std::string, std::deque<NodeReport>> early_;
};

class ReportedEngine final : public executors::Engine {
 public:
  // Reports that arrive before the node is placed, shared by the engines of all workers
  // (the node may be placed on any of them).
  using EarlyReports = std::map<std::string, std::deque<NodeReport>>;
  ReportedEngine(EventLoop* loop, int worker, executors::EngineLimits limits,
                 std::shared_ptr<EarlyReports> early)
      : loop_(loop), worker_(worker), limits_(limits), early_(std::move(early)) {}
  std::string_view name() const override { return "engine (reported LLM results)"; }
  const executors::EngineLimits& limits() const override { return limits_; }
  void SetListener(Listener l) override { listener_ = std::move(l); }
  Status Admit(const executors::SequenceSpec& seq) override;
  Result<executors::SeqProgress> Preempt(const std::string& key) override;
  Status Import(const std::string& context, int64_t tokens) override;
  Status Release(const std::string& context) override;
  int64_t blocks_used() const override { return 0; }
  int64_t context_tokens(const std::string& context) const override;
  size_t running() const override { return runs_.size(); }

  bool Has(const std::string& key) const { return runs_.count(key) > 0; }
  // A report for a sequence running here, or (when none runs) kept for a later Admit.
  void Report(const std::string& key, NodeReport report);
  void Forget(const std::string& workflow_id);

 private:
  struct Run {
    Time started{0};
  };
  void Finish(const std::string& key, const NodeReport& r);

  EventLoop* loop_;
  int worker_;
  executors::EngineLimits limits_;
  Listener listener_;
  std::map<std::string, Run> runs_;
  std::map<std::string, int64_t> contexts_;
  std::shared_ptr<EarlyReports> early_;
};

}  // namespace switchyard::driver
