// JoinServer (join_server.h); RemoteWorker is in remote_worker.cc.
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
#include "base/mutex.h"
#include "executors/engine_kind.h"
#include "scheduler/disaggregation.h"

namespace switchyard::workers {

std::string CheckHello(const v1::WorkerHello& hello, uint32_t serve_version) {
  if (hello.protocol_version() != serve_version)
    return "protocol version mismatch: worker speaks worker control protocol version " +
           std::to_string(hello.protocol_version()) + ", serve speaks version " +
           std::to_string(serve_version);
  if (hello.worker_id().empty()) return "hello without a worker id";
  if (!executors::FindEngineKind(hello.engine()).ok())
    return "engine '" + hello.engine() +
           "' cannot join (joined workers run: " + executors::EngineKindNames(false) + ")";
  if (!scheduler::ParseWorkerRole(hello.role()).ok())
    return "role '" + hello.role() + "': a worker role is prefill, decode or mixed";
  return "";
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
    MutexLock l(&mu_);
    held.swap(held_);
  }
  held.clear();
  if (fd_ >= 0) ::close(fd_);
  std::vector<std::unique_ptr<RemoteWorker>> workers;
  {
    MutexLock l(&mu_);
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
  MutexLock once(&detach_mu_);
  {
    MutexLock l(&mu_);
    if (detached_) return;
    stop_ = true;
    if (handshaking_) handshaking_->Close();  // wakes its read: the handshake fails now
  }
  if (rejoin_thread_.joinable()) rejoin_thread_.join();  // no rejoin (nor its handlers) after
  SetLossHandler({});
  SetRejoinHandler({});
  std::vector<std::function<void()>> hooks;
  {
    MutexLock l(&mu_);
    detached_ = true;
    hooks.swap(detach_hooks_);
  }
  for (auto& hook : hooks) hook();
}

void JoinServer::AddDetachHook(std::function<void()> fn) {
  {
    MutexLock l(&mu_);
    if (!detached_) {
      detach_hooks_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

Result<v1::WorkerControl> JoinServer::ReadHello(ControlConn* conn, Duration timeout) {
  {
    MutexLock l(&mu_);
    if (stop_) return Status::Cancelled("serve is stopping");
    handshaking_ = conn;
  }
  auto first = conn->ReadOne(timeout);
  MutexLock l(&mu_);
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
  if (why.empty() && executors::EngineComputes(o.engine) &&
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
  MutexLock l(&mu_);
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
    MutexLock l(&mu_);
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
    MutexLock l(&mu_);
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
  MutexLock l(&mu_);
  return rejoin_handler_;
}

void JoinServer::SetRejoinHandler(std::function<void(int)> fn) {
  std::vector<RemoteWorker*> ws;
  {
    MutexLock l(&mu_);
    rejoin_handler_ = fn;
    for (auto& w : workers_) ws.push_back(w.get());
  }
  for (RemoteWorker* w : ws) w->SetRejoinHandler(fn);
}

size_t JoinServer::size() const {
  MutexLock l(&mu_);
  return workers_.size();
}

RemoteWorker* JoinServer::worker(size_t i) const {
  MutexLock l(&mu_);
  return i < workers_.size() ? workers_[i].get() : nullptr;
}

void JoinServer::SetLossHandler(std::function<void(int, const Status&)> fn) {
  std::vector<RemoteWorker*> ws;
  {
    MutexLock l(&mu_);
    for (auto& w : workers_) ws.push_back(w.get());
  }
  for (RemoteWorker* w : ws) w->SetLossHandler(fn);
}

void JoinServer::AddSpareSlots(int count, int first_index) {
  std::function<void(int)> rejoin;
  std::vector<RemoteWorker*> added;
  {
    MutexLock l(&mu_);
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
  MutexLock l(&mu_);
  for (const auto& w : workers_)
    if (w->lost()) return w.get();
  return nullptr;
}

RemoteWorker* JoinServer::Find(const std::string& worker_id) const {
  MutexLock l(&mu_);
  for (const auto& w : workers_)
    if (w->hello().worker_id() == worker_id) return w.get();
  return nullptr;
}

void JoinServer::Hold(std::shared_ptr<void> thing) {
  MutexLock l(&mu_);
  held_.push_back(std::move(thing));
}

std::vector<v1::JoinedWorker> JoinServer::Snapshot() const {
  std::vector<RemoteWorker*> ws;
  {
    MutexLock l(&mu_);
    for (auto& w : workers_) ws.push_back(w.get());
  }
  std::vector<v1::JoinedWorker> out;
  for (RemoteWorker* w : ws) out.push_back(w->Snapshot());
  return out;
}

std::vector<std::string> JoinServer::refusals() const {
  MutexLock l(&mu_);
  return refusals_;
}

bool JoinServer::handshaking() const {
  MutexLock l(&mu_);
  return handshaking_ != nullptr;
}

}  // namespace switchyard::workers
