#include "kv_tiers/transport/ucx_transport.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <thread>
#include <unordered_map>

#include "kv_tiers/transport/tcp_util.h"

namespace switchyard::kv_tiers::transport {
namespace {

constexpr uint64_t kHelloMagic = 0x53594b5655435831ull;  // "SYKVUCX1"
constexpr Duration kHandshakeTimeout = std::chrono::seconds(5);
// After the last event, the progress thread keeps polling this long before it sleeps on
// the worker's event fd (a burst of small messages should not pay a wake-up each).
constexpr Duration kSpinWindow = std::chrono::milliseconds(2);
// While spinning, yield the CPU after this many empty progress calls (the machine may have
// fewer cores than busy threads: the application threads need the CPU to post and check).
constexpr int kYieldEvery = 16;
// Bounds on shutdown: cancelled requests and closing endpoints get this long to finish.
constexpr Duration kShutdownBound = std::chrono::seconds(2);

Status FromUcs(ucs_status_t s, const std::string& what) {
  std::string msg = what + ": " + ucs_status_string(s);
  switch (s) {
    case UCS_ERR_CANCELED:
      return Status::Cancelled(msg);
    case UCS_ERR_MESSAGE_TRUNCATED:
      return Status::InvalidArgument(msg + " (message larger than the receive buffer)");
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
      return Status::ResourceExhausted(msg);
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_REJECTED:
      return Status::Unavailable(msg, ErrorScope::kPeer);
    default:
      return Status::Internal(msg);
  }
}

class UcxTransport;

struct EpErrArg {
  UcxTransport* transport;
  PeerId peer;
};

// A request for the progress thread: a send or receive to post, a cancellation, or a
// function to run on it (endpoint creation and closing).
struct Command {
  enum Kind { kSend, kRecv, kCancel, kCall } kind = kCall;
  std::shared_ptr<OpState> op;  // kSend, kRecv; kCancel: the op to cancel
  PeerId peer = 0;              // kSend
  void* buffer = nullptr;
  size_t count = 0;
  ucp_datatype_t datatype = 0;
  Tag tag = 0;
  Tag mask = 0;              // kRecv
  bool busy = false;         // poll actively while pending (not a long_wait receive)
  bool silent = false;       // completion does not bump CompletionCount()
  std::function<void()> fn;  // kCall
};

class UcxTransport final : public Transport {
 public:
  ~UcxTransport() override;
  static Result<std::unique_ptr<Transport>> Create(const TransportConfig& config);

  std::string name() const override { return "ucx"; }
  bool supportsRemote() const override { return true; }
  std::vector<MemoryKind> supportedMemoryKinds() const override { return {MemoryKind::kHost}; }

  Result<std::string> Listen(const std::string& address) override;
  Result<PeerId> Connect(const std::string& address) override;
  Result<uint64_t> IdAtPeer(PeerId peer) const override;
  Status PeerStatus(PeerId peer) const override;
  Status Disconnect(PeerId peer) override;

  Result<TransferHandle> PostSend(PeerId peer, const DescriptorList& src, Tag tag,
                                  const TransferOptions& options) override;
  Result<TransferHandle> PostRecv(const DescriptorList& dst, Tag tag, Tag mask,
                                  const TransferOptions& options) override;

  uint64_t CompletionCount() const override { return completions_.load(); }
  void WaitForCompletion(uint64_t seen, Duration timeout) override;

  // Progress thread only (inside ucp_worker_progress).
  void OnEpError(PeerId peer, ucs_status_t status);

 private:
  // What other threads may read about a peer (under peers_mu_).
  struct PeerInfo {
    uint64_t id_at_peer = 0;
    Status status;
  };
  // What the progress thread owns about a peer.
  struct PeerEp {
    ucp_ep_h ep = nullptr;
    std::unique_ptr<EpErrArg> err_arg;
  };
  struct Inflight {
    std::shared_ptr<OpState> op;
    void* request = nullptr;
    bool busy = false;
    bool silent = false;  // TransferOptions::silent_completion
  };

  UcxTransport() = default;
  Status Init(const TransportConfig& config);
  Result<PeerId> AddPeer(const std::vector<uint8_t>& remote_address, uint64_t id_at_peer);
  void AcceptLoop();

  // Progress thread.
  void ProgressLoop();
  void Execute(Command& c);
  void Post(Command& c);
  void CloseEp(ucp_ep_h ep);
  void Shutdown();
  void Finish(OpState* op, void* request, Status status, uint64_t bytes, Tag tag);
  static void SendCb(void* request, ucs_status_t status, void* user_data);
  static void RecvCb(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                     void* user_data);

  // Any thread.
  void Enqueue(Command c);
  // Runs `fn` on the progress thread and waits for it (inline on the progress thread).
  void Call(std::function<void()> fn);
  void Wake();
  Result<TransferHandle> Prepare(const DescriptorList& list, const TransferOptions& options,
                                 Command* c);
  void BumpCompletions();

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;  // owned by the progress thread once it runs
  std::vector<uint8_t> worker_address_;
  bool err_mode_peer_ = true;
  int worker_fd_ = -1;
  int wake_fd_ = -1;
  int listen_fd_ = -1;

  // The command queue (short lock: a push or a swap).
  std::mutex queue_mu_;
  std::vector<Command> queue_;
  std::atomic<uint64_t> queued_{0};    // pushes not yet taken by the progress thread
  std::atomic<bool> sleeping_{false};  // the progress thread is (about to be) in poll()

  mutable std::mutex peers_mu_;
  std::unordered_map<PeerId, PeerInfo> peers_;
  std::atomic<PeerId> next_peer_{1};

  // Progress thread only.
  std::unordered_map<PeerId, PeerEp> eps_;
  std::unordered_map<OpState*, Inflight> inflight_;
  int busy_ops_ = 0;

  std::atomic<bool> stop_progress_{false};
  std::atomic<bool> stop_accept_{false};
  std::atomic<uint64_t> completions_{0};
  std::atomic<int> completion_waiters_{0};
  std::mutex completion_mu_;
  std::condition_variable completion_cv_;
  std::thread progress_thread_;
  std::thread accept_thread_;
};

void EpErrorCb(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* a = static_cast<EpErrArg*>(arg);
  a->transport->OnEpError(a->peer, status);
}

Result<std::unique_ptr<Transport>> UcxTransport::Create(const TransportConfig& config) {
  std::unique_ptr<UcxTransport> t(new UcxTransport());
  Status s = t->Init(config);
  if (!s.ok()) return s.Annotate("creating the ucx transport");
  return std::unique_ptr<Transport>(std::move(t));
}

Status UcxTransport::Init(const TransportConfig& config) {
  ucp_config_t* cfg = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &cfg);
  if (st != UCS_OK) return FromUcs(st, "ucp_config_read");
  for (const auto& [key, value] : config.params) {
    if (key == "err_mode") {
      err_mode_peer_ = value != "none";
      continue;
    }
    st = ucp_config_modify(cfg, key.c_str(), value.c_str());
    if (st != UCS_OK) {
      ucp_config_release(cfg);
      return Status::InvalidArgument("ucx config " + key + "=" + value + ": " +
                                     ucs_status_string(st));
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  st = ucp_init(&params, cfg, &context_);
  ucp_config_release(cfg);
  if (st != UCS_OK) return FromUcs(st, "ucp_init");

  // Once the progress thread runs, it makes every ucp call on the worker (serialised:
  // this thread before it starts, the destructor after it ends).
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  st = ucp_worker_create(context_, &wp, &worker_);
  if (st != UCS_OK) return FromUcs(st, "ucp_worker_create");
  st = ucp_worker_get_efd(worker_, &worker_fd_);
  if (st != UCS_OK) return FromUcs(st, "ucp_worker_get_efd");
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  st = ucp_worker_get_address(worker_, &addr, &len);
  if (st != UCS_OK) return FromUcs(st, "ucp_worker_get_address");
  worker_address_.assign(reinterpret_cast<uint8_t*>(addr), reinterpret_cast<uint8_t*>(addr) + len);
  ucp_worker_release_address(worker_, addr);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return Status::Internal("eventfd failed");
  progress_thread_ = std::thread([this] { ProgressLoop(); });
  return Status::OK();
}

UcxTransport::~UcxTransport() {
  stop_accept_ = true;
  if (accept_thread_.joinable()) accept_thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  stop_progress_ = true;
  Wake();
  if (progress_thread_.joinable()) progress_thread_.join();
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void UcxTransport::Wake() {
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof(one));
}

void UcxTransport::Enqueue(Command c) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    queue_.push_back(std::move(c));
    queued_.fetch_add(1);  // seq_cst: pairs with sleeping_ in ProgressLoop
  }
  if (sleeping_.load()) Wake();
}

void UcxTransport::Call(std::function<void()> fn) {
  if (std::this_thread::get_id() == progress_thread_.get_id()) {
    fn();
    return;
  }
  std::promise<void> done;
  Command c;
  c.kind = Command::kCall;
  c.fn = [&] {
    fn();
    done.set_value();
  };
  std::future<void> f = done.get_future();
  Enqueue(std::move(c));
  f.wait();
}

void UcxTransport::BumpCompletions() {
  completions_.fetch_add(1);  // seq_cst: pairs with completion_waiters_
  if (completion_waiters_.load() > 0) {
    { std::lock_guard<std::mutex> lock(completion_mu_); }
    completion_cv_.notify_all();
  }
}

void UcxTransport::WaitForCompletion(uint64_t seen, Duration timeout) {
  std::unique_lock<std::mutex> lock(completion_mu_);
  completion_waiters_.fetch_add(1);
  completion_cv_.wait_for(lock, timeout, [&] { return completions_.load() != seen; });
  completion_waiters_.fetch_sub(1);
}

void UcxTransport::ProgressLoop() {
  std::vector<Command> batch;
  // Empty polls since the last event; the clock is read only every kClockEvery of them.
  constexpr int kClockEvery = 64;
  int empty = 0;
  auto idle_since = std::chrono::steady_clock::now();
  while (!stop_progress_.load(std::memory_order_relaxed)) {
    bool active = false;
    if (queued_.load(std::memory_order_relaxed) > 0) {
      {
        std::lock_guard<std::mutex> lock(queue_mu_);
        batch.swap(queue_);
        queued_.store(0);
      }
      for (Command& c : batch) Execute(c);
      batch.clear();
      active = true;
    }
    for (int i = 0; i < 64; ++i) {
      unsigned n = ucp_worker_progress(worker_);
      if (n == 0) break;
      active = true;
    }
    if (active) {
      empty = 0;
      idle_since = {};
      continue;
    }
    if (busy_ops_ > 0) {  // operations in flight: keep polling (yielding now and then)
      if (++empty % kYieldEvery == 0) sched_yield();
      idle_since = {};
      continue;
    }
    // Nothing pending but long-wait receives: keep polling for kSpinWindow, then sleep.
    if (++empty % kClockEvery != 1) {
      if (empty % kYieldEvery == 0) sched_yield();
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    if (idle_since == std::chrono::steady_clock::time_point{}) idle_since = now;
    if (now - idle_since < kSpinWindow) continue;
    // Sleep on the worker's event fd and the wake fd. sleeping_ is set before the queue is
    // checked again, and Enqueue pushes before it reads sleeping_ (both seq_cst), so a
    // command is either seen here or its poster writes the wake fd.
    sleeping_.store(true);
    if (queued_.load() == 0 && !stop_progress_.load() && ucp_worker_arm(worker_) == UCS_OK) {
      pollfd fds[2] = {{worker_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      ::poll(fds, 2, 100);
    }
    sleeping_.store(false);
    uint64_t v;
    (void)!::read(wake_fd_, &v, sizeof(v));  // non-blocking: drain a wake-up if any
    empty = 0;
    idle_since = {};
  }
  Shutdown();
}

void UcxTransport::Execute(Command& c) {
  switch (c.kind) {
    case Command::kSend:
    case Command::kRecv:
      return Post(c);
    case Command::kCancel: {
      auto it = inflight_.find(c.op.get());
      if (it != inflight_.end() && it->second.request != nullptr) {
        ucp_request_cancel(worker_, it->second.request);
      }
      return;
    }
    case Command::kCall:
      c.fn();
      return;
  }
}

void UcxTransport::Post(Command& c) {
  OpState* op = c.op.get();
  if (op->done.load()) return;  // cancelled before it was posted
  ucp_request_param_t param{};
  // Always complete through the callback (UCX 1.13 does not fill recv_info on an
  // immediate completion, which would lose the length and sender tag).
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.user_data = op;
  param.datatype = c.datatype;
  ucp_ep_h ep = nullptr;
  if (c.kind == Command::kSend) {
    auto it = eps_.find(c.peer);
    if (it == eps_.end()) {
      op->Complete(Status::NotFound("ucx: unknown peer " + std::to_string(c.peer)), 0, 0);
      return BumpCompletions();
    }
    ep = it->second.ep;
  }
  // Registered before the call: with NO_IMM_CMPL, an operation that completes at once
  // (an eager send, a receive matching a message that already arrived) runs its
  // callback inside the call, and Finish must find it then.
  inflight_[op] = Inflight{std::move(c.op), nullptr, c.busy, c.silent};
  if (c.busy) ++busy_ops_;
  ucs_status_ptr_t req;
  const char* what;
  if (c.kind == Command::kSend) {
    what = "ucx send";
    param.cb.send = &UcxTransport::SendCb;
    req = ucp_tag_send_nbx(ep, c.buffer, c.count, c.tag, &param);
  } else {
    what = "ucx receive";
    param.cb.recv = &UcxTransport::RecvCb;
    req = ucp_tag_recv_nbx(worker_, c.buffer, c.count, c.tag, c.mask, &param);
  }
  auto it = inflight_.find(op);
  if (it == inflight_.end()) return;  // completed (and freed) inside the call
  if (UCS_PTR_IS_ERR(req) || req == nullptr) {
    std::shared_ptr<OpState> keep = std::move(it->second.op);
    if (it->second.busy) --busy_ops_;
    inflight_.erase(it);
    op->Complete(req == nullptr ? Status::OK() : FromUcs(UCS_PTR_STATUS(req), what), op->bytes, 0);
    return BumpCompletions();
  }
  it->second.request = req;
}

void UcxTransport::Finish(OpState* op, void* request, Status status, uint64_t bytes, Tag tag) {
  // On the progress thread, inside ucp_worker_progress (or a cancel/close it drives).
  auto it = inflight_.find(op);
  std::shared_ptr<OpState> keep;
  bool silent = false;
  if (it != inflight_.end()) {
    keep = std::move(it->second.op);
    if (it->second.busy) --busy_ops_;
    silent = it->second.silent;
    inflight_.erase(it);
  }
  ucp_request_free(request);
  op->Complete(std::move(status), bytes, tag);
  if (!silent) BumpCompletions();
}

void UcxTransport::SendCb(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<OpState*>(user_data);
  auto* self = static_cast<UcxTransport*>(op->backend_owner);
  self->Finish(op, request, status == UCS_OK ? Status::OK() : FromUcs(status, "ucx send"),
               op->bytes, 0);
}

void UcxTransport::RecvCb(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                          void* user_data) {
  auto* op = static_cast<OpState*>(user_data);
  auto* self = static_cast<UcxTransport*>(op->backend_owner);
  uint64_t len = status == UCS_OK && info ? info->length : 0;
  Tag tag = info ? info->sender_tag : 0;
  self->Finish(op, request, status == UCS_OK ? Status::OK() : FromUcs(status, "ucx receive"), len,
               tag);
}

void UcxTransport::CloseEp(ucp_ep_h ep) {
  // Progress thread. Force: pending operations on it complete with an error now.
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &p);
  if (!UCS_PTR_IS_PTR(req)) return;
  auto until = std::chrono::steady_clock::now() + kShutdownBound;
  while (ucp_request_check_status(req) == UCS_INPROGRESS &&
         std::chrono::steady_clock::now() < until) {
    ucp_worker_progress(worker_);
  }
  ucp_request_free(req);
}

void UcxTransport::Shutdown() {
  // Progress thread, after the loop: run what was queued, cancel what is in flight and let
  // the callbacks deliver, close the endpoints, then fail whatever is left.
  std::vector<Command> batch;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    batch.swap(queue_);
  }
  for (Command& c : batch) {
    if (c.kind == Command::kSend || c.kind == Command::kRecv) {
      c.op->Complete(Status::Cancelled("ucx transport destroyed"), 0, 0);
    } else {
      Execute(c);
    }
  }
  for (auto& [op, entry] : inflight_) ucp_request_cancel(worker_, entry.request);
  auto until = std::chrono::steady_clock::now() + kShutdownBound;
  while (!inflight_.empty() && std::chrono::steady_clock::now() < until) {
    ucp_worker_progress(worker_);
  }
  for (auto& [id, p] : eps_) CloseEp(p.ep);
  eps_.clear();
  for (auto& [op, entry] : inflight_) {
    entry.op->Complete(Status::Cancelled("ucx transport destroyed"), 0, 0);
  }
  inflight_.clear();
  busy_ops_ = 0;
}

Result<PeerId> UcxTransport::AddPeer(const std::vector<uint8_t>& remote_address,
                                     uint64_t id_at_peer) {
  PeerId id = next_peer_.fetch_add(1);
  ucs_status_t st = UCS_OK;
  Call([&] {
    PeerEp peer;
    peer.err_arg = std::make_unique<EpErrArg>(EpErrArg{this, id});
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(remote_address.data());
    ep.err_mode = err_mode_peer_ ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    if (err_mode_peer_) {
      ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.err_handler.cb = EpErrorCb;
      ep.err_handler.arg = peer.err_arg.get();
    }
    st = ucp_ep_create(worker_, &ep, &peer.ep);
    if (st != UCS_OK) return;
    {
      std::lock_guard<std::mutex> lock(peers_mu_);
      peers_[id] = PeerInfo{id_at_peer, Status::OK()};
    }
    eps_.emplace(id, std::move(peer));
  });
  if (st != UCS_OK) return FromUcs(st, "ucp_ep_create");
  return id;
}

void UcxTransport::OnEpError(PeerId peer, ucs_status_t status) {
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    auto it = peers_.find(peer);
    if (it != peers_.end() && it->second.status.ok()) {
      it->second.status =
          FromUcs(status, "ucx endpoint to peer " + std::to_string(peer) + " failed")
              .WithScope(ErrorScope::kPeer)
              .WithRetryable(true);
    }
  }
  BumpCompletions();
}

Result<std::string> UcxTransport::Listen(const std::string& address) {
  SY_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  if (listen_fd_ >= 0) return Status::FailedPrecondition("ucx transport already listening");
  SY_ASSIGN_OR_RETURN(auto bound, TcpListen(hp));
  listen_fd_ = bound.first;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return (hp.host.empty() ? std::string("0.0.0.0") : hp.host) + ":" + std::to_string(bound.second);
}

void UcxTransport::AcceptLoop() {
  while (!stop_accept_.load()) {
    auto fd = TcpAccept(listen_fd_, std::chrono::milliseconds(50));
    if (!fd.ok()) continue;
    auto frame = TcpRecvFrame(*fd, kHandshakeTimeout, 1 << 20);
    if (frame.ok() && frame->size() > 8) {
      uint64_t magic;
      std::memcpy(&magic, frame->data(), 8);
      if (magic == kHelloMagic) {
        std::vector<uint8_t> remote(frame->begin() + 8, frame->end());
        auto peer = AddPeer(remote, 0);
        if (peer.ok()) {
          std::vector<uint8_t> reply(8);
          uint64_t id = *peer;
          std::memcpy(reply.data(), &id, 8);
          reply.insert(reply.end(), worker_address_.begin(), worker_address_.end());
          (void)TcpSendFrame(*fd, reply);
        }
      }
    }
    ::close(*fd);
  }
}

Result<PeerId> UcxTransport::Connect(const std::string& address) {
  SY_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  SY_ASSIGN_OR_RETURN(int fd, TcpConnect(hp, kHandshakeTimeout));
  std::vector<uint8_t> hello(8);
  std::memcpy(hello.data(), &kHelloMagic, 8);
  hello.insert(hello.end(), worker_address_.begin(), worker_address_.end());
  Status s = TcpSendFrame(fd, hello);
  Result<std::vector<uint8_t>> reply =
      s.ok() ? TcpRecvFrame(fd, kHandshakeTimeout, 1 << 20) : Result<std::vector<uint8_t>>(s);
  ::close(fd);
  if (!reply.ok()) return reply.status().Annotate("ucx handshake with " + address);
  if (reply->size() <= 8)
    return Status::DataLoss("ucx handshake with " + address + ": short reply");
  uint64_t id_at_peer;
  std::memcpy(&id_at_peer, reply->data(), 8);
  return AddPeer(std::vector<uint8_t>(reply->begin() + 8, reply->end()), id_at_peer);
}

Result<uint64_t> UcxTransport::IdAtPeer(PeerId peer) const {
  std::lock_guard<std::mutex> lock(peers_mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
  return it->second.id_at_peer;
}

Status UcxTransport::PeerStatus(PeerId peer) const {
  std::lock_guard<std::mutex> lock(peers_mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
  return it->second.status;
}

Status UcxTransport::Disconnect(PeerId peer) {
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    if (peers_.erase(peer) == 0) {
      return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
    }
  }
  Call([&] {
    auto it = eps_.find(peer);
    if (it == eps_.end()) return;
    CloseEp(it->second.ep);
    eps_.erase(it);
  });
  return Status::OK();
}

Result<TransferHandle> UcxTransport::Prepare(const DescriptorList& list,
                                             const TransferOptions& options, Command* c) {
  for (const auto& d : list) {
    if (d.kind != MemoryKind::kHost) {
      return Status::NotSupported("ucx transport: memory kind '" +
                                  std::string(MemoryKindName(d.kind)) + "' not supported");
    }
    if (d.addr == nullptr && d.length > 0) return Status::InvalidArgument("null descriptor");
  }
  auto state = std::make_shared<OpState>();
  state->deadline = options.deadline;
  state->backend_owner = this;
  if (list.size() == 1) {
    c->buffer = list[0].addr;
    c->count = list[0].length;
    c->datatype = ucp_dt_make_contig(1);
  } else {
    // The iov array stays valid until completion (UCX reads it while sending).
    auto iov = std::make_shared<std::vector<ucp_dt_iov_t>>();
    for (const auto& d : list) iov->push_back({d.addr, d.length});
    c->buffer = iov->data();
    c->count = iov->size();
    c->datatype = ucp_dt_make_iov();
    state->backend_data = iov;
  }
  std::weak_ptr<OpState> weak = state;
  state->cancel = [this, weak] {
    auto op = weak.lock();
    if (!op || op->done.load()) return;
    Command k;
    k.kind = Command::kCancel;
    k.op = std::move(op);
    Enqueue(std::move(k));
  };
  c->op = state;
  return TransferHandle(std::move(state));
}

Result<TransferHandle> UcxTransport::PostSend(PeerId peer, const DescriptorList& src, Tag tag,
                                              const TransferOptions& options) {
  SY_RETURN_IF_ERROR(CheckGrant(options, TotalLength(src)));
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    auto it = peers_.find(peer);
    if (it == peers_.end()) return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
    if (!it->second.status.ok()) return it->second.status;
  }
  Command c;
  c.kind = Command::kSend;
  c.peer = peer;
  c.tag = tag;
  c.busy = true;
  c.silent = options.silent_completion;
  SY_ASSIGN_OR_RETURN(TransferHandle h, Prepare(src, options, &c));
  c.op->bytes = TotalLength(src);
  Enqueue(std::move(c));
  return h;
}

Result<TransferHandle> UcxTransport::PostRecv(const DescriptorList& dst, Tag tag, Tag mask,
                                              const TransferOptions& options) {
  SY_RETURN_IF_ERROR(CheckGrant(options, TotalLength(dst)));
  Command c;
  c.kind = Command::kRecv;
  c.tag = tag;
  c.mask = mask;
  c.busy = !options.long_wait;
  c.silent = options.silent_completion;
  SY_ASSIGN_OR_RETURN(TransferHandle h, Prepare(dst, options, &c));
  Enqueue(std::move(c));
  return h;
}

}  // namespace

void RegisterUcxTransport(TransportRegistry& registry) {
  (void)registry.Register("ucx", &UcxTransport::Create);
}

}  // namespace switchyard::kv_tiers::transport
