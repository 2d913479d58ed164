#include "transport/ucx_transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "transport/internal/ucx_transport_impl.h"

// Setup (UCX configuration, context, worker, threads), shutdown, and posting sends and
// receives. Progress is in ucx_progress.cc, peers and endpoints in ucx_peers.cc.
namespace switchyard::transport {
namespace ucx_internal {
namespace {

// UCX settings that differ from UCX's defaults unless the caller or the environment sets
// them. TCP segments of 4 MiB: a 1 MiB message then crosses UCX's TCP transport as one
// segment instead of sixteen 64 KiB ones (fewer fragments to send, receive and copy
// piecewise into the posted buffer). Peer puts of 1 MiB over TCP ran ~1.4x faster
// (bench/RESULTS.md, net_budget, 2026-11-30); 64 MiB ones did not change. The cost is memory:
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

// The items of a UCX_TLS value ("tcp", "sm,self", "^tcp", "all"; unset is "all"), and
// whether it is a negation ("^...": all but these).
std::vector<std::string> TlsItems(const std::string& tls, bool* negate) {
  *negate = !tls.empty() && tls[0] == '^';
  std::vector<std::string> items;
  size_t at = *negate ? 1 : 0;
  while (at <= tls.size()) {
    size_t end = std::min(tls.find(',', at), tls.size());
    items.push_back(tls.substr(at, end - at));
    at = end + 1;
  }
  if (tls.empty()) items = {"all"};
  return items;
}

// Whether a UCX_TLS value lets UCX use its TCP transport.
bool UsesTcp(const std::string& tls) {
  bool negate = false;
  std::vector<std::string> items = TlsItems(tls, &negate);
  bool named = std::count(items.begin(), items.end(), "tcp") > 0;
  bool all = std::count(items.begin(), items.end(), "all") > 0;
  return negate ? !named : named || all;
}

// Whether a UCX_TLS value leaves UCX TCP alone for data between processes ("tcp",
// "tcp,self").
bool TcpOnly(const std::string& tls) {
  bool negate = false;
  std::vector<std::string> items = TlsItems(tls, &negate);
  return !negate && std::count(items.begin(), items.end(), "tcp") > 0 &&
         std::all_of(items.begin(), items.end(),
                     [](const std::string& i) { return i == "tcp" || i == "self"; });
}

}  // namespace

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
      return Status::Unavailable(msg, ErrorScope::kRemote);
    default:
      return Status::Internal(msg);
  }
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
  Status configured = Configure(config, cfg);
  if (!configured.ok()) {
    ucp_config_release(cfg);
    return configured;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  st = ucp_init(&params, cfg, &context_);
  ucp_config_release(cfg);
  if (st != UCS_OK) return FromUcs(st, "ucp_init");
  return StartWorker();
}

std::map<std::string, std::string> UcxTransport::Settings(const TransportConfig& config) {
  // Our defaults, unless the caller's params or the UCX_* environment set any of them (the
  // two sizes depend on each other: a send segment may not exceed a receive one).
  std::map<std::string, std::string> settings;
  auto tls = config.params.find("TLS");
  const char* tls_env = std::getenv("UCX_TLS");
  const std::string tls_value = tls != config.params.end() ? tls->second : tls_env ? tls_env : "";
  const bool tcp = UsesTcp(tls_value);
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
  // UCX's client-server flow by default when TCP alone carries the data (see
  // ucx_transport.h). Its endpoints then use only the device their connection was
  // established on: with all of them (UCX's default), a process on several networks (serve
  // with one veth per worker namespace) can offer its peer a lane address the peer cannot
  // reach, and the connection is reset. It applies to client-server endpoints only.
  client_server_ = TcpOnly(tls_value);
  if (config.params.count("CM_USE_ALL_DEVICES") == 0 &&
      std::getenv("UCX_CM_USE_ALL_DEVICES") == nullptr) {
    settings["CM_USE_ALL_DEVICES"] = "n";
  }
  for (const auto& [key, value] : config.params) settings[key] = value;
  return settings;
}

Status UcxTransport::Configure(const TransportConfig& config, ucp_config_t* cfg) {
  for (const auto& [key, value] : Settings(config)) {
    if (key == "err_mode") {
      err_mode_peer_ = value != "none";
      continue;
    }
    if (key == "connect") {
      if (value != "client-server" && value != "address")
        return Status::InvalidArgument("ucx transport param connect=" + value +
                                       ": expected client-server or address");
      client_server_ = value == "client-server";
      continue;
    }
    if (key == "listener_port") {
      uint64_t port = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), port);
      if (ec != std::errc() || end != value.data() + value.size() || port > 65535)
        return Status::InvalidArgument("ucx transport param listener_port=" + value +
                                       ": expected a port number (0: any)");
      ucp_listener_port_wanted_ = static_cast<uint16_t>(port);
      continue;
    }
    ucs_status_t st = ucp_config_modify(cfg, key.c_str(), value.c_str());
    if (st != UCS_OK)
      return Status::InvalidArgument("ucx config " + key + "=" + value + ": " +
                                     ucs_status_string(st));
  }
  return Status::OK();
}

Status UcxTransport::StartWorker() {
  // Once the progress thread runs, every ucp call on the worker is made by its owner, the
  // holder of progress_mu_ (serialised: this thread before it starts, the destructor
  // after it ends).
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_CLIENT_ID;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  std::random_device rd;
  while (client_id_ == 0) client_id_ = (uint64_t{rd()} << 32) | rd();
  wp.client_id = client_id_;
  ucs_status_t st = ucp_worker_create(context_, &wp, &worker_);
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
    MutexLock lock(&control_mu_);
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

void UcxTransport::Shutdown() {
  // Progress thread, after the loop: run what was queued, cancel what is in flight and let
  // the callbacks deliver, close the endpoints, then fail whatever is left.
  std::vector<Command> batch;
  {
    MutexLock lock(&queue_mu_);
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
  if (ucp_listener_ != nullptr) ucp_listener_destroy(ucp_listener_);
  ucp_listener_ = nullptr;
  for (auto& [id, p] : eps_) CloseEp(p.ep);
  eps_.clear();
  for (auto& [op, entry] : inflight_) {
    entry.op->Complete(Status::Cancelled("ucx transport destroyed"), 0, 0);
  }
  inflight_.clear();
  busy_ops_ = 0;
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

Result<TransferHandle> UcxTransport::PostSend(EndpointId peer, const DescriptorList& src, Tag tag,
                                              const TransferOptions& options) {
  SY_RETURN_IF_ERROR(CheckGrant(options, TotalLength(src)));
  {
    MutexLock lock(&peers_mu_);
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

}  // namespace ucx_internal

void RegisterUcxTransport(TransportRegistry& registry) {
  (void)registry.Register("ucx", &ucx_internal::UcxTransport::Create);
}

}  // namespace switchyard::transport
