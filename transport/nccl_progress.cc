// NcclTransport progress thread: the standing envelope receive, matching arrivals against
// posted receives (or staging them as unexpected), polling CUDA events and communicator
// errors, completing operations.
#include <cstring>

#include "base/mutex.h"
#include "transport/internal/nccl_transport_impl.h"

namespace switchyard::transport::nccl_internal {

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

void NcclTransport::OnEnvelope(EndpointId id, Peer& p) {
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

bool NcclTransport::PollPeer(EndpointId id, Peer& p) {
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
      MutexLock lock(&queue_mu_);
      bool busy = false;
      for (auto& [id, p] : peers_) busy |= !p.sends.empty() || !p.recvs.empty() || p.env_posted;
      // Idle peers still have an envelope receive posted; poll it every 100 us.
      const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(busy ? 0 : 100);
      while (queue_.empty() && !stop_.load() && queue_cv_.WaitUntil(&queue_mu_, end)) {
      }
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
    MutexLock lock(&queue_mu_);
    batch.swap(queue_);
  }
  for (auto& fn : batch) fn();
  for (auto& [id, p] : peers_) FailPeer(id, p, Status::Cancelled("nccl transport destroyed"));
  for (PostedRecv& r : posted_) r.op->Complete(Status::Cancelled("nccl transport destroyed"), 0, 0);
  posted_.clear();
  unexpected_.clear();
  peers_.clear();
}

}  // namespace switchyard::transport::nccl_internal
