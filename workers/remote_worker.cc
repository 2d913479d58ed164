// RemoteWorker (join_server.h): one joined worker's connection, state and liveness.
#include <string>
#include <utility>

#include "base/logging.h"
#include "base/mutex.h"
#include "workers/join_server.h"

namespace switchyard::workers {

RemoteWorker::RemoteWorker(std::unique_ptr<ControlConn> conn, v1::WorkerHello hello, int index)
    : index_(index), conn_(std::move(conn)), hello_(std::move(hello)) {}

std::unique_ptr<RemoteWorker> RemoteWorker::Vacant(int index) {
  std::unique_ptr<RemoteWorker> w(new RemoteWorker(nullptr, v1::WorkerHello(), index));
  MutexLock lock(&w->mu_);  // no other thread has it yet: for the analysis
  w->lost_ = true;
  w->vacant_ = true;
  w->lost_reason_ = "spare slot " + std::to_string(index) + ": no worker has joined it yet";
  return w;
}

RemoteWorker::~RemoteWorker() {
  if (conn_) conn_->Close();
  for (auto& c : retired_) c->Close();  // only connections that existed are retired
}

void RemoteWorker::Start(Duration heartbeat, int misses) {
  StartConn(Conn(), 0, heartbeat, misses);
}

void RemoteWorker::StartConn(const std::shared_ptr<ControlConn>& conn, uint64_t gen,
                             Duration heartbeat, int misses) {
  conn->Start([this, gen](const v1::WorkerControl& m) { OnMessage(gen, m); },
              [this, gen](const Status& why) { OnLost(gen, why); }, heartbeat, misses);
}

std::shared_ptr<ControlConn> RemoteWorker::Conn() const {
  MutexLock l(&mu_);
  return conn_;
}

Status RemoteWorker::Send(const v1::WorkerControl& m) {
  std::shared_ptr<ControlConn> c = Conn();
  if (!c) return Status::Unavailable(lost_reason(), ErrorScope::kRemote);
  return c->Send(m);
}

bool RemoteWorker::IfAlive(const std::function<void(const v1::WorkerHello&)>& fn) const {
  MutexLock l(&mu_);
  if (lost_) return false;
  fn(hello_);
  return true;
}

bool RemoteWorker::vacant() const {
  MutexLock l(&mu_);
  return vacant_;
}

std::string RemoteWorker::lost_reason() const {
  MutexLock l(&mu_);
  return lost_reason_;
}

v1::WorkerHello RemoteWorker::hello() const {
  MutexLock l(&mu_);
  return hello_;
}

void RemoteWorker::SetSink(Sink sink) {
  MutexLock l(&mu_);
  sink_ = std::move(sink);
}

void RemoteWorker::SetKvSink(KvSink sink) {
  MutexLock l(&mu_);
  kv_sink_ = std::move(sink);
}

void RemoteWorker::SetLossHandler(std::function<void(int, const Status&)> fn) {
  MutexLock l(&mu_);
  loss_handler_ = std::move(fn);
  if (lost_ && !loss_delivered_ && loss_handler_) {
    loss_delivered_ = true;
    loss_handler_(index_, Status::Unavailable(lost_reason_, ErrorScope::kRemote));
  }
}

void RemoteWorker::SetRejoinHandler(std::function<void(int)> fn) {
  std::function<void(int)> deliver;
  {
    MutexLock l(&mu_);
    rejoin_handler_ = std::move(fn);
    if (rejoin_pending_ && rejoin_handler_ && !lost_) {
      rejoin_pending_ = false;
      deliver = rejoin_handler_;
    }
  }
  if (deliver) deliver(index_);
}

void RemoteWorker::OnMessage(uint64_t gen, const v1::WorkerControl& m) {
  if (m.has_heartbeat()) {  // liveness (ControlConn counts it) and the KV store's figures
    if (m.heartbeat().has_kv()) {
      MutexLock l(&mu_);
      if (gen == gen_) kv_ = m.heartbeat().kv();
    }
    return;
  }
  if (m.has_bye()) {
    OnLost(gen, Status::Unavailable("worker left: " + m.bye().reason(), ErrorScope::kRemote));
    return;
  }
  MutexLock l(&mu_);
  if (gen != gen_) return;
  if (m.has_put_blocks_done()) {
    if (kv_sink_.on_done) kv_sink_.on_done(index_, m.put_blocks_done());
    return;
  }
  if (sink_.on_message) sink_.on_message(m);
}

void RemoteWorker::OnLost(uint64_t gen, const Status& why) {
  MutexLock l(&mu_);
  if (lost_ || gen != gen_) return;  // once per incarnation; a retired one's end is old news
  lost_ = true;
  lost_reason_ = "worker " + hello_.worker_id() + " (index " + std::to_string(index_) +
                 ") lost: " + why.message();
  Log(LogLevel::kWarn, "joined worker lost",
      LogKeys()
          .With("worker", hello_.worker_id())
          .With("epoch", std::to_string(hello_.epoch()))
          .With("reason", why.message()));
  Status st = Status::Unavailable(lost_reason_, ErrorScope::kRemote);
  // The scheduler first (it stops posting and fails the nodes remote-scoped), then the
  // engine's step in flight.
  if (loss_handler_) {
    loss_delivered_ = true;
    loss_handler_(index_, st);
  }
  if (sink_.on_lost) sink_.on_lost(st);
  if (kv_sink_.on_lost) kv_sink_.on_lost(index_, st);  // put orders to and from it fail
}

std::string RemoteWorker::CheckRejoin(const v1::WorkerHello& hello) const {
  MutexLock l(&mu_);
  if (!lost_) return "worker id '" + hello.worker_id() + "' already joined";
  if (hello.worker_id() == hello_.worker_id() && hello.epoch() <= hello_.epoch())
    return "worker '" + hello.worker_id() + "' rejoins with epoch " +
           std::to_string(hello.epoch()) + ", not after its lost incarnation's epoch " +
           std::to_string(hello_.epoch()) + " (a stale incarnation)";
  return "";
}

Status RemoteWorker::Rejoin(std::unique_ptr<ControlConn> conn, v1::WorkerHello hello,
                            Duration heartbeat, int misses) {
  std::string why = CheckRejoin(hello);
  if (!why.empty()) return Status::FailedPrecondition(why);
  std::shared_ptr<ControlConn> fresh(std::move(conn));
  uint64_t gen;
  std::shared_ptr<ControlConn> old;
  std::string old_id;
  {
    MutexLock l(&mu_);
    old = conn_;
    old_id = hello_.worker_id();
    if (conn_) retired_.push_back(conn_);
    conn_ = fresh;
    hello_ = std::move(hello);
    gen = ++gen_;
    lost_ = loss_delivered_ = vacant_ = false;
    kv_ = {};
    pool_used_bytes_ = 0;
  }
  if (old) old->Close();  // it is lost already; its late callbacks carry the old gen
  StartConn(fresh, gen, heartbeat, misses);
  v1::WorkerHello now = this->hello();
  Log(LogLevel::kInfo,
      old_id == now.worker_id() ? "joined worker rejoined"
      : old_id.empty()          ? "joined worker took a spare slot"
                                : "joined worker replaced a lost one",
      LogKeys()
          .With("worker", now.worker_id())
          .With("replaced", old_id)
          .With("index", std::to_string(index_))
          .With("epoch", std::to_string(now.epoch()))
          .With("host", now.host()));
  std::function<void()> on_rejoined;
  std::function<void(int)> handler;
  {
    MutexLock l(&mu_);
    on_rejoined = sink_.on_rejoined;
    handler = rejoin_handler_;
    rejoin_pending_ = !handler;
  }
  if (on_rejoined) on_rejoined();  // the engine first, then the scheduler places on it
  if (handler) handler(index_);
  return Status::OK();
}

void RemoteWorker::Shutdown(const std::string& reason) {
  KvSink kv;
  {
    MutexLock l(&mu_);
    sink_ = {};
    kv = std::exchange(kv_sink_, {});
    loss_handler_ = nullptr;
    rejoin_handler_ = nullptr;
  }
  // Orders still out end now (their reports would come to nobody).
  if (kv.on_lost)
    kv.on_lost(index_, Status::Unavailable("serve stopping: " + reason, ErrorScope::kRemote));
  v1::WorkerControl bye;
  bye.mutable_bye()->set_reason(reason);
  if (std::shared_ptr<ControlConn> c = Conn()) c->Finish(bye, Seconds(2));
}

bool RemoteWorker::lost() const {
  MutexLock l(&mu_);
  return lost_;
}

void RemoteWorker::SetPoolUsedBytes(uint64_t bytes) {
  MutexLock l(&mu_);
  pool_used_bytes_ = bytes;
}

void RemoteWorker::MarkLost(const Status& why) {
  uint64_t gen;
  std::shared_ptr<ControlConn> conn;
  {
    MutexLock l(&mu_);
    gen = gen_;
    conn = conn_;
  }
  OnLost(gen, why);
  if (conn) conn->Close();
}

std::string RemoteWorker::ServeAddress() const {
  std::shared_ptr<ControlConn> conn = Conn();
  return conn ? conn->LocalHost() : "";
}

v1::JoinedWorker RemoteWorker::Snapshot() const {
  v1::JoinedWorker w;
  std::shared_ptr<ControlConn> conn = Conn();
  MutexLock l(&mu_);
  w.set_id(hello_.worker_id());
  w.set_host(hello_.host());
  w.set_engine(hello_.engine());
  w.set_role(hello_.role().empty() ? "mixed" : hello_.role());
  w.set_model(hello_.model());
  w.set_kv_pool_capacity_bytes(hello_.kv_pool_capacity_bytes());
  w.set_worker_index(index_);
  if (conn) {
    w.set_address(conn->remote());
    w.set_last_heartbeat_ms(conn->last_heard_ms());
    w.set_control_dscp(conn->dscp());
    w.set_control_bytes_sent(conn->bytes_sent());
    w.set_control_bytes_received(conn->bytes_received());
  }
  w.set_state(vacant_ ? "vacant" : lost_ ? "lost" : "alive");
  w.set_lost_reason(lost_reason_);
  w.set_kv_pool_used_bytes(pool_used_bytes_);
  w.set_kv_address(hello_.kv_address());
  w.set_direct_puts(hello_.kv_direct_puts());
  w.set_epoch(hello_.epoch());
  w.set_joins(static_cast<uint32_t>(gen_ + 1));
  if (kv_.capacity_bytes() > 0) *w.mutable_kv() = kv_;
  return w;
}

}  // namespace switchyard::workers
