// KvStoreClient: the sender/requester side of the KV-store protocol (kv_store_protocol.h) —
// moves KV blocks to and from a KV store (a KvStoreServer, e.g. a `switchyard worker`'s) with
// the commit rule end to end.
//
// Connect() opens a transport connection and says hello (with the protocol version); the
// worker answers with its version, communicator epoch (its incarnation), model epoch and
// the credit it grants this sender (bytes and puts in flight) and all senders together;
// a version mismatch or a refusal fails Connect with FailedPrecondition naming both
// versions. The per-sender grant becomes the limits of a net_budget::CreditManager ledger
// for that destination (no local guess). A put holds credit for its bytes before anything
// is posted (invariant 7) — none left: PostPut fails fast with ResourceExhausted and
// posts nothing —, sends header and bytes, and completes only when the worker's ack
// arrives: committed, or rejected with a reason; the credit is returned then. The worker
// enforces its own ledger too (receiver_credit.h): a put that would take it past its
// total (incast) limit, which other senders share, is rejected with reason kCredit and a
// message naming the limit, and may be retried once credit returns. The caller's source buffers
// must stay untouched until PendingPut::Wait() returns, and may be freed only if it reports
// committed (invariant 2); after a failure (peer died, deadline) the sender still owns its blocks.
// A get receives into caller buffers and reports success only after the reply's owner, epochs,
// generation, length and checksum have been validated; committing them into a local
// table is the caller's step. Each transfer's events are recorded separately
// (invariant 3): posted, transport complete (sender), receiver transport complete,
// validated, committed/rejected; the consumer's completion is MarkConsumed().
// A worker restart is detected as a failed connection; Reconnect() re-handshakes and
// picks up the new communicator epoch; transfers of the old epoch are never trusted.
//
// Ownership: the client owns its transport and connection; it borrows the CreditManager
// when one is given (it must outlive the client).
// Thread-safety: Put/Get/Probe may be called from several threads; Reconnect() and
// SetModelEpoch() must not race with transfers.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/virtual_event_loop.h"
#include "kv_store/kv_store_protocol.h"
#include "net_budget/budget.h"
#include "net_budget/credit.h"
#include "transport/transport.h"

namespace switchyard::kv_store {

struct KvStoreClientOptions {
  std::string transport = "ucx";
  transport::TransportConfig transport_config;
  Duration ack_timeout = std::chrono::seconds(10);  // default when options carry no deadline
  net_budget::CreditManager* credits = nullptr;     // null: the client keeps its own ledger
  std::string sender_name = "kv-store-client";
  // The protocol version the hello announces; another than kProtocolVersion only to test
  // that a worker refuses it.
  uint32_t protocol_version = kProtocolVersion;
  // Link budgets (docs/design.md invariant 6), borrowed (must outlive the client). When set,
  // the data of every put and get runs under a grant on `budget_path` in the transfer's
  // traffic class: the caller's TransferOptions::grant if it passes one (checked against
  // class and bytes), else one the client takes with TryAcquire before anything is posted.
  // A class that is behind on some link of the path gets ResourceExhausted (retryable;
  // nothing posted): that is the token-bucket pacing. The grant is released when the data
  // has left (put) or arrived (get). Control messages (headers, acks) are not granted:
  // they use the control class's reserved share.
  net_budget::LinkBudgets* budgets = nullptr;
  net_budget::Path budget_path;
};

struct BlockSource {
  uint64_t block_id = 0;
  const void* data = nullptr;
  uint64_t bytes = 0;
  // The block's checksum (XXH3-64 of its bytes, kv_tiers::BlockChecksum) when the caller
  // stored it at write time: sent as is, so a put does not read the bytes to hash them.
  // The worker verifies it (a stale value is rejected as bad_checksum). Unset: hashed at
  // post.
  std::optional<uint64_t> checksum;
};

struct PutRequest {
  std::string workflow_id;
  std::string context_id;
  uint64_t model_epoch = 0;
  uint64_t generation = 0;
  std::vector<BlockSource> blocks;
};

struct GetSpec {
  std::string workflow_id;
  std::string context_id;
  uint64_t model_epoch = 0;
  uint64_t generation = 0;
  std::vector<uint64_t> block_ids;
  transport::DescriptorList dst;  // where the bytes land, blocks in order
};

// One transfer's events as the sender sees them (invariant 3).
struct TransferEvents {
  uint64_t transfer_id = 0;
  bool posted = false;
  bool transport_complete = false;           // sender: bytes flushed / requester: received
  bool receiver_transport_complete = false;  // put: reported by the worker's ack
  bool validated = false;
  bool committed = false;
  bool rejected = false;
  bool consumed = false;
  RejectReason reason = RejectReason::kNone;
  std::string message;
  uint64_t credit_bytes_returned = 0;  // put: what the worker's ack says it returned
  std::chrono::steady_clock::time_point posted_at, transport_complete_at, acked_at;
};

class KvStoreClient;

// A put in flight. Move-only; destroying it unwaited waits for it (never leaves the
// transport reading freed buffers).
class PendingPut {
 public:
  PendingPut(PendingPut&& other) noexcept;
  PendingPut& operator=(PendingPut&& other) = delete;
  ~PendingPut();
  // Waits for the ack. OK with events.committed or events.rejected set; a transport
  // failure, a dead peer or the deadline gives an error (the sender keeps its blocks).
  Result<TransferEvents> Wait();

 private:
  friend class KvStoreClient;
  PendingPut() = default;
  KvStoreClient* client_ = nullptr;
  TransferEvents events_;
  net_budget::CreditLease lease_;
  net_budget::Grant grant_;  // held while the data is in flight (budgets configured)
  std::chrono::steady_clock::time_point deadline_;
  std::vector<uint8_t> header_;
  std::unique_ptr<std::vector<uint8_t>> ack_buf_;
  transport::TransferHandle ack_;
  transport::TransferHandle header_send_;
  transport::TransferHandle data_send_;
  bool waited_ = false;
};

class KvStoreClient {
 public:
  static Result<std::unique_ptr<KvStoreClient>> Connect(const std::string& address,
                                                        const KvStoreClientOptions& options = {});
  ~KvStoreClient();

  const std::string& address() const { return address_; }
  uint64_t communicator_epoch() const { return hello_.communicator_epoch; }
  uint64_t model_epoch() const { return hello_.model_epoch; }
  const HelloAck& hello() const { return hello_; }
  transport::Transport* transport() { return transport_.get(); }
  // How the transport connected to the worker (ucx: "client-server" or "address"); not
  // while Reconnect runs.
  Result<std::string> connection_flow() const { return transport_->ConnectionFlow(peer_); }
  const KvStoreClientOptions& options() const { return options_; }
  net_budget::CreditManager* credits() { return credits_; }

  // Drops the connection and handshakes again (after a worker restart).
  Status Reconnect();
  // Tells the worker a new model epoch (it drops blocks of other epochs).
  Status SetModelEpoch(uint64_t epoch, const transport::TransferOptions& options = {});

  // Posts a put; ResourceExhausted (retryable, nothing posted) when no credit the worker
  // granted this sender is left (bytes or puts in flight). A put whose length exceeds the
  // per-sender grant could never be served: InvalidArgument.
  Result<PendingPut> PostPut(const PutRequest& request,
                             const transport::TransferOptions& options = {});
  Result<TransferEvents> Put(const PutRequest& request,
                             const transport::TransferOptions& options = {});
  // Gets committed blocks into spec.dst. OK with events.validated (bytes usable) or
  // events.rejected (reason); an error for transport failures.
  Result<TransferEvents> Get(const GetSpec& spec, const transport::TransferOptions& options = {});
  // Drops committed blocks at the worker (owner and communicator epoch must match; ids
  // it does not hold are skipped). FailedPrecondition naming the reason if refused.
  Status Free(const std::string& workflow_id, const std::string& context_id,
              const std::vector<uint64_t>& block_ids,
              const transport::TransferOptions& options = {});
  // Calibration: sends `bytes` that the worker receives and acks without committing;
  // returns the time from post to ack.
  Result<Duration> Probe(const void* data, uint64_t bytes,
                         const transport::TransferOptions& options = {});

  // Test/consumer hook for the fourth event: the consuming node finished with the data.
  static void MarkConsumed(TransferEvents* events) { events->consumed = true; }

 private:
  friend class PendingPut;
  KvStoreClient() = default;
  Status Handshake();
  // The options for a data post of `bytes`: the caller's grant (checked), a grant taken
  // now into *own (budgets configured), or `options` unchanged (no budgets).
  Result<transport::TransferOptions> GrantFor(const transport::TransferOptions& options,
                                              uint64_t bytes, net_budget::Grant* own);
  uint64_t NextTransferId() { return next_transfer_.fetch_add(1); }
  std::chrono::steady_clock::time_point DeadlineOf(const transport::TransferOptions& o) const;
  // Waits for `h` in slices, failing early when the peer connection fails.
  Status WaitAlive(transport::TransferHandle& h, std::chrono::steady_clock::time_point deadline);
  Result<transport::TransferHandle> SendControl(MsgType type, uint64_t xfer,
                                                std::vector<uint8_t>* payload,
                                                const transport::TransferOptions& options);

  KvStoreClientOptions options_;
  std::string address_;
  std::unique_ptr<transport::Transport> transport_;
  transport::EndpointId peer_ = 0;
  uint64_t id_at_peer_ = 0;
  HelloAck hello_;
  std::unique_ptr<VirtualEventLoop> own_loop_;
  std::unique_ptr<net_budget::CreditManager> own_credits_;
  net_budget::CreditManager* credits_ = nullptr;
  std::atomic<uint64_t> next_transfer_{1};
};

}  // namespace switchyard::kv_store
