// JoinRemoteWorkers: `switchyard serve --remote-workers N` — serve's scheduler covers its
// local workers plus N workers that join over the worker control protocol.
//
// Design (docs/design.md "Cluster"): the members are fixed at start — N joined workers and
// K spare slots a worker may take later — (a lost one may rejoin, a new id takes a spare
// slot or a lost member's place). Before
// the service opens, serve listens on the control address, waits until N workers joined
// (JoinServer::AwaitWorkers: a timeout fails serve with how many joined and why any was
// refused), then sets the scheduler's worker count to local + N and its engine_factory:
// workers 0..local-1 keep the driver's own engine (the factory returns none for them),
// workers local..local+N-1 get a RemoteEngine (workers/remote_engine.h) over their
// connection, in join order. Each worker's KV store becomes its HBM tier (hbm_tier_factory,
// a KvStoreTier); a move between two of them is a direct put the source's worker makes
// when ordered over its control connection (add_movers: a kv_tiers DirectPutMover over a
// ControlPutOrderer, workers/put_orders.h, preferred to serve's relay; a worker that takes
// no orders is relayed). Once the service runs, Attach wires each worker's loss to
// SchedulerDriver::WorkerLost (a loss before that is delivered then), and a lost worker's
// rejoin (join_server.h) to its KV store's reconnection, then SchedulerDriver::WorkerJoined.
// A worker lost before the service opens is a store no worker backs (as a spare slot's),
// reconnected when it rejoins or is replaced: the service still opens.
//
// Teardown, in this order: JoinServer::Detach (the rejoin loop ends, the handlers go, the
// put orderer drops its orders without their callbacks and the tiers are forgotten), then
// the service (driver, loop, tiers), then the JoinServer (its bye to the workers).
#pragma once

#include <memory>
#include <string>

#include "base/result.h"
#include "driver/scheduler_driver.h"
#include "workers/join_server.h"

namespace switchyard::serve {

struct ServeJoinOptions {
  std::string listen = "127.0.0.1:0";  // --control-listen HOST:PORT
  int local_workers = 1;               // --local-workers N
  int remote_workers = 0;              // --remote-workers N
  // --spare-workers K: slots for workers that join while serve runs (after the N it waits
  // for), at the indices after them: vacant — lost to the scheduler — until a worker with a
  // new id takes one (as it would a lost member's place; the lowest free index first).
  int spare_workers = 0;
  Duration join_timeout = Seconds(60);
  Duration heartbeat = Seconds(1);
  int heartbeat_misses = 3;
  // Called once the listener is bound (the address actually bound), before waiting.
  std::function<void(const std::string& address)> listening;
  // Membership in etcd (--etcd URL, --cluster NAME): once the workers joined, serve
  // watches /switchyard/<cluster>/workers/; a joined worker whose key goes (its lease
  // expired: killed, hung or partitioned longer than the TTL; or revoked) is lost, as if
  // its connection had closed. Empty: the control connection alone decides.
  std::string etcd_url;
  std::string cluster = "default";
};

// Listens, waits for the workers and sets `config` as above (config->model_config and gpu
// name the model sent in the welcome; unset: the embedded defaults).
Result<std::unique_ptr<workers::JoinServer>> JoinRemoteWorkers(const ServeJoinOptions& options,
                                                               driver::SchedulerConfig* config);
// Sends each joined worker's loss to driver->WorkerLost and its rejoin to WorkerJoined. The
// driver must outlive the attachment: the caller calls join->Detach() before destroying
// the service, and destroys the join server after it.
void Attach(workers::JoinServer* join, driver::SchedulerDriver* driver);

}  // namespace switchyard::serve
