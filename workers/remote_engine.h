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
// (Unavailable, peer scope, naming the worker and why), and every later step too, so no
// sequence waits forever; the scheduler hears of the loss first (RemoteWorker's loss
// handler: Runtime::PeerLost), which stops posting to the worker and preempts what ran there.
// A rejoin (a new incarnation under the same index) makes steps go to it again.
//
// Thread-safety: loop-thread only (as every Engine); the runner takes its worker's
// messages on the connection's thread and posts them to the loop.
#pragma once

#include <memory>

#include "base/event_loop.h"
#include "executors/batching_engine.h"
#include "workers/join_server.h"

namespace switchyard::workers {

// Worker `worker`'s engine over `remote` (borrowed: it outlives the engine).
std::unique_ptr<executors::BatchingEngine> MakeRemoteEngine(EventLoop* loop, int worker,
                                                            const executors::EngineLimits& limits,
                                                            RemoteWorker* remote);

}  // namespace switchyard::workers
