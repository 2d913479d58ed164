// Peers: the out-of-band handshake over TCP, control connections and their watch thread,
// endpoint creation and closing, and failing a lost peer's operations.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/logging.h"
#include "kv_tiers/transport/internal/ucx_transport_impl.h"
#include "kv_tiers/transport/tcp_util.h"

namespace switchyard::kv_tiers::transport::ucx_internal {

void EpErrorCb(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* a = static_cast<EpErrArg*>(arg);
  a->transport->OnEpError(a->peer, status);
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

namespace {

// Handshake frames. Hello: magic, TCP tx segment, TCP rx segment, worker address. Reply:
// verdict (kAccepted or kSegmentsDiffer), the sender's id here, our two segment sizes and,
// when accepted, our worker address. All integers u64, host order (one machine family).
constexpr uint64_t kAccepted = 0, kSegmentsDiffer = 1;
constexpr size_t kHelloHead = 24, kReplyHead = 32;

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
      std::vector<uint8_t> reply =
          Frame(kReplyHead, differ.empty() ? worker_address_ : std::vector<uint8_t>{});
      PutU64(&reply, 0, differ.empty() ? kAccepted : kSegmentsDiffer);
      PutU64(&reply, 16, tcp_tx_seg_);
      PutU64(&reply, 24, tcp_rx_seg_);
      Result<PeerId> peer = Status::FailedPrecondition(differ);
      if (differ.empty()) {
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
      }
    }
    ::close(*fd);
  }
}

void UcxTransport::WatchControl(PeerId peer, int fd) {
  TcpKeepAlive(fd, kKeepIdleS, kKeepIntervalS, kKeepCount);
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    control_fds_[peer] = fd;
  }
  uint64_t one = 1;
  (void)!::write(control_wake_fd_, &one, sizeof(one));
}

void UcxTransport::WatchLoop() {
  std::vector<pollfd> fds;
  std::vector<PeerId> ids;
  while (!stop_watch_.load()) {
    fds.assign(1, pollfd{control_wake_fd_, POLLIN, 0});
    ids.assign(1, 0);
    {
      std::lock_guard<std::mutex> lock(control_mu_);
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
        std::lock_guard<std::mutex> lock(control_mu_);
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

void UcxTransport::OnControlLost(PeerId peer) {
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    auto it = peers_.find(peer);
    if (it == peers_.end()) return;  // disconnected meanwhile
    if (it->second.status.ok()) {
      it->second.status = Status::Unavailable("ucx peer " + std::to_string(peer) +
                                                  " is gone (its control connection closed)",
                                              ErrorScope::kPeer)
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

void UcxTransport::ClosePeerEp(PeerId peer) {
  auto it = eps_.find(peer);
  if (it == eps_.end()) return;
  CloseEp(it->second.ep);
  eps_.erase(it);
  AbandonSendsTo(peer);
}

void UcxTransport::AbandonSendsTo(PeerId peer) {
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

Result<PeerId> UcxTransport::Connect(const std::string& address) {
  SY_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  SY_ASSIGN_OR_RETURN(int fd, TcpConnect(hp, kHandshakeTimeout));
  std::vector<uint8_t> hello = Frame(kHelloHead, worker_address_);
  PutU64(&hello, 0, kHelloMagic);
  PutU64(&hello, 8, tcp_tx_seg_);
  PutU64(&hello, 16, tcp_rx_seg_);
  Status s = TcpSendFrame(fd, hello);
  Result<std::vector<uint8_t>> reply =
      s.ok() ? TcpRecvFrame(fd, kHandshakeTimeout, 1 << 20) : Result<std::vector<uint8_t>>(s);
  const std::string where = "ucx handshake with " + address;
  Result<PeerId> peer = [&]() -> Result<PeerId> {
    if (!reply.ok())
      return reply.status().Annotate(where + " (a peer of another version does not answer)");
    if (reply->size() < kReplyHead) return Status::DataLoss(where + ": short reply");
    std::string differ = SegmentsDiffer(GetU64(*reply, 16), GetU64(*reply, 24));
    if (!differ.empty() || GetU64(*reply, 0) != kAccepted) {
      return Status::FailedPrecondition(where + ": " +
                                        (differ.empty() ? "refused by the peer" : differ));
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
  {
    std::lock_guard<std::mutex> lock(control_mu_);  // the peer sees us gone
    auto it = control_fds_.find(peer);
    if (it != control_fds_.end()) {
      ::close(it->second);
      control_fds_.erase(it);
    }
  }
  Call([&] { ClosePeerEp(peer); });
  return Status::OK();
}

}  // namespace switchyard::kv_tiers::transport::ucx_internal
