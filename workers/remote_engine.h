// RemoteEngine: an executors::Engine whose steps run in a joined worker process.
//
// Design: the engine is a BatchingEngine (executors/batching_engine.h) on the scheduler's
// loop — the batch of every step and the KV block accounting stay on serve, so Admit's
// FailedPrecondition, Preempt's returned progress and blocks_used() are answered at once,
// exactly as the core expects — with a RemoteStepRunner: every StepRunner call (OnAdmit,
// OnResize, OnEmitted, OnLeave, Run) is forwarded in order over the worker's control
// connection (join_server.h) and the worker's own runner carries it out (its simulated
// engine prices the step with the served model's roofline, workers/worker_agent.h). The
// step ends when the worker's StepDone arrives; the engine's step report then follows as
// for any engine.
//
// Loss: once the worker is lost, a step in flight ends at once with every item failed
// (Unavailable, remote scope, naming the worker and why), and every later step too, so no
// sequence waits forever; the scheduler hears of the loss first (RemoteWorker's loss
// handler: Runtime::WorkerLost), which stops posting to the worker and preempts what ran there.
// A rejoin (a new incarnation under the same index) makes steps go to it again.
//
// Thread-safety: loop-thread only (as every Engine); the runner takes its worker's
// messages on the connection's thread and posts them to the loop.
#pragma once

#include <memory>

#include "base/event_loop.h"
#include "cpu_engine/cpu_engine.h"
#include "executors/batching_engine.h"
#include "executors/engine_kv.h"
#include "kv_tiers/remote/kv_store_tier.h"
#include "workers/join_server.h"

namespace switchyard::workers {

struct RemoteEngine {
  std::unique_ptr<executors::BatchingEngine> engine;
  // A worker whose engine computes (engine "cpu") with a KV store: its pool as serve's KV
  // mover sees it (executors::RemoteEngineKv) — export and import orders (KvExport /
  // KvImport) over the control connection, `store` (the worker's KV store as serve's HBM
  // tier of it) in between. Null otherwise. A lost worker fails the orders in flight.
  std::shared_ptr<executors::RemoteEngineKv> kv;
};

struct RemoteEngineOptions {
  // The worker's KV store as serve's tier of it (borrowed; null: none).
  kv_tiers::remote::KvStoreTier* store = nullptr;
  // A computing worker: serve's record of every context's token ids (borrowed, shared with
  // the model's other engines) and the model's vocabulary. Each admission records its ids
  // here and carries them (SeqAdmit.context_tokens); each emitted token is recorded.
  cpu_engine::TokenLog* tokens = nullptr;
  int64_t vocab = 0;
};

// Worker `worker`'s engine over `remote` (borrowed: it outlives the engine), and its KV
// port when the worker computes and has a store.
RemoteEngine MakeRemoteEngine(EventLoop* loop, int worker, const executors::EngineLimits& limits,
                              RemoteWorker* remote, const RemoteEngineOptions& options = {});

}  // namespace switchyard::workers
