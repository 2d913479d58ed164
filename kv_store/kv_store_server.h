// KvStoreServer: the KV store's server — a process-local store of KV blocks in host memory
// (KvStoreBlocks) that serves clients (KvStoreClient) over a byte transport; what
// `switchyard worker --listen HOST:PORT` runs, and what a joined worker runs beside its engine.
//
// It listens, answers each sender's hello with its protocol version, communicator epoch
// (a fresh random value per incarnation, so a restarted worker is recognised and what was
// in flight to the old one is invalid), the model epoch and the credit it grants (bytes
// per sender, bytes in total, puts per sender; a hello of another protocol version is
// answered with a refusal naming both versions), then serves puts (charge the header
// against its ReceiverCredit — refused with reason `credit` and the data discarded when
// over a limit —, receive into staging, validate, commit into its KvStoreBlocks, return the
// credit, ack with the credit returned), gets (validated lookup, reply header, then the bytes with
// the source pinned until the send completes), model-epoch changes and calibration probes.
// Transfers from a sender whose connection failed are cancelled and their reservations
// released, also a put whose data had arrived but which was not committed yet.
//
// Ownership: the worker owns its transport and store. Thread-safety: Run() drives the
// transport; large puts are hashed, committed and acked on a verifier thread that Run()
// starts and joins (KvStoreServerOptions::verify_offload_bytes; the store is under a lock both
// take);
// Stop()/stats() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kv_store/kv_store_blocks.h"
#include "kv_store/receiver_credit.h"
#include "transport/transport.h"

namespace switchyard::kv_store {

struct KvStoreServerOptions {
  std::string listen = "127.0.0.1:0";
  uint64_t capacity_bytes = 1ull << 30;
  std::string transport = "ucx";
  transport::TransportConfig transport_config;
  // Receiver-granted credit (docs/design.md invariant 7), advertised in the hello ack and
  // enforced on every put header: bytes accepted and not yet committed or rejected, per
  // sender (`switchyard worker --credit-per-sender`) and over all senders together (the
  // incast limit, `--credit-total`), and puts in flight per sender. A put over a limit is
  // refused (reason `credit`), never buffered. The per-sender figure advertised is
  // min(max_inflight_bytes, total_inflight_bytes). Defaults: 512 MiB per sender, 2 GiB in
  // total (four senders at full credit), 64 puts per sender.
  uint64_t max_inflight_bytes = 512ull << 20;
  uint64_t total_inflight_bytes = 2ull << 30;
  uint32_t max_inflight_transfers = 64;
  // Puts of at least this many bytes are hashed, committed and acked on a verifier
  // thread, overlapping the next put's receive on the loop; smaller ones are finished on
  // the loop; 0 finishes every put on the loop. Unset: kVerifyOffloadNoSockets (256 KiB)
  // when the transport moves no data over stream sockets (shared memory, RDMA), else
  // kVerifyOffloadSockets (4 MiB). Measured on the 2-vCPU test machine (bench/RESULTS.md,
  // net_budget, stops 7-8): over shared memory the thread speeds 1 MiB puts up by
  // 10-20 %; over loopback TCP it slows 1 MiB puts by 20-30 % (the loop's socket copies
  // and the sender compete with a third busy thread) but speeds 64 MiB ones up by ~20 %
  // (an inline hash of 64 MiB stalls the socket for milliseconds).
  std::optional<uint64_t> verify_offload_bytes;
  // Waited on the thread that finishes each put, before its checksum and commit: emulates
  // a receiver slower than its senders (tests and benchmarks of credit under incast).
  std::chrono::microseconds finish_delay{0};
};

constexpr uint64_t kVerifyOffloadNoSockets = 256ull << 10;
constexpr uint64_t kVerifyOffloadSockets = 4ull << 20;

struct KvStoreServerStats {
  uint64_t puts_committed = 0;
  uint64_t puts_rejected = 0;
  uint64_t gets_served = 0;
  uint64_t gets_rejected = 0;
  uint64_t probes = 0;
  uint64_t cancelled = 0;       // transfers dropped because their sender failed
  uint64_t puts_offloaded = 0;  // puts finished on the verifier thread
  // Receiver credit (ReceiverCreditState): puts refused for credit, bytes accepted and not
  // yet committed or rejected now, and the highest such figures seen, in total and for any
  // one sender.
  uint64_t puts_refused_credit = 0;
  uint64_t credit_in_use_bytes = 0;
  uint64_t max_credit_in_use_bytes = 0;
  uint64_t max_sender_credit_in_use_bytes = 0;
  uint32_t max_sender_credit_in_use_transfers = 0;
};

class KvStoreServer {
 public:
  static Result<std::unique_ptr<KvStoreServer>> Start(const KvStoreServerOptions& options);
  ~KvStoreServer();

  // The bound "HOST:PORT" clients connect to.
  const std::string& address() const { return address_; }
  uint64_t communicator_epoch() const { return store_.communicator_epoch(); }
  // The verifier threshold in effect (KvStoreServerOptions::verify_offload_bytes resolved).
  uint64_t verify_offload_bytes() const { return *options_.verify_offload_bytes; }
  // The credit limits advertised in the hello ack and enforced on puts.
  const ReceiverCreditLimits& credit_limits() const;

  // In-process read of committed blocks, for a direct put of this store's blocks into
  // another worker's (direct_put.h): the blocks `g` names, checked exactly as a get is
  // (communicator and model epoch, owner, generation; stale or missing blocks are never
  // returned), under the store's lock. The copies share the blocks' bytes, which stay
  // alive and unchanged while a copy is held (a commit never writes into a committed
  // buffer; a superseded or freed block's buffer is recycled only once unreferenced).
  RejectReason ReadCommitted(const GetRequest& g, std::vector<StoredBlock>* out) const;

  // In-process put of blocks into this store (the worker's own engine writing its KV
  // there, so that serve may move them): `h` as a put header (its blocks' ids, bytes and
  // checksums; epochs, owner, generation) and `data` its bytes back to back. Validated
  // exactly as a received put is — length, checksum, identity, capacity — and committed
  // under the store's lock; no receiver credit is charged (nothing crosses a link).
  RejectReason CommitLocal(const BlockHeader& h, SharedBuffer data);
  // The same for bytes this process has just written into `data` (nothing — no copy, no
  // link — between them and the store): the store computes each block's checksum from
  // `data` in one pass and writes it into h->blocks[i].checksum; length, identity and
  // capacity are checked and the blocks committed as by CommitLocal. There is nothing to
  // verify the bytes against, so hashing them a second time would catch nothing.
  RejectReason CommitLocalHashing(BlockHeader* h, SharedBuffer data);

  // Serves until Stop() is called.
  void Run();
  void Stop() { stop_ = true; }
  KvStoreServerStats stats() const;

  struct Impl;  // the loop's state (internal/kv_store_server_impl.h)

 private:
  // CommitLocal's identity, capacity and commit after its byte check `r`.
  RejectReason CommitLocalChecked(const BlockHeader& h, SharedBuffer data, RejectReason r);
  KvStoreServer(const KvStoreServerOptions& options, uint64_t epoch);

  KvStoreServerOptions options_;
  std::unique_ptr<transport::Transport> transport_;
  std::string address_;
  KvStoreBlocks store_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<Impl> impl_;
};

// A random non-zero 64-bit value for incarnation epochs.
uint64_t RandomEpoch();

}  // namespace switchyard::kv_store
