// `switchyard serve` flags for joined workers (serve/serve_join.h):
//   --local-workers N      workers serve runs itself (default: the config's, 1)
//   --remote-workers N     workers to wait for over the control connection (default 0)
//   --spare-workers K      slots for workers that join later (default 0; needs N >= 1)
//   --control-listen H:P   where workers join (default 127.0.0.1:8471; port 0: any)
//   --join-timeout-s S     how long to wait for all of them (default 60)
//   --heartbeat-ms MS      heartbeat interval both ways (default 1000; lost after 3)
//   --etcd URL             also watch the workers' etcd registrations (a key gone: lost)
//   --cluster NAME         the cluster's key prefix in etcd (default "default")
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "driver/scheduler_driver.h"
#include "serve/serve_join.h"
#include "workers/join_server.h"

namespace switchyard::serve {

struct ServeWorkerFlags {
  ServeJoinOptions join;
  bool local_set = false;
};

// Removes the flags above from `args` into `out`; -1 to go on, else an exit code (a bad
// value, printed).
int TakeServeWorkerFlags(std::vector<std::string>* args, ServeWorkerFlags* out);
// With --remote-workers N > 0: listens, prints "control listening on H:P, waiting for N
// worker(s)", waits and sets `config` (null server when no workers join).
Result<std::unique_ptr<workers::JoinServer>> SetUpServeWorkers(ServeWorkerFlags flags,
                                                               driver::SchedulerConfig* config);

// Wires joined workers' losses and rejoins to the driver while alive; on destruction
// detaches the join server (JoinServer::Detach: no rejoin, loss or put order callback
// reaches the driver, its loop or its tiers afterwards). Declare it after the service and
// the join server, so that it goes before both (serve/serve_join.h "Teardown").
class WorkersAttached {
 public:
  WorkersAttached(workers::JoinServer* join, driver::SchedulerDriver* driver);
  ~WorkersAttached();

 private:
  workers::JoinServer* join_;
};

}  // namespace switchyard::serve
