// WorkerAgent: the worker side of the worker control protocol — `switchyard worker --join
// HOST:PORT --engine simulated` (proto/switchyard/v1/worker_control.proto).
//
// Join connects to serve (retrying until connect_timeout: serve may still be starting),
// sends the hello (protocol version, worker id, engine kind, model, KV pool capacity, this
// process's epoch, host name) and waits for the welcome; a refusal is FailedPrecondition
// carrying serve's reason (a version mismatch names both versions). Run then serves the
// connection on an AsioEventLoop on the calling thread: every StepRunner call serve
// forwards (workers/remote_engine.h) goes, in order, to this process's runner — for engine
// "simulated" a CostStepRunner pricing each step with the roofline of the model and GPU the
// welcome named (the step really takes that long here) — and each RunStep is answered with
// one StepDone. Run returns OK when serve said bye or Stop was called (the worker then says
// bye itself: serve marks it lost as "worker left"), Unavailable when serve was lost
// (closed connection, missed heartbeats).
//
// Thread-safety: Stop is thread-safe; Run is called once.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "base/asio_event_loop.h"
#include "base/result.h"
#include "base/time.h"
#include "executors/step_cost.h"
#include "executors/step_runner.h"
#include "workers/control_conn.h"

namespace switchyard::workers {

struct AgentOptions {
  std::string join;       // serve's control address, HOST:PORT
  std::string worker_id;  // empty: <hostname>-<pid>
  std::string engine = "simulated";
  std::string model;                    // empty: whatever serve serves
  uint64_t kv_pool_capacity_bytes = 0;  // advertised (listed by serve)
  uint32_t protocol_version = 0;        // 0: kProtocolVersion (tests set others)
  Duration connect_timeout = Seconds(30);
};

class WorkerAgent {
 public:
  static Result<std::unique_ptr<WorkerAgent>> Join(const AgentOptions& options);
  ~WorkerAgent();

  const v1::WorkerWelcome& welcome() const { return welcome_; }
  const std::string& worker_id() const { return id_; }
  Status Run();
  void Stop();
  uint64_t steps_run() const { return steps_.load(); }

 private:
  WorkerAgent() = default;
  void Handle(const v1::WorkerControl& m);  // loop thread
  void RunStep(const v1::RunStep& m);

  std::string id_;
  v1::WorkerWelcome welcome_;
  std::unique_ptr<ControlConn> conn_;
  AsioEventLoop loop_;
  std::unique_ptr<executors::StepCostModel> cost_;
  std::unique_ptr<executors::StepRunner> runner_;
  std::mutex mu_;
  Status end_;  // why Run returns
  std::atomic<uint64_t> steps_{0};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> bye_{false};  // serve said bye (set on the connection's reader)
};

}  // namespace switchyard::workers
