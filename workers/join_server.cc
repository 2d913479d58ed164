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

#include "base/logging.h"

namespace switchyard::workers {

std::string CheckHello(const v1::WorkerHello& hello, uint32_t serve_version) {
  if (hello.protocol_version() != serve_version)
    return "protocol version mismatch: worker speaks worker control protocol version " +
           std::to_string(hello.protocol_version()) + ", serve speaks version " +
           std::to_string(serve_version);
  if (hello.worker_id().empty()) return "hello without a worker id";
  if (hello.engine() != "simulated")
    return "engine '" + hello.engine() + "' cannot join (joined workers run: simulated)";
  return "";
}

// --- RemoteWorker ---

RemoteWorker::RemoteWorker(std::unique_ptr<ControlConn> conn, v1::WorkerHello hello, int index)
    : conn_(std::move(conn)), hello_(std::move(hello)), index_(index) {}

RemoteWorker::~RemoteWorker() { conn_->Close(); }

void RemoteWorker::Start(Duration heartbeat, int misses) {
  conn_->Start([this](const v1::WorkerControl& m) { OnMessage(m); },
               [this](const Status& why) { OnLost(why); }, heartbeat, misses);
}

void RemoteWorker::SetSink(Sink sink) {
  std::lock_guard<std::mutex> l(mu_);
  sink_ = std::move(sink);
}

void RemoteWorker::SetLossHandler(std::function<void(int, const Status&)> fn) {
  std::lock_guard<std::mutex> l(mu_);
  loss_handler_ = std::move(fn);
  if (lost_ && !loss_delivered_ && loss_handler_) {
    loss_delivered_ = true;
    loss_handler_(index_, Status::Unavailable(lost_reason_, ErrorScope::kPeer));
  }
}

void RemoteWorker::OnMessage(const v1::WorkerControl& m) {
  if (m.has_heartbeat()) {  // liveness (ControlConn counts it) and the KV store's figures
    if (m.heartbeat().has_kv()) {
      std::lock_guard<std::mutex> l(mu_);
      kv_ = m.heartbeat().kv();
    }
    return;
  }
  if (m.has_bye()) {
    OnLost(Status::Unavailable("worker left: " + m.bye().reason(), ErrorScope::kPeer));
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  if (sink_.on_message) sink_.on_message(m);
}

void RemoteWorker::OnLost(const Status& why) {
  std::lock_guard<std::mutex> l(mu_);
  if (lost_) return;
  lost_ = true;
  lost_reason_ = "worker " + hello_.worker_id() + " (index " + std::to_string(index_) +
                 ") lost: " + why.message();
  Log(LogLevel::kWarn, "joined worker lost",
      LogKeys().With("worker", hello_.worker_id()).With("reason", why.message()));
  Status st = Status::Unavailable(lost_reason_, ErrorScope::kPeer);
  // The scheduler first (it stops posting and fails the nodes peer-scoped), then the
  // engine's step in flight.
  if (loss_handler_) {
    loss_delivered_ = true;
    loss_handler_(index_, st);
  }
  if (sink_.on_lost) sink_.on_lost(st);
}

void RemoteWorker::Shutdown(const std::string& reason) {
  {
    std::lock_guard<std::mutex> l(mu_);
    sink_ = {};
    loss_handler_ = nullptr;
  }
  v1::WorkerControl bye;
  bye.mutable_bye()->set_reason(reason);
  conn_->Finish(bye, Seconds(2));
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
  OnLost(why);
  conn_->Close();
}

v1::JoinedWorker RemoteWorker::Snapshot() const {
  v1::JoinedWorker w;
  w.set_id(hello_.worker_id());
  w.set_host(hello_.host());
  w.set_engine(hello_.engine());
  w.set_model(hello_.model());
  w.set_kv_pool_capacity_bytes(hello_.kv_pool_capacity_bytes());
  w.set_worker_index(index_);
  w.set_address(conn_->peer());
  w.set_last_heartbeat_ms(conn_->last_heard_ms());
  std::lock_guard<std::mutex> l(mu_);
  w.set_state(lost_ ? "lost" : "alive");
  w.set_lost_reason(lost_reason_);
  w.set_kv_pool_used_bytes(pool_used_bytes_);
  w.set_kv_address(hello_.kv_address());
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

Status JoinServer::Handshake(std::unique_ptr<ControlConn> conn, const JoinOptions& o) {
  auto first = conn->ReadOne(Seconds(10));
  if (!first.ok()) return first.status();
  if (!first->has_hello()) return Status::InvalidArgument("first message is not a hello");
  const v1::WorkerHello& hello = first->hello();
  std::string why = CheckHello(hello, o.protocol_version);
  if (why.empty() && !hello.model().empty() && !o.served_models.empty() &&
      std::find(o.served_models.begin(), o.served_models.end(), hello.model()) ==
          o.served_models.end())
    why = "model mismatch: worker runs model '" + hello.model() + "', serve serves '" +
          o.served_models.front() + "'";
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& w : workers_)
      if (why.empty() && w->hello().worker_id() == hello.worker_id())
        why = "worker id '" + hello.worker_id() + "' already joined";
  }
  if (!why.empty()) {
    v1::WorkerControl r;
    r.mutable_refusal()->set_reason(why);
    r.mutable_refusal()->set_serve_protocol_version(o.protocol_version);
    r.mutable_refusal()->set_worker_protocol_version(hello.protocol_version());
    (void)conn->Send(r);
    return Status::FailedPrecondition(why);
  }
  int index = o.first_index + static_cast<int>(size());
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
  SY_RETURN_IF_ERROR(conn->Send(w));
  auto rw = std::make_unique<RemoteWorker>(std::move(conn), hello, index);
  rw->Start(o.heartbeat, o.heartbeat_misses);
  Log(LogLevel::kInfo, "worker joined",
      LogKeys()
          .With("worker", hello.worker_id())
          .With("index", std::to_string(index))
          .With("engine", hello.engine())
          .With("host", hello.host()));
  std::lock_guard<std::mutex> l(mu_);
  workers_.push_back(std::move(rw));
  return Status::OK();
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
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 200)));
    if (rc <= 0) continue;
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    int cfd = ::accept(fd_, reinterpret_cast<sockaddr*>(&peer), &len);
    if (cfd < 0) continue;
    int one = 1;
    ::setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char ip[INET_ADDRSTRLEN] = {0};
    ::inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof(ip));
    std::string name = std::string(ip) + ":" + std::to_string(ntohs(peer.sin_port));
    Status st = Handshake(std::make_unique<ControlConn>(cfd, name), o);
    if (!st.ok()) {
      Log(LogLevel::kWarn, "worker join refused",
          LogKeys().With("peer", name).With("reason", st.message()));
      std::lock_guard<std::mutex> l(mu_);
      refusals_.push_back(name + ": " + st.message());
      if (o.max_refusals > 0 && static_cast<int>(refusals_.size()) >= o.max_refusals)
        return Status::FailedPrecondition("joined " + std::to_string(workers_.size()) + " of " +
                                          std::to_string(o.expect) + " workers at " + address_ +
                                          "; refused " + refusals_.back());
    }
  }
  ::close(fd_);  // membership is fixed from here on
  fd_ = -1;
  return Status::OK();
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

}  // namespace switchyard::workers
