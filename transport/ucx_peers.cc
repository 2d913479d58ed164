// Peers: the out-of-band handshake over TCP, control connections and their watch thread,
// endpoint creation and closing, and failing a lost peer's operations.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/logging.h"
#include "base/mutex.h"
#include "transport/internal/ucx_transport_impl.h"
#include "transport/tcp_util.h"

namespace switchyard::transport::ucx_internal {

void EpErrorCb(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* a = static_cast<EpErrArg*>(arg);
  a->transport->OnEpError(a->peer, status);
}

void UcxTransport::FillErrHandling(ucp_ep_params_t* ep, EpErrArg* arg) const {
  ep->field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  ep->err_mode = err_mode_peer_ ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  if (err_mode_peer_) {
    ep->field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep->err_handler.cb = EpErrorCb;
    ep->err_handler.arg = arg;
  }
}

ucs_status_t UcxTransport::CreateEp(EndpointId id, ucp_ep_params_t ep) {
  PeerEp peer;
  peer.err_arg = std::make_unique<EpErrArg>(EpErrArg{this, id});
  FillErrHandling(&ep, peer.err_arg.get());
  ucs_status_t st = ucp_ep_create(worker_, &ep, &peer.ep);
  if (st == UCS_OK) eps_.emplace(id, std::move(peer));
  return st;
}

Result<EndpointId> UcxTransport::NewPeer(const ucp_ep_params_t& ep, uint64_t id_at_peer,
                                         bool client_server, const char* what) {
  EndpointId id = next_peer_.fetch_add(1);
  ucs_status_t st = UCS_OK;
  Call([&] {
    st = CreateEp(id, ep);
    if (st != UCS_OK) return;
    MutexLock lock(&peers_mu_);
    peers_[id] = PeerInfo{id_at_peer, Status::OK(), client_server};
  });
  if (st != UCS_OK) return FromUcs(st, what);
  return id;
}

Result<EndpointId> UcxTransport::AddPeer(const std::vector<uint8_t>& remote_address,
                                         uint64_t id_at_peer) {
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  ep.address = reinterpret_cast<const ucp_address_t*>(remote_address.data());
  return NewPeer(ep, id_at_peer, false, "ucp_ep_create");
}

Result<EndpointId> UcxTransport::AddClientServerPeer(const HostPort& server, uint64_t id_at_peer) {
  bool ok = false;
  sockaddr_in sa = ToSockaddr(server, &ok);
  if (!ok) return Status::InvalidArgument("ucx: bad host '" + server.host + "'");
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
  ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER | UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID;
  ep.sockaddr.addr = reinterpret_cast<const sockaddr*>(&sa);  // UCX copies it
  ep.sockaddr.addrlen = sizeof(sa);
  return NewPeer(ep, id_at_peer, true, "ucp_ep_create to the ucp_listener");
}

EndpointId UcxTransport::ExpectClientServerPeer(uint64_t client_id) {
  EndpointId id = next_peer_.fetch_add(1);
  {
    MutexLock lock(&peers_mu_);
    peers_[id] = PeerInfo{0, Status::OK(), true};
  }
  Call([&] { awaiting_ep_[client_id].push_back(id); });
  return id;
}

void UcxTransport::ConnRequestCb(ucp_conn_request_h request, void* arg) {
  static_cast<UcxTransport*>(arg)->OnConnRequest(request);
}

void UcxTransport::OnConnRequest(ucp_conn_request_h request) {
  // Owner (inside ucp_worker_progress). The oldest peer accepted over the handshake from
  // this client id gets the endpoint; a request nobody announced is rejected.
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ID;
  ucs_status_t st = ucp_conn_request_query(request, &attr);
  auto it = st == UCS_OK ? awaiting_ep_.find(attr.client_id) : awaiting_ep_.end();
  if (it == awaiting_ep_.end() || it->second.empty()) {
    Log(LogLevel::kWarn, "ucx: rejected a connection request no handshake announced");
    ucp_listener_reject(ucp_listener_, request);
    return;
  }
  EndpointId id = it->second.front();
  it->second.pop_front();
  if (it->second.empty()) awaiting_ep_.erase(it);
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST;
  ep.conn_request = request;
  st = CreateEp(id, ep);
  if (st != UCS_OK) OnEpError(id, st);  // the peer fails; its sends report why
}

Status UcxTransport::StartUcpListener(const HostPort& hp) {
  bool ok = false;
  sockaddr_in sa = ToSockaddr(HostPort{hp.host, ucp_listener_port_wanted_}, &ok);
  ucs_status_t st = UCS_ERR_INVALID_PARAM;
  Call([&] {
    if (!ok) return;
    ucp_listener_params_t lp{};
    lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lp.sockaddr.addr = reinterpret_cast<const sockaddr*>(&sa);
    lp.sockaddr.addrlen = sizeof(sa);
    lp.conn_handler.cb = &UcxTransport::ConnRequestCb;
    lp.conn_handler.arg = this;
    st = ucp_listener_create(worker_, &lp, &ucp_listener_);
    if (st != UCS_OK) return;
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    st = ucp_listener_query(ucp_listener_, &attr);
    if (st == UCS_OK) {
      ucp_listener_port_ = ntohs(reinterpret_cast<const sockaddr_in*>(&attr.sockaddr)->sin_port);
    }
  });
  if (st == UCS_OK) {
    Log(LogLevel::kDebug, "ucx: ucp_listener up",
        LogKeys().With("port", std::to_string(ucp_listener_port_)));
    return Status::OK();
  }
  if (ucp_listener_port_wanted_ != 0) {
    return FromUcs(st, "ucx: ucp_listener on port " + std::to_string(ucp_listener_port_wanted_) +
                           " (param listener_port)");
  }
  Log(LogLevel::kInfo, "ucx: no ucp_listener; peers connect by worker address",
      LogKeys().With("reason", ucs_status_string(st)));
  return Status::OK();
}

void UcxTransport::OnEpError(EndpointId peer, ucs_status_t status) {
  {
    MutexLock lock(&peers_mu_);
    auto it = peers_.find(peer);
    if (it != peers_.end() && it->second.status.ok()) {
      it->second.status =
          FromUcs(status, "ucx endpoint to peer " + std::to_string(peer) + " failed")
              .WithScope(ErrorScope::kRemote)
              .WithRetryable(true);
    }
  }
  BumpCompletions();
}

Result<std::string> UcxTransport::Listen(const std::string& address) {
  SY_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  if (listen_fd_ >= 0) return Status::FailedPrecondition("ucx transport already listening");
  SY_ASSIGN_OR_RETURN(auto bound, TcpListen(hp));
  Status ucp = StartUcpListener(hp);
  if (!ucp.ok()) {
    ::close(bound.first);
    return ucp;
  }
  listen_fd_ = bound.first;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return (hp.host.empty() ? std::string("0.0.0.0") : hp.host) + ":" + std::to_string(bound.second);
}

namespace {

// Handshake frames. Hello: magic, TCP tx segment, TCP rx segment, the client id with which
// the sender will connect to our ucp_listener (0: by worker address), its worker address.
// Reply: verdict (kAccepted or kSegmentsDiffer), the sender's id here, our two segment
// sizes, our ucp_listener's port when the sender is to connect to it (else 0) and, when
// accepted without it, our worker address. All integers u64, host order (one machine
// family).
constexpr uint64_t kAccepted = 0, kSegmentsDiffer = 1;
constexpr size_t kHelloHead = 32, kReplyHead = 40;

void PutU64(std::vector<uint8_t>* out, size_t at, uint64_t v) {
  std::memcpy(out->data() + at, &v, 8);
}
uint64_t GetU64(const std::vector<uint8_t>& in, size_t at) {
  uint64_t v;
  std::memcpy(&v, in.data() + at, 8);
  return v;
}
std::vector<uint8_t> Frame(size_t head, const std::vector<uint8_t>& tail) {
  std::vector<uint8_t> f(head + tail.size());
  std::copy(tail.begin(), tail.end(), f.begin() + static_cast<ptrdiff_t>(head));
  return f;
}

}  // namespace

std::string UcxTransport::SegmentsDiffer(uint64_t peer_tx, uint64_t peer_rx) const {
  if (peer_tx == tcp_tx_seg_ && peer_rx == tcp_rx_seg_) return "";
  if (tcp_tx_seg_ == 0 || peer_tx == 0) return "";  // one side has no TCP: it is not used
  return "UCX TCP segment sizes differ (here tx " + std::to_string(tcp_tx_seg_) + " rx " +
         std::to_string(tcp_rx_seg_) + " bytes, peer tx " + std::to_string(peer_tx) + " rx " +
         std::to_string(peer_rx) +
         "): set UCX_TCP_TX_SEG_SIZE and UCX_TCP_RX_SEG_SIZE (or the transport params "
         "TX_SEG_SIZE, RX_SEG_SIZE) the same on both sides";
}

void UcxTransport::AcceptLoop() {
  while (!stop_accept_.load()) {
    auto fd = TcpAccept(listen_fd_, std::chrono::milliseconds(50));
    if (!fd.ok()) continue;
    auto frame = TcpRecvFrame(*fd, kHandshakeTimeout, 1 << 20);
    if (frame.ok() && frame->size() > kHelloHead && GetU64(*frame, 0) == kHelloMagic) {
      std::string differ = SegmentsDiffer(GetU64(*frame, 8), GetU64(*frame, 16));
      const uint64_t client_id = GetU64(*frame, 24);
      const bool client_server = differ.empty() && client_id != 0 && ucp_listener_port_ != 0;
      std::vector<uint8_t> reply = Frame(
          kReplyHead, differ.empty() && !client_server ? worker_address_ : std::vector<uint8_t>{});
      PutU64(&reply, 0, differ.empty() ? kAccepted : kSegmentsDiffer);
      PutU64(&reply, 16, tcp_tx_seg_);
      PutU64(&reply, 24, tcp_rx_seg_);
      PutU64(&reply, 32, client_server ? ucp_listener_port_ : 0);
      Result<EndpointId> peer = Status::FailedPrecondition(differ);
      if (client_server) {
        peer = ExpectClientServerPeer(client_id);
      } else if (differ.empty()) {
        peer = AddPeer(std::vector<uint8_t>(frame->begin() + kHelloHead, frame->end()), 0);
      } else {
        Log(LogLevel::kWarn, "ucx: refused a peer", LogKeys().With("reason", differ));
      }
      if (peer.ok()) PutU64(&reply, 8, *peer);
      if (peer.ok() || !differ.empty()) {
        Status sent = TcpSendFrame(*fd, reply);
        if (peer.ok() && sent.ok()) {
          WatchControl(*peer, *fd);  // owns the fd now
          continue;
        }
        if (peer.ok()) (void)Disconnect(*peer);
      }
    }
    ::close(*fd);
  }
}

void UcxTransport::WatchControl(EndpointId peer, int fd) {
  TcpKeepAlive(fd, kKeepIdleS, kKeepIntervalS, kKeepCount);
  {
    MutexLock lock(&control_mu_);
    control_fds_[peer] = fd;
  }
  uint64_t one = 1;
  (void)!::write(control_wake_fd_, &one, sizeof(one));
}

void UcxTransport::WatchLoop() {
  std::vector<pollfd> fds;
  std::vector<EndpointId> ids;
  while (!stop_watch_.load()) {
    fds.assign(1, pollfd{control_wake_fd_, POLLIN, 0});
    ids.assign(1, 0);
    {
      MutexLock lock(&control_mu_);
      for (const auto& [peer, fd] : control_fds_) {
        fds.push_back(pollfd{fd, POLLIN | POLLRDHUP, 0});
        ids.push_back(peer);
      }
    }
    if (::poll(fds.data(), fds.size(), 200) <= 0) continue;
    if (fds[0].revents != 0) {
      uint64_t v;
      (void)!::read(control_wake_fd_, &v, sizeof(v));
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0 || (fds[i].revents & POLLNVAL)) continue;
      {
        // Under the lock: Disconnect may have closed this fd (and its number been reused).
        MutexLock lock(&control_mu_);
        auto it = control_fds_.find(ids[i]);
        if (it == control_fds_.end() || it->second != fds[i].fd || !TcpPeerGone(it->second)) {
          continue;
        }
        ::close(it->second);
        control_fds_.erase(it);
      }
      OnControlLost(ids[i]);
    }
  }
}

void UcxTransport::OnControlLost(EndpointId peer) {
  {
    MutexLock lock(&peers_mu_);
    auto it = peers_.find(peer);
    if (it == peers_.end()) return;  // disconnected meanwhile
    if (it->second.status.ok()) {
      it->second.status = Status::Unavailable("ucx peer " + std::to_string(peer) +
                                                  " is gone (its control connection closed)",
                                              ErrorScope::kRemote)
                              .WithRetryable(true);
    }
  }
  Log(LogLevel::kInfo, "ucx: peer gone (its control connection closed)",
      LogKeys().With("peer", std::to_string(peer)));
  BumpCompletions();
  // Sends to it still in flight complete now, with an error, instead of waiting for a peer
  // that is not there (with err_mode=none UCX may never fail them itself).
  Command c;
  c.kind = Command::kCall;
  c.fn = [this, peer] { ClosePeerEp(peer); };
  Submit(std::move(c));
}

void UcxTransport::ClosePeerEp(EndpointId peer) {
  for (auto a = awaiting_ep_.begin(); a != awaiting_ep_.end();) {
    std::erase(a->second, peer);
    a = a->second.empty() ? awaiting_ep_.erase(a) : std::next(a);
  }
  auto it = eps_.find(peer);
  if (it == eps_.end()) return;
  CloseEp(it->second.ep);
  eps_.erase(it);
  AbandonSendsTo(peer);
}

void UcxTransport::AbandonSendsTo(EndpointId peer) {
  // Owner. Over shared memory with err_mode=none, a force-close does not always complete
  // a rendezvous send whose receiver died (seen with UCX 1.13: a put's data send stayed in
  // flight and its waiter spun forever), and ucp_request_cancel does not apply to sends.
  // The endpoint is gone, so UCX moves nothing more for it: fail such sends now. The entry
  // (and its op) stays until UCX's callback or shutdown; a request UCX never finishes is
  // reported by UCX at teardown ("was not returned to mpool ucp_requests").
  Status why = PeerStatus(peer);
  if (why.ok()) why = Status::Unavailable("ucx peer " + std::to_string(peer) + " was closed");
  bool any = false;
  for (auto& [op, entry] : inflight_) {
    if (entry.peer != peer || entry.abandoned) continue;
    entry.abandoned = true;
    if (entry.busy) --busy_ops_;
    entry.busy = false;
    op->Complete(why, 0, 0);
    any = true;
  }
  if (any) BumpCompletions();
}

Result<EndpointId> UcxTransport::Connect(const std::string& address) {
  SY_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  SY_ASSIGN_OR_RETURN(int fd, TcpConnect(hp, kHandshakeTimeout));
  std::vector<uint8_t> hello = Frame(kHelloHead, worker_address_);
  PutU64(&hello, 0, kHelloMagic);
  PutU64(&hello, 8, tcp_tx_seg_);
  PutU64(&hello, 16, tcp_rx_seg_);
  PutU64(&hello, 24, client_server_ ? client_id_ : 0);
  Status s = TcpSendFrame(fd, hello);
  Result<std::vector<uint8_t>> reply =
      s.ok() ? TcpRecvFrame(fd, kHandshakeTimeout, 1 << 20) : Result<std::vector<uint8_t>>(s);
  const std::string where = "ucx handshake with " + address;
  Result<EndpointId> peer = [&]() -> Result<EndpointId> {
    if (!reply.ok())
      return reply.status().Annotate(where + " (a peer of another version does not answer)");
    if (reply->size() < kReplyHead) return Status::DataLoss(where + ": short reply");
    std::string differ = SegmentsDiffer(GetU64(*reply, 16), GetU64(*reply, 24));
    if (!differ.empty() || GetU64(*reply, 0) != kAccepted) {
      return Status::FailedPrecondition(where + ": " +
                                        (differ.empty() ? "refused by the peer" : differ));
    }
    if (uint64_t port = GetU64(*reply, 32); port != 0) {
      if (port > 65535) return Status::DataLoss(where + ": bad ucp_listener port");
      return AddClientServerPeer(HostPort{hp.host, static_cast<uint16_t>(port)}, GetU64(*reply, 8));
    }
    if (reply->size() == kReplyHead) return Status::DataLoss(where + ": no worker address");
    return AddPeer(std::vector<uint8_t>(reply->begin() + kReplyHead, reply->end()),
                   GetU64(*reply, 8));
  }();
  if (!peer.ok()) {
    ::close(fd);
    return peer.status();
  }
  WatchControl(*peer, fd);  // the connection stays open: its loss fails the peer
  return *peer;
}

Result<uint64_t> UcxTransport::IdAtPeer(EndpointId peer) const {
  MutexLock lock(&peers_mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
  return it->second.id_at_peer;
}

Result<std::string> UcxTransport::ConnectionFlow(EndpointId peer) const {
  MutexLock lock(&peers_mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
  return std::string(it->second.client_server ? "client-server" : "address");
}

Status UcxTransport::PeerStatus(EndpointId peer) const {
  MutexLock lock(&peers_mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
  return it->second.status;
}

Status UcxTransport::Disconnect(EndpointId peer) {
  {
    MutexLock lock(&peers_mu_);
    if (peers_.erase(peer) == 0) {
      return Status::NotFound("ucx: unknown peer " + std::to_string(peer));
    }
  }
  {
    MutexLock lock(&control_mu_);  // the peer sees us gone
    auto it = control_fds_.find(peer);
    if (it != control_fds_.end()) {
      ::close(it->second);
      control_fds_.erase(it);
    }
  }
  Call([&] { ClosePeerEp(peer); });
  return Status::OK();
}

}  // namespace switchyard::transport::ucx_internal
