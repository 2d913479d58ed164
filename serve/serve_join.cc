// JoinRemoteWorkers (serve_join.h).
#include "serve/serve_join.h"

#include <filesystem>

#include "base/logging.h"
#include "base/mutex.h"
#include "cluster/membership.h"
#include "cpu_engine/cpu_engine.h"
#include "cpu_engine/model_shape.h"
#include "executors/engine_kind.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/mover.h"
#include "kv_tiers/remote/direct_put_mover.h"
#include "kv_tiers/remote/kv_store_tier.h"
#include "kv_tiers/tier.h"
#include "net_budget/discovery.h"
#include "net_budget/host_identity.h"
#include "workers/put_orders.h"
#include "workers/remote_engine.h"

namespace switchyard::serve {

namespace {

namespace kv_store = kv_store;

// The joined workers' KV stores as the driver's HBM tiers: connected when the driver
// starts, read by the cluster listing (the sender's credit ledger) while it runs, and
// reconnected when a worker rejoins; and the orderer of direct puts between them.
struct RemoteKv {
  Mutex mu;
  std::map<int, kv_tiers::remote::KvStoreTier*> tiers GUARDED_BY(mu);  // owned by the driver
  std::shared_ptr<workers::ControlPutOrderer> orderer =
      std::make_shared<workers::ControlPutOrderer>();
};

// The role a worker's hello names (checked at the hello: CheckHello).
scheduler::WorkerRole RoleOf(const v1::WorkerHello& h) {
  Result<scheduler::WorkerRole> role = scheduler::ParseWorkerRole(h.role());
  return role.ok() ? *role : scheduler::WorkerRole::kMixed;
}

// The joined workers' roles in the scheduler's worker numbering (after serve's own).
void SetJoinedRoles(const workers::JoinServer& join, driver::SchedulerConfig* config) {
  for (size_t i = 0; i < join.size(); ++i) {
    const workers::RemoteWorker* rw = join.worker(i);
    if (rw->vacant() || rw->index() < 0) continue;
    const auto w = static_cast<size_t>(rw->index());
    if (config->worker_roles.size() <= w)
      config->worker_roles.resize(w + 1, scheduler::WorkerRole::kMixed);
    config->worker_roles[w] = RoleOf(rw->hello());
  }
}

// Where each joined worker runs, as it reported it, and serve's own host, for the topology
// (scheduler/joined_topology.h).
scheduler::JoinedHosts ReportedHosts(const workers::JoinServer& join) {
  scheduler::JoinedHosts hosts;
  hosts.serve_host = net_budget::HostIdentity();
  net_budget::DiscoveryOptions discovery;
  discovery.host_id = hosts.serve_host;
  discovery.run_nvidia_smi = false;  // serve's host tiers cross no GPU link it could list
  if (Result<v1::Topology> found = net_budget::Discover(discovery); found.ok())
    hosts.serve_discovered = std::move(*found);
  for (size_t i = 0; i < join.size(); ++i) {
    const workers::RemoteWorker* rw = join.worker(i);
    if (rw->vacant() || rw->index() < 0) continue;
    const v1::WorkerHello h = rw->hello();
    scheduler::WorkerHostReport r;
    r.worker_id = h.worker_id();
    r.host = h.host();
    r.discovered = h.host_topology();
    r.interface = h.control_interface();
    r.serve_interface = net_budget::InterfaceOfAddress(rw->ServeAddress());
    hosts.workers[rw->index()] = std::move(r);
  }
  return hosts;
}

kv_store::KvStoreClientOptions KvClientOptions(const v1::WorkerHello& h) {
  kv_store::KvStoreClientOptions client;
  client.transport = h.kv_transport().empty() ? std::string("ucx") : h.kv_transport();
  for (const auto& [k, v] : h.kv_transport_params()) client.transport_config.params[k] = v;
  client.sender_name = "serve";
  client.ack_timeout = Seconds(5);  // a stopped worker fails the move, then is declared lost
  return client;
}

// Worker `w`'s tier as a store no worker backs yet (a spare slot, a lost worker): its
// worker's store once one joins (ReconnectKvStore).
std::unique_ptr<kv_tiers::Tier> DetachedStore(workers::RemoteWorker* rw, int w,
                                              const kv_tiers::TierOptions& o,
                                              const kv_tiers::remote::KvStoreTierOptions& ro,
                                              RemoteKv* kv) {
  std::unique_ptr<kv_tiers::remote::KvStoreTier> tier =
      kv_tiers::remote::KvStoreTier::Detached(o, ro);
  kv->orderer->AddStore(tier.get(), rw);
  MutexLock l(&kv->mu);
  kv->tiers[w] = tier.get();
  return tier;
}

Result<std::unique_ptr<kv_tiers::Tier>> ConnectKvStore(workers::RemoteWorker* rw, int w,
                                                       const kv_tiers::TierOptions& o,
                                                       RemoteKv* kv) {
  const v1::WorkerHello h = rw->hello();
  kv_tiers::remote::KvStoreTierOptions ro;
  ro.context = "hbm-w" + std::to_string(w);
  ro.peer_id = PeerId{static_cast<uint64_t>(w)};
  // A spare slot, or a worker lost while serve waited for the others (its store went with
  // it): the store of the worker that takes the slot, once one does (rejoin or replacement).
  if (rw->vacant() || (rw->lost() && !h.kv_address().empty()))
    return DetachedStore(rw, w, o, ro, kv);
  if (h.kv_address().empty()) return std::unique_ptr<kv_tiers::Tier>();
  kv_store::KvStoreClientOptions client = KvClientOptions(h);
  const kv_tiers::TierOptions& to = o;
  // Refused (InvalidArgument) when the store holds less than the pool needs here.
  auto tier = kv_tiers::remote::KvStoreTier::Connect(h.kv_address(), to, client, ro);
  if (!tier.ok() && rw->lost()) return DetachedStore(rw, w, o, ro, kv);  // lost meanwhile
  if (!tier.ok())
    return tier.status().Annotate("worker " + h.worker_id() + "'s KV store at " + h.kv_address() +
                                  (tier.status().IsInvalidArgument()
                                       ? " (its --kv-capacity must hold the pool's blocks)"
                                       : ""));
  kv->orderer->AddStore(tier->get(), rw);
  MutexLock l(&kv->mu);
  kv->tiers[w] = tier->get();
  return std::unique_ptr<kv_tiers::Tier>(std::move(*tier));
}

// A rejoined worker (RemoteWorker::Rejoin, a new incarnation under the same index): its
// KV store is a new process, so the HBM tier is pointed at it (the blocks of the lost one
// were dropped with its contexts). A store that cannot be reached or is too small loses
// the worker again, with that reason. Attach then tells the scheduler.
void ReconnectKvStore(workers::JoinServer* js, int local, RemoteKv* kv, int index) {
  workers::RemoteWorker* rw = js->worker(static_cast<size_t>(index - local));
  if (!rw) return;
  const v1::WorkerHello h = rw->hello();
  MutexLock l(&kv->mu);
  auto t = kv->tiers.find(index);
  if (t == kv->tiers.end()) return;  // serve holds this worker's pool blocks itself
  Status st = h.kv_address().empty() ? Status::FailedPrecondition(
                                           "it rejoined without a KV store, and its pool's "
                                           "blocks are kept in one")
                                     : t->second->Reconnect(h.kv_address(), KvClientOptions(h));
  if (!st.ok())
    rw->MarkLost(Status::Unavailable("rejoined, but its KV store at '" + h.kv_address() +
                                         "' cannot hold the pool: " + st.ToString(),
                                     ErrorScope::kRemote));
}

// The model config of a CPU engine checkpoint (a shape file, or a Hugging Face directory's
// config.json), as the welcome names it and each worker checks its own against.
Result<v1::ModelConfig> CpuModelConfig(const std::string& path) {
  Result<cpu_engine::ModelShape> shape = cpu_engine::LoadModelShape(path);
  if (!shape.ok()) return shape.status().Annotate("--model " + path);
  return cpu_engine::ToModelConfig(*shape);
}

// A joined worker whose etcd key goes is lost; one that registers again (a new epoch) is
// logged: it is admitted by its hello on the control connection (a rejoin), not by etcd.
Status WatchMembership(const ServeJoinOptions& o, workers::JoinServer* js) {
  SY_ASSIGN_OR_RETURN(std::shared_ptr<cluster::EtcdClient> etcd,
                      cluster::EtcdClient::Create(o.etcd_url));
  auto on_event = [js, url = o.etcd_url](const cluster::MembershipEvent& e) {
    workers::RemoteWorker* rw = js->Find(e.worker.worker_id);
    if (e.kind == cluster::MembershipEvent::Kind::kLost) {
      if (!rw || rw->lost()) return;
      rw->MarkLost(Status::Unavailable("its etcd key at " + url +
                                           " is gone (lease expired or revoked; epoch " +
                                           std::to_string(e.worker.epoch) + ")",
                                       ErrorScope::kRemote));
      return;
    }
    if (!rw || rw->lost())
      Log(LogLevel::kInfo,
          "etcd lists a worker that is not joined (admitted when its hello rejoins)",
          LogKeys()
              .With("worker", e.worker.worker_id)
              .With("epoch", std::to_string(e.worker.epoch)));
  };
  SY_ASSIGN_OR_RETURN(std::unique_ptr<cluster::MembershipWatcher> w,
                      cluster::MembershipWatcher::Start(etcd, o.cluster, on_event));
  // A joined worker not registered at all is not covered by etcd: say so.
  auto members = w->Members();
  for (size_t i = 0; i < js->size(); ++i) {
    const std::string id = js->worker(i)->hello().worker_id();
    if (!members.count(id))
      Log(LogLevel::kWarn, "joined worker not registered in etcd (only its connection is watched)",
          LogKeys().With("worker", id).With("cluster", o.cluster));
  }
  js->Hold(std::shared_ptr<cluster::MembershipWatcher>(std::move(w)));
  return Status::OK();
}

Status CheckServeJoinOptions(const ServeJoinOptions& o, const driver::SchedulerConfig& config) {
  if (o.local_workers < 0 || o.remote_workers < 0 || o.spare_workers < 0)
    return Status::InvalidArgument(
        "--local-workers, --remote-workers and --spare-workers must be >= 0");
  if (o.spare_workers > 0 && o.remote_workers + o.local_workers < 1)
    return Status::InvalidArgument("--spare-workers needs a worker to start with");
  if (o.local_workers + o.remote_workers < 1)
    return Status::InvalidArgument(
        "no workers: --local-workers 0 needs --remote-workers N (N >= 1)");
  if (o.remote_workers > 0 &&
      (!config.engines_run_llm || !executors::FindEngineKind(config.engine).ok()))
    return Status::InvalidArgument("--remote-workers needs serve's own engines (--engine " +
                                   executors::EngineKindNames(false) + ", --llm engine)");
  if (o.remote_workers > 0 && !config.extra_models.empty())
    return Status::InvalidArgument("--remote-workers serves one model (models[] has " +
                                   std::to_string(config.extra_models.size() + 1) + ")");
  return Status::OK();
}

// What serve asks of every joining worker: its engine, the model (for an engine that
// computes: the checkpoint's shape, which the workers load too) and its names.
Result<workers::JoinOptions> JoinOptionsFor(const ServeJoinOptions& o,
                                            const driver::SchedulerConfig& config) {
  workers::JoinOptions jo;
  jo.expect = o.remote_workers;
  jo.timeout = o.join_timeout;
  jo.first_index = o.local_workers;
  jo.heartbeat = o.heartbeat;
  jo.heartbeat_misses = o.heartbeat_misses;
  jo.engine = config.engine;
  if (executors::EngineComputes(config.engine)) {
    SY_ASSIGN_OR_RETURN(jo.model, CpuModelConfig(config.model_path));
    jo.kv_pool_bytes = config.kv_pool_bytes;
    jo.kv_block_tokens = config.kv_block_tokens;
  } else {
    jo.model = config.model_config ? *config.model_config : driver::EmbeddedDefaultModel();
  }
  jo.gpu = config.gpu ? *config.gpu : driver::EmbeddedDefaultGpu();
  jo.served_models.push_back(config.model_id.empty() ? jo.model.name() : config.model_id);
  for (const std::string& a : config.model_aliases) jo.served_models.push_back(a);
  return jo;
}

// The scheduler's engines: none for serve's own workers (0 .. local-1: the driver makes
// them), a RemoteEngine over its connection for each joined one.
driver::EngineFactory JoinedEngines(workers::JoinServer* js, int local,
                                    std::shared_ptr<RemoteKv> kv,
                                    workers::RemoteEngineOptions reo) {
  return [js, local, kv, reo](
             EventLoop* loop, int w,
             const executors::EngineLimits& limits) -> Result<driver::WorkerEngine> {
    driver::WorkerEngine we;
    if (w < local) return we;  // the driver's own engine
    workers::RemoteWorker* rw = js->worker(static_cast<size_t>(w - local));
    if (!rw) return Status::Internal("no joined worker for scheduler worker " + std::to_string(w));
    kv_tiers::remote::KvStoreTier* store = nullptr;
    {
      MutexLock l(&kv->mu);
      auto t = kv->tiers.find(w);
      if (t != kv->tiers.end()) store = t->second;
    }
    if ((executors::EngineComputes(rw->hello().engine()) || rw->vacant()) && reo.tokens && !store)
      return Status::FailedPrecondition("joined worker " + rw->hello().worker_id() +
                                        " runs engine " + rw->hello().engine() +
                                        " without a KV store (--kv-listen none): "
                                        "its pool's KV could never move");
    workers::RemoteEngineOptions ro = reo;
    ro.store = store;
    workers::RemoteEngine re = workers::MakeRemoteEngine(loop, w, limits, rw, ro);
    we.engine = std::move(re.engine);
    we.remote_kv = std::move(re.kv);
    return we;
  };
}

// Moves between two joined workers' stores are put directly by the source's worker when
// it takes put orders (DirectPutMover, preferred to the relay), else relayed; a rejoin
// reconnects the worker's store; serve's going drops the orders still out.
void WireKvStores(workers::JoinServer* js, int local, const std::shared_ptr<RemoteKv>& kv,
                  driver::SchedulerConfig* config) {
  for (size_t i = 0; i < js->size(); ++i)
    workers::ControlPutOrderer::Attach(kv->orderer, js->worker(i));
  config->add_movers = [orderer = kv->orderer](const kv_tiers::MoverEnv& env,
                                               kv_tiers::MoverSet* movers) {
    // A destination the source's worker cannot reach: that move and the pair's next ones
    // are relayed.
    movers->Add(std::make_shared<kv_tiers::remote::DirectPutMover>(
                    env, orderer, std::make_shared<kv_tiers::RelayMover>(env)),
                3);
  };
  js->SetRejoinHandler(
      [js, local, kv = kv.get()](int index) { ReconnectKvStore(js, local, kv, index); });
  // Serve's service is going (JoinServer::Detach, before the driver, its loop and the tiers
  // are destroyed): orders still out are dropped without their callbacks (the bye that
  // follows would end them into the freed loop and tiers), and the tiers are forgotten.
  js->AddDetachHook([kv] {
    kv->orderer->Close();
    MutexLock l(&kv->mu);
    kv->tiers.clear();
  });
  config->hbm_tier_factory =
      [js, local, kv](int w,
                      const kv_tiers::TierOptions& o) -> Result<std::unique_ptr<kv_tiers::Tier>> {
    if (w < local) return std::unique_ptr<kv_tiers::Tier>();
    workers::RemoteWorker* rw = js->worker(static_cast<size_t>(w - local));
    if (!rw) return Status::Internal("no joined worker for scheduler worker " + std::to_string(w));
    return ConnectKvStore(rw, w, o, kv.get());
  };
}

// One joined worker's entry in /v1/cluster: its store's credit ledger as serve sees it.
void FillKvStore(RemoteKv* kv, v1::JoinedWorker* w) {
  MutexLock l(&kv->mu);
  auto t = kv->tiers.find(w->worker_index());
  w->set_direct_orders(kv->orderer->orders_sent(w->worker_index()));
  if (t == kv->tiers.end()) return;
  w->set_serve_puts(t->second->puts_posted());
  w->set_serve_gets(t->second->gets_posted());
  if (std::shared_ptr<kv_store::KvStoreClient> client = t->second->client()) {
    kv_store::KvStoreClient& c = *client;
    w->set_sender_credit_bytes(c.hello().max_inflight_bytes);
    if (auto st = c.credits()->State(c.address()); st.ok())
      w->set_sender_credit_in_use_bytes(st->inflight_bytes);
    if (auto flow = c.connection_flow(); flow.ok()) w->set_kv_connection_flow(*flow);
  }
}

// /v1/cluster's joinedWorkers: serve's own workers, then the joined ones with their pool
// use (the scheduler's committed KV in each one's HBM) and draining state.
std::function<void(v1::ClusterState*)> FillJoinedWorkers(workers::JoinServer* js, int local,
                                                         std::shared_ptr<RemoteKv> kv,
                                                         std::string engine) {
  return [js, local, kv, engine](v1::ClusterState* out) {
    for (int w = 0; w < local; ++w) {
      v1::JoinedWorker* l = out->add_joined_workers();
      l->set_id("local-" + std::to_string(w));
      l->set_host("serve (in process)");
      l->set_engine(engine);
      l->set_state("alive");
      l->set_worker_index(w);
    }
    for (v1::JoinedWorker& w : js->Snapshot()) {
      FillKvStore(kv.get(), &w);
      *out->add_joined_workers() = std::move(w);
    }
    for (v1::JoinedWorker& w : *out->mutable_joined_workers()) {
      for (const v1::WorkerEngine& e : out->worker_engines())
        if (e.worker() == w.worker_index() && w.state() == "alive" && e.state() == "draining") {
          w.set_state("draining");
          w.set_drained(e.drained());
        }
      for (const v1::TopologyConflict& c : out->topology_conflicts())
        if (c.worker() == w.worker_index()) w.add_topology_conflicts(c.detail());
      for (const v1::TierState& t : out->tiers())
        if (t.tier() == "hbm" && t.worker() == w.worker_index()) {
          w.set_kv_pool_used_bytes(t.used_bytes());
          if (w.kv_pool_capacity_bytes() == 0) w.set_kv_pool_capacity_bytes(t.capacity_bytes());
        }
    }
  };
}

}  // namespace

Result<std::unique_ptr<workers::JoinServer>> JoinRemoteWorkers(const ServeJoinOptions& o,
                                                               driver::SchedulerConfig* config) {
  SY_RETURN_IF_ERROR(CheckServeJoinOptions(o, *config));
  SY_ASSIGN_OR_RETURN(std::unique_ptr<workers::JoinServer> join,
                      workers::JoinServer::Listen(o.listen));
  if (o.listening) o.listening(join->address());
  SY_ASSIGN_OR_RETURN(workers::JoinOptions jo, JoinOptionsFor(o, *config));
  SY_RETURN_IF_ERROR(join->AwaitWorkers(jo).Annotate("--remote-workers"));
  join->AddSpareSlots(o.spare_workers, o.local_workers + o.remote_workers);
  if (!o.etcd_url.empty()) SY_RETURN_IF_ERROR(WatchMembership(o, join.get()).Annotate("--etcd"));
  config->workers = o.local_workers + o.remote_workers + o.spare_workers;
  SetJoinedRoles(*join, config);
  config->joined_hosts = ReportedHosts(*join);
  workers::JoinServer* js = join.get();
  const int local = o.local_workers;
  auto kv = std::make_shared<RemoteKv>();
  join->Hold(kv);
  if (executors::EngineComputes(config->engine)) {  // the token ids joined engines compute from
    config->cpu_token_log = std::make_shared<cpu_engine::TokenLog>();
    join->Hold(config->cpu_token_log);
  }
  workers::RemoteEngineOptions reo;
  reo.tokens = config->cpu_token_log.get();
  reo.vocab = jo.model.vocab_size();
  config->engine_factory = JoinedEngines(js, local, kv, reo);
  WireKvStores(js, local, kv, config);
  config->fill_cluster = FillJoinedWorkers(js, local, kv, config->engine);
  return join;
}

void Attach(workers::JoinServer* join, driver::SchedulerDriver* driver) {
  join->SetLossHandler(
      [driver](int index, const Status& why) { driver->WorkerLost(index, why.message()); });
  // A rejoin: its KV store first (JoinRemoteWorkers' handler), then the scheduler, unless
  // that lost it again. WorkerJoined is posted under the worker's lock (IfAlive): a loss of
  // the new incarnation, whose WorkerLost is posted under the same lock, cannot come between
  // the check and the join and be overtaken by it (a dead worker marked alive).
  std::function<void(int)> reconnect = join->rejoin_handler();
  join->SetRejoinHandler([join, driver, reconnect](int index) {
    if (reconnect) reconnect(index);
    workers::RemoteWorker* rw = nullptr;
    for (size_t i = 0; i < join->size() && !rw; ++i)
      if (join->worker(i)->index() == index) rw = join->worker(i);
    if (!rw) return;
    rw->IfAlive([&](const v1::WorkerHello& h) {
      driver->WorkerJoined(
          index, "worker " + h.worker_id() + " rejoined (epoch " + std::to_string(h.epoch()) + ")",
          RoleOf(h));
    });
  });
}

}  // namespace switchyard::serve
