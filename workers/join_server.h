// The serve side of the worker control protocol (proto/switchyard/v1/worker_control.proto):
// JoinServer listens for `switchyard worker --join` processes and welcomes them;
// RemoteWorker is one joined worker's connection, state and liveness.
//
// Membership is fixed when serve starts: serve is told how many workers to expect, and
// AwaitWorkers accepts until that many joined (or fails with DeadlineExceeded naming how
// many joined, of how many, at which address, and why any was refused). A hello whose
// protocol_version differs from serve's is refused with a WorkerRefusal naming both
// versions; so is a worker id already joined and alive, and a hello naming a model serve
// does not serve (naming both). Each worker gets the scheduler index first_index + (join
// order).
//
// Rejoin: after AwaitWorkers the listener stays open for members that come back. A hello
// naming a lost member's id with a larger epoch (a restarted process) is welcomed under
// the member's scheduler index: RemoteWorker::Rejoin swaps in its connection and hello,
// the sink's on_rejoined runs (the RemoteEngine takes steps again), then the rejoin
// handler (serve: reconnects the worker's KV store, then SchedulerDriver::WorkerJoined). A
// stale epoch or a member that is alive is refused by name.
//
// Replacement: a hello naming an id that is not a member takes the place of a lost member
// (the lowest index among the lost), through the same Rejoin (no epoch rule: a different
// process on perhaps another host) — a new machine replaces a dead one while serve runs;
// /v1/cluster then lists the new id under that index. The number of workers is fixed at
// start: with no member lost, a stranger is refused by name.
//
// Loss (invariant 5, "detect"): a closed connection, a read/write error or silence for
// `heartbeat_misses` heartbeat intervals marks the worker lost, once: first the loss
// handler (serve: SchedulerDriver::WorkerLost of its index, so the core stops posting to it
// and recomputes or fails its nodes), then the step sink's on_lost (its RemoteEngine fails
// the step in flight). A loss before SetLossHandler is delivered when the handler is set.
//
// Put orders (direct worker-to-worker puts, workers/put_orders.h): a worker's reports
// (put_blocks_done) go to its KV sink, not the step sink; its loss reaches the KV sink
// too, after the loss handler and the step sink.
//
// Handshakes: one at a time on the accepting thread, each hello's whole frame within
// JoinOptions::handshake_timeout (and AwaitWorkers' deadline): a peer that connects and
// stalls, or sends part of a frame, delays the next one by that much at most. Detach and
// the destructor wake a handshake in progress. An accept that fails for want of descriptors
// or memory (EMFILE, ENFILE, ...) backs off before the next try.
//
// Teardown (serve): Detach() before the service (its driver, loop and tiers) is destroyed
// — the rejoin loop ends, the loss and rejoin handlers go and the detach hooks run (serve:
// the put orderer drops its orders without their callbacks) — then the destructor, which
// sends each worker its bye. The destructor detaches first if no one did.
//
// Thread-safety: every method is thread-safe; handlers run on the connection's threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "base/status.h"
#include "base/time.h"
#include "proto/switchyard/v1/worker_control.pb.h"
#include "workers/control_conn.h"

namespace switchyard::workers {

// The protocol version this build speaks (WorkerHello/WorkerWelcome.protocol_version).
// 1: steps and heartbeats; 2: also put orders (PutBlocks / PutBlocksDone, direct puts);
// 3: also KV export/import orders of a computing engine (KvExport / KvImport).
inline constexpr uint32_t kProtocolVersion = 3;

class RemoteWorker {
 public:
  struct Sink {
    std::function<void(const v1::WorkerControl&)> on_message;  // not heartbeats
    std::function<void(const Status&)> on_lost;
    std::function<void()> on_rejoined;  // a new incarnation took over (same index)
  };
  RemoteWorker(std::unique_ptr<ControlConn> conn, v1::WorkerHello hello, int index);
  // A spare slot (JoinServer::AddSpareSlots): no connection, lost ("vacant") until a new
  // worker takes it through Rejoin, as a replacement takes a lost member's place.
  static std::unique_ptr<RemoteWorker> Vacant(int index);
  ~RemoteWorker();

  void Start(Duration heartbeat, int misses);
  // The RemoteEngine's runner: where step results and the loss go (empty: nowhere).
  // Returns after any call into the previous sink has ended.
  void SetSink(Sink sink);
  void SetLossHandler(std::function<void(int index, const Status&)> fn);
  // `fn(index)`: a new incarnation rejoined (after the sink's on_rejoined).
  void SetRejoinHandler(std::function<void(int index)> fn);
  // Where put order reports and the loss go (serve's put orderer, put_orders.h); kept
  // across rejoins. Shutdown ends it with a loss ("serve stopping"), then drops it.
  struct KvSink {
    std::function<void(int index, const v1::PutBlocksDone&)> on_done;
    std::function<void(int index, const Status&)> on_lost;
  };
  void SetKvSink(KvSink sink);
  Status Send(const v1::WorkerControl& m);
  // Runs `fn(hello)` under the worker's lock when it is not lost (true then): its loss,
  // whose handler runs under the same lock, comes before the check or after `fn` — never
  // between. `fn` must not call into this worker (it may post elsewhere).
  bool IfAlive(const std::function<void(const v1::WorkerHello&)>& fn) const;
  // Ends the connection without a loss (serve is stopping): sends bye, closes.
  void Shutdown(const std::string& reason);
  // Declares the worker lost for a reason found elsewhere (its etcd lease expired): the
  // same sequence as a closed connection; the connection is closed. Once.
  void MarkLost(const Status& why);
  // Why `hello` cannot take this worker over (empty: it can): the worker is alive, or the
  // hello names this worker's id and its epoch is not after the lost incarnation's (a
  // hello with another id is a replacement: no epoch rule).
  std::string CheckRejoin(const v1::WorkerHello& hello) const;
  // A new incarnation (`hello`, welcomed on `conn`) takes over after a loss; see the header
  // comment. FailedPrecondition when CheckRejoin refuses it.
  Status Rejoin(std::unique_ptr<ControlConn> conn, v1::WorkerHello hello, Duration heartbeat,
                int misses);

  int index() const { return index_; }
  v1::WorkerHello hello() const;  // the incarnation's now (a rejoin replaces it)
  // Serve's address on this worker's control connection ("" without one).
  std::string ServeAddress() const;
  bool lost() const;
  bool vacant() const;  // a spare slot no worker has taken yet
  std::string lost_reason() const;
  v1::JoinedWorker Snapshot() const;
  // The engine's pool use, for the listing (the RemoteEngine sets it).
  void SetPoolUsedBytes(uint64_t bytes);

 private:
  // Callbacks of incarnation `gen`'s connection (ignored once another took over).
  void StartConn(const std::shared_ptr<ControlConn>& conn, uint64_t gen, Duration heartbeat,
                 int misses);
  void OnMessage(uint64_t gen, const v1::WorkerControl& m);
  void OnLost(uint64_t gen, const Status& why);
  std::shared_ptr<ControlConn> Conn() const;

  const int index_;
  mutable Mutex mu_;
  std::shared_ptr<ControlConn> conn_ GUARDED_BY(mu_);                  // the incarnation's now
  std::vector<std::shared_ptr<ControlConn>> retired_ GUARDED_BY(mu_);  // earlier ones (closed)
  v1::WorkerHello hello_ GUARDED_BY(mu_);
  uint64_t gen_ GUARDED_BY(mu_) = 0;  // incarnations so far, less one
  Sink sink_ GUARDED_BY(mu_);
  KvSink kv_sink_ GUARDED_BY(mu_);
  std::function<void(int, const Status&)> loss_handler_ GUARDED_BY(mu_);
  std::function<void(int)> rejoin_handler_ GUARDED_BY(mu_);
  bool rejoin_pending_ GUARDED_BY(mu_) =
      false;  // rejoined before a handler was set: delivered then
  bool lost_ = false, loss_delivered_ = false;
  bool vacant_ GUARDED_BY(mu_) = false;  // a spare slot no worker has taken yet
  std::string lost_reason_ GUARDED_BY(mu_);
  uint64_t pool_used_bytes_ = 0;
  v1::WorkerKvStats kv_;  // its KV store, as of the last heartbeat
};

struct JoinOptions {
  int expect = 0;                   // workers to wait for
  Duration timeout = Seconds(60);   // for all of them together
  int first_index = 0;              // the first joined worker's scheduler index
  Duration heartbeat = Seconds(1);  // interval, both ways
  int heartbeat_misses = 3;         // silence for this many intervals: lost
  bool accept_rejoins = true;       // false: the listener closes once all joined
  v1::ModelConfig model;            // sent in the welcome (the served model)
  v1::GpuSpec gpu;
  // The engine the served model runs on ("simulated" or "cpu"): a hello naming another is
  // refused; for "cpu" the welcome carries the KV pool figures below.
  std::string engine = "simulated";
  uint64_t kv_pool_bytes = 0;
  int64_t kv_block_tokens = 0;
  uint32_t protocol_version = kProtocolVersion;
  int max_refusals = 0;  // > 0: give up (FailedPrecondition) after this many refusals
  // A connection's hello, all of its frame, within this (else it is dropped, and the
  // next connection is accepted).
  Duration handshake_timeout = Seconds(10);
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
  // `fn(index)`: a lost member rejoined (see the header comment).
  void SetRejoinHandler(std::function<void(int index)> fn);
  std::function<void(int)> rejoin_handler() const;
  std::vector<v1::JoinedWorker> Snapshot() const;
  // Refusals AwaitWorkers sent ("peer: reason"), for messages and tests.
  std::vector<std::string> refusals() const;
  // Whether a connection's hello is being read now (tests wait for a stalled handshake).
  bool handshaking() const;
  // The joined worker whose hello named `worker_id` (null: none).
  RemoteWorker* Find(const std::string& worker_id) const;
  // The lost worker of the lowest index (null: none is lost).
  RemoteWorker* FindLost() const;
  // Keeps `thing` alive as long as the server, destroyed before the workers (serve's etcd
  // membership watcher, whose callback marks them lost).
  void Hold(std::shared_ptr<void> thing);
  // `count` spare slots after the joined workers, at scheduler indices first_index...:
  // members without a worker (listed "vacant", lost to the scheduler) that a new worker id
  // takes as it would a lost member's place. Call after AwaitWorkers and before
  // SetLossHandler (each slot's loss is delivered when a loss handler is set).
  void AddSpareSlots(int count, int first_index);
  // Serve's service is going (see the header comment): stops accepting (a handshake in
  // progress is woken and dropped; the rejoin loop is joined), drops the loss and rejoin
  // handlers (returning after any call into them ended), then runs the detach hooks in
  // order. Afterwards no handler or hook of this server calls into the service; workers
  // still connected stay so until the destructor's bye. Idempotent.
  void Detach();
  // `fn` runs once, in Detach (at once when it already ran).
  void AddDetachHook(std::function<void()> fn);

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  JoinServer(int fd, std::string address) : fd_(fd), address_(std::move(address)) {}
  // One accepted connection: welcomed (OK: appended, or a member rejoined) or refused
  // (the reason). `members_only`: after AwaitWorkers, only rejoins. The hello must come
  // by `deadline` (and within o.handshake_timeout).
  Status Handshake(std::unique_ptr<ControlConn> conn, const JoinOptions& o, bool members_only,
                   SteadyTime deadline);
  // The first message of `conn`, read where Detach can wake it (Cancelled once stopping).
  Result<v1::WorkerControl> ReadHello(ControlConn* conn, Duration timeout);
  // Accepts one connection within `wait`: the handshake's status (OK when none came).
  Status AcceptOne(const JoinOptions& o, bool members_only, Duration wait,
                   SteadyTime deadline = SteadyTime::max());
  // accept(2) failed with `err`: OK to retry at once, or the error after backing off
  // `wait` (descriptors or memory ran out: the listener stays readable, no spinning).
  Status AcceptFailed(int err, Duration wait);
  void Refuse(ControlConn* conn, const v1::WorkerHello& hello, const JoinOptions& o,
              const std::string& why);
  void RejoinLoop();

  int fd_;
  std::string address_;
  JoinOptions options_;  // AwaitWorkers' (the rejoin loop's)
  std::atomic<bool> stop_{false};
  std::thread rejoin_thread_;
  bool accept_failing_ = false;            // the accepting thread's: the last accept failed
  Mutex detach_mu_;                        // one Detach at a time
  bool detached_ GUARDED_BY(mu_) = false;  // under mu_
  mutable Mutex mu_;
  ControlConn* handshaking_ GUARDED_BY(mu_) = nullptr;  // the connection whose hello is being read
  std::vector<std::function<void()>> detach_hooks_ GUARDED_BY(mu_);
  std::function<void(int)> rejoin_handler_ GUARDED_BY(mu_);
  std::vector<std::unique_ptr<RemoteWorker>> workers_ GUARDED_BY(mu_);
  std::vector<std::string> refusals_ GUARDED_BY(mu_);
  std::vector<std::shared_ptr<void>> held_;  // last: destroyed first
};

// The refusal of `hello` by a serve speaking `serve_version` (empty: accepted).
std::string CheckHello(const v1::WorkerHello& hello, uint32_t serve_version);

}  // namespace switchyard::workers
