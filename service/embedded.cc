#include "service/embedded.h"

#include "base/logging.h"
#include "base/mutex.h"

namespace switchyard::service {

Result<std::unique_ptr<Embedded>> Embedded::Open(EmbeddedOptions options) {
  if (options.tenant.empty()) return Status::InvalidArgument("EmbeddedOptions.tenant is empty");
  std::unique_ptr<Embedded> e(new Embedded(std::move(options)));
  ServiceOptions so;
  so.data_dir = e->options_.data_dir;
  so.sync_writes = e->options_.durable;
  so.scheduler = e->options_.scheduler;
  so.scheduler.enabled = true;
  so.scheduler.engines_run_llm = !e->options_.engine_runs_llm;
  if (e->options_.engine_factory) {
    // The embedder's engines run LLM nodes and their step reports are the results; their
    // registered KV moves as real bytes (no emulation scale).
    so.scheduler.engine_factory = e->options_.engine_factory;
    so.scheduler.engines_run_llm = true;
    so.scheduler.kv_bytes_scale = 1;
  }
  SY_ASSIGN_OR_RETURN(e->service_, Service::Open(so, RealClock::Default()));
  Embedded* self = e.get();
  std::string tenant = e->options_.tenant;
  e->service_->SetDecisionListener(
      [self, tenant](const std::string& t, const std::string& wf, const v1::Decision& d) {
        if (t == tenant) self->Deliver(EngineCommand{wf, d});
      });
  return e;
}

Embedded::~Embedded() {
  if (service_) service_->SetDecisionListener(nullptr);
  service_.reset();  // stops the scheduler thread before the queue goes
}

void Embedded::Deliver(const EngineCommand& c) {
  std::function<void(const EngineCommand&)> cb;
  {
    MutexLock lock(&mu_);
    cb = callback_;
    if (!cb) {
      queue_.push_back(c);
      while (queue_.size() > options_.max_queued_commands) queue_.pop_front();
    }
  }
  if (cb)
    cb(c);
  else
    cv_.Signal();
}

void Embedded::OnCommand(std::function<void(const EngineCommand&)> callback) {
  MutexLock lock(&mu_);
  callback_ = std::move(callback);
}

std::optional<EngineCommand> Embedded::NextCommand(Duration timeout) {
  MutexLock lock(&mu_);
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (queue_.empty() && cv_.WaitUntil(&mu_, end)) {
  }
  if (queue_.empty()) return std::nullopt;
  EngineCommand c = std::move(queue_.front());
  queue_.pop_front();
  return c;
}

Result<std::string> Embedded::Submit(v1::Workflow workflow) {
  return service_->Submit(options_.tenant, std::move(workflow));
}

Status Embedded::Append(const std::string& workflow_id, std::vector<v1::ProgramNode> nodes) {
  return service_->Append(options_.tenant, workflow_id, std::move(nodes));
}

Status Embedded::Report(const std::string& workflow_id, v1::NodeEvent event) {
  bool llm = event.type() == v1::LLM_STARTED || event.type() == v1::LLM_FINISHED ||
             event.type() == v1::LLM_FAILED;
  if (llm) SY_RETURN_IF_ERROR(CheckPlaced(workflow_id, event.node_id()));
  return service_->ReportEvent(options_.tenant, workflow_id, std::move(event));
}

Status Embedded::Close(const std::string& workflow_id) {
  return service_->Close(options_.tenant, workflow_id);
}

Status Embedded::Cancel(const std::string& workflow_id, std::string reason) {
  return service_->Cancel(options_.tenant, workflow_id, std::move(reason));
}

Result<v1::WorkflowStatus> Embedded::Get(const std::string& workflow_id) const {
  return service_->Get(options_.tenant, workflow_id);
}

namespace {
v1::NodeEvent LlmEvent(const std::string& node, v1::NodeEventType type) {
  v1::NodeEvent e;
  e.set_node_id(node);
  e.set_type(type);
  return e;
}
}  // namespace

Status Embedded::CheckPlaced(const std::string& workflow_id, const std::string& node_id) const {
  if (options_.engine_factory)
    return Status::FailedPrecondition(
        "LLM result for node '" + node_id + "' of workflow '" + workflow_id +
        "': the engines of EmbeddedOptions::engine_factory report through their step reports");
  driver::SchedulerDriver* d = service_->scheduler();
  if (d && !d->config().engines_run_llm && !d->Placed(workflow_id, node_id))
    return Status::FailedPrecondition("LLM result for node '" + node_id + "' of workflow '" +
                                      workflow_id +
                                      "': the scheduler has not placed it on an engine (not "
                                      "yet, preempted since, or already ended)");
  return Status::OK();
}

Status Embedded::WorkerLost(int worker, const std::string& reason) {
  driver::SchedulerDriver* d = service_->scheduler();
  if (!d) return Status::FailedPrecondition("WorkerLost: the scheduler is not running");
  if (worker < 0 || worker >= d->config().workers)
    return Status::InvalidArgument("WorkerLost: worker " + std::to_string(worker) +
                                   " is outside [0, " + std::to_string(d->config().workers) + ")");
  Log(LogLevel::kWarn, "worker lost (reported by the embedder)",
      LogKeys().With("worker", std::to_string(worker)).With("reason", reason));
  d->WorkerLost(
      worker, reason.empty() ? "reported by the embedder" : "reported by the embedder: " + reason);
  return Status::OK();
}

Status Embedded::WorkerJoined(int worker, const std::string& reason) {
  driver::SchedulerDriver* d = service_->scheduler();
  if (!d) return Status::FailedPrecondition("WorkerJoined: the scheduler is not running");
  if (worker < 0 || worker >= d->config().workers)
    return Status::InvalidArgument("WorkerJoined: worker " + std::to_string(worker) +
                                   " is outside [0, " + std::to_string(d->config().workers) + ")");
  d->WorkerJoined(
      worker, reason.empty() ? "reported by the embedder" : "reported by the embedder: " + reason);
  return Status::OK();
}

Result<bool> Embedded::DrainWorker(int worker, bool on) {
  driver::SchedulerDriver* d = service_->scheduler();
  if (!d) return Status::FailedPrecondition("DrainWorker: the scheduler is not running");
  SY_ASSIGN_OR_RETURN(driver::SchedulerDriver::WorkerDrainState st, d->DrainWorker(worker, on));
  return st.drained;
}

Result<uint64_t> Embedded::BumpModelEpoch(const std::string& model_id) {
  if (model_id.empty()) return Status::InvalidArgument("BumpModelEpoch: model_id is empty");
  driver::SchedulerDriver* d = service_->scheduler();
  if (!d) return Status::FailedPrecondition("BumpModelEpoch: the scheduler is not running");
  uint64_t epoch = d->BumpModelEpoch(model_id);
  Log(LogLevel::kInfo, "model epoch bumped (reported by the embedder)",
      LogKeys().With("model_id", model_id).With("model_epoch", std::to_string(epoch)));
  return epoch;
}

Status Embedded::LlmStarted(const std::string& workflow_id, const std::string& node_id) {
  return Report(workflow_id, LlmEvent(node_id, v1::LLM_STARTED));
}

Status Embedded::LlmFinished(const std::string& workflow_id, const std::string& node_id,
                             int64_t output_tokens) {
  // An engine may report only the end: the start is implied (refused when already running).
  (void)LlmStarted(workflow_id, node_id);
  v1::NodeEvent e = LlmEvent(node_id, v1::LLM_FINISHED);
  e.set_output_tokens(output_tokens);
  return Report(workflow_id, std::move(e));
}

Status Embedded::LlmFailed(const std::string& workflow_id, const std::string& node_id,
                           const std::string& error, bool retryable) {
  (void)LlmStarted(workflow_id, node_id);
  v1::NodeEvent e = LlmEvent(node_id, v1::LLM_FAILED);
  e.set_error(error);
  e.set_retryable(retryable);
  return Report(workflow_id, std::move(e));
}

}  // namespace switchyard::service
