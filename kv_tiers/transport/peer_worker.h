// PeerWorker: a process-local host tier that serves peers over a Transport — the engine
// of `switchyard worker --listen HOST:PORT`.
//
// It listens, answers each sender's hello with its communicator epoch (a fresh random
// value per incarnation, so a restarted worker is recognised and what was in flight to
// the old one is invalid), the model epoch and the credit it grants, then serves puts
// (receive into staging, validate, commit into its PeerStore, ack with the returned
// credit), gets (validated lookup, reply header, then the bytes with the source pinned
// until the send completes), model-epoch changes and calibration probes. Transfers from a
// sender whose connection failed are cancelled and their reservations released.
//
// Ownership: the worker owns its transport and store. Thread-safety: Run() drives the
// transport; large puts are hashed, committed and acked on a verifier thread that Run()
// starts and joins (WorkerOptions::verify_offload_bytes; the store is under a lock both
// take);
// Stop()/stats() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "kv_tiers/transport/peer_store.h"
#include "kv_tiers/transport/transport.h"

namespace switchyard::kv_tiers::transport {

struct WorkerOptions {
  std::string listen = "127.0.0.1:0";
  uint64_t capacity_bytes = 1ull << 30;
  std::string transport = "ucx";
  TransportConfig transport_config;
  uint64_t max_inflight_bytes = 512ull << 20;  // credit granted to each sender
  uint32_t max_inflight_transfers = 64;
  // When > 0, puts of at least this many bytes are hashed, committed and acked on a
  // verifier thread, overlapping the next put's receive on the loop; otherwise every put
  // is finished on the loop. Off by default: on the 2-vCPU test machine it sped up 1 MiB
  // puts over shared memory by 10-20 % but slowed loopback TCP ones by ~30 % (a third
  // busy thread and a wake-up per put; bench/RESULTS.md, net_budget, stop 7). Worth
  // trying where the receiver has cores to spare (e.g. 256K).
  uint64_t verify_offload_bytes = 0;
};

struct WorkerStats {
  uint64_t puts_committed = 0;
  uint64_t puts_rejected = 0;
  uint64_t gets_served = 0;
  uint64_t gets_rejected = 0;
  uint64_t probes = 0;
  uint64_t cancelled = 0;       // transfers dropped because their sender failed
  uint64_t puts_offloaded = 0;  // puts finished on the verifier thread
};

class PeerWorker {
 public:
  static Result<std::unique_ptr<PeerWorker>> Start(const WorkerOptions& options);
  ~PeerWorker();

  // The bound "HOST:PORT" peers connect to.
  const std::string& address() const { return address_; }
  uint64_t communicator_epoch() const { return store_.communicator_epoch(); }

  // Serves until Stop() is called.
  void Run();
  void Stop() { stop_ = true; }
  WorkerStats stats() const;

  struct Impl;  // the loop's state (peer_worker.cc)

 private:
  PeerWorker(const WorkerOptions& options, uint64_t epoch);

  WorkerOptions options_;
  std::unique_ptr<Transport> transport_;
  std::string address_;
  PeerStore store_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<Impl> impl_;
};

// A random non-zero 64-bit value for incarnation epochs.
uint64_t RandomEpoch();

}  // namespace switchyard::kv_tiers::transport
