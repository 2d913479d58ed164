// Transport: one interface for every way KV bytes leave a process (UCX, NCCL, ...).
//
// A transport moves bytes described as descriptor lists (address, length, memory kind,
// device) between this process and a connected peer, as tagged messages: the sender posts
// a send of a descriptor list with a 64-bit tag; the receiver posts a receive of a
// descriptor list for a tag under a mask. Each post returns a move-only TransferHandle
// with poll()/wait()/wait_for(); a handle reports completion only after the data is
// flushed out of the source buffers (send) or received completely (receive), never
// earlier. Destroying an unfinished handle cancels the operation and waits for the
// cancellation, so a buffer is never touched after its handle is gone (invariant 2).
// Per-operation TransferOptions carry the traffic class, deadline and flow key; what
// goes on the wire beyond the tag is the caller's (see kv_store/kv_store_protocol.h: a
// service class and a flow key, never raw user request ids, invariant 8).
//
// Backends register themselves by name in the TransportRegistry ("ucx", "nccl"); which
// ones exist depends on the build, never on #ifdef chains at the call site. Optional
// operations default to Status::NotSupported.
//
// Ownership: the caller owns the memory behind descriptors and keeps it alive until the
// handle completes. The transport owns its connections.
// Thread-safety: Transport methods are thread-safe. A TransferHandle is used by one
// thread at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "base/status.h"
#include "base/time.h"
#include "proto/switchyard/v1/kv.pb.h"

namespace switchyard::net_budget {
class Grant;
}  // namespace switchyard::net_budget

namespace switchyard::transport {

enum class MemoryKind { kHost, kCuda };
std::string_view MemoryKindName(MemoryKind kind);

// One contiguous piece of memory.
struct MemoryDescriptor {
  void* addr = nullptr;
  uint64_t length = 0;
  MemoryKind kind = MemoryKind::kHost;
  int device = 0;  // CUDA ordinal for kCuda
};
using DescriptorList = std::vector<MemoryDescriptor>;
uint64_t TotalLength(const DescriptorList& list);

// Per-operation options (the place net_budget plugs into every transfer).
struct TransferOptions {
  v1::TrafficClass traffic_class = v1::THROUGHPUT;
  // Absolute deadline on the steady clock: wait() cancels the op after it and returns
  // DeadlineExceeded.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  uint64_t flow_key = 0;  // opaque flow identity (hash), never a raw request id
  // A receive that may stay pending for long (a server's standing receive): a backend
  // may sleep while only such operations are pending instead of polling for them.
  bool long_wait = false;
  // A completion nobody waits to react to (e.g. a server's own reply sends, reaped on its
  // next wake-up): a backend may leave CompletionCount() alone for it, so a thread in
  // WaitForCompletion() is not woken for nothing. The handle completes as usual.
  bool silent_completion = false;
  // The net_budget grant this post runs under (docs/design.md invariant 6), borrowed: it must
  // stay held until the post completes. When set, a backend refuses the post unless the
  // grant is held, is in this post's traffic class and covers its bytes (CheckGrant).
  const net_budget::Grant* grant = nullptr;
};

// Checks `options.grant` against a post of `bytes`: OK without a grant; FailedPrecondition
// when the grant was released; InvalidArgument naming both sides when its class differs
// from options.traffic_class or its bytes do not cover the post.
Status CheckGrant(const TransferOptions& options, uint64_t bytes);

using EndpointId = uint64_t;
using Tag = uint64_t;

// Shared completion state between a backend and a handle. Backends fill it with
// Complete(); handles read it. The done flag is released after the fields are written.
struct OpState {
  Mutex mu;
  CondVar cv;
  std::atomic<bool> done{false};
  Status status;
  uint64_t bytes = 0;            // bytes received (receive) or sent (send)
  Tag sender_tag = 0;            // receive: the tag the message carried
  std::function<void()> cancel;  // set by the backend while the op is cancellable
  // From TransferOptions::deadline: wait() cancels the op once it passes.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::shared_ptr<void> backend_data;  // kept alive until the op completes
  void* backend_owner = nullptr;       // the backend that completes this op
  bool busy_poll = false;              // backend: poll actively while this op is pending
  // Set by backends that let a waiting thread drive progress itself (no hand-off from a
  // progress thread, one busy thread less). wait()/wait_for() call it with their time
  // limit; it drives until the op is done, the limit passes or the backend shuts down, and
  // returns true, or returns false when another thread drives (the waiter then blocks on
  // `cv` a little and calls it again).
  std::function<bool(std::optional<std::chrono::steady_clock::time_point> until)> drive;

  void Complete(Status s, uint64_t n, Tag tag);
};

class TransferHandle {
 public:
  TransferHandle() = default;
  explicit TransferHandle(std::shared_ptr<OpState> state) : state_(std::move(state)) {}
  // A handle that is already complete (e.g. a zero-length or immediate completion).
  static TransferHandle Done(Status status, uint64_t bytes = 0, Tag tag = 0);
  TransferHandle(TransferHandle&&) = default;
  TransferHandle& operator=(TransferHandle&& other);
  TransferHandle(const TransferHandle&) = delete;
  TransferHandle& operator=(const TransferHandle&) = delete;
  ~TransferHandle();  // cancels and waits if still running

  bool valid() const { return state_ != nullptr; }
  // True once complete (successfully or not).
  bool poll() const;
  // Blocks until complete (or the op's deadline passed: then cancels it, waits for the
  // cancellation and returns DeadlineExceeded); returns the operation's status.
  Status wait();
  // Blocks up to `timeout`; DeadlineExceeded if still running (the op keeps running).
  Status wait_for(Duration timeout);
  // Requests cancellation; the op completes with Cancelled unless it finished first.
  void cancel();

  uint64_t bytes() const { return state_ ? state_->bytes : 0; }
  Tag sender_tag() const { return state_ ? state_->sender_tag : 0; }

 private:
  void Reset();
  // Calls the backend's drive hook (if any) until done or `until`.
  void DriveProgress(std::optional<std::chrono::steady_clock::time_point> until);
  std::shared_ptr<OpState> state_;
};

// Transport configuration: backend-specific key/values (e.g. UCX config overrides such
// as {"TLS", "tcp"}).
struct TransportConfig {
  std::map<std::string, std::string> params;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::string name() const = 0;
  // Capabilities.
  virtual bool supportsRemote() const = 0;  // can reach another host
  virtual std::vector<MemoryKind> supportedMemoryKinds() const = 0;
  // Whether data may cross a stream socket (TCP), whose receive costs the receiving
  // thread a copy out of socket buffers (unlike shared memory or RDMA).
  virtual bool usesSocketStreams() const { return false; }

  // Accepts peers on "HOST:PORT" (port 0 picks one); returns the bound "HOST:PORT".
  virtual Result<std::string> Listen(const std::string& address) {
    return Status::NotSupported(name() + ": Listen");
  }
  // Connects to a listening peer.
  virtual Result<EndpointId> Connect(const std::string& address) = 0;
  // The id this process has on the peer's side (it appears in tags the peer receives).
  virtual Result<uint64_t> IdAtPeer(EndpointId peer) const {
    return Status::NotSupported(name() + ": IdAtPeer");
  }
  // How the connection to `peer` was set up, in the transport's words (diagnostics, tests).
  virtual Result<std::string> ConnectionFlow(EndpointId peer) const {
    return Status::NotSupported(name() + ": ConnectionFlow");
  }
  // OK while the connection works; Unavailable (scope remote) once it failed.
  virtual Status PeerStatus(EndpointId peer) const = 0;
  virtual Status Disconnect(EndpointId peer) = 0;

  // Optional: pre-register memory for faster transfers.
  virtual Status RegisterMemory(const DescriptorList& list) {
    return Status::NotSupported(name() + ": RegisterMemory");
  }

  virtual Result<TransferHandle> PostSend(EndpointId peer, const DescriptorList& src, Tag tag,
                                          const TransferOptions& options) = 0;
  // Receives one message whose tag matches `tag` under `mask` from any peer.
  virtual Result<TransferHandle> PostRecv(const DescriptorList& dst, Tag tag, Tag mask,
                                          const TransferOptions& options) = 0;

  // Optional: a counter bumped on every completion, and a wait for it to move past
  // `seen` (lets a server loop sleep instead of spinning).
  virtual uint64_t CompletionCount() const { return 0; }
  virtual void WaitForCompletion(uint64_t seen, Duration timeout) {}
};

using TransportFactory = std::function<Result<std::unique_ptr<Transport>>(const TransportConfig&)>;

// Backends by name. Built-in backends are registered on first use of Global().
class TransportRegistry {
 public:
  static TransportRegistry& Global();
  Status Register(const std::string& name, TransportFactory factory);
  Result<std::unique_ptr<Transport>> Create(const std::string& name,
                                            const TransportConfig& config = {}) const;
  std::vector<std::string> Names() const;
  bool Has(const std::string& name) const;

 private:
  mutable Mutex mu_;
  std::map<std::string, TransportFactory> factories_ GUARDED_BY(mu_);
};

}  // namespace switchyard::transport
