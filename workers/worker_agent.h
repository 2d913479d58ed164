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
// KV store: unless kv_listen is "none", the worker also runs a KvStoreServer
// (kv_store/, the store of `switchyard worker --listen`: receiver-granted credit,
// validation, the commit rule) on its own thread, bound to kv_listen (default: the address this
// host has on the control connection, any port), and names it in the hello; serve's mover then
// keeps this worker's KV pool blocks there, moving them over UCX. Every heartbeat carries
// the store's figures (capacity, credit granted and in use, puts refused for credit).
// Direct puts: unless direct_puts is off, the hello says so and serve may order this worker
// to put blocks of its store straight into another worker's store (PutBlocks); a
// kv_tiers DirectPutter carries each order out on its own threads (reading the committed
// source blocks in process, putting them over UCX under the destination's credit) and the
// outcome goes back as one PutBlocksDone. The control loop never waits on a put.
// With etcd_url, the worker also registers in etcd (see AgentOptions).
//
// Thread-safety: Stop is thread-safe; Run is called once.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "base/asio_event_loop.h"
#include "base/mutex.h"
#include "base/result.h"
#include "base/time.h"
#include "cluster/membership.h"
#include "executors/step_cost.h"
#include "executors/step_runner.h"
#include "kv_store/direct_put.h"
#include "kv_store/kv_store_server.h"
#include "workers/control_conn.h"
#include "workers/cpu_worker.h"

namespace switchyard::workers {

struct AgentOptions {
  std::string join;       // serve's control address, HOST:PORT
  std::string worker_id;  // empty: <hostname>-<pid>
  std::string engine = "simulated";
  // Engine "simulated": the model's name in the hello (empty: whatever serve serves).
  // Engine "cpu": the model to load — the shape file or checkpoint directory serve serves.
  std::string model;
  uint64_t kv_pool_capacity_bytes = 0;  // advertised (listed by serve)
  // Prefill/decode disaggregation: "prefill", "decode" or "mixed" ("": mixed), in the hello.
  std::string role;
  uint32_t protocol_version = 0;  // 0: kProtocolVersion (tests set others)
  Duration connect_timeout = Seconds(30);
  // The KV store (see above). Credit 0: the KvStoreServer's defaults.
  std::string kv_listen;  // HOST:PORT; "": the control connection's local host, port 0
  uint64_t kv_capacity_bytes = 2ull << 30;
  std::string kv_transport = "ucx";
  std::map<std::string, std::string> kv_transport_params = {{"TLS", "tcp"}};
  uint64_t credit_per_sender_bytes = 0, credit_total_bytes = 0;
  // Tests: each put the store takes waits this long before its commit (a slow receiver,
  // so that a transfer is in flight when the test acts).
  std::chrono::milliseconds kv_finish_delay{0};
  // Carry out serve's put orders (direct worker-to-worker puts; `--direct-puts off`: serve
  // relays this worker's peer moves through itself).
  bool direct_puts = true;
  // Membership in etcd (cluster/membership.h): registers /switchyard/<cluster>/workers/<id>
  // under a lease of lease_ttl, kept alive from a thread, before the hello; revoked when
  // the worker stops on purpose (a killed worker's key expires with its lease).
  std::string etcd_url;
  std::string cluster = "default";
  std::chrono::seconds lease_ttl{5};
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
  // The KV store's address ("" when none).
  std::string kv_address() const;

 private:
  WorkerAgent() = default;
  void Handle(const v1::WorkerControl& m);  // loop thread
  void RunStep(const v1::RunStep& m);
  void PutBlocks(const v1::PutBlocks& m);  // hands the order to the putter
  // KV export/import orders of engine cpu, in order; one whose context a step computes
  // into waits for that step's end, and so do the ones after it (engine simulated answers
  // each at once with NoKv).
  void RunKvOrders();
  template <typename Done>
  void NoKv(uint64_t order, Done* out) const;

  std::string id_;
  v1::WorkerWelcome welcome_;
  Status StartKvStore(const AgentOptions& o);
  void FillHeartbeat(v1::WorkerHeartbeat* hb) const;

  std::unique_ptr<ControlConn> conn_;
  std::unique_ptr<kv_store::KvStoreServer> kv_;
  std::unique_ptr<kv_store::DirectPutter> putter_;  // after kv_: goes first
  std::unique_ptr<cluster::Registration> registration_;
  std::thread kv_thread_;
  uint64_t kv_capacity_ = 0;
  AsioEventLoop loop_;
  std::unique_ptr<executors::StepCostModel> cost_;
  std::unique_ptr<CpuWorker> cpu_;  // engine cpu (before runner_: the runner points into it)
  std::unique_ptr<executors::StepRunner> runner_;
  std::deque<v1::WorkerControl> kv_orders_;  // loop thread
  Mutex mu_;
  Status end_ GUARDED_BY(mu_);  // why Run returns
  std::atomic<uint64_t> steps_{0};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> bye_{false};  // serve said bye (set on the connection's reader)
};

}  // namespace switchyard::workers
