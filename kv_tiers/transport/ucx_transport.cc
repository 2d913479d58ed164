#include "kv_tiers/transport/ucx_transport.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>

#include "base/logging.h"
#include "kv_tiers/transport/tcp_util.h"

namespace switchyard::kv_tiers::transport {
namespace {

// Handshake version 4: the peer protocol above carries per-block checksums (its block
// headers changed); version 3 kept the handshake connection open as the peer's control
// connection (its loss fails the peer); version 2 added the TCP segment sizes. Peers of
// other versions are not answered.
constexpr uint64_t kHelloMagic = 0x53594b5655435834ull;  // "SYKVUCX4"
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

// UCX settings that differ from UCX's defaults unless the caller or the environment sets
// them. TCP segments of 4 MiB: a 1 MiB message then crosses UCX's TCP transport as one
// segment instead of sixteen 64 KiB ones (fewer fragments to send, receive and copy
// piecewise into the posted buffer). Peer puts of 1 MiB over TCP ran ~1.4x faster
// (bench/RESULTS.md, net_budget, stop 6); 64 MiB ones did not change. The cost is memory:
// UCX's TCP send and receive buffers are this size (one of each per endpoint moving data).
// A transport-level key goes to ucp_config_modify without its transport prefix (UCX
// applies it to every transport that has it: only TCP has these two); its environment
// variable carries the prefix.
struct DefaultParam {
  const char* key;
  const char* env;
  const char* value;
};
constexpr DefaultParam kDefaultParams[] = {{"RX_SEG_SIZE", "UCX_TCP_RX_SEG_SIZE", "4m"},
                                           {"TX_SEG_SIZE", "UCX_TCP_TX_SEG_SIZE", "4m"}};
// UCX 1.13's own defaults for the two (ucx_info -c), when nobody sets them.
constexpr uint64_t kUcxTxSegDefault = 8 << 10, kUcxRxSegDefault = 64 << 10;

// A UCX memory-units value ("4m", "64K", "65536", "2mb"); 0 for "inf"/"auto"/unreadable.
uint64_t ParseMemUnits(std::string v) {
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!v.empty() && v.back() == 'b') v.pop_back();
  uint64_t mult = 1;
  if (!v.empty() && (v.back() == 'k' || v.back() == 'm' || v.back() == 'g')) {
    mult = v.back() == 'k' ? 1ull << 10 : v.back() == 'm' ? 1ull << 20 : 1ull << 30;
    v.pop_back();
  }
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) return 0;
  return n * mult;
}

// The TCP segment sizes this process's UCX context uses: from the settings passed to
// ucp_config_modify, else the environment, else UCX's defaults.
uint64_t SegSize(const std::map<std::string, std::string>& settings, const DefaultParam& d,
                 uint64_t ucx_default) {
  for (const std::string& key : {std::string(d.key), std::string(d.env + 4)}) {
    auto it = settings.find(key);
    if (it != settings.end()) return ParseMemUnits(it->second);
  }
  if (const char* e = std::getenv(d.env)) return ParseMemUnits(e);
  return ucx_default;
}

// Whether a UCX_TLS value ("tcp", "sm,self", "^tcp", "all"; unset is "all") lets UCX
// use its TCP transport.
bool UsesTcp(const std::string& tls) {
  bool negate = !tls.empty() && tls[0] == '^';
  bool named = false, all = tls.empty();
  size_t at = negate ? 1 : 0;
  while (at <= tls.size()) {
    size_t end = std::min(tls.find(',', at), tls.size());
    std::string item = tls.substr(at, end - at);
    named = named || item == "tcp";
    all = all || item == "all";
    at = end + 1;
  }
  return negate ? !named : named || all;
}

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

int64_t NowNs() { return Clock::now().time_since_epoch().count(); }

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

// A request for the worker's owner: a send or receive to post, a cancellation, or a
// function to run as the owner (endpoint creation and closing).
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
  bool usesSocketStreams() const override { return tcp_tx_seg_ > 0; }  // TCP in UCX_TLS

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

  // Owner only (inside ucp_worker_progress).
  void OnEpError(PeerId peer, ucs_status_t status);

 private:
  // What other threads may read about a peer (under peers_mu_).
  struct PeerInfo {
    uint64_t id_at_peer = 0;
    Status status;
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
    PeerId peer = 0;      // sends: the destination
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
  Result<PeerId> AddPeer(const std::vector<uint8_t>& remote_address, uint64_t id_at_peer);
  void AcceptLoop();
  // "" when a peer's TCP segment sizes match ours, else why they do not.
  std::string SegmentsDiffer(uint64_t peer_tx, uint64_t peer_rx) const;

  // Liveness. Each peer's handshake connection stays open as its control connection; the
  // watch thread polls them all and fails a peer whose connection closed (its process
  // exited or was killed, or it disconnected) or broke (keep-alive: its host vanished).
  // This works whatever UCX transport carries the data, shared memory included.
  void WatchControl(PeerId peer, int fd);
  void WatchLoop();
  void OnControlLost(PeerId peer);

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
  void ClosePeerEp(PeerId peer);
  void AbandonSendsTo(PeerId peer);
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
  int worker_fd_ = -1;
  int wake_fd_ = -1;
  int listen_fd_ = -1;

  // The worker's owner holds this while it calls into UCX (ucp worker in serialized
  // mode): the progress thread, or an application thread driving it while it waits.
  std::timed_mutex progress_mu_;
  std::atomic<int> drivers_{0};         // application threads driving or about to
  std::atomic<int64_t> last_drive_{0};  // when a driver last let go (steady ns)

  // The command queue (short lock: a push or a swap).
  std::mutex queue_mu_;
  std::vector<Command> queue_;
  std::atomic<uint64_t> queued_{0};  // pushes not yet taken by an owner
  std::atomic<int> sleepers_{0};     // owners (about to be) in poll() on the fds

  mutable std::mutex peers_mu_;
  std::unordered_map<PeerId, PeerInfo> peers_;
  std::atomic<PeerId> next_peer_{1};

  // Owner only.
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

  std::mutex control_mu_;  // control_fds_; a fd is closed only under it
  std::unordered_map<PeerId, int> control_fds_;
  int control_wake_fd_ = -1;
  std::atomic<bool> stop_watch_{false};
  std::thread watch_thread_;
};

// The transport whose worker this thread owns right now (progress_mu_ held), if any.
thread_local const UcxTransport* tls_owner = nullptr;

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
  // Our defaults, unless the caller's params or the UCX_* environment set any of them (the
  // two sizes depend on each other: a send segment may not exceed a receive one).
  std::map<std::string, std::string> settings;
  auto tls = config.params.find("TLS");
  const char* tls_env = std::getenv("UCX_TLS");
  const bool tcp = UsesTcp(tls != config.params.end() ? tls->second : tls_env ? tls_env : "");
  bool set_elsewhere = !tcp;  // without TCP, UCX would warn that nothing takes the two
  for (const DefaultParam& d : kDefaultParams) {
    set_elsewhere = set_elsewhere || config.params.count(d.key) > 0 ||
                    config.params.count(d.env + 4) > 0 || std::getenv(d.env) != nullptr;
  }
  for (const DefaultParam& d : kDefaultParams) {
    if (!set_elsewhere) settings[d.key] = d.value;
  }
  // Peers must agree on these: a TCP segment larger than the receiver's receive segment
  // aborts the receiving process inside UCX (an assertion), so the handshake compares them.
  tcp_tx_seg_ = tcp ? SegSize(settings, kDefaultParams[1], kUcxTxSegDefault) : 0;
  tcp_rx_seg_ = tcp ? SegSize(settings, kDefaultParams[0], kUcxRxSegDefault) : 0;
  for (const auto& [key, value] : config.params) settings[key] = value;
  for (const auto& [key, value] : settings) {
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

  // Once the progress thread runs, every ucp call on the worker is made by its owner, the
  // holder of progress_mu_ (serialised: this thread before it starts, the destructor
  // after it ends).
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
  control_wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0 || control_wake_fd_ < 0) return Status::Internal("eventfd failed");
  progress_thread_ = std::thread([this] { ProgressLoop(); });
  watch_thread_ = std::thread([this] { WatchLoop(); });
  return Status::OK();
}

UcxTransport::~UcxTransport() {
  stop_accept_ = true;
  if (accept_thread_.joinable()) accept_thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  stop_watch_ = true;
  if (control_wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(control_wake_fd_, &one, sizeof(one));
  }
  if (watch_thread_.joinable()) watch_thread_.join();
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    for (auto& [peer, fd] : control_fds_) ::close(fd);  // the peers see us gone
    control_fds_.clear();
  }
  if (control_wake_fd_ >= 0) ::close(control_wake_fd_);
  stop_progress_ = true;
  drivers_.fetch_add(1 << 20);  // a change of value: ends the progress thread's wait on it
  drivers_.notify_all();
  Wake();
  if (progress_thread_.joinable()) progress_thread_.join();
  {
    std::lock_guard<std::timed_mutex> lock(progress_mu_);  // a driver still inside leaves first
  }
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
    queued_.fetch_add(1);  // seq_cst: pairs with sleepers_ in ArmForSleep
  }
  if (sleepers_.load() > 0) Wake();
}

void UcxTransport::Submit(Command c) {
  if (tls_owner == this) return Execute(c);
  std::unique_lock<std::timed_mutex> lock(progress_mu_, std::try_to_lock);
  if (!lock.owns_lock() || stop_progress_.load()) {
    if (lock.owns_lock()) lock.unlock();
    return Enqueue(std::move(c));
  }
  {
    OwnerScope owner(this);
    DrainQueue();  // what was queued before goes first (a cancel after its post)
    Execute(c);
  }
  lock.unlock();
  // A sleeping progress thread must see the new operation (it may need progress).
  if (sleepers_.load() > 0) Wake();
}

void UcxTransport::Call(std::function<void()> fn) {
  if (tls_owner == this) return fn();
  {
    std::unique_lock<std::timed_mutex> lock(progress_mu_, std::try_to_lock);
    if (lock.owns_lock() && !stop_progress_.load()) {
      OwnerScope owner(this);
      DrainQueue();
      return fn();
    }
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
  const TimePoint until = Clock::now() + timeout;
  auto moved = [&] { return completions_.load() != seen; };
  while (!moved() && Clock::now() < until) {
    if (Drive(moved, until)) continue;
    // Another thread owns the worker: its completions wake us.
    std::unique_lock<std::mutex> lock(completion_mu_);
    completion_waiters_.fetch_add(1);
    completion_cv_.wait_until(lock, std::min(until, Clock::now() + kRetryDrive), moved);
    completion_waiters_.fetch_sub(1);
  }
}

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

void UcxTransport::SleepOwned(std::optional<TimePoint> until) {
  // Only long-wait receives pending and the spin window over: sleep on the fds, keeping
  // the worker (an event, a post or a shutdown wakes us).
  int ms = 100;
  if (until) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*until - Clock::now()).count();
    ms = static_cast<int>(std::clamp<int64_t>(left, 0, 100));
  }
  if (ArmForSleep()) {
    pollfd fds[2] = {{worker_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    ::poll(fds, 2, ms);
  }
  EndSleep();
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

void UcxTransport::DrainQueue() {
  if (queued_.load() == 0) return;
  std::vector<Command> batch;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    batch.swap(queue_);
    queued_.store(0);
  }
  for (Command& c : batch) Execute(c);
}

bool UcxTransport::IdleStep(Spin& spin) {
  // Operations in flight: keep polling, yielding the CPU now and then.
  if (busy_ops_ > 0) {
    if (++spin.empty % kYieldEvery == 0) sched_yield();
    spin.idle_since = {};
    return false;
  }
  // Nothing pending but long-wait receives: keep polling for kSpinWindow, then sleep. The
  // clock is read only every kClockEvery empty polls.
  constexpr int kClockEvery = 64;
  if (++spin.empty % kClockEvery != 1) {
    if (spin.empty % kYieldEvery == 0) sched_yield();
    return false;
  }
  auto now = Clock::now();
  if (spin.idle_since == TimePoint{}) spin.idle_since = now;
  return now - spin.idle_since >= kSpinWindow;
}

bool UcxTransport::ArmForSleep() {
  // sleepers_ is raised before the queue is checked again, and Enqueue pushes before it
  // reads sleepers_ (both seq_cst), so a command is either seen here or its poster writes
  // the wake fd.
  sleepers_.fetch_add(1);
  return queued_.load() == 0 && !stop_progress_.load() && ucp_worker_arm(worker_) == UCS_OK;
}

void UcxTransport::EndSleep() {
  sleepers_.fetch_sub(1);
  uint64_t v;
  (void)!::read(wake_fd_, &v, sizeof(v));  // non-blocking: drain a wake-up if any
}

bool UcxTransport::StandDown() {
  bool stood = false;
  while (!stop_progress_.load()) {
    int d = drivers_.load();
    if (d > 0) {
      drivers_.wait(d);
      stood = true;
      continue;
    }
    auto since = std::chrono::nanoseconds(NowNs() - last_drive_.load());
    if (since >= kDriverGrace) return stood;
    std::this_thread::sleep_for(kDriverGrace - since);
    stood = true;
  }
  return true;
}

void UcxTransport::ProgressLoop() {
  ::prctl(PR_SET_TIMERSLACK, 1000);  // the stand-down sleeps are tens of microseconds
  while (!stop_progress_.load(std::memory_order_relaxed)) {
    if (StandDown()) continue;  // application threads drive the worker themselves
    std::unique_lock<std::timed_mutex> lock(progress_mu_);
    Drove why;
    bool armed = false;
    {
      OwnerScope owner(this);
      why = RunOwned([&] { return drivers_.load(std::memory_order_relaxed) > 0; }, std::nullopt);
      if (why == Drove::kIdle) armed = ArmForSleep();
    }
    lock.unlock();
    if (why != Drove::kIdle) continue;  // a waiter takes the worker over, or shutdown
    // Sleep on the worker's event fd and the wake fd without holding the worker: a waiter
    // may take it over meanwhile.
    if (armed) {
      pollfd fds[2] = {{worker_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      ::poll(fds, 2, 100);
    }
    EndSleep();
  }
  std::lock_guard<std::timed_mutex> lock(progress_mu_);
  OwnerScope owner(this);
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
      Status why = PeerStatus(c.peer);  // a failed peer's endpoint is closed: say why
      op->Complete(why.ok() ? Status::NotFound("ucx: unknown peer " + std::to_string(c.peer)) : why,
                   0, 0);
      return BumpCompletions();
    }
    ep = it->second.ep;
  }
  // Registered before the call: with NO_IMM_CMPL, an operation that completes at once
  // (an eager send, a receive matching a message that already arrived) runs its
  // callback inside the call, and Finish must find it then.
  inflight_[op] =
      Inflight{std::move(c.op), nullptr, c.busy, c.silent, c.kind == Command::kSend ? c.peer : 0};
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
  // On the worker's owner, inside ucp_worker_progress (or a cancel/close it drives).
  auto it = inflight_.find(op);
  std::shared_ptr<OpState> keep;
  bool silent = false;
  if (it != inflight_.end()) {
    keep = std::move(it->second.op);
    if (it->second.busy) --busy_ops_;
    silent = it->second.silent;
    // A send cancelled because its peer failed (its endpoint force-closed) reports why.
    if (status.IsCancelled() && it->second.peer != 0) {
      Status peer = PeerStatus(it->second.peer);
      if (!peer.ok() && !peer.IsNotFound()) status = peer;
    }
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
  // Owner. Force: pending operations on it complete with an error now.
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
  // Abandoned sends (AbandonSendsTo) may never finish: they are not waited for.
  auto waiting = [&] {
    return std::any_of(inflight_.begin(), inflight_.end(),
                       [](const auto& e) { return !e.second.abandoned; });
  };
  while (waiting() && std::chrono::steady_clock::now() < until) {
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
    Submit(std::move(k));
  };
  // A waiting thread drives the worker itself (TransferHandle::wait).
  OpState* raw = state.get();
  state->drive = [this, raw](std::optional<TimePoint> until) {
    return Drive([raw] { return raw->done.load(std::memory_order_acquire); }, until);
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
  Submit(std::move(c));
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
  Submit(std::move(c));
  return h;
}

}  // namespace

void RegisterUcxTransport(TransportRegistry& registry) {
  (void)registry.Register("ucx", &UcxTransport::Create);
}

}  // namespace switchyard::kv_tiers::transport
