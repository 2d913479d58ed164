// WorkerAgent (worker_agent.h).
#include "workers/worker_agent.h"

#include <unistd.h>

#include <deque>

#include "base/logging.h"
#include "base/mutex.h"
#include "executors/engine_kind.h"
#include "executors/simulated_engine.h"
#include "net_budget/discovery.h"
#include "net_budget/host_identity.h"
#include "workers/control_msgs.h"
#include "workers/join_server.h"

namespace switchyard::workers {

Result<std::unique_ptr<WorkerAgent>> WorkerAgent::Join(const AgentOptions& o) {
  SY_ASSIGN_OR_RETURN(const executors::EngineKind* kind,
                      executors::FindEngineKind(o.engine, "--engine"));
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  std::unique_ptr<WorkerAgent> a(new WorkerAgent());
  a->kv_capacity_ = o.kv_capacity_bytes;
  a->id_ = o.worker_id.empty() ? std::string(host) + "-" + std::to_string(::getpid()) : o.worker_id;
  if (kind->computes) {
    if (o.model.empty())
      return Status::InvalidArgument(
          "--engine cpu needs --model: the shape file or Llama checkpoint directory serve "
          "serves (e.g. configs/models/tiny-llama-4l.json, random weights)");
    SY_ASSIGN_OR_RETURN(a->cpu_, CpuWorker::Load(o.model));
  }
  SY_ASSIGN_OR_RETURN(a->conn_, ControlConn::Connect(o.join, o.connect_timeout));
  if (o.kv_listen != "none") {
    SY_RETURN_IF_ERROR(a->StartKvStore(o).Annotate("KV store"));
  }
  if (!o.etcd_url.empty()) {
    SY_ASSIGN_OR_RETURN(std::shared_ptr<cluster::EtcdClient> etcd,
                        cluster::EtcdClient::Create(o.etcd_url));
    cluster::WorkerInfo info;
    info.worker_id = a->id_;
    info.host = host;
    info.control_address = o.join;
    info.engine = o.engine;
    info.model = o.model;
    info.started_unix_ms = UnixMillis();
    cluster::RegistrationOptions ro;
    ro.ttl = o.lease_ttl;
    SY_ASSIGN_OR_RETURN(a->registration_, cluster::Registration::Start(etcd, o.cluster, info, ro));
  }
  v1::WorkerControl h;
  v1::WorkerHello* hello = h.mutable_hello();
  hello->set_protocol_version(o.protocol_version ? o.protocol_version : kProtocolVersion);
  hello->set_worker_id(a->id_);
  hello->set_engine(o.engine);
  if (a->cpu_) {
    *hello->mutable_model_config() = a->cpu_->model_config();  // serve checks it is its own
  } else {
    hello->set_model(o.model);
  }
  hello->set_kv_pool_capacity_bytes(o.kv_pool_capacity_bytes);
  hello->set_role(o.role);
  hello->set_epoch(static_cast<uint64_t>(UnixMillis()));
  // The host as discovery sees it (serve builds its topology from these reports).
  const std::string identity = net_budget::HostIdentity();
  hello->set_host(identity);
  net_budget::DiscoveryOptions discovery;
  discovery.host_id = identity;
  if (Result<v1::Topology> found = net_budget::Discover(discovery); found.ok())
    *hello->mutable_host_topology() = std::move(*found);
  hello->set_control_interface(net_budget::InterfaceOfAddress(a->conn_->LocalHost()));
  if (a->kv_) {
    hello->set_kv_address(a->kv_->address());
    hello->set_kv_direct_puts(a->putter_ != nullptr);
    hello->set_kv_transport(o.kv_transport);
    for (const auto& [k, v] : o.kv_transport_params) (*hello->mutable_kv_transport_params())[k] = v;
  }
  SY_RETURN_IF_ERROR(a->conn_->Send(h));
  SY_ASSIGN_OR_RETURN(v1::WorkerControl answer, a->conn_->ReadOne(Seconds(30)));
  if (answer.has_refusal())
    return Status::FailedPrecondition("refused by serve at " + o.join + ": " +
                                      answer.refusal().reason());
  if (!answer.has_welcome())
    return Status::InvalidArgument("serve at " + o.join + " answered the hello without a welcome");
  a->welcome_ = answer.welcome();
  if (a->cpu_) {
    SY_ASSIGN_OR_RETURN(a->runner_, a->cpu_->MakeRunner(&a->loop_, a->welcome_, a->id_));
    return a;
  }
  SY_ASSIGN_OR_RETURN(auto cost,
                      executors::RooflineStepCost::Create(a->welcome_.model(), a->welcome_.gpu()));
  a->cost_ = std::make_unique<executors::RooflineStepCost>(std::move(cost));
  a->runner_ = std::make_unique<executors::CostStepRunner>(&a->loop_, a->cost_.get());
  return a;
}

Status WorkerAgent::StartKvStore(const AgentOptions& o) {
  kv_store::KvStoreServerOptions wo;
  wo.listen = o.kv_listen;
  if (wo.listen.empty()) {
    std::string local = conn_->LocalHost();
    if (local.empty()) return Status::Unavailable("no local address on the control connection");
    wo.listen = (local.find(':') != std::string::npos ? "[" + local + "]" : local) + ":0";
  }
  wo.capacity_bytes = o.kv_capacity_bytes;
  wo.transport = o.kv_transport;
  wo.transport_config.params = o.kv_transport_params;
  if (o.credit_per_sender_bytes) wo.max_inflight_bytes = o.credit_per_sender_bytes;
  if (o.credit_total_bytes) wo.total_inflight_bytes = o.credit_total_bytes;
  wo.finish_delay = o.kv_finish_delay;
  SY_ASSIGN_OR_RETURN(kv_, kv_store::KvStoreServer::Start(wo));
  kv_thread_ = std::thread([w = kv_.get()]() { w->Run(); });
  if (o.direct_puts) {
    kv_store::DirectPutterOptions po;
    po.sender_name = "worker " + id_;
    putter_ = std::make_unique<kv_store::DirectPutter>(kv_.get(), po);
  }
  return Status::OK();
}

std::string WorkerAgent::kv_address() const { return kv_ ? kv_->address() : std::string(); }

void WorkerAgent::FillHeartbeat(v1::WorkerHeartbeat* hb) const {
  if (!kv_) return;
  kv_store::KvStoreServerStats s = kv_->stats();
  v1::WorkerKvStats* k = hb->mutable_kv();
  k->set_capacity_bytes(kv_capacity_);
  k->set_credit_per_sender_bytes(kv_->credit_limits().per_sender_bytes);
  k->set_credit_total_bytes(kv_->credit_limits().total_bytes);
  k->set_credit_in_use_bytes(s.credit_in_use_bytes);
  k->set_max_credit_in_use_bytes(s.max_credit_in_use_bytes);
  k->set_puts_committed(s.puts_committed);
  k->set_puts_rejected(s.puts_rejected);
  k->set_puts_refused_credit(s.puts_refused_credit);
  k->set_gets_served(s.gets_served);
  if (!putter_) return;
  kv_store::DirectPutStats d = putter_->stats();
  k->set_direct_puts_committed(d.puts_committed);
  k->set_direct_puts_failed(d.orders_failed);
  k->set_direct_put_bytes(d.bytes_committed);
  k->set_direct_credit_retries(d.credit_retries);
}

WorkerAgent::~WorkerAgent() {
  if (runner_) runner_->Stop();
  if (conn_) conn_->Close();  // no more heartbeats (they read the putter's figures)
  putter_.reset();            // finishes its puts (reading kv_) before the store goes
  if (kv_) kv_->Stop();
  if (kv_thread_.joinable()) kv_thread_.join();
}

Status WorkerAgent::Run() {
  Duration hb = Millis(std::max<uint32_t>(1, welcome_.heartbeat_interval_ms()));
  int misses = static_cast<int>(std::max<uint32_t>(1, welcome_.heartbeat_misses()));
  conn_->SetHeartbeatFill([this](v1::WorkerHeartbeat* hb) { FillHeartbeat(hb); });
  conn_->Start(
      [this](const v1::WorkerControl& m) {
        if (m.has_bye()) bye_ = true;  // here: serve's close may end the loop before Handle
        loop_.Post([this, m]() { Handle(m); });
      },
      [this](const Status& why) {
        {
          MutexLock l(&mu_);
          if (end_.ok()) end_ = why;
        }
        loop_.Stop();
      },
      hb, misses);
  // A loss or Stop before Run started would be undone by Run: check again from inside.
  loop_.Post([this]() {
    if (conn_->lost() || stop_requested_) loop_.Stop();
  });
  loop_.Run();
  runner_->Stop();
  if (stop_requested_ && !bye_ && !conn_->lost()) {  // leaving on our own: say so
    v1::WorkerControl bye;
    bye.mutable_bye()->set_reason("worker " + id_ + " stopping");
    conn_->Finish(bye, Seconds(2));
  }
  conn_->Close();
  if (registration_) (void)registration_->Stop();  // leaving: the key goes at once
  if (bye_ || stop_requested_) return Status::OK();
  MutexLock l(&mu_);
  return end_;
}

void WorkerAgent::Stop() {
  stop_requested_ = true;
  loop_.Stop();
}

void WorkerAgent::Handle(const v1::WorkerControl& m) {
  switch (m.body_case()) {
    case v1::WorkerControl::kSeqAdmit: {
      const v1::SeqAdmit& a = m.seq_admit();
      if (cpu_) cpu_->RecordTokens(a);
      (void)runner_->OnAdmit(FromAdmit(a), a.primary(), a.fresh_from());
      break;
    }
    case v1::WorkerControl::kContextResize:
      runner_->OnResize(m.context_resize().context(), m.context_resize().tokens());
      if (cpu_ && m.context_resize().tokens() == 0) cpu_->Forget(m.context_resize().context());
      break;
    case v1::WorkerControl::kKvExport:
    case v1::WorkerControl::kKvImport:
      if (!cpu_) {  // a simulated pool holds no bytes: refused at once
        v1::WorkerControl d;
        if (m.has_kv_export())
          NoKv(m.kv_export().order_id(), d.mutable_kv_export_done());
        else
          NoKv(m.kv_import().order_id(), d.mutable_kv_import_done());
        (void)conn_->Send(d);
        break;
      }
      kv_orders_.push_back(m);
      RunKvOrders();
      break;
    case v1::WorkerControl::kTokenEmitted:
      runner_->OnEmitted(m.token_emitted().primary(), m.token_emitted().position(),
                         m.token_emitted().token());
      break;
    case v1::WorkerControl::kSeqLeave:
      runner_->OnLeave(m.seq_leave().seq());
      break;
    case v1::WorkerControl::kRunStep:
      RunStep(m.run_step());
      break;
    case v1::WorkerControl::kPutBlocks:
      PutBlocks(m.put_blocks());
      break;
    case v1::WorkerControl::kBye:
      Log(LogLevel::kInfo, "serve said bye", LogKeys().With("reason", m.bye().reason()));
      loop_.Stop();
      break;
    default:
      break;  // heartbeats (liveness only) and messages for serve
  }
}

void WorkerAgent::RunStep(const v1::RunStep& m) {
  struct Step {
    uint64_t id = 0;
    std::deque<std::string> strings;
    std::vector<executors::StepItem> items;
    Time start{0};
  };
  auto st = std::make_shared<Step>();
  st->id = m.step_id();
  st->items = ItemsOf(m, &st->strings);
  st->start = loop_.Now();
  runner_->Run(ShapeOf(m), &st->items, [this, st]() {
    v1::WorkerControl d;
    v1::StepDone* done = d.mutable_step_done();
    done->set_step_id(st->id);
    for (const executors::StepItem& it : st->items) ToItemResult(it, done->add_items());
    done->set_worker_time_ns((loop_.Now() - st->start).count());
    ++steps_;
    (void)conn_->Send(d);
    if (cpu_) RunKvOrders();  // those that waited for this step
  });
}

void WorkerAgent::RunKvOrders() {
  while (!kv_orders_.empty()) {
    const v1::WorkerControl& m = kv_orders_.front();
    const std::string& context =
        m.has_kv_export() ? m.kv_export().context() : m.kv_import().context();
    if (cpu_->busy(context)) return;  // after the step (in order: later ones wait)
    v1::WorkerControl d;
    if (m.has_kv_export())
      cpu_->Export(m.kv_export(), kv_.get(), d.mutable_kv_export_done());
    else
      cpu_->Import(m.kv_import(), kv_.get(), d.mutable_kv_import_done());
    (void)conn_->Send(d);
    kv_orders_.pop_front();
  }
}

template <typename Done>
void WorkerAgent::NoKv(uint64_t order, Done* out) const {
  out->set_order_id(order);
  out->set_status_code(static_cast<int32_t>(StatusCode::kFailedPrecondition));
  out->set_status_message("worker " + id_ + " runs engine simulated: its pool holds no KV");
}

void WorkerAgent::PutBlocks(const v1::PutBlocks& m) {
  auto answer = [conn = conn_.get()](const kv_store::DirectPutOutcome& o) {
    v1::WorkerControl d;
    ToPutBlocksDone(o, d.mutable_put_blocks_done());
    (void)conn->Send(d);  // a lost connection: serve fails the move on its own
  };
  auto order = FromPutBlocks(m);
  if (!order.ok() || !putter_) {
    kv_store::DirectPutOutcome o;
    o.order_id = m.order_id();
    o.status = !order.ok() ? order.status()
                           : Status::FailedPrecondition("worker " + id_ +
                                                        " takes no put orders (no KV store, or "
                                                        "--direct-puts off)");
    answer(o);
    return;
  }
  putter_->Submit(std::move(*order), answer);
}

}  // namespace switchyard::workers
