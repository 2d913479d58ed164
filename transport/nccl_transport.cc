// The "nccl" transport: tagged messages between GPU ranks with ncclSend/ncclRecv.
// Compiled only in CUDA builds (transport/CMakeLists.txt picks this file up when
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
#include <unistd.h>

#include <cstring>
#include <future>

#include "base/mutex.h"
#include "transport/internal/nccl_transport_impl.h"

namespace switchyard::transport {
namespace nccl_internal {

Status FromCuda(cudaError_t e, const std::string& what) {
  return Status::Internal(what + ": " + cudaGetErrorString(e));
}
Status FromNccl(ncclResult_t r, const std::string& what) {
  std::string msg = what + ": " + ncclGetErrorString(r);
  if (r == ncclRemoteError || r == ncclSystemError) {
    return Status::Unavailable(msg, ErrorScope::kRemote).WithRetryable(true);
  }
  return Status::Internal(msg);
}

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
  queue_cv_.SignalAll();
  if (progress_thread_.joinable()) progress_thread_.join();
}

void NcclTransport::Enqueue(std::function<void()> fn) {
  {
    MutexLock lock(&queue_mu_);
    queue_.push_back(std::move(fn));
  }
  queue_cv_.Signal();
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
    MutexLock lock(&completion_mu_);
    completions_++;
  }
  completion_cv_.SignalAll();
}

void NcclTransport::WaitForCompletion(uint64_t seen, Duration timeout) {
  MutexLock lock(&completion_mu_);
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (completions_.load() == seen && completion_cv_.WaitUntil(&completion_mu_, end)) {
  }
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

Result<TransferHandle> NcclTransport::PostSend(EndpointId peer, const DescriptorList& src, Tag tag,
                                               const TransferOptions& options) {
  SY_RETURN_IF_ERROR(CheckGrant(options, TotalLength(src)));
  SY_RETURN_IF_ERROR(CheckDescriptors(src));
  SY_RETURN_IF_ERROR(PeerStatus(peer));
  auto op = std::make_shared<OpState>();
  op->deadline = options.deadline;
  op->bytes = TotalLength(src);
  auto issued = std::make_shared<std::atomic<bool>>(false);
  op->cancel = SendCanceller(op, issued, peer);
  Enqueue([this, op, src, tag, peer, issued] { IssueSend(op, src, tag, peer, *issued); });
  return TransferHandle(std::move(op));
}

std::function<void()> NcclTransport::SendCanceller(const std::shared_ptr<OpState>& op,
                                                   std::shared_ptr<std::atomic<bool>> issued,
                                                   EndpointId peer) {
  std::weak_ptr<OpState> weak = op;
  return [this, weak, issued, peer] {
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
}

void NcclTransport::IssueSend(const std::shared_ptr<OpState>& op, const DescriptorList& src,
                              Tag tag, EndpointId peer, std::atomic<bool>& issued) {
  if (op->done.load()) return;
  auto it = peers_.find(peer);
  if (it == peers_.end() || it->second.failed) {
    op->Complete(
        Status::Unavailable("nccl: peer " + std::to_string(peer) + " is gone", ErrorScope::kRemote),
        0, 0);
    return Bump();
  }
  Peer& p = it->second;
  Running r;
  r.op = op;
  r.bytes = op->bytes;
  const void* payload = nullptr;
  auto env = std::make_shared<DeviceBuffer>();
  cudaError_t e = StageSend(p, src, tag, &r, &payload, env.get());
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
  issued.store(true);
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
}

cudaError_t NcclTransport::StageSend(Peer& p, const DescriptorList& src, Tag tag, Running* r,
                                     const void** payload, DeviceBuffer* env) {
  *payload = src.empty() ? nullptr : src[0].addr;
  cudaError_t e = cudaSuccess;
  if (src.size() > 1) {  // gather into one buffer: NCCL pairs equal counts
    r->staging = std::make_shared<DeviceBuffer>();
    e = cudaMallocAsync(&r->staging->ptr, std::max<uint64_t>(r->bytes, 1), p.send_stream);
    uint64_t off = 0;
    for (const auto& d : src) {
      if (e != cudaSuccess) break;
      e = cudaMemcpyAsync(static_cast<char*>(r->staging->ptr) + off, d.addr, d.length,
                          cudaMemcpyDeviceToDevice, p.send_stream);
      off += d.length;
    }
    *payload = r->staging->ptr;
  }
  Envelope host{tag, r->bytes};
  if (e == cudaSuccess) e = cudaMallocAsync(&env->ptr, sizeof(Envelope), p.send_stream);
  if (e == cudaSuccess) {
    e = cudaMemcpyAsync(env->ptr, &host, sizeof(host), cudaMemcpyHostToDevice, p.send_stream);
  }
  return e;
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

}  // namespace nccl_internal

void RegisterNcclTransport(TransportRegistry& registry) {
  (void)registry.Register("nccl", &nccl_internal::NcclTransport::Create);
}

}  // namespace switchyard::transport
