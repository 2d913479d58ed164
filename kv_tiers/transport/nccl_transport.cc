// The "nccl" transport: tagged messages between GPU ranks with ncclSend/ncclRecv.
// Compiled only in CUDA builds (kv_tiers/transport/CMakeLists.txt picks this file up when
// SWITCHYARD_WITH_CUDA is on); registered as "nccl" like every backend.
//
// Connection: out of band over TCP, as the UCX transport does. The connecting side opens
// a TCP connection to the listener's HOST:PORT; the listener creates two ncclUniqueIds
// and sends them; both sides then join two 2-rank communicators, one per direction
// (listener rank 0, connector rank 1): on `out` this process only sends, on `in` it only
// receives. One direction per communicator keeps NCCL's in-order execution from putting
// a waiting receive in front of a send (which would deadlock two ranks that both wait).
//
// Tags: NCCL has none, so every message is an envelope (tag, length; 16 bytes) followed
// by the payload, in one NCCL group. The receiving side always has the next envelope
// receive posted on its `in` communicator; when one lands, the progress thread matches
// it against posted receives (tag under mask, in posting order, from any peer) and posts
// the payload receive straight into the matching buffer, or, with no match yet, into a
// device staging buffer that a later PostRecv copies from (an "unexpected" message, one
// extra device copy). A payload larger than the matching buffer is received into staging
// and reported InvalidArgument (truncation), as UCX does. Several descriptors on either
// side are gathered/scattered through a staging buffer (NCCL needs equal counts on both
// sides of a send/receive pair).
//
// Memory: device memory only (MemoryKind::kCuda on the configured device); host memory
// is NotSupported. Config keys: "device" (CUDA ordinal, default 0).
// Progress: one progress thread owns every NCCL call after connection setup; posts are
// queued to it. Completion is a CUDA event per operation, polled by that thread.
// Failure: ncclCommGetAsyncError is polled; a failed communicator is aborted and the peer
// turns Unavailable, failing its pending operations. Cancellation: a receive not yet
// matched, or a send not yet issued, is cancelled at once; an operation NCCL already runs
// cannot be withdrawn, so cancelling it aborts that peer's communicators (the peer must
// reconnect) — the only way to guarantee the buffer is no longer touched.
// Without a CUDA device, creating the transport fails with Unavailable saying so.
//
// Thread-safety: all methods are thread-safe.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <future>
#include <list>
#include <thread>
#include <unordered_map>

#include "kv_tiers/transport/tcp_util.h"
#include "kv_tiers/transport/transport.h"

namespace switchyard::kv_tiers::transport {
namespace {

constexpr uint64_t kNcclMagic = 0x53594b564e43434cull;  // "SYKVNCCL"
constexpr Duration kHandshakeTimeout = std::chrono::seconds(30);
constexpr auto kErrorPollEvery = std::chrono::milliseconds(10);

struct Envelope {
  uint64_t tag = 0;
  uint64_t length = 0;
};

Status FromCuda(cudaError_t e, const std::string& what) {
  return Status::Internal(what + ": " + cudaGetErrorString(e));
}
Status FromNccl(ncclResult_t r, const std::string& what) {
  std::string msg = what + ": " + ncclGetErrorString(r);
  if (r == ncclRemoteError || r == ncclSystemError) {
    return Status::Unavailable(msg, ErrorScope::kPeer).WithRetryable(true);
  }
  return Status::Internal(msg);
}

class NcclTransport final : public Transport {
 public:
  ~NcclTransport() override;
  static Result<std::unique_ptr<Transport>> Create(const TransportConfig& config);

  std::string name() const override { return "nccl"; }
  bool supportsRemote() const override { return true; }
  std::vector<MemoryKind> supportedMemoryKinds() const override { return {MemoryKind::kCuda}; }

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

 private:
  // A device buffer from cudaMalloc, freed with cudaFree.
  struct DeviceBuffer {
    void* ptr = nullptr;
    uint64_t size = 0;
    ~DeviceBuffer() {
      if (ptr != nullptr) cudaFree(ptr);
    }
  };
  struct Unexpected {
    PeerId from = 0;
    Tag tag = 0;
    uint64_t length = 0;
    std::shared_ptr<DeviceBuffer> data;
    bool arrived = false;
  };
  // An operation NCCL runs; done when `event` has completed.
  struct Running {
    std::shared_ptr<OpState> op;  // null for an unexpected message's payload
    cudaEvent_t event = nullptr;
    Status status;  // the status to complete with (e.g. truncation)
    uint64_t bytes = 0;
    Tag tag = 0;
    std::shared_ptr<DeviceBuffer> staging;
    DescriptorList scatter;  // copy staging into these after the receive (done on stream)
    Unexpected* unexpected = nullptr;
  };
  struct PostedRecv {
    std::shared_ptr<OpState> op;
    DescriptorList dst;
    Tag tag = 0, mask = 0;
  };
  struct Peer {
    uint64_t id_at_peer = 0;
    ncclComm_t out = nullptr, in = nullptr;
    int other = 0;  // the other rank in both communicators
    cudaStream_t send_stream = nullptr, recv_stream = nullptr;
    std::shared_ptr<DeviceBuffer> env_dev;  // the next envelope lands here
    Envelope* env_host = nullptr;           // pinned copy of it
    cudaEvent_t env_event = nullptr;
    bool env_posted = false;
    std::deque<Running> sends, recvs;
    bool failed = false;
  };

  NcclTransport() = default;
  Status Init(const TransportConfig& config);
  void AcceptLoop();
  Result<PeerId> Join(int fd, bool listener);
  void ProgressLoop();
  // Runs `fn` on the progress thread and waits for it.
  void Call(std::function<void()> fn);
  void Enqueue(std::function<void()> fn);
  void Bump();

  // Progress thread only.
  bool PollPeer(PeerId id, Peer& p);
  void PostEnvelope(Peer& p);
  void OnEnvelope(PeerId id, Peer& p);
  void MatchUnexpected(PostedRecv& r, bool* matched);
  void FailPeer(PeerId id, Peer& p, Status why);
  void DestroyPeer(Peer& p, bool abort);
  Status CheckDescriptors(const DescriptorList& list) const;

  int device_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> stop_accept_{false};
  std::atomic<PeerId> next_peer_{1};

  std::mutex queue_mu_;
  std::vector<std::function<void()>> queue_;
  std::condition_variable queue_cv_;

  mutable std::mutex status_mu_;
  std::unordered_map<PeerId, std::pair<uint64_t, Status>> status_;  // id at peer, status

  // Progress thread only.
  std::unordered_map<PeerId, Peer> peers_;
  std::list<PostedRecv> posted_;
  std::list<Unexpected> unexpected_;

  std::atomic<uint64_t> completions_{0};
  std::mutex completion_mu_;
  std::condition_variable completion_cv_;
  std::thread progress_thread_, accept_thread_;
};

Result<std::unique_ptr<Transport>> NcclTransport::Create(const TransportConfig& config) {
  std::unique_ptr<NcclTransport> t(new NcclTransport());
  Status s = t->Init(config);
  if (!s.ok()) return s.Annotate("creating the nccl transport");
  return std::unique_ptr<Transport>(std::move(t));
}

Status NcclTransport::Init(const TransportConfig& config) {
  for (const auto& [key, value] : config.params) {
    if (key == "device") {
      device_ = std::atoi(value.c_str());
    } else {
      return Status::InvalidArgument("nccl config: unknown key '" + key + "'");
    }
  }
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    return Status::Unavailable(std::string("nccl: no CUDA device (") +
                               (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  }
  if (device_ < 0 || device_ >= count) {
    return Status::InvalidArgument("nccl: device " + std::to_string(device_) + " of " +
                                   std::to_string(count));
  }
  progress_thread_ = std::thread([this] { ProgressLoop(); });
  return Status::OK();
}

NcclTransport::~NcclTransport() {
  stop_accept_ = true;
  if (accept_thread_.joinable()) accept_thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  stop_ = true;
  queue_cv_.notify_all();
  if (progress_thread_.joinable()) progress_thread_.join();
}

void NcclTransport::Enqueue(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    queue_.push_back(std::move(fn));
  }
  queue_cv_.notify_one();
}

void NcclTransport::Call(std::function<void()> fn) {
  if (std::this_thread::get_id() == progress_thread_.get_id()) return fn();
  std::promise<void> done;
  std::future<void> f = done.get_future();
  Enqueue([&] {
    fn();
    done.set_value();
  });
  f.wait();
}

void NcclTransport::Bump() {
  {
    std::lock_guard<std::mutex> lock(completion_mu_);
    completions_++;
  }
  completion_cv_.notify_all();
}

void NcclTransport::WaitForCompletion(uint64_t seen, Duration timeout) {
  std::unique_lock<std::mutex> lock(completion_mu_);
  completion_cv_.wait_for(lock, timeout, [&] { return completions_.load() != seen; });
}

Status NcclTransport::CheckDescriptors(const DescriptorList& list) const {
  for (const auto& d : list) {
    if (d.kind != MemoryKind::kCuda) {
      return Status::NotSupported("nccl transport: memory kind '" +
                                  std::string(MemoryKindName(d.kind)) +
                                  "' not supported (device memory only)");
    }
    if (d.device != device_) {
      return Status::InvalidArgument("nccl transport: buffer on device " +
                                     std::to_string(d.device) + ", transport on device " +
                                     std::to_string(device_));
    }
    if (d.addr == nullptr && d.length > 0) return Status::InvalidArgument("null descriptor");
  }
  return Status::OK();
}

// ---- connection setup -------------------------------------------------------------

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

Result<PeerId> NcclTransport::Connect(const std::string& address) {
  SY_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  SY_ASSIGN_OR_RETURN(int fd, TcpConnect(hp, kHandshakeTimeout));
  auto r = Join(fd, /*listener=*/false);
  ::close(fd);
  if (!r.ok()) return r.status().Annotate("nccl handshake with " + address);
  return r;
}

// Listener: sends magic, its id for the connector and two unique ids; connector: sends
// magic and its id for the listener. Then both join the two communicators.
Result<PeerId> NcclTransport::Join(int fd, bool listener) {
  cudaSetDevice(device_);
  PeerId id = next_peer_.fetch_add(1);
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
    std::lock_guard<std::mutex> lock(status_mu_);
    status_[id] = {id_at_peer, Status::OK()};
  }
  Call([&] {
    auto [it, ok] = peers_.emplace(id, std::move(p));
    PostEnvelope(it->second);
  });
  return id;
}

Result<uint64_t> NcclTransport::IdAtPeer(PeerId peer) const {
  std::lock_guard<std::mutex> lock(status_mu_);
  auto it = status_.find(peer);
  if (it == status_.end()) return Status::NotFound("nccl: unknown peer " + std::to_string(peer));
  return it->second.first;
}

Status NcclTransport::PeerStatus(PeerId peer) const {
  std::lock_guard<std::mutex> lock(status_mu_);
  auto it = status_.find(peer);
  if (it == status_.end()) return Status::NotFound("nccl: unknown peer " + std::to_string(peer));
  return it->second.second;
}

Status NcclTransport::Disconnect(PeerId peer) {
  {
    std::lock_guard<std::mutex> lock(status_mu_);
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
void NcclTransport::FailPeer(PeerId id, Peer& p, Status why) {
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
    std::lock_guard<std::mutex> lock(status_mu_);
    auto it = status_.find(id);
    if (it != status_.end() && it->second.second.ok()) it->second.second = why;
  }
  Bump();
}

// ---- posting ----------------------------------------------------------------------

Result<TransferHandle> NcclTransport::PostSend(PeerId peer, const DescriptorList& src, Tag tag,
                                               const TransferOptions& options) {
  SY_RETURN_IF_ERROR(CheckGrant(options, TotalLength(src)));
  SY_RETURN_IF_ERROR(CheckDescriptors(src));
  SY_RETURN_IF_ERROR(PeerStatus(peer));
  auto op = std::make_shared<OpState>();
  op->deadline = options.deadline;
  op->bytes = TotalLength(src);
  std::weak_ptr<OpState> weak = op;
  auto issued = std::make_shared<std::atomic<bool>>(false);
  op->cancel = [this, weak, issued, peer] {
    Enqueue([this, weak, issued, peer] {
      auto o = weak.lock();
      if (!o || o->done.load()) return;
      if (!issued->load()) return o->Complete(Status::Cancelled("nccl send cancelled"), 0, 0);
      auto it = peers_.find(peer);  // NCCL runs it: only an abort withdraws it
      if (it != peers_.end()) {
        FailPeer(peer, it->second, Status::Cancelled("nccl send cancelled (peer aborted)"));
      }
    });
  };
  Enqueue([this, op, src, tag, peer, issued] {
    if (op->done.load()) return;
    auto it = peers_.find(peer);
    if (it == peers_.end() || it->second.failed) {
      op->Complete(
          Status::Unavailable("nccl: peer " + std::to_string(peer) + " is gone", ErrorScope::kPeer),
          0, 0);
      return Bump();
    }
    Peer& p = it->second;
    Running r;
    r.op = op;
    r.bytes = op->bytes;
    const void* payload = src.empty() ? nullptr : src[0].addr;
    cudaError_t e = cudaSuccess;
    if (src.size() > 1) {  // gather into one buffer: NCCL pairs equal counts
      r.staging = std::make_shared<DeviceBuffer>();
      e = cudaMallocAsync(&r.staging->ptr, std::max<uint64_t>(r.bytes, 1), p.send_stream);
      uint64_t off = 0;
      for (const auto& d : src) {
        if (e != cudaSuccess) break;
        e = cudaMemcpyAsync(static_cast<char*>(r.staging->ptr) + off, d.addr, d.length,
                            cudaMemcpyDeviceToDevice, p.send_stream);
        off += d.length;
      }
      payload = r.staging->ptr;
    }
    auto env = std::make_shared<DeviceBuffer>();
    Envelope host{tag, r.bytes};
    if (e == cudaSuccess) e = cudaMallocAsync(&env->ptr, sizeof(Envelope), p.send_stream);
    if (e == cudaSuccess) {
      e = cudaMemcpyAsync(env->ptr, &host, sizeof(host), cudaMemcpyHostToDevice, p.send_stream);
    }
    if (e != cudaSuccess) {
      op->Complete(FromCuda(e, "nccl send staging"), 0, 0);
      return Bump();
    }
    ncclResult_t nr = ncclGroupStart();
    if (nr == ncclSuccess) {
      nr = ncclSend(env->ptr, sizeof(Envelope), ncclUint8, p.other, p.out, p.send_stream);
    }
    if (nr == ncclSuccess && r.bytes > 0) {
      nr = ncclSend(payload, r.bytes, ncclUint8, p.other, p.out, p.send_stream);
    }
    ncclResult_t ge = ncclGroupEnd();
    if (nr == ncclSuccess) nr = ge;
    if (nr != ncclSuccess) {
      FailPeer(peer, p, FromNccl(nr, "ncclSend"));
      op->Complete(FromNccl(nr, "ncclSend"), 0, 0);
      return Bump();
    }
    issued->store(true);
    // The envelope's device copy goes back to the stream-ordered pool after the send.
    cudaFreeAsync(env->ptr, p.send_stream);
    env->ptr = nullptr;
    if (r.staging) {
      cudaFreeAsync(r.staging->ptr, p.send_stream);
      r.staging->ptr = nullptr;
    }
    cudaEventCreateWithFlags(&r.event, cudaEventDisableTiming);
    cudaEventRecord(r.event, p.send_stream);
    p.sends.push_back(std::move(r));
  });
  return TransferHandle(std::move(op));
}

Result<TransferHandle> NcclTransport::PostRecv(const DescriptorList& dst, Tag tag, Tag mask,
                                               const TransferOptions& options) {
  SY_RETURN_IF_ERROR(CheckGrant(options, TotalLength(dst)));
  SY_RETURN_IF_ERROR(CheckDescriptors(dst));
  auto op = std::make_shared<OpState>();
  op->deadline = options.deadline;
  std::weak_ptr<OpState> weak = op;
  op->cancel = [this, weak] {
    Enqueue([this, weak] {
      auto o = weak.lock();
      if (!o || o->done.load()) return;
      for (auto it = posted_.begin(); it != posted_.end(); ++it) {
        if (it->op == o) {  // not matched yet: withdraw it
          posted_.erase(it);
          o->Complete(Status::Cancelled("nccl receive cancelled"), 0, 0);
          return Bump();
        }
      }
      for (auto& [id, p] : peers_) {  // matched and running: abort that peer
        for (const Running& r : p.recvs) {
          if (r.op == o) {
            return FailPeer(id, p, Status::Cancelled("nccl receive cancelled (peer aborted)"));
          }
        }
      }
    });
  };
  Enqueue([this, op, dst, tag, mask] {
    if (op->done.load()) return;
    PostedRecv r{op, dst, tag, mask};
    bool matched = false;
    MatchUnexpected(r, &matched);
    if (!matched) posted_.push_back(std::move(r));
  });
  return TransferHandle(std::move(op));
}

// ---- progress ---------------------------------------------------------------------

void NcclTransport::PostEnvelope(Peer& p) {
  if (p.failed) return;
  ncclResult_t r =
      ncclRecv(p.env_dev->ptr, sizeof(Envelope), ncclUint8, p.other, p.in, p.recv_stream);
  if (r != ncclSuccess) return;  // the error poll fails the peer
  cudaMemcpyAsync(p.env_host, p.env_dev->ptr, sizeof(Envelope), cudaMemcpyDeviceToHost,
                  p.recv_stream);
  cudaEventRecord(p.env_event, p.recv_stream);
  p.env_posted = true;
}

// Copies an arrived unexpected message into `r` if one matches (the oldest first).
void NcclTransport::MatchUnexpected(PostedRecv& r, bool* matched) {
  *matched = false;
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (!it->arrived || (it->tag & r.mask) != (r.tag & r.mask)) continue;
    uint64_t capacity = TotalLength(r.dst);
    Status s = Status::OK();
    uint64_t n = it->length;
    if (n > capacity) {
      s = Status::InvalidArgument("nccl receive: message of " + std::to_string(n) +
                                  " B larger than the receive buffer (" + std::to_string(capacity) +
                                  " B)");
      n = 0;
    }
    uint64_t off = 0;
    for (const auto& d : r.dst) {
      if (off >= n) break;
      uint64_t k = std::min(d.length, n - off);
      cudaMemcpy(d.addr, static_cast<char*>(it->data->ptr) + off, k, cudaMemcpyDeviceToDevice);
      off += k;
    }
    r.op->Complete(s, n, it->tag);
    unexpected_.erase(it);
    Bump();
    *matched = true;
    return;
  }
}

void NcclTransport::OnEnvelope(PeerId id, Peer& p) {
  p.env_posted = false;
  Envelope env = *p.env_host;
  Running run;
  run.tag = env.tag;
  run.bytes = env.length;
  void* into = nullptr;
  auto match = posted_.end();
  for (auto it = posted_.begin(); it != posted_.end(); ++it) {
    if ((env.tag & it->mask) == (it->tag & it->mask)) {
      match = it;
      break;
    }
  }
  if (match != posted_.end()) {
    run.op = match->op;
    uint64_t capacity = TotalLength(match->dst);
    if (env.length > capacity) {
      run.status = Status::InvalidArgument(
          "nccl receive: message of " + std::to_string(env.length) +
          " B larger than the receive buffer (" + std::to_string(capacity) + " B)");
      run.bytes = 0;
    } else if (match->dst.size() == 1) {
      into = match->dst[0].addr;
    } else {
      run.scatter = match->dst;
    }
    posted_.erase(match);
  } else {
    unexpected_.push_back(Unexpected{id, env.tag, env.length, nullptr, false});
    run.unexpected = &unexpected_.back();
  }
  if (into == nullptr && env.length > 0) {
    run.staging = std::make_shared<DeviceBuffer>();
    run.staging->size = env.length;
    if (cudaMalloc(&run.staging->ptr, env.length) != cudaSuccess) {
      return FailPeer(id, p, Status::ResourceExhausted("nccl: no device memory for staging"));
    }
    into = run.staging->ptr;
    if (run.unexpected != nullptr) run.unexpected->data = run.staging;
  }
  if (env.length > 0) {
    ncclResult_t r = ncclRecv(into, env.length, ncclUint8, p.other, p.in, p.recv_stream);
    if (r != ncclSuccess) return FailPeer(id, p, FromNccl(r, "ncclRecv"));
  }
  uint64_t off = 0;
  for (const auto& d : run.scatter) {
    uint64_t k = std::min(d.length, env.length - off);
    if (k == 0) break;
    cudaMemcpyAsync(d.addr, static_cast<char*>(into) + off, k, cudaMemcpyDeviceToDevice,
                    p.recv_stream);
    off += k;
  }
  cudaEventCreateWithFlags(&run.event, cudaEventDisableTiming);
  cudaEventRecord(run.event, p.recv_stream);
  p.recvs.push_back(std::move(run));
  PostEnvelope(p);  // the next message's envelope, in stream order after this payload
}

bool NcclTransport::PollPeer(PeerId id, Peer& p) {
  if (p.failed) return false;
  bool any = false;
  while (!p.sends.empty() && cudaEventQuery(p.sends.front().event) == cudaSuccess) {
    Running& r = p.sends.front();
    cudaEventDestroy(r.event);
    r.op->Complete(Status::OK(), r.bytes, 0);
    p.sends.pop_front();
    Bump();
    any = true;
  }
  while (!p.recvs.empty() && cudaEventQuery(p.recvs.front().event) == cudaSuccess) {
    Running& r = p.recvs.front();
    cudaEventDestroy(r.event);
    if (r.op) {
      r.op->Complete(r.status, r.bytes, r.tag);
      Bump();
    } else if (r.unexpected != nullptr) {
      r.unexpected->arrived = true;
      // A receive posted meanwhile may match it now.
      for (auto it = posted_.begin(); it != posted_.end(); ++it) {
        bool matched = false;
        MatchUnexpected(*it, &matched);
        if (matched) {
          posted_.erase(it);
          break;
        }
      }
    }
    p.recvs.pop_front();
    any = true;
  }
  if (p.env_posted && cudaEventQuery(p.env_event) == cudaSuccess) {
    OnEnvelope(id, p);
    any = true;
  }
  return any;
}

void NcclTransport::ProgressLoop() {
  cudaSetDevice(device_);
  auto last_error_poll = std::chrono::steady_clock::now();
  std::vector<std::function<void()>> batch;
  while (!stop_.load()) {
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      bool busy = false;
      for (auto& [id, p] : peers_) busy |= !p.sends.empty() || !p.recvs.empty() || p.env_posted;
      // Idle peers still have an envelope receive posted; poll it every 100 us.
      queue_cv_.wait_for(lock, std::chrono::microseconds(busy ? 0 : 100),
                         [&] { return !queue_.empty() || stop_.load(); });
      batch.swap(queue_);
    }
    for (auto& fn : batch) fn();
    batch.clear();
    bool any = false;
    for (auto& [id, p] : peers_) any |= PollPeer(id, p);
    auto now = std::chrono::steady_clock::now();
    if (now - last_error_poll > kErrorPollEvery) {
      last_error_poll = now;
      for (auto& [id, p] : peers_) {
        if (p.failed) continue;
        for (ncclComm_t c : {p.out, p.in}) {
          ncclResult_t async = ncclSuccess;
          if (ncclCommGetAsyncError(c, &async) == ncclSuccess && async != ncclSuccess &&
              async != ncclInProgress) {
            FailPeer(id, p, FromNccl(async, "nccl communicator with peer " + std::to_string(id)));
            break;
          }
        }
      }
    }
    if (!any) std::this_thread::yield();
  }
  // Shutdown: queued work is cancelled, then every peer aborted (its operations fail).
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    batch.swap(queue_);
  }
  for (auto& fn : batch) fn();
  for (auto& [id, p] : peers_) FailPeer(id, p, Status::Cancelled("nccl transport destroyed"));
  for (PostedRecv& r : posted_) r.op->Complete(Status::Cancelled("nccl transport destroyed"), 0, 0);
  posted_.clear();
  unexpected_.clear();
  peers_.clear();
}

}  // namespace

void RegisterNcclTransport(TransportRegistry& registry) {
  (void)registry.Register("nccl", &NcclTransport::Create);
}

}  // namespace switchyard::kv_tiers::transport
