// Internal to the ucx transport, shared by its three files: ucx_transport.cc (setup, shutdown,
// posting sends and receives), ucx_progress.cc (who owns the ucp worker and drives its
// progress, the command queue, completions) and ucx_peers.cc (handshake, control
// connections, endpoints and peer failure). Holds the UcxTransport class, its tuning
// constants and the worker-ownership helpers; the design is described in
// transport/ucx_transport.h. Not a public interface: nothing outside the transport
// includes it.
//
// Thread-safety: as UcxTransport (ucx_transport.h); members marked "owner only" are touched
// only by the thread holding progress_mu_.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "transport/tcp_util.h"
#include "transport/transport.h"

namespace switchyard::transport::ucx_internal {

// Handshake version 5: the hello carries the client's UCX client id (0: it connects by
// worker address) and the reply the port of the listener's ucp_listener (0: it answered
// with its worker address instead). Version 4: the KV-store protocol above carries per-block
// checksums (its block headers changed); version 3 kept the handshake connection open as the peer's
// control connection (its loss fails the peer); version 2 added the TCP segment sizes. Peers of
// other versions are not answered.
constexpr uint64_t kHelloMagic = 0x53594b5655435835ull;  // "SYKVUCX5"
// Keep-alive on control connections: a peer host that vanished fails after ~10 + 3 * 2 s.
constexpr int kKeepIdleS = 10, kKeepIntervalS = 2, kKeepCount = 3;
constexpr Duration kHandshakeTimeout = std::chrono::seconds(5);
// After the last event, the worker's owner keeps polling this long before it sleeps on the
// worker's event fd (a burst of small messages should not pay a wake-up each).
constexpr Duration kSpinWindow = std::chrono::milliseconds(2);
// While spinning, yield the CPU after this many empty progress calls (the machine may have
// fewer cores than busy threads: the application threads need the CPU to post and check).
constexpr int kYieldEvery = 16;
// Bounds on shutdown: cancelled requests and closing endpoints get this long to finish.
constexpr Duration kShutdownBound = std::chrono::seconds(2);
// After the last application thread stopped driving the worker, the progress thread stays
// off it this long (a caller between two waits — hashing the next put, posting it — is
// back within tens of microseconds; taking the worker over for that gap would put a third
// busy thread on the cores; 300 µs measured no better on the shared 2-core VM).
constexpr std::chrono::nanoseconds kDriverGrace = std::chrono::microseconds(50);
// A waiter that finds the worker owned waits this long for it (the progress thread gives
// it up within a pass) before it blocks on its handle instead.
constexpr Duration kOwnWait = std::chrono::microseconds(200);
// A waiter that could not drive blocks this long before it tries again.
constexpr Duration kRetryDrive = std::chrono::microseconds(200);

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

inline int64_t NowNs() { return Clock::now().time_since_epoch().count(); }

// A UCX status as a Status naming `what` (peer failures are Unavailable with remote scope).
Status FromUcs(ucs_status_t s, const std::string& what);

class UcxTransport;

struct EpErrArg {
  UcxTransport* transport;
  EndpointId peer;
};

// A request for the worker's owner: a send or receive to post, a cancellation, or a
// function to run as the owner (endpoint creation and closing).
struct Command {
  enum Kind { kSend, kRecv, kCancel, kCall } kind = kCall;
  std::shared_ptr<OpState> op;  // kSend, kRecv; kCancel: the op to cancel
  EndpointId peer = 0;          // kSend
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
  bool usesSocketStreams() const override { return tcp_tx_seg_ > 0; }  // TCP in UCX_TLS

  Result<std::string> Listen(const std::string& address) override;
  Result<EndpointId> Connect(const std::string& address) override;
  Result<uint64_t> IdAtPeer(EndpointId peer) const override;
  // "client-server" or "address" (ucx_transport.h).
  Result<std::string> ConnectionFlow(EndpointId peer) const override;
  Status PeerStatus(EndpointId peer) const override;
  Status Disconnect(EndpointId peer) override;

  Result<TransferHandle> PostSend(EndpointId peer, const DescriptorList& src, Tag tag,
                                  const TransferOptions& options) override;
  Result<TransferHandle> PostRecv(const DescriptorList& dst, Tag tag, Tag mask,
                                  const TransferOptions& options) override;

  uint64_t CompletionCount() const override { return completions_.load(); }
  void WaitForCompletion(uint64_t seen, Duration timeout) override;

  // Owner only (inside ucp_worker_progress).
  void OnEpError(EndpointId peer, ucs_status_t status);

 private:
  // What other threads may read about a peer (under peers_mu_).
  struct PeerInfo {
    uint64_t id_at_peer = 0;
    Status status;
    bool client_server = false;  // UCX's client-server flow (else worker addresses)
  };
  // What the worker's owner keeps about a peer.
  struct PeerEp {
    ucp_ep_h ep = nullptr;
    std::unique_ptr<EpErrArg> err_arg;
  };
  struct Inflight {
    std::shared_ptr<OpState> op;
    void* request = nullptr;
    bool busy = false;
    bool silent = false;  // TransferOptions::silent_completion
    EndpointId peer = 0;  // sends: the destination
    // Completed by us after its peer's endpoint was force-closed without UCX finishing
    // it; kept (with its op) until UCX's callback or shutdown.
    bool abandoned = false;
  };
  // Empty progress passes since the last event (the spin policy's state).
  struct Spin {
    int empty = 0;
    TimePoint idle_since{};
  };
  // Why an owner's drive loop returned.
  enum class Drove { kDone, kTimeout, kIdle };

  UcxTransport() = default;
  Status Init(const TransportConfig& config);
  // Parts of Init: the UCX settings (our defaults under the caller's params and the UCX_*
  // environment; sets the TCP segment sizes and the connection flow), applied to `cfg`
  // (our own params taken out), then the worker and the progress threads.
  std::map<std::string, std::string> Settings(const TransportConfig& config);
  Status Configure(const TransportConfig& config, ucp_config_t* cfg);
  Status StartWorker();
  // Owner: creates peer `id`'s endpoint from `ep` (its address fields set; error handling
  // is added here) and keeps it in eps_.
  ucs_status_t CreateEp(EndpointId id, ucp_ep_params_t ep);
  // A new peer whose endpoint is created from `ep` (CreateEp, run as the worker's owner).
  Result<EndpointId> NewPeer(const ucp_ep_params_t& ep, uint64_t id_at_peer, bool client_server,
                             const char* what);
  Result<EndpointId> AddPeer(const std::vector<uint8_t>& remote_address, uint64_t id_at_peer);
  // Client-server endpoints (UCX's sockaddr connection flow, see ucx_transport.h). The
  // connecting side creates its endpoint to the listener's ucp_listener; the listening side
  // registers the peer it accepted over the handshake and creates its endpoint when UCX
  // delivers that client's connection request (OnConnRequest, matched by client id).
  Result<EndpointId> AddClientServerPeer(const HostPort& server, uint64_t id_at_peer);
  EndpointId ExpectClientServerPeer(uint64_t client_id);
  void OnConnRequest(ucp_conn_request_h request);
  static void ConnRequestCb(ucp_conn_request_h request, void* arg);
  // Starts the ucp_listener on `hp`'s host (param listener_port, else any port). Without
  // it (UCX has no sockaddr connection manager here) peers connect by worker address:
  // logged, OK, unless a port was asked for.
  Status StartUcpListener(const HostPort& hp);
  void FillErrHandling(ucp_ep_params_t* ep, EpErrArg* arg) const;
  void AcceptLoop();
  // "" when a peer's TCP segment sizes match ours, else why they do not.
  std::string SegmentsDiffer(uint64_t peer_tx, uint64_t peer_rx) const;

  // Liveness. Each peer's handshake connection stays open as its control connection; the
  // watch thread polls them all and fails a peer whose connection closed (its process
  // exited or was killed, or it disconnected) or broke (keep-alive: its host vanished).
  // This works whatever UCX transport carries the data, shared memory included.
  void WatchControl(EndpointId peer, int fd);
  void WatchLoop();
  void OnControlLost(EndpointId peer);

  // Progress thread.
  void ProgressLoop();
  bool StandDown();

  // Owner of the worker (holds progress_mu_): the progress thread, a driving waiter, or a
  // poster that found the worker free.
  template <typename Pred>
  Drove RunOwned(Pred done, std::optional<TimePoint> until);
  template <typename Pred>
  bool ProgressOnce(Pred done);
  void DrainQueue();
  bool IdleStep(Spin& spin);
  bool ArmForSleep();
  void SleepOwned(std::optional<TimePoint> until);
  void EndSleep();
  void Execute(Command& c);
  void Post(Command& c);
  void CloseEp(ucp_ep_h ep);
  // Closes `peer`'s endpoint (if any) and fails the sends to it still in flight (owner).
  void ClosePeerEp(EndpointId peer);
  void AbandonSendsTo(EndpointId peer);
  void Shutdown();
  void Finish(OpState* op, void* request, Status status, uint64_t bytes, Tag tag);
  static void SendCb(void* request, ucs_status_t status, void* user_data);
  static void RecvCb(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                     void* user_data);

  // Any thread.
  // Drives the worker on this thread until done(), `until`, or shutdown; false (at once
  // or after kOwnWait) when another thread owns the worker.
  template <typename Pred>
  bool Drive(Pred done, std::optional<TimePoint> until);
  // Runs `c` on the worker now if it is free, else queues it for its owner.
  void Submit(Command c);
  void Enqueue(Command c);
  // Runs `fn` as the worker's owner (inline when this thread owns it or it is free; else
  // on the owner) and waits for it.
  void Call(std::function<void()> fn);
  void Wake();
  Result<TransferHandle> Prepare(const DescriptorList& list, const TransferOptions& options,
                                 Command* c);
  void BumpCompletions();

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;  // called into only by its owner (under progress_mu_)
  std::vector<uint8_t> worker_address_;
  // UCX TCP segment sizes (checked at handshake); 0 when UCX_TLS leaves TCP out.
  uint64_t tcp_tx_seg_ = 0, tcp_rx_seg_ = 0;
  bool err_mode_peer_ = true;
  // Connection flow: client-server (ucp_listener and sockaddr endpoints, the default with
  // TCP) or worker addresses exchanged over the handshake. client_id_ names this worker in
  // the connection requests it sends (random, never 0).
  bool client_server_ = true;
  uint64_t client_id_ = 0;
  uint16_t ucp_listener_port_ = 0;         // set by Listen before its accept thread starts
  uint16_t ucp_listener_port_wanted_ = 0;  // param listener_port (0: any)
  int worker_fd_ = -1;
  int wake_fd_ = -1;
  int listen_fd_ = -1;

  // The worker's owner holds this while it calls into UCX (ucp worker in serialized
  // mode): the progress thread, or an application thread driving it while it waits. Not
  // annotated: it guards calls into UCX, not members, and is a timed mutex (taken with
  // try_to_lock) that base/mutex.h's annotated types do not offer.
  std::timed_mutex progress_mu_;
  std::atomic<int> drivers_{0};         // application threads driving or about to
  std::atomic<int64_t> last_drive_{0};  // when a driver last let go (steady ns)

  // The command queue (short lock: a push or a swap).
  Mutex queue_mu_;
  std::vector<Command> queue_ GUARDED_BY(queue_mu_);
  std::atomic<uint64_t> queued_{0};  // pushes not yet taken by an owner
  std::atomic<int> sleepers_{0};     // owners (about to be) in poll() on the fds

  mutable Mutex peers_mu_;
  std::unordered_map<EndpointId, PeerInfo> peers_ GUARDED_BY(peers_mu_);
  std::atomic<EndpointId> next_peer_{1};

  // Owner only.
  std::unordered_map<EndpointId, PeerEp> eps_;
  ucp_listener_h ucp_listener_ = nullptr;
  // Peers accepted over the handshake whose client-server connection request has not
  // arrived yet, by client id, oldest first.
  std::unordered_map<uint64_t, std::deque<EndpointId>> awaiting_ep_;
  std::unordered_map<OpState*, Inflight> inflight_;
  int busy_ops_ = 0;

  std::atomic<bool> stop_progress_{false};
  std::atomic<bool> stop_accept_{false};
  std::atomic<uint64_t> completions_{0};
  std::atomic<int> completion_waiters_{0};
  // Guards no member (completions_ is atomic): it only orders completion_cv_'s waits
  // with the progress thread's notifications, so nothing is marked GUARDED_BY it.
  Mutex completion_mu_;
  CondVar completion_cv_;
  std::thread progress_thread_;
  std::thread accept_thread_;

  Mutex control_mu_;  // control_fds_; a fd is closed only under it
  std::unordered_map<EndpointId, int> control_fds_ GUARDED_BY(control_mu_);
  int control_wake_fd_ = -1;
  std::atomic<bool> stop_watch_{false};
  std::thread watch_thread_;
};

// The transport whose worker this thread owns right now (progress_mu_ held), if any.
inline thread_local const UcxTransport* tls_owner = nullptr;

// Marks this thread as the owner of `t`'s worker for a scope (the lock is held outside).
class OwnerScope {
 public:
  explicit OwnerScope(const UcxTransport* t) : prev_(tls_owner) { tls_owner = t; }
  ~OwnerScope() { tls_owner = prev_; }
  OwnerScope(const OwnerScope&) = delete;
  OwnerScope& operator=(const OwnerScope&) = delete;

 private:
  const UcxTransport* prev_;
};

// UCX's endpoint error callback: forwards to the transport (runs on the worker's owner).
void EpErrorCb(void* arg, ucp_ep_h, ucs_status_t status);

// The drive loops are templates over the completion predicate (inlined into the waits).
template <typename Pred>
bool UcxTransport::Drive(Pred done, std::optional<TimePoint> until) {
  if (tls_owner == this || stop_progress_.load()) return false;
  drivers_.fetch_add(1);  // the progress thread lets go of the worker when it sees this
  std::unique_lock<std::timed_mutex> lock(progress_mu_, std::try_to_lock);
  if (!lock.owns_lock() && !done()) (void)lock.try_lock_for(kOwnWait);
  bool drove = lock.owns_lock() && !stop_progress_.load();
  bool pending = false;
  if (drove) {
    OwnerScope owner(this);
    while (RunOwned(done, until) == Drove::kIdle) SleepOwned(until);
    pending = busy_ops_ > 0 || queued_.load() > 0;
  }
  if (lock.owns_lock()) lock.unlock();
  last_drive_.store(NowNs());
  if (drivers_.fetch_sub(1) == 1) drivers_.notify_all();
  // Operations left in flight need progress: a progress thread asleep on the fds (it
  // slept before this thread took over) must not wait for an event that was consumed.
  if (pending && sleepers_.load() > 0) Wake();
  return drove;
}

template <typename Pred>
UcxTransport::Drove UcxTransport::RunOwned(Pred done, std::optional<TimePoint> until) {
  Spin spin;
  while (true) {
    if (done() || stop_progress_.load(std::memory_order_relaxed)) return Drove::kDone;
    if (ProgressOnce(done)) {
      spin = Spin{};
      continue;
    }
    if (until && spin.empty % 64 == 0 && Clock::now() >= *until) return Drove::kTimeout;
    if (IdleStep(spin)) return Drove::kIdle;
  }
}

template <typename Pred>
bool UcxTransport::ProgressOnce(Pred done) {
  bool active = false;
  if (queued_.load(std::memory_order_relaxed) > 0) {
    DrainQueue();
    active = true;
  }
  for (int i = 0; i < 64 && !done(); ++i) {
    if (ucp_worker_progress(worker_) == 0) break;
    active = true;
  }
  return active;
}

}  // namespace switchyard::transport::ucx_internal
