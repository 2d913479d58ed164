// NcclTransport peers: the out-of-band TCP handshake, joining a peer's two 2-rank
// communicators, peer status, disconnection, failure and teardown.
#include <unistd.h>

#include <cstring>
#include <future>

#include "base/mutex.h"
#include "transport/internal/nccl_transport_impl.h"
#include "transport/tcp_util.h"

namespace switchyard::transport::nccl_internal {

Result<std::string> NcclTransport::Listen(const std::string& address) {
  SY_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  if (listen_fd_ >= 0) return Status::FailedPrecondition("nccl transport already listening");
  SY_ASSIGN_OR_RETURN(auto bound, TcpListen(hp));
  listen_fd_ = bound.first;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return (hp.host.empty() ? std::string("0.0.0.0") : hp.host) + ":" + std::to_string(bound.second);
}

void NcclTransport::AcceptLoop() {
  cudaSetDevice(device_);
  while (!stop_accept_.load()) {
    auto fd = TcpAccept(listen_fd_, std::chrono::milliseconds(50));
    if (!fd.ok()) continue;
    (void)Join(*fd, /*listener=*/true);
    ::close(*fd);
  }
}

Result<EndpointId> NcclTransport::Connect(const std::string& address) {
  SY_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  SY_ASSIGN_OR_RETURN(int fd, TcpConnect(hp, kHandshakeTimeout));
  auto r = Join(fd, /*listener=*/false);
  ::close(fd);
  if (!r.ok()) return r.status().Annotate("nccl handshake with " + address);
  return r;
}

// Listener: sends magic, its id for the connector and two unique ids; connector: sends
// magic and its id for the listener. Then both join the two communicators.
Result<EndpointId> NcclTransport::Join(int fd, bool listener) {
  cudaSetDevice(device_);
  EndpointId id = next_peer_.fetch_add(1);
  ncclUniqueId ids[2];
  uint64_t id_at_peer = 0;
  if (listener) {
    SY_ASSIGN_OR_RETURN(auto hello, TcpRecvFrame(fd, kHandshakeTimeout, 64));
    uint64_t magic = 0;
    if (hello.size() != 16) return Status::DataLoss("nccl handshake: bad hello");
    std::memcpy(&magic, hello.data(), 8);
    std::memcpy(&id_at_peer, hello.data() + 8, 8);
    if (magic != kNcclMagic) return Status::DataLoss("nccl handshake: bad magic");
    for (auto& u : ids) {
      ncclResult_t r = ncclGetUniqueId(&u);
      if (r != ncclSuccess) return FromNccl(r, "ncclGetUniqueId");
    }
    std::vector<uint8_t> reply(16 + sizeof(ids));
    std::memcpy(reply.data(), &kNcclMagic, 8);
    std::memcpy(reply.data() + 8, &id, 8);
    std::memcpy(reply.data() + 16, ids, sizeof(ids));
    SY_RETURN_IF_ERROR(TcpSendFrame(fd, reply));
  } else {
    std::vector<uint8_t> hello(16);
    std::memcpy(hello.data(), &kNcclMagic, 8);
    std::memcpy(hello.data() + 8, &id, 8);
    SY_RETURN_IF_ERROR(TcpSendFrame(fd, hello));
    SY_ASSIGN_OR_RETURN(auto reply, TcpRecvFrame(fd, kHandshakeTimeout, 4096));
    uint64_t magic = 0;
    if (reply.size() != 16 + sizeof(ids)) return Status::DataLoss("nccl handshake: bad reply");
    std::memcpy(&magic, reply.data(), 8);
    if (magic != kNcclMagic) return Status::DataLoss("nccl handshake: bad magic");
    std::memcpy(&id_at_peer, reply.data() + 8, 8);
    std::memcpy(ids, reply.data() + 16, sizeof(ids));
  }
  // ids[0]: listener -> connector, ids[1]: connector -> listener. Same order on both sides.
  const int rank = listener ? 0 : 1;
  Peer p;
  p.id_at_peer = id_at_peer;
  p.other = 1 - rank;
  ncclComm_t comms[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; ++i) {
    ncclResult_t r = ncclCommInitRank(&comms[i], 2, ids[i], rank);
    if (r != ncclSuccess) {
      if (i == 1) ncclCommDestroy(comms[0]);
      return FromNccl(r, "ncclCommInitRank");
    }
  }
  p.out = listener ? comms[0] : comms[1];
  p.in = listener ? comms[1] : comms[0];
  cudaError_t e = cudaStreamCreateWithFlags(&p.send_stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&p.recv_stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&p.env_event, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaMallocHost(reinterpret_cast<void**>(&p.env_host), sizeof(Envelope));
  p.env_dev = std::make_shared<DeviceBuffer>();
  if (e == cudaSuccess) e = cudaMalloc(&p.env_dev->ptr, sizeof(Envelope));
  if (e != cudaSuccess) {
    DestroyPeer(p, /*abort=*/true);
    return FromCuda(e, "nccl peer setup");
  }
  {
    MutexLock lock(&status_mu_);
    status_[id] = {id_at_peer, Status::OK()};
  }
  Call([&] {
    auto [it, ok] = peers_.emplace(id, std::move(p));
    PostEnvelope(it->second);
  });
  return id;
}

Result<uint64_t> NcclTransport::IdAtPeer(EndpointId peer) const {
  MutexLock lock(&status_mu_);
  auto it = status_.find(peer);
  if (it == status_.end()) return Status::NotFound("nccl: unknown peer " + std::to_string(peer));
  return it->second.first;
}

Status NcclTransport::PeerStatus(EndpointId peer) const {
  MutexLock lock(&status_mu_);
  auto it = status_.find(peer);
  if (it == status_.end()) return Status::NotFound("nccl: unknown peer " + std::to_string(peer));
  return it->second.second;
}

Status NcclTransport::Disconnect(EndpointId peer) {
  {
    MutexLock lock(&status_mu_);
    if (status_.erase(peer) == 0) {
      return Status::NotFound("nccl: unknown peer " + std::to_string(peer));
    }
  }
  Call([&] {
    auto it = peers_.find(peer);
    if (it == peers_.end()) return;
    FailPeer(peer, it->second, Status::Cancelled("nccl: disconnected"));
    peers_.erase(it);
  });
  return Status::OK();
}

void NcclTransport::DestroyPeer(Peer& p, bool abort) {
  for (ncclComm_t c : {p.out, p.in}) {
    if (c == nullptr) continue;
    if (abort) {
      ncclCommAbort(c);
    } else {
      ncclCommDestroy(c);
    }
  }
  p.out = p.in = nullptr;
  if (p.send_stream != nullptr) cudaStreamDestroy(p.send_stream);
  if (p.recv_stream != nullptr) cudaStreamDestroy(p.recv_stream);
  if (p.env_event != nullptr) cudaEventDestroy(p.env_event);
  if (p.env_host != nullptr) cudaFreeHost(p.env_host);
  p.send_stream = p.recv_stream = nullptr;
  p.env_event = nullptr;
  p.env_host = nullptr;
}

// Progress thread: fails every operation of the peer and aborts its communicators (an
// aborted communicator's kernels stop, so no buffer is touched after this returns).
void NcclTransport::FailPeer(EndpointId id, Peer& p, Status why) {
  if (!p.failed) {
    p.failed = true;
    DestroyPeer(p, /*abort=*/true);
    cudaDeviceSynchronize();  // the aborted work has left the device
  }
  for (auto* q : {&p.sends, &p.recvs}) {
    for (Running& r : *q) {
      if (r.op) r.op->Complete(why, 0, 0);
      if (r.event != nullptr) cudaEventDestroy(r.event);
    }
    q->clear();
  }
  unexpected_.remove_if([&](const Unexpected& u) { return u.from == id; });
  {
    MutexLock lock(&status_mu_);
    auto it = status_.find(id);
    if (it != status_.end() && it->second.second.ok()) it->second.second = why;
  }
  Bump();
}

// ---- posting ----------------------------------------------------------------------

}  // namespace switchyard::transport::nccl_internal
