// Internal to the nccl transport, shared by its three files: nccl_transport.cc (setup,
// the command queue, completions, posting sends and receives), nccl_peers.cc (the TCP
// handshake, joining the two communicators of a peer, peer failure and teardown) and
// nccl_progress.cc (envelopes, matching, polling CUDA events). Holds the NcclTransport
// class and its constants; the design is described at the top of nccl_transport.cc. Not a
// public interface. Compiled in CUDA builds only.
//
// Thread-safety: as NcclTransport; members marked "progress thread only" are touched only
// by the progress thread after connection setup.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "transport/transport.h"

namespace switchyard::transport::nccl_internal {

constexpr uint64_t kNcclMagic = 0x53594b564e43434cull;  // "SYKVNCCL"
constexpr Duration kHandshakeTimeout = std::chrono::seconds(30);
constexpr auto kErrorPollEvery = std::chrono::milliseconds(10);

struct Envelope {
  uint64_t tag = 0;
  uint64_t length = 0;
};

// A CUDA error as Internal naming `what`.
Status FromCuda(cudaError_t e, const std::string& what);
// An NCCL result as a Status naming `what` (remote and system errors: Unavailable, peer
// scope, retryable).
Status FromNccl(ncclResult_t r, const std::string& what);

class NcclTransport final : public Transport {
 public:
  ~NcclTransport() override;
  static Result<std::unique_ptr<Transport>> Create(const TransportConfig& config);

  std::string name() const override { return "nccl"; }
  bool supportsRemote() const override { return true; }
  std::vector<MemoryKind> supportedMemoryKinds() const override { return {MemoryKind::kCuda}; }

  Result<std::string> Listen(const std::string& address) override;
  Result<EndpointId> Connect(const std::string& address) override;
  Result<uint64_t> IdAtPeer(EndpointId peer) const override;
  Status PeerStatus(EndpointId peer) const override;
  Status Disconnect(EndpointId peer) override;

  Result<TransferHandle> PostSend(EndpointId peer, const DescriptorList& src, Tag tag,
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
    EndpointId from = 0;
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
  Result<EndpointId> Join(int fd, bool listener);
  void ProgressLoop();
  // Runs `fn` on the progress thread and waits for it.
  void Call(std::function<void()> fn);
  void Enqueue(std::function<void()> fn);
  void Bump();

  // PostSend's parts: the op's cancel hook; on the progress thread, the send's issue and
  // its staging (a gather of `src` into one device buffer and the envelope's device copy).
  std::function<void()> SendCanceller(const std::shared_ptr<OpState>& op,
                                      std::shared_ptr<std::atomic<bool>> issued, EndpointId peer);
  void IssueSend(const std::shared_ptr<OpState>& op, const DescriptorList& src, Tag tag,
                 EndpointId peer, std::atomic<bool>& issued);
  cudaError_t StageSend(Peer& p, const DescriptorList& src, Tag tag, Running* r,
                        const void** payload, DeviceBuffer* env);

  // Progress thread only.
  bool PollPeer(EndpointId id, Peer& p);
  void PostEnvelope(Peer& p);
  void OnEnvelope(EndpointId id, Peer& p);
  void MatchUnexpected(PostedRecv& r, bool* matched);
  void FailPeer(EndpointId id, Peer& p, Status why);
  void DestroyPeer(Peer& p, bool abort);
  Status CheckDescriptors(const DescriptorList& list) const;

  int device_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> stop_accept_{false};
  std::atomic<EndpointId> next_peer_{1};

  Mutex queue_mu_;
  std::vector<std::function<void()>> queue_ GUARDED_BY(queue_mu_);
  CondVar queue_cv_;

  mutable Mutex status_mu_;
  std::unordered_map<EndpointId, std::pair<uint64_t, Status>> status_
      GUARDED_BY(status_mu_);  // id at peer, status

  // Progress thread only.
  std::unordered_map<EndpointId, Peer> peers_;
  std::list<PostedRecv> posted_;
  std::list<Unexpected> unexpected_;

  std::atomic<uint64_t> completions_{0};
  // Guards no member (completions_ is atomic): it only orders completion_cv_'s waits
  // with the progress thread's notifications, so nothing is marked GUARDED_BY it.
  Mutex completion_mu_;
  CondVar completion_cv_;
  std::thread progress_thread_, accept_thread_;
};

}  // namespace switchyard::transport::nccl_internal
