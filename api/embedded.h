// switchyard::api::Embedded: the C++ embedding API a serving stack links to.
//
// It wraps a Service (durable state in RocksDB, the scheduler driven on its own thread)
// for one tenant, without HTTP:
//   agent side   Submit / Append / Report (tool and LLM events) / Close / Cancel / Get;
//   engine side  every scheduler command (place, preempt, keep, demote, prefetch, discard,
//                admit, retry, fail, complete) is delivered to a callback set with
//                OnCommand(), or, without one, queued for NextCommand(); the engine reports
//                what it ran with LlmStarted / LlmFinished / LlmFailed (a finish or failure
//                without a start implies the start).
// By default the engine runs LLM nodes (EmbeddedOptions::engine_runs_llm = true): the
// scheduler places each LLM node and waits for the engine's result. With false the
// simulated engine runs them (demos, tests).
//
// Ownership: Embedded owns its Service. Thread-safety: all methods are thread-safe. The
// OnCommand callback runs on the scheduler's thread: it must be quick and must not call
// Sync() or destroy the Embedded; calling the other methods from it is fine.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/service.h"
#include "base/clock.h"
#include "base/result.h"

namespace switchyard::api {

struct EmbeddedOptions {
  std::string data_dir = "var";
  std::string tenant = "default";
  bool durable = true;                   // fsync acknowledged writes (invariant 10)
  bool engine_runs_llm = true;           // false: the simulated engine runs LLM nodes
  SchedulerConfig scheduler;             // workers, emulated HBM size, policy, tenant weights
  size_t max_queued_commands = 1 << 20;  // NextCommand() queue bound (oldest dropped)
};

// One scheduler command for the engine.
struct EngineCommand {
  std::string workflow_id;
  v1::Decision decision;  // kind, node, context, worker, src/dst, bytes, reason, line
};

class Embedded {
 public:
  static Result<std::unique_ptr<Embedded>> Open(EmbeddedOptions options);
  ~Embedded();

  // Agent side.
  Result<std::string> Submit(v1::Workflow workflow);
  Status Append(const std::string& workflow_id, std::vector<v1::ProgramNode> nodes);
  Status Report(const std::string& workflow_id, v1::NodeEvent event);
  Status Close(const std::string& workflow_id);
  Status Cancel(const std::string& workflow_id, std::string reason = "");
  Result<v1::WorkflowStatus> Get(const std::string& workflow_id) const;
  v1::ClusterState Cluster() const { return service_->Cluster(); }

  // Engine side.
  void OnCommand(std::function<void(const EngineCommand&)> callback);
  // The next queued command, waiting up to `timeout`; nullopt when none came.
  std::optional<EngineCommand> NextCommand(Duration timeout);
  Status LlmStarted(const std::string& workflow_id, const std::string& node_id);
  Status LlmFinished(const std::string& workflow_id, const std::string& node_id,
                     int64_t output_tokens);
  Status LlmFailed(const std::string& workflow_id, const std::string& node_id,
                   const std::string& error, bool retryable);

  Service& service() { return *service_; }
  const std::string& tenant() const { return options_.tenant; }

 private:
  explicit Embedded(EmbeddedOptions options) : options_(std::move(options)) {}
  void Deliver(const EngineCommand& c);

  EmbeddedOptions options_;
  std::unique_ptr<Service> service_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void(const EngineCommand&)> callback_;
  std::deque<EngineCommand> queue_;
};

}  // namespace switchyard::api
