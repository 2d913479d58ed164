#include "kv_tiers/transport/ucx_transport.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <unordered_map>

#include "kv_tiers/transport/tcp_util.h"

namespace switchyard::kv_tiers::transport {
namespace {

constexpr uint64_t kHelloMagic = 0x53594b5655435831ull;  // "SYKVUCX1"
constexpr Duration kHandshakeTimeout = std::chrono::seconds(5);
constexpr Duration kSpinWindow = std::chrono::milliseconds(2);

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

  void OnEpError(PeerId peer, ucs_status_t status);
  // A waiting thread drives progress itself; the progress thread backs off meanwhile.
  void ProgressFromWaiter();

 private:
  struct Peer {
    ucp_ep_h ep = nullptr;
    uint64_t id_at_peer = 0;
    Status status;
    std::unique_ptr<EpErrArg> err_arg;
  };

  UcxTransport() = default;
  Status Init(const TransportConfig& config);
  Result<std::vector<uint8_t>> WorkerAddress();
  Result<PeerId> AddPeer(const std::vector<uint8_t>& remote_address, uint64_t id_at_peer);
  void AcceptLoop();
  void ProgressLoop();
  void Wake();
  Result<std::shared_ptr<OpState>> PrepareOp(const DescriptorList& list,
                                             const TransferOptions& options, void** buffer,
                                             size_t* count, ucp_request_param_t* param);
  TransferHandle Track(std::shared_ptr<OpState> state, ucs_status_ptr_t req, const char* what,
                       bool is_send, bool long_wait);
  void CloseEp(ucp_ep_h ep, bool force);

  static void SendCb(void* request, ucs_status_t status, void* user_data);
  static void RecvCb(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                     void* user_data);
  void Finish(OpState* op, void* request, Status status, uint64_t bytes, Tag tag);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  bool err_mode_peer_ = true;
  int worker_fd_ = -1;
  int wake_fd_ = -1;
  int listen_fd_ = -1;

  mutable std::mutex mu_;  // serialises every ucp call on worker_ and the maps below
  std::atomic<int> waiting_posters_{0};
  std::unordered_map<PeerId, Peer> peers_;
  PeerId next_peer_ = 1;
  std::unordered_map<OpState*, std::pair<std::shared_ptr<OpState>, void*>> inflight_;
  // Pending ops that are not long_wait receives: while any exists the progress thread
  // polls continuously (a rendezvous stalls if progress waits for an event fd).
  std::atomic<int> active_ops_{0};
  std::atomic<int64_t> waiter_progress_ns_{0};  // steady-clock time of a waiter's progress

  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> completions_{0};
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

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  st = ucp_worker_create(context_, &wp, &worker_);
  if (st != UCS_OK) return FromUcs(st, "ucp_worker_create");
  st = ucp_worker_get_efd(worker_, &worker_fd_);
  if (st != UCS_OK) return FromUcs(st, "ucp_worker_get_efd");
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return Status::Internal("eventfd failed");
  progress_thread_ = std::thread([this] { ProgressLoop(); });
  return Status::OK();
}

UcxTransport::~UcxTransport() {
  stop_ = true;
  if (accept_thread_.joinable()) accept_thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (worker_ != nullptr) {
    // Cancel what is still in flight, then let the progress thread deliver the callbacks.
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [op, entry] : inflight_) ucp_request_cancel(worker_, entry.second);
    }
    for (int i = 0; i < 2000; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (inflight_.empty()) break;
        ucp_worker_progress(worker_);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    std::vector<ucp_ep_h> eps;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [id, p] : peers_) eps.push_back(p.ep);
    }
    for (ucp_ep_h ep : eps) CloseEp(ep, /*force=*/true);
  }
  Wake();
  if (progress_thread_.joinable()) progress_thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [op, entry] : inflight_) {
      entry.first->Complete(Status::Cancelled("ucx transport destroyed"), 0, 0);
    }
    inflight_.clear();
  }
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void UcxTransport::Wake() {
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof(one));
}

void UcxTransport::ProgressFromWaiter() {
  waiter_progress_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count());
  waiting_posters_++;
  std::lock_guard<std::mutex> lock(mu_);
  waiting_posters_--;
  for (int i = 0; i < 16 && ucp_worker_progress(worker_) != 0; ++i) {
  }
}

void UcxTransport::ProgressLoop() {
  auto last_activity = std::chrono::steady_clock::now();
  while (!stop_.load()) {
    int64_t since_waiter =
        std::chrono::steady_clock::now().time_since_epoch().count() - waiter_progress_ns_.load();
    if (since_waiter < 1'000'000) {  // a waiter is progressing: stay out of its way
      pollfd wake{wake_fd_, POLLIN, 0};
      // Drain a wake-up here too: an undrained eventfd would make every later poll return
      // at once and turn this back-off into a busy loop of system calls.
      if (::poll(&wake, 1, 1) > 0 && (wake.revents & POLLIN)) {
        uint64_t v;
        (void)!::read(wake_fd_, &v, sizeof(v));
      }
      continue;
    }
    unsigned events = 0;
    bool armed = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < 64; ++i) {
        unsigned n = ucp_worker_progress(worker_);
        events += n;
        if (n == 0 || waiting_posters_.load() > 0) break;
      }
      auto now = std::chrono::steady_clock::now();
      if (events > 0) last_activity = now;
      if (events == 0 && active_ops_.load() == 0 && now - last_activity > kSpinWindow) {
        armed = ucp_worker_arm(worker_) == UCS_OK;
      }
    }
    if (!armed) {
      if (waiting_posters_.load() > 0) std::this_thread::yield();
      continue;
    }
    pollfd fds[2] = {{worker_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    ::poll(fds, 2, 20);
    if (fds[1].revents & POLLIN) {
      uint64_t v;
      (void)!::read(wake_fd_, &v, sizeof(v));
    }
    last_activity = std::chrono::steady_clock::now();
  }
}

void UcxTransport::WaitForCompletion(uint64_t seen, Duration timeout) {
  std::unique_lock<std::mutex> lock(completion_mu_);
  completion_cv_.wait_for(lock, timeout, [&] { return completions_.load() != seen; });
}

Result<std::vector<uint8_t>> UcxTransport::WorkerAddress() {
  std::lock_guard<std::mutex> lock(mu_);
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  ucs_status_t st = ucp_worker_get_address(worker_, &addr, &len);
  if (st != UCS_OK) return FromUcs(st, "ucp_worker_get_address");
  std::vector<uint8_t> out(reinterpret_cast<uint8_t*>(addr),
                           reinterpret_cast<uint8_t*>(addr) + len);
  ucp_worker_release_address(worker_, addr);
  return out;
}

Result<PeerId> UcxTransport::AddPeer(const std::vector<uint8_t>& remote_address,
                                     uint64_t id_at_peer) {
  waiting_posters_++;
  std::lock_guard<std::mutex> lock(mu_);
  waiting_posters_--;
  PeerId id = next_peer_++;
  Peer peer;
  peer.id_at_peer = id_at_peer;
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
  ucs_status_t st = ucp_ep_create(worker_, &ep, &peer.ep);
  if (st != UCS_OK) return FromUcs(st, "ucp_ep_create");
  peers_.emplace(id, std::move(peer));
  Wake();
  return id;
}

void UcxTransport::OnEpError(PeerId peer, ucs_status_t status) {
  // Runs inside ucp_worker_progress, i.e. with mu_ held.
  auto it = peers_.find(peer);
  if (it != peers_.end() && it->second.status.ok()) {
    it->second.status = FromUcs(status, "ucx endpoint to peer " + std::to_string(peer) + " failed")
                            .WithScope(ErrorScope::kPeer)
                            .WithRetryable(true);
  }
  completions_++;
  completion_cv_.notify_all();
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
  while (!stop_.load()) {
    auto fd = TcpAccept(listen_fd_, std::chrono::milliseconds(50));
    if (!fd.ok()) continue;
    auto frame = TcpRecvFrame(*fd, kHandshakeTimeout, 1 << 20);
    auto mine = WorkerAddress();
    if (frame.ok() && frame->size() > 8 && mine.ok()) {
      uint64_t magic;
      std::memcpy(&magic, frame->data(), 8);
      if (magic == kHelloMagic) {
        std::vector<uint8_t> remote(frame->begin() + 8, frame->end());
        auto peer = AddPeer(remote, 0);
        if (peer.ok()) {
          std::vector<uint8_t> reply(8);
          uint64_t id = *peer;
          std::memcpy(reply.data(), &id, 8);
          reply.insert(reply.end(), mine->begin(), mine->end());
          (void)TcpSendFrame(*fd, reply);
        }
      }
    }
    ::close(*fd);
  }
}

Result<PeerId> UcxTransport::Connect(const std::string& address) {
  SY_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  SY_ASSIGN_OR_RETURN(std::vector<uint8_t> mine, WorkerAddress());
  SY_ASSIGN_OR_RETURN(int fd, TcpConnect(hp, kHandshakeTimeout));
  std::vector<uint8_t> hello(8);
  std::memcpy(hello.data(), &kHelloMagic, 8);
  hello.insert(hello.end(), mine.begin(), mine.end());
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
  std::lock_guard<std::mutex> lock(mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
  return it->second.id_at_peer;
}

Status UcxTransport::PeerStatus(PeerId peer) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
  return it->second.status;
}

void UcxTransport::CloseEp(ucp_ep_h ep, bool force) {
  ucs_status_ptr_t req;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    req = ucp_ep_close_nbx(ep, &p);
  }
  if (!UCS_PTR_IS_PTR(req)) return;
  for (int i = 0; i < 1000; ++i) {
    std::lock_guard<std::mutex> lock(mu_);
    ucp_worker_progress(worker_);
    if (ucp_request_check_status(req) != UCS_INPROGRESS) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  ucp_request_free(req);
}

Status UcxTransport::Disconnect(PeerId peer) {
  ucp_ep_h ep;
  bool failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(peer);
    if (it == peers_.end()) return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
    ep = it->second.ep;
    failed = !it->second.status.ok();
  }
  CloseEp(ep, /*force=*/true || failed);
  std::lock_guard<std::mutex> lock(mu_);
  peers_.erase(peer);
  return Status::OK();
}

Result<std::shared_ptr<OpState>> UcxTransport::PrepareOp(const DescriptorList& list,
                                                         const TransferOptions& options,
                                                         void** buffer, size_t* count,
                                                         ucp_request_param_t* param) {
  auto state = std::make_shared<OpState>();
  state->deadline = options.deadline;
  // Always complete through the callback: UCX 1.13 does not fill recv_info on an
  // immediate completion, which would lose the length and sender tag.
  param->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param->user_data = state.get();
  for (const auto& d : list) {
    if (d.kind != MemoryKind::kHost) {
      return Status::NotSupported("ucx transport: memory kind '" +
                                  std::string(MemoryKindName(d.kind)) + "' not supported");
    }
    if (d.addr == nullptr && d.length > 0) return Status::InvalidArgument("null descriptor");
  }
  if (list.size() == 1) {
    *buffer = list[0].addr;
    *count = list[0].length;
    param->datatype = ucp_dt_make_contig(1);
  } else {
    auto iov = std::make_shared<std::vector<ucp_dt_iov_t>>();
    for (const auto& d : list) iov->push_back({d.addr, d.length});
    *buffer = iov->data();
    *count = iov->size();
    param->datatype = ucp_dt_make_iov();
    state->backend_data = iov;
  }
  return state;
}

TransferHandle UcxTransport::Track(std::shared_ptr<OpState> state, ucs_status_ptr_t req,
                                   const char* what, bool is_send, bool long_wait) {
  // Called with mu_ held.
  if (UCS_PTR_IS_ERR(req)) {
    state->Complete(FromUcs(UCS_PTR_STATUS(req), what), 0, 0);
  } else if (req == nullptr) {
    state->Complete(Status::OK(), state->bytes, state->sender_tag);
  } else {
    OpState* raw = state.get();
    inflight_[raw] = {state, req};
    state->busy_poll = is_send || !long_wait;
    if (state->busy_poll) active_ops_++;
    state->progress = [this] { ProgressFromWaiter(); };
    state->cancel = [this, raw] {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = inflight_.find(raw);
      if (it != inflight_.end()) ucp_request_cancel(worker_, it->second.second);
      Wake();
    };
    Wake();
  }
  return TransferHandle(std::move(state));
}

void UcxTransport::Finish(OpState* op, void* request, Status status, uint64_t bytes, Tag tag) {
  // Inside ucp_worker_progress (mu_ held) or with mu_ held by a poster.
  auto it = inflight_.find(op);
  std::shared_ptr<OpState> keep;
  if (it != inflight_.end()) {
    keep = std::move(it->second.first);
    inflight_.erase(it);
    if (op->busy_poll) active_ops_--;
  }
  ucp_request_free(request);
  op->Complete(std::move(status), bytes, tag);
  {
    std::lock_guard<std::mutex> lock(completion_mu_);
    completions_++;
  }
  completion_cv_.notify_all();
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

Result<TransferHandle> UcxTransport::PostSend(PeerId peer, const DescriptorList& src, Tag tag,
                                              const TransferOptions& options) {
  void* buffer = nullptr;
  size_t count = 0;
  ucp_request_param_t param{};
  SY_RETURN_IF_ERROR(CheckGrant(options, TotalLength(src)));
  SY_ASSIGN_OR_RETURN(auto state, PrepareOp(src, options, &buffer, &count, &param));
  state->backend_owner = this;
  state->bytes = TotalLength(src);
  param.cb.send = &UcxTransport::SendCb;
  waiting_posters_++;
  std::lock_guard<std::mutex> lock(mu_);
  waiting_posters_--;
  auto it = peers_.find(peer);
  if (it == peers_.end()) return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
  if (!it->second.status.ok()) return it->second.status;
  ucs_status_ptr_t req = ucp_tag_send_nbx(it->second.ep, buffer, count, tag, &param);
  return Track(std::move(state), req, "ucx send", true, false);
}

Result<TransferHandle> UcxTransport::PostRecv(const DescriptorList& dst, Tag tag, Tag mask,
                                              const TransferOptions& options) {
  void* buffer = nullptr;
  size_t count = 0;
  ucp_request_param_t param{};
  SY_RETURN_IF_ERROR(CheckGrant(options, TotalLength(dst)));
  SY_ASSIGN_OR_RETURN(auto state, PrepareOp(dst, options, &buffer, &count, &param));
  state->backend_owner = this;
  param.cb.recv = &UcxTransport::RecvCb;
  param.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO;
  ucp_tag_recv_info_t info{};
  param.recv_info.tag_info = &info;
  waiting_posters_++;
  std::lock_guard<std::mutex> lock(mu_);
  waiting_posters_--;
  ucs_status_ptr_t req = ucp_tag_recv_nbx(worker_, buffer, count, tag, mask, &param);
  if (req == nullptr) {
    state->bytes = info.length;
    state->sender_tag = info.sender_tag;
  }
  return Track(std::move(state), req, "ucx receive", false, options.long_wait);
}

}  // namespace

void RegisterUcxTransport(TransportRegistry& registry) {
  (void)registry.Register("ucx", &UcxTransport::Create);
}

}  // namespace switchyard::kv_tiers::transport
