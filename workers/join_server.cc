// JoinServer and RemoteWorker (join_server.h).
#include "workers/join_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "base/logging.h"

namespace switchyard::workers {

std::string CheckHello(const v1::WorkerHello& hello, uint32_t serve_version) {
  if (hello.protocol_version() != serve_version)
    return "protocol version mismatch: worker speaks worker control protocol version " +
           std::to_string(hello.protocol_version()) + ", serve speaks version " +
           std::to_string(serve_version);
  if (hello.worker_id().empty()) return "hello without a worker id";
  if (hello.engine() != "simulated" && hello.engine() != "cpu")
    return "engine '" + hello.engine() + "' cannot join (joined workers run: simulated, cpu)";
  return "";
}

// --- RemoteWorker ---

RemoteWorker::RemoteWorker(std::unique_ptr<ControlConn> conn, v1::WorkerHello hello, int index)
    : index_(index), conn_(std::move(conn)), hello_(std::move(hello)) {}

std::unique_ptr<RemoteWorker> RemoteWorker::Vacant(int index) {
  std::unique_ptr<RemoteWorker> w(new RemoteWorker(nullptr, v1::WorkerHello(), index));
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
  std::lock_guard<std::mutex> l(mu_);
  return conn_;
}

Status RemoteWorker::Send(const v1::WorkerControl& m) {
  std::shared_ptr<ControlConn> c = Conn();
  if (!c) return Status::Unavailable(lost_reason(), ErrorScope::kPeer);
  return c->Send(m);
}

bool RemoteWorker::IfAlive(const std::function<void(const v1::WorkerHello&)>& fn) const {
  std::lock_guard<std::mutex> l(mu_);
  if (lost_) return false;
  fn(hello_);
  return true;
}

bool RemoteWorker::vacant() const {
  std::lock_guard<std::mutex> l(mu_);
  return vacant_;
}

std::string RemoteWorker::lost_reason() const {
  std::lock_guard<std::mutex> l(mu_);
  return lost_reason_;
}

v1::WorkerHello RemoteWorker::hello() const {
  std::lock_guard<std::mutex> l(mu_);
  return hello_;
}

void RemoteWorker::SetSink(Sink sink) {
  std::lock_guard<std::mutex> l(mu_);
  sink_ = std::move(sink);
}

void RemoteWorker::SetKvSink(KvSink sink) {
  std::lock_guard<std::mutex> l(mu_);
  kv_sink_ = std::move(sink);
}

void RemoteWorker::SetLossHandler(std::function<void(int, const Status&)> fn) {
  std::lock_guard<std::mutex> l(mu_);
  loss_handler_ = std::move(fn);
  if (lost_ && !loss_delivered_ && loss_handler_) {
    loss_delivered_ = true;
    loss_handler_(index_, Status::Unavailable(lost_reason_, ErrorScope::kPeer));
  }
}

void RemoteWorker::SetRejoinHandler(std::function<void(int)> fn) {
  std::function<void(int)> deliver;
  {
    std::lock_guard<std::mutex> l(mu_);
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
      std::lock_guard<std::mutex> l(mu_);
      if (gen == gen_) kv_ = m.heartbeat().kv();
    }
    return;
  }
  if (m.has_bye()) {
    OnLost(gen, Status::Unavailable("worker left: " + m.bye().reason(), ErrorScope::kPeer));
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  if (gen != gen_) return;
  if (m.has_put_blocks_done()) {
    if (kv_sink_.on_done) kv_sink_.on_done(index_, m.put_blocks_done());
    return;
  }
  if (sink_.on_message) sink_.on_message(m);
}

void RemoteWorker::OnLost(uint64_t gen, const Status& why) {
  std::lock_guard<std::mutex> l(mu_);
  if (lost_ || gen != gen_) return;  // once per incarnation; a retired one's end is old news
  lost_ = true;
  lost_reason_ = "worker " + hello_.worker_id() + " (index " + std::to_string(index_) +
                 ") lost: " + why.message();
  Log(LogLevel::kWarn, "joined worker lost",
      LogKeys()
          .With("worker", hello_.worker_id())
          .With("epoch", std::to_string(hello_.epoch()))
          .With("reason", why.message()));
  Status st = Status::Unavailable(lost_reason_, ErrorScope::kPeer);
  // The scheduler first (it stops posting and fails the nodes peer-scoped), then the
  // engine's step in flight.
  if (loss_handler_) {
    loss_delivered_ = true;
    loss_handler_(index_, st);
  }
  if (sink_.on_lost) sink_.on_lost(st);
  if (kv_sink_.on_lost) kv_sink_.on_lost(index_, st);  // put orders to and from it fail
}

std::string RemoteWorker::CheckRejoin(const v1::WorkerHello& hello) const {
  std::lock_guard<std::mutex> l(mu_);
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
    std::lock_guard<std::mutex> l(mu_);
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
    std::lock_guard<std::mutex> l(mu_);
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
    std::lock_guard<std::mutex> l(mu_);
    sink_ = {};
    kv = std::exchange(kv_sink_, {});
    loss_handler_ = nullptr;
    rejoin_handler_ = nullptr;
  }
  // Orders still out end now (their reports would come to nobody).
  if (kv.on_lost)
    kv.on_lost(index_, Status::Unavailable("serve stopping: " + reason, ErrorScope::kPeer));
  v1::WorkerControl bye;
  bye.mutable_bye()->set_reason(reason);
  if (std::shared_ptr<ControlConn> c = Conn()) c->Finish(bye, Seconds(2));
}

bool RemoteWorker::lost() const {
  std::lock_guard<std::mutex> l(mu_);
  return lost_;
}

void RemoteWorker::SetPoolUsedBytes(uint64_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  pool_used_bytes_ = bytes;
}

void RemoteWorker::MarkLost(const Status& why) {
  uint64_t gen;
  std::shared_ptr<ControlConn> conn;
  {
    std::lock_guard<std::mutex> l(mu_);
    gen = gen_;
    conn = conn_;
  }
  OnLost(gen, why);
  if (conn) conn->Close();
}

v1::JoinedWorker RemoteWorker::Snapshot() const {
  v1::JoinedWorker w;
  std::shared_ptr<ControlConn> conn = Conn();
  std::lock_guard<std::mutex> l(mu_);
  w.set_id(hello_.worker_id());
  w.set_host(hello_.host());
  w.set_engine(hello_.engine());
  w.set_model(hello_.model());
  w.set_kv_pool_capacity_bytes(hello_.kv_pool_capacity_bytes());
  w.set_worker_index(index_);
  if (conn) {
    w.set_address(conn->peer());
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

// --- JoinServer ---

Result<std::unique_ptr<JoinServer>> JoinServer::Listen(const std::string& host_port) {
  std::string host;
  uint16_t port = 0;
  SY_RETURN_IF_ERROR(SplitHostPort(host_port, &host, &port));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (host == "localhost") host = "127.0.0.1";
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1)
    return Status::InvalidArgument("control listen address '" + host_port +
                                   "': HOST must be an IPv4 address");
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Status::Internal(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 16) != 0) {
    Status st = Status::Unavailable("control listen on " + host_port + ": " + std::strerror(errno));
    ::close(fd);
    return st;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::string bound = host + ":" + std::to_string(ntohs(addr.sin_port));
  return std::unique_ptr<JoinServer>(new JoinServer(fd, bound));
}

JoinServer::~JoinServer() {
  // A no-op when serve detached before its service went (serve/serve_workers.h).
  Detach();
  std::vector<std::shared_ptr<void>> held;  // first: their callbacks reach the workers
  {
    std::lock_guard<std::mutex> l(mu_);
    held.swap(held_);
  }
  held.clear();
  if (fd_ >= 0) ::close(fd_);
  std::vector<std::unique_ptr<RemoteWorker>> workers;
  {
    std::lock_guard<std::mutex> l(mu_);
    workers.swap(workers_);
  }
  for (auto& w : workers) w->Shutdown("serve stopping");
}

void JoinServer::Refuse(ControlConn* conn, const v1::WorkerHello& hello, const JoinOptions& o,
                        const std::string& why) {
  v1::WorkerControl r;
  r.mutable_refusal()->set_reason(why);
  r.mutable_refusal()->set_serve_protocol_version(o.protocol_version);
  r.mutable_refusal()->set_worker_protocol_version(hello.protocol_version());
  (void)conn->Send(r);
}

void JoinServer::Detach() {
  std::lock_guard<std::mutex> once(detach_mu_);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (detached_) return;
    stop_ = true;
    if (handshaking_) handshaking_->Close();  // wakes its read: the handshake fails now
  }
  if (rejoin_thread_.joinable()) rejoin_thread_.join();  // no rejoin (nor its handlers) after
  SetLossHandler({});
  SetRejoinHandler({});
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> l(mu_);
    detached_ = true;
    hooks.swap(detach_hooks_);
  }
  for (auto& hook : hooks) hook();
}

void JoinServer::AddDetachHook(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!detached_) {
      detach_hooks_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

Result<v1::WorkerControl> JoinServer::ReadHello(ControlConn* conn, Duration timeout) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return Status::Cancelled("serve is stopping");
    handshaking_ = conn;
  }
  auto first = conn->ReadOne(timeout);
  std::lock_guard<std::mutex> l(mu_);
  handshaking_ = nullptr;
  return first;
}

Status JoinServer::Handshake(std::unique_ptr<ControlConn> conn, const JoinOptions& o,
                             bool members_only, SteadyTime deadline) {
  const Duration left =
      std::max<Duration>(Duration::zero(), deadline - std::chrono::steady_clock::now());
  auto first = ReadHello(conn.get(), std::min<Duration>(o.handshake_timeout, left));
  if (!first.ok()) return first.status();
  if (!first->has_hello()) return Status::InvalidArgument("first message is not a hello");
  const v1::WorkerHello& hello = first->hello();
  std::string why = CheckHello(hello, o.protocol_version);
  if (why.empty() && !hello.model().empty() && !o.served_models.empty() &&
      std::find(o.served_models.begin(), o.served_models.end(), hello.model()) ==
          o.served_models.end())
    why = "model mismatch: worker runs model '" + hello.model() + "', serve serves '" +
          o.served_models.front() + "'";
  if (why.empty() && hello.engine() != o.engine)
    why = "engine mismatch: worker runs engine '" + hello.engine() +
          "', serve's model runs on engine '" + o.engine + "'";
  if (why.empty() && o.engine == "cpu" &&
      hello.model_config().SerializeAsString() != o.model.SerializeAsString())
    why = "model mismatch: worker loaded '" + hello.model_config().name() + "' (" +
          std::to_string(hello.model_config().num_layers()) + " layers, hidden " +
          std::to_string(hello.model_config().hidden_size()) + "), serve serves '" +
          o.model.name() + "' (" + std::to_string(o.model.num_layers()) + " layers, hidden " +
          std::to_string(o.model.hidden_size()) + ")";
  RemoteWorker* member = why.empty() ? Find(hello.worker_id()) : nullptr;
  if (member) {
    why = member->CheckRejoin(hello);
  } else if (why.empty() && members_only) {
    member = FindLost();  // a replacement takes the place of a lost member
    if (!member)
      why = "worker id '" + hello.worker_id() +
            "' is not a member, and no member is lost and no spare slot is free (serve "
            "has a fixed number of worker slots, --remote-workers plus --spare-workers; a "
            "new worker takes a spare slot or the place of a lost member)";
  }
  if (!why.empty()) {
    Refuse(conn.get(), hello, o, why);
    return Status::FailedPrecondition(why);
  }
  int index = member ? member->index() : o.first_index + static_cast<int>(size());
  v1::WorkerControl w;
  v1::WorkerWelcome* wel = w.mutable_welcome();
  wel->set_protocol_version(o.protocol_version);
  wel->set_worker_index(index);
  wel->set_heartbeat_interval_ms(static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(o.heartbeat).count()));
  wel->set_heartbeat_misses(static_cast<uint32_t>(o.heartbeat_misses));
  *wel->mutable_model() = o.model;
  *wel->mutable_gpu() = o.gpu;
  wel->set_serve_epoch(static_cast<uint64_t>(UnixMillis()));
  wel->set_kv_pool_bytes(o.kv_pool_bytes);
  wel->set_kv_block_tokens(o.kv_block_tokens);
  SY_RETURN_IF_ERROR(conn->Send(w));
  if (member) return member->Rejoin(std::move(conn), hello, o.heartbeat, o.heartbeat_misses);
  auto rw = std::make_unique<RemoteWorker>(std::move(conn), hello, index);
  rw->Start(o.heartbeat, o.heartbeat_misses);
  Log(LogLevel::kInfo, "worker joined",
      LogKeys()
          .With("worker", hello.worker_id())
          .With("index", std::to_string(index))
          .With("engine", hello.engine())
          .With("epoch", std::to_string(hello.epoch()))
          .With("host", hello.host()));
  std::lock_guard<std::mutex> l(mu_);
  workers_.push_back(std::move(rw));
  return Status::OK();
}

Status JoinServer::AcceptFailed(int err, Duration wait) {
  // The peer gave up before the accept: the next one is fine.
  if (err == EINTR || err == EAGAIN || err == EWOULDBLOCK || err == ECONNABORTED || err == EPROTO)
    return Status::OK();
  Status st = Status::Unavailable("accept on " + address_ + ": " + std::strerror(err));
  if (!std::exchange(accept_failing_, true))
    Log(LogLevel::kWarn, "worker control accept failing: backing off",
        LogKeys().With("address", address_).With("error", st.message()));
  std::this_thread::sleep_for(std::max<Duration>(wait, Millis(10)));
  return st;
}

Status JoinServer::AcceptOne(const JoinOptions& o, bool members_only, Duration wait,
                             SteadyTime deadline) {
  pollfd p{fd_, POLLIN, 0};
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wait).count();
  if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, ms))) <= 0) return Status::OK();
  sockaddr_in peer{};
  socklen_t len = sizeof(peer);
  int cfd = ::accept(fd_, reinterpret_cast<sockaddr*>(&peer), &len);
  if (cfd < 0) return AcceptFailed(errno, wait);
  accept_failing_ = false;
  int one = 1;
  ::setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  char ip[INET_ADDRSTRLEN] = {0};
  ::inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof(ip));
  std::string name = std::string(ip) + ":" + std::to_string(ntohs(peer.sin_port));
  Status st = Handshake(std::make_unique<ControlConn>(cfd, name), o, members_only, deadline);
  if (!st.ok()) {
    Log(LogLevel::kWarn, "worker join refused",
        LogKeys().With("peer", name).With("reason", st.message()));
    std::lock_guard<std::mutex> l(mu_);
    refusals_.push_back(name + ": " + st.message());
  }
  return st;
}

Status JoinServer::AwaitWorkers(const JoinOptions& o) {
  auto deadline = std::chrono::steady_clock::now() + o.timeout;
  while (static_cast<int>(size()) < o.expect) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      std::string msg = "joined " + std::to_string(size()) + " of " + std::to_string(o.expect) +
                        " workers at " + address_ + " within " +
                        std::to_string(ToSeconds(o.timeout)) + " s";
      for (const std::string& r : refusals()) msg += "; refused " + r;
      return Status::DeadlineExceeded(msg);
    }
    Status st = AcceptOne(o, false, std::min<Duration>(left, Millis(200)), deadline);
    std::lock_guard<std::mutex> l(mu_);
    if (!st.ok() && o.max_refusals > 0 && static_cast<int>(refusals_.size()) >= o.max_refusals)
      return Status::FailedPrecondition("joined " + std::to_string(workers_.size()) + " of " +
                                        std::to_string(o.expect) + " workers at " + address_ +
                                        "; refused " + refusals_.back());
  }
  if (!o.accept_rejoins) {
    ::close(fd_);  // membership is fixed from here on
    fd_ = -1;
    return Status::OK();
  }
  options_ = o;
  rejoin_thread_ = std::thread([this] { RejoinLoop(); });
  return Status::OK();
}

void JoinServer::RejoinLoop() {
  while (!stop_) (void)AcceptOne(options_, true, Millis(200));
}

std::function<void(int)> JoinServer::rejoin_handler() const {
  std::lock_guard<std::mutex> l(mu_);
  return rejoin_handler_;
}

void JoinServer::SetRejoinHandler(std::function<void(int)> fn) {
  std::vector<RemoteWorker*> ws;
  {
    std::lock_guard<std::mutex> l(mu_);
    rejoin_handler_ = fn;
    for (auto& w : workers_) ws.push_back(w.get());
  }
  for (RemoteWorker* w : ws) w->SetRejoinHandler(fn);
}

size_t JoinServer::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return workers_.size();
}

RemoteWorker* JoinServer::worker(size_t i) const {
  std::lock_guard<std::mutex> l(mu_);
  return i < workers_.size() ? workers_[i].get() : nullptr;
}

void JoinServer::SetLossHandler(std::function<void(int, const Status&)> fn) {
  std::vector<RemoteWorker*> ws;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& w : workers_) ws.push_back(w.get());
  }
  for (RemoteWorker* w : ws) w->SetLossHandler(fn);
}

void JoinServer::AddSpareSlots(int count, int first_index) {
  std::function<void(int)> rejoin;
  std::vector<RemoteWorker*> added;
  {
    std::lock_guard<std::mutex> l(mu_);
    rejoin = rejoin_handler_;
    for (int i = 0; i < count; ++i) {
      workers_.push_back(RemoteWorker::Vacant(first_index + i));
      added.push_back(workers_.back().get());
    }
  }
  for (RemoteWorker* w : added)
    if (rejoin) w->SetRejoinHandler(rejoin);
}

RemoteWorker* JoinServer::FindLost() const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& w : workers_)
    if (w->lost()) return w.get();
  return nullptr;
}

RemoteWorker* JoinServer::Find(const std::string& worker_id) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& w : workers_)
    if (w->hello().worker_id() == worker_id) return w.get();
  return nullptr;
}

void JoinServer::Hold(std::shared_ptr<void> thing) {
  std::lock_guard<std::mutex> l(mu_);
  held_.push_back(std::move(thing));
}

std::vector<v1::JoinedWorker> JoinServer::Snapshot() const {
  std::vector<RemoteWorker*> ws;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& w : workers_) ws.push_back(w.get());
  }
  std::vector<v1::JoinedWorker> out;
  for (RemoteWorker* w : ws) out.push_back(w->Snapshot());
  return out;
}

std::vector<std::string> JoinServer::refusals() const {
  std::lock_guard<std::mutex> l(mu_);
  return refusals_;
}

bool JoinServer::handshaking() const {
  std::lock_guard<std::mutex> l(mu_);
  return handshaking_ != nullptr;
}

}  // namespace switchyard::workers
