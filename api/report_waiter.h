// Executors that wait for reports instead of running anything: the service side of tool
// nodes (the agent framework runs the real tool) and of LLM nodes run by an engine.
//
//   ReportedToolWaiter   executors::ToolWaiter. When the scheduler admits a tool node it
//                        waits for the client's TOOL_STARTED / TOOL_FINISHED / TOOL_FAILED
//                        (POST /v1/workflows/{id}/events) and reports them to the runtime.
//                        There is no timeout: a tool runs as long as the client says.
//   ReportedModelExecutor executors::ModelExecutor for engines that report their own
//                        LLM results (embedding API or HTTP): Start() records the
//                        placement and waits for LLM_FINISHED / LLM_FAILED.
// Reports can arrive before the scheduler admits or places the node (a client may start a
// tool the moment its deps are done): they are kept, keyed by "wf/node", and consumed in
// order by the next Start(). Forget() drops what is kept for a workflow that ended.
// Completions are posted to the loop, never run inside Start() or Report().
//
// Thread-safety: loop-thread only (the service posts reports onto the loop).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <string>

#include "base/event_loop.h"
#include "executors/simulated.h"
#include "proto/switchyard/v1/events.pb.h"

namespace switchyard::api {

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

class ReportedModelExecutor final : public executors::ModelExecutor {
 public:
  explicit ReportedModelExecutor(EventLoop* loop) : loop_(loop) {}
  std::string_view name() const override { return "engine (reported LLM results)"; }
  void Start(const std::string& key, const scheduler::Command& place, const v1::ProgramNode& node,
             int64_t context_tokens, executors::LlmReport report) override;
  void Stop(const std::string& key) override;
  void Report(const std::string& key, NodeReport report);
  void Forget(const std::string& workflow_id);

 private:
  struct Run {
    executors::LlmReport report;
    Time started{0};
  };
  bool Apply(Run& run, const NodeReport& r);

  EventLoop* loop_;
  std::map<std::string, Run> runs_;
  std::map<std::string, std::deque<NodeReport>> early_;
};

}  // namespace switchyard::api
