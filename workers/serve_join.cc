// JoinRemoteWorkers (serve_join.h).
#include "workers/serve_join.h"

#include "workers/remote_engine.h"

namespace switchyard::workers {

Result<std::unique_ptr<JoinServer>> JoinRemoteWorkers(const ServeJoinOptions& o,
                                                      api::SchedulerConfig* config) {
  if (o.local_workers < 0 || o.remote_workers < 0)
    return Status::InvalidArgument("--local-workers and --remote-workers must be >= 0");
  if (o.local_workers + o.remote_workers < 1)
    return Status::InvalidArgument(
        "no workers: --local-workers 0 needs --remote-workers N (N >= 1)");
  if (o.remote_workers > 0 && (!config->simulated_llm || config->engine != "simulated"))
    return Status::InvalidArgument(
        "--remote-workers needs serve's simulated engine (--engine simulated, --llm simulated)");
  SY_ASSIGN_OR_RETURN(std::unique_ptr<JoinServer> join, JoinServer::Listen(o.listen));
  if (o.listening) o.listening(join->address());
  JoinOptions jo;
  jo.expect = o.remote_workers;
  jo.timeout = o.join_timeout;
  jo.first_index = o.local_workers;
  jo.heartbeat = o.heartbeat;
  jo.heartbeat_misses = o.heartbeat_misses;
  jo.model = config->model_config ? *config->model_config : api::EmbeddedDefaultModel();
  jo.gpu = config->gpu ? *config->gpu : api::EmbeddedDefaultGpu();
  jo.served_models.push_back(config->model_id.empty() ? jo.model.name() : config->model_id);
  for (const std::string& a : config->model_aliases) jo.served_models.push_back(a);
  SY_RETURN_IF_ERROR(join->AwaitWorkers(jo).Annotate("--remote-workers"));
  config->workers = o.local_workers + o.remote_workers;
  JoinServer* js = join.get();
  const int local = o.local_workers;
  config->engine_factory = [js, local](
                               EventLoop* loop, int w,
                               const executors::EngineLimits& limits) -> Result<api::WorkerEngine> {
    api::WorkerEngine we;
    if (w < local) return we;  // the driver's own engine
    RemoteWorker* rw = js->worker(static_cast<size_t>(w - local));
    if (!rw) return Status::Internal("no joined worker for scheduler worker " + std::to_string(w));
    we.engine = MakeRemoteEngine(loop, w, limits, rw);
    return we;
  };
  config->fill_cluster = [js, local](v1::ClusterState* out) {
    for (int w = 0; w < local; ++w) {
      v1::JoinedWorker* l = out->add_joined_workers();
      l->set_id("local-" + std::to_string(w));
      l->set_host("serve (in process)");
      l->set_engine("simulated");
      l->set_state("alive");
      l->set_worker_index(w);
    }
    for (v1::JoinedWorker& w : js->Snapshot()) *out->add_joined_workers() = std::move(w);
    // Pool use: the scheduler's committed KV in each worker's HBM (the listing's tiers).
    for (v1::JoinedWorker& w : *out->mutable_joined_workers())
      for (const v1::TierState& t : out->tiers())
        if (t.tier() == "hbm" && t.worker() == w.worker_index()) {
          w.set_kv_pool_used_bytes(t.used_bytes());
          if (w.kv_pool_capacity_bytes() == 0) w.set_kv_pool_capacity_bytes(t.capacity_bytes());
        }
  };
  return join;
}

void Attach(JoinServer* join, api::SchedulerDriver* driver) {
  join->SetLossHandler([driver](int index, const Status&) { driver->PeerLost(index); });
}

}  // namespace switchyard::workers
