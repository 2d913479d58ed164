// The serve side of the worker control protocol (proto/switchyard/v1/worker_control.proto):
// JoinServer listens for `switchyard worker --join` processes and welcomes them;
// RemoteWorker is one joined worker's connection, state and liveness.
//
// Membership is fixed when serve starts (this increment): serve is told how many workers
// to expect, AwaitWorkers accepts until that many joined (or fails with DeadlineExceeded
// naming how many joined, of how many, at which address, and why any was refused), and the
// listener then closes. A hello whose protocol_version differs from serve's is refused
// with a WorkerRefusal naming both versions; so is a worker id already joined, and a hello
// naming a model serve does not serve (naming both). Each worker
// gets the scheduler index first_index + (join order).
//
// Loss (invariant 5, "detect"): a closed connection, a read/write error or silence for
// `heartbeat_misses` heartbeat intervals marks the worker lost, once: first the loss
// handler (serve: SchedulerDriver::PeerLost of its index, so the core stops posting to it
// and recomputes or fails its nodes), then the step sink's on_lost (its RemoteEngine fails
// the step in flight). A loss before SetLossHandler is delivered when the handler is set.
//
// Thread-safety: every method is thread-safe; handlers run on the connection's threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "base/time.h"
#include "proto/switchyard/v1/worker_control.pb.h"
#include "workers/control_conn.h"

namespace switchyard::workers {

// The protocol version this build speaks (WorkerHello/WorkerWelcome.protocol_version).
inline constexpr uint32_t kProtocolVersion = 1;

class RemoteWorker {
 public:
  struct Sink {
    std::function<void(const v1::WorkerControl&)> on_message;  // not heartbeats
    std::function<void(const Status&)> on_lost;
  };
  RemoteWorker(std::unique_ptr<ControlConn> conn, v1::WorkerHello hello, int index);
  ~RemoteWorker();

  void Start(Duration heartbeat, int misses);
  // The RemoteEngine's runner: where step results and the loss go (empty: nowhere).
  // Returns after any call into the previous sink has ended.
  void SetSink(Sink sink);
  void SetLossHandler(std::function<void(int index, const Status&)> fn);
  Status Send(const v1::WorkerControl& m) { return conn_->Send(m); }
  // Ends the connection without a loss (serve is stopping): sends bye, closes.
  void Shutdown(const std::string& reason);
  // Declares the worker lost for a reason found elsewhere (its etcd lease expired): the
  // same sequence as a closed connection; the connection is closed. Once.
  void MarkLost(const Status& why);

  int index() const { return index_; }
  const v1::WorkerHello& hello() const { return hello_; }
  bool lost() const;
  v1::JoinedWorker Snapshot() const;
  // The engine's pool use, for the listing (the RemoteEngine sets it).
  void SetPoolUsedBytes(uint64_t bytes);

 private:
  void OnMessage(const v1::WorkerControl& m);
  void OnLost(const Status& why);

  std::unique_ptr<ControlConn> conn_;
  const v1::WorkerHello hello_;
  const int index_;
  mutable std::mutex mu_;
  Sink sink_;
  std::function<void(int, const Status&)> loss_handler_;
  bool lost_ = false, loss_delivered_ = false;
  std::string lost_reason_;
  uint64_t pool_used_bytes_ = 0;
  v1::WorkerKvStats kv_;  // its KV store, as of the last heartbeat
};

struct JoinOptions {
  int expect = 0;                   // workers to wait for
  Duration timeout = Seconds(60);   // for all of them together
  int first_index = 0;              // the first joined worker's scheduler index
  Duration heartbeat = Seconds(1);  // interval, both ways
  int heartbeat_misses = 3;         // silence for this many intervals: lost
  v1::ModelConfig model;            // sent in the welcome (the served model)
  v1::GpuSpec gpu;
  uint32_t protocol_version = kProtocolVersion;
  int max_refusals = 0;  // > 0: give up (FailedPrecondition) after this many refusals
  // The served model's id and aliases: a hello naming another model is refused (empty
  // list, or a hello without a model: not checked).
  std::vector<std::string> served_models;
};

class JoinServer {
 public:
  // Binds HOST:PORT (port 0: any free port) and listens.
  static Result<std::unique_ptr<JoinServer>> Listen(const std::string& host_port);
  ~JoinServer();
  const std::string& address() const { return address_; }  // HOST:PORT actually bound

  // Accepts and handshakes until options.expect workers joined (see the header comment).
  Status AwaitWorkers(const JoinOptions& options);
  size_t size() const;
  RemoteWorker* worker(size_t i) const;  // join order
  // `fn(index, why)`: a joined worker was lost (index: its scheduler index).
  void SetLossHandler(std::function<void(int index, const Status&)> fn);
  std::vector<v1::JoinedWorker> Snapshot() const;
  // Refusals AwaitWorkers sent ("peer: reason"), for messages and tests.
  std::vector<std::string> refusals() const;
  // The joined worker whose hello named `worker_id` (null: none).
  RemoteWorker* Find(const std::string& worker_id) const;
  // Keeps `thing` alive as long as the server, destroyed before the workers (serve's etcd
  // membership watcher, whose callback marks them lost).
  void Hold(std::shared_ptr<void> thing);

 private:
  JoinServer(int fd, std::string address) : fd_(fd), address_(std::move(address)) {}
  // One accepted connection: welcomed (OK, appended) or refused (the reason).
  Status Handshake(std::unique_ptr<ControlConn> conn, const JoinOptions& o);

  int fd_;
  std::string address_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<RemoteWorker>> workers_;
  std::vector<std::string> refusals_;
  std::vector<std::shared_ptr<void>> held_;  // last: destroyed first
};

// The refusal of `hello` by a serve speaking `serve_version` (empty: accepted).
std::string CheckHello(const v1::WorkerHello& hello, uint32_t serve_version);

}  // namespace switchyard::workers
