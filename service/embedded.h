// switchyard::api::Embedded: the C++ embedding API a serving stack links to.
//
// It wraps a Service (durable state in RocksDB, the scheduler driven on its own thread)
// for one tenant, without HTTP:
//   agent side   Submit / Append / Report (tool events) / Close / Cancel / Get;
//   engine side  every scheduler command (place, preempt, keep, demote, prefetch, discard,
//                admit, retry, fail, complete) is delivered to a callback set with
//                OnCommand(), or, without one, queued for NextCommand().
// How LLM nodes run, by EmbeddedOptions:
//   * engine_factory set — the serving stack's own engines (executors::Engine, one per
//     worker, made on the scheduler's loop). The scheduler admits and preempts sequences
//     on them and hears their step reports (progress, exhausted pools: preemption works;
//     finished sequences: the results, recorded durably by the service). An engine that
//     registers its KV pool (WorkerEngine::kv, e.g. an executors::RegisteredKvPool over
//     the stack's own memory, executors/registered_kv.h) has its real blocks demoted and
//     prefetched by Switchyard's mover under the commit rule; set scheduler.model_config to
//     the engine's model so that the tiers' block size is the engine's, and
//     scheduler.hbm_bytes_per_worker to its pool's size (kv_bytes_scale is forced to 1).
//     LlmStarted / LlmFinished / LlmFailed are refused (the step reports say it).
//   * engine_runs_llm (default, no factory) — a reported engine: the scheduler places each
//     LLM node (advisory `place` commands) and waits for LlmStarted / LlmFinished /
//     LlmFailed (a finish or failure without a start implies the start). Its KV is the
//     core's accounting only (moves run on emulated tiers).
//   * neither — the simulated engine runs them (demos, tests).
// Results for a node the scheduler did not place on an engine (not yet, preempted since,
// or ended) are refused with FailedPrecondition naming the node, whichever way they come
// (LlmStarted/LlmFinished/LlmFailed or an LLM event through Report).
// Cluster events: WorkerLost(worker, reason) runs the failure sequence for that worker
// (its running nodes are recomputed elsewhere when they may be retried; a side-effecting
// node that cannot be shown safe fails its workflow closed); WorkerJoined(worker, reason)
// brings it back empty (a restarted engine); DrainWorker(worker, on) takes it out of
// service before a planned stop, or puts it back; BumpModelEpoch(model)
// invalidates every KV block of the older epoch (later uses recompute).
//
// Ownership: Embedded owns its Service (and, through it, the engines a factory made).
// Thread-safety: all methods are thread-safe. The OnCommand callback runs on the
// scheduler's thread: it must be quick and must not call Sync() or destroy the Embedded;
// calling the other methods from it is fine. Engines made by the factory run on the
// scheduler's loop thread (executors::Engine's rule).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"
#include "service/service.h"

namespace switchyard::service {

struct EmbeddedOptions {
  std::string data_dir = "var";
  std::string tenant = "default";
  bool durable = true;          // fsync acknowledged writes (invariant 10)
  bool engine_runs_llm = true;  // false: the simulated engine runs LLM nodes
  // The serving stack's engines, one per worker (see above); set, engine_runs_llm is moot.
  driver::EngineFactory engine_factory;
  driver::SchedulerConfig scheduler;     // workers, emulated HBM size, policy, tenant weights
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

  // Cluster side. InvalidArgument for a worker outside [0, workers).
  Status WorkerLost(int worker, const std::string& reason);
  // A worker WorkerLost reported is back, empty: its engine's Reset() runs (the engine
  // must implement it, or the worker stays lost) and the scheduler places on it again.
  Status WorkerJoined(int worker, const std::string& reason);
  // Takes the worker out of service (`on`: nothing new placed on it, its idle contexts
  // moved off; running calls finish) or puts it back. Returns whether it is drained
  // (empty) as of the change; Cluster() lists its state as it goes. FailedPrecondition
  // for a lost worker.
  Result<bool> DrainWorker(int worker, bool on);
  // The model's new epoch (the first bump gives 1). InvalidArgument for an empty id.
  Result<uint64_t> BumpModelEpoch(const std::string& model_id);

  Service& service() { return *service_; }
  const std::string& tenant() const { return options_.tenant; }

 private:
  explicit Embedded(EmbeddedOptions options) : options_(std::move(options)) {}
  void Deliver(const EngineCommand& c);
  // FailedPrecondition unless the scheduler placed `node_id` on a reported engine.
  Status CheckPlaced(const std::string& workflow_id, const std::string& node_id) const;

  EmbeddedOptions options_;
  std::unique_ptr<Service> service_;
  Mutex mu_;
  CondVar cv_;
  std::function<void(const EngineCommand&)> callback_ GUARDED_BY(mu_);
  std::deque<EngineCommand> queue_ GUARDED_BY(mu_);
};

}  // namespace switchyard::service
