// DriverMetrics and the scheduler's /metrics families (scheduler_driver_metrics.h).
#include "driver/scheduler_driver_metrics.h"

#include <memory>

#include "base/mutex.h"
#include "driver/scheduler_driver.h"
#include "executors/engine.h"
#include "scheduler/types.h"

namespace switchyard::driver {
namespace {

// Step time of the engines: a simulated H100 step (~10 ms) to a CPU engine's (~1 s).
const std::vector<double> kStepSecondsBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                0.1,   0.25,   0.5,   1,    2.5,   5};
const std::vector<double> kBatchBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
const std::vector<double> kTokenBounds = {1, 4, 16, 64, 256, 1024, 2048, 4096, 8192, 16384};
// A grant held until its transfer ends: an emulated move (~ms) to a disk demotion (~s).
const std::vector<double> kTransferBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                             0.1,    0.25,  0.5,    1,     2.5,  5,     10};

// A move's wait for its link budget: none (granted at once) to a class in debt for seconds.
const std::vector<double> kGrantWaitBounds = {0,   0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1, 0.25,  0.5,    1,     2.5,  5,     10};

std::string ClassName(int cls) {
  return scheduler::TrafficClassName(
      static_cast<scheduler::TrafficClass>(static_cast<size_t>(cls) % net_budget::kNumClasses));
}

// One FillCluster() per scrape, shared by the families' callbacks.
struct ClusterSnapshot {
  Mutex mu;
  std::shared_ptr<const v1::ClusterState> c GUARDED_BY(mu) = std::make_shared<v1::ClusterState>();
  std::shared_ptr<const v1::ClusterState> Get() {
    MutexLock lock(&mu);
    return c;
  }
};

// Host and disk are node-wide tiers (no worker label); HBM is per worker.
std::string TierLabels(const v1::TierState& t) {
  return t.tier() == "hbm"
             ? Metrics::Labels({{"tier", t.tier()}, {"worker", std::to_string(t.worker())}})
             : Metrics::Label("tier", t.tier());
}

// A gauge or counter over every (link, class) of the snapshot.
Metrics::GaugeFn PerLinkClass(std::shared_ptr<ClusterSnapshot> snap,
                              double (*value)(const v1::LinkClassBudget&)) {
  return [snap, value] {
    Metrics::Samples out;
    auto c = snap->Get();
    for (const v1::LinkState& l : c->links())
      for (const v1::LinkClassBudget& b : l.classes())
        out.push_back(
            {Metrics::Labels({{"link", l.name()}, {"class", b.traffic_class()}}), value(b)});
    return out;
  };
}

Metrics::HistogramFn SeriesOf(const HistogramSeries* s) {
  return [s] { return s->Snapshot(); };
}

Status RegisterTiers(Metrics* m, const std::shared_ptr<ClusterSnapshot>& snap) {
  auto per_tier = [snap](uint64_t (v1::TierState::*field)() const) {
    return [snap, field] {
      Metrics::Samples out;
      auto c = snap->Get();
      for (const v1::TierState& t : c->tiers())
        out.push_back({TierLabels(t), double((t.*field)())});
      return out;
    };
  };
  SY_RETURN_IF_ERROR(m->Gauge("switchyard_tier_used_bytes",
                              "KV bytes held in a tier (scheduler bytes; HBM per worker)",
                              per_tier(&v1::TierState::used_bytes)));
  auto per_tenant =
      [snap](const google::protobuf::Map<std::string, uint64_t>& (v1::TierState::*field)() const) {
        return [snap, field] {
          Metrics::Samples out;
          auto c = snap->Get();
          for (const v1::TierState& t : c->tiers())
            for (const auto& [tenant, v] : (t.*field)())
              out.push_back({Metrics::Labels({{"tier", t.tier()},
                                              {"worker", std::to_string(t.worker())},
                                              {"tenant", tenant}}),
                             double(v)});
          return out;
        };
      };
  SY_RETURN_IF_ERROR(m->Gauge("switchyard_tier_tenant_used_bytes",
                              "KV bytes a tenant with a quota holds in a tier (scheduler bytes)",
                              per_tenant(&v1::TierState::tenant_used_bytes)));
  SY_RETURN_IF_ERROR(m->Gauge("switchyard_tier_tenant_quota_bytes",
                              "a tenant's quota on a tier (scheduler bytes, whole blocks)",
                              per_tenant(&v1::TierState::tenant_quota_bytes)));
  SY_RETURN_IF_ERROR(m->Gauge("switchyard_tier_capacity_bytes",
                              "capacity of a tier (scheduler bytes; HBM per worker)",
                              per_tier(&v1::TierState::capacity_bytes)));
  SY_RETURN_IF_ERROR(
      m->Gauge("switchyard_tier_contexts", "contexts whose KV lives in a tier", [snap] {
        Metrics::Samples out;
        auto c = snap->Get();
        for (const v1::TierState& t : c->tiers())
          out.push_back({TierLabels(t), double(t.contexts())});
        return out;
      }));
  return m->CounterCallback("switchyard_kv_moved_bytes_total",
                            "KV bytes of completed moves, by destination tier", [snap] {
                              Metrics::Samples out;
                              auto c = snap->Get();
                              for (const auto& [tier, n] : c->bytes_moved_by_tier())
                                out.push_back({Metrics::Label("tier", tier), double(n)});
                              return out;
                            });
}

Status RegisterLinks(Metrics* m, const std::shared_ptr<ClusterSnapshot>& snap,
                     const DriverMetrics* dm) {
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_link_moved_bytes_total",
      "KV bytes of completed transfers that crossed a topology link, by traffic class", [snap, dm] {
        Metrics::Samples out;
        auto c = snap->Get();
        for (const auto& [key, n] : dm->link_bytes()) {
          std::string link = key.first < uint32_t(c->links_size()) ? c->links(key.first).name()
                                                                   : std::to_string(key.first);
          out.push_back(
              {Metrics::Labels({{"link", link}, {"class", ClassName(key.second)}}), double(n)});
        }
        return out;
      }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_link_granted_bytes_total",
      "bytes granted on a link by its budget since start (both directions), by traffic class",
      PerLinkClass(snap, [](const v1::LinkClassBudget& b) { return double(b.granted_bytes()); })));
  SY_RETURN_IF_ERROR(m->Gauge(
      "switchyard_link_grants_in_flight", "grants held on a link by transfers not yet ended",
      PerLinkClass(snap, [](const v1::LinkClassBudget& b) { return double(b.active_grants()); })));
  SY_RETURN_IF_ERROR(m->Gauge(
      "switchyard_link_inflight_bytes", "bytes granted on a link and not yet released",
      PerLinkClass(snap, [](const v1::LinkClassBudget& b) { return double(b.active_bytes()); })));
  SY_RETURN_IF_ERROR(m->Gauge(
      "switchyard_link_rate_bytes_per_second", "a traffic class's current rate on a link",
      PerLinkClass(snap, [](const v1::LinkClassBudget& b) { return b.rate_bytes_per_s(); })));
  SY_RETURN_IF_ERROR(m->Gauge(
      "switchyard_link_queued_requests", "grant requests waiting for a class's budget on a link",
      PerLinkClass(snap, [](const v1::LinkClassBudget& b) { return double(b.queued()); })));
  SY_RETURN_IF_ERROR(m->Gauge(
      "switchyard_link_floor_share_ratio", "share of a link a traffic class keeps under load",
      PerLinkClass(snap, [](const v1::LinkClassBudget& b) { return b.floor_share(); })));
  SY_RETURN_IF_ERROR(
      m->Gauge("switchyard_link_bandwidth_bytes_per_second", "a topology link's bandwidth", [snap] {
        Metrics::Samples out;
        auto c = snap->Get();
        for (const v1::LinkState& l : c->links())
          out.push_back({Metrics::Labels({{"link", l.name()}, {"kind", l.kind()}}),
                         l.bandwidth_bytes_per_s()});
        return out;
      }));
  SY_RETURN_IF_ERROR(m->HistogramCallback(
      "switchyard_link_grant_wait_seconds",
      "time a KV move waited for its link budget before its grant (0: granted at the first "
      "ask), by traffic class",
      kGrantWaitBounds, SeriesOf(&dm->grant_wait_seconds())));
  return m->HistogramCallback(
      "switchyard_transfer_seconds",
      "KV transfers from grant to end (completed or failed), by traffic class and outcome",
      kTransferBounds, SeriesOf(&dm->transfer_seconds()));
}

Status RegisterDecisions(Metrics* m, const std::shared_ptr<ClusterSnapshot>& snap,
                         const DriverMetrics* dm) {
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_decisions_total", "scheduler decisions by kind and policy", [snap] {
        Metrics::Samples out;
        auto c = snap->Get();
        for (const auto& [kind, n] : c->decisions_by_kind())
          out.push_back({Metrics::Labels({{"kind", kind}, {"policy", c->policy()}}), double(n)});
        return out;
      }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_scheduler_events_total", "events the scheduler core handled", [snap] {
        return Metrics::Samples{{"", double(snap->Get()->scheduler_events())}};
      }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_kv_tier_hits_total",
      "contexts whose KV was found kept in a tier below HBM and brought back (prefetches)", [dm] {
        Metrics::Samples out;
        for (const auto& [tier, n] : dm->kv_reuse().hits_by_tier)
          out.push_back({Metrics::Label("tier", tier), double(n)});
        return out;
      }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_kv_misses_total",
      "LLM placements that first recompute KV that was discarded, evicted or lost", [dm] {
        return Metrics::Samples{{"", double(dm->kv_reuse().misses)}};
      }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_kv_recomputed_tokens_total", "tokens those placements recomputed", [dm] {
        return Metrics::Samples{{"", double(dm->kv_reuse().recomputed_tokens)}};
      }));
  SY_RETURN_IF_ERROR(m->Gauge("switchyard_scheduler_running_nodes",
                              "LLM nodes running on a worker (all workers)", [dm] {
                                return Metrics::Samples{{"", double(dm->running_nodes())}};
                              }));
  return m->Gauge("switchyard_scheduler_queued_nodes",
                  "LLM nodes ready and waiting for a worker (all workers)", [dm] {
                    return Metrics::Samples{{"", double(dm->queued_nodes())}};
                  });
}

// The credit of each joined worker's KV store (invariant 7): what it granted serve and
// what is in flight against it, on serve's ledger (sender) and on the worker's (receiver,
// all senders, as of its last heartbeat).
Metrics::GaugeFn PerKvStore(std::shared_ptr<ClusterSnapshot> snap,
                            std::function<void(const v1::JoinedWorker&, Metrics::Samples*)> add) {
  return [snap, add] {
    Metrics::Samples out;
    auto c = snap->Get();
    for (const v1::JoinedWorker& w : c->joined_workers())
      if (!w.kv_address().empty()) add(w, &out);
    return out;
  };
}

std::string WorkerLabels(const v1::JoinedWorker& w, const char* side = nullptr) {
  std::string l = Metrics::Labels({{"worker", std::to_string(w.worker_index())}, {"id", w.id()}});
  if (side) l += "," + Metrics::Label("side", side);
  return l;
}

Status RegisterCredits(Metrics* m, const std::shared_ptr<ClusterSnapshot>& snap) {
  SY_RETURN_IF_ERROR(
      m->Gauge("switchyard_credit_granted_bytes",
               "credit a joined worker's KV store grants each sender (per_sender) and all senders "
               "together (total: its incast limit)",
               PerKvStore(snap, [](const v1::JoinedWorker& w, Metrics::Samples* out) {
                 out->push_back({WorkerLabels(w) + "," + Metrics::Label("scope", "per_sender"),
                                 double(w.kv().credit_per_sender_bytes())});
                 out->push_back({WorkerLabels(w) + "," + Metrics::Label("scope", "total"),
                                 double(w.kv().credit_total_bytes())});
               })));
  SY_RETURN_IF_ERROR(m->Gauge(
      "switchyard_credit_in_use_bytes",
      "bytes posted to a joined worker's KV store and not yet committed or rejected: serve's "
      "ledger (side=sender) and the worker's, all senders (side=receiver)",
      PerKvStore(snap, [](const v1::JoinedWorker& w, Metrics::Samples* out) {
        out->push_back({WorkerLabels(w, "sender"), double(w.sender_credit_in_use_bytes())});
        out->push_back({WorkerLabels(w, "receiver"), double(w.kv().credit_in_use_bytes())});
      })));
  return m->CounterCallback(
      "switchyard_credit_refused_puts_total",
      "puts a joined worker's KV store refused for credit (never buffered), since it started",
      PerKvStore(snap, [](const v1::JoinedWorker& w, Metrics::Samples* out) {
        out->push_back({WorkerLabels(w), double(w.kv().puts_refused_credit())});
      }));
}

Status RegisterEngines(Metrics* m, const DriverMetrics* dm) {
  SY_RETURN_IF_ERROR(m->HistogramCallback("switchyard_engine_step_seconds",
                                          "engine step time, by worker", kStepSecondsBounds,
                                          SeriesOf(&dm->step_seconds())));
  SY_RETURN_IF_ERROR(m->HistogramCallback("switchyard_engine_step_batch_size",
                                          "sequences run in one engine step, by worker",
                                          kBatchBounds, SeriesOf(&dm->step_batch_size())));
  SY_RETURN_IF_ERROR(
      m->HistogramCallback("switchyard_engine_step_tokens",
                           "tokens computed in one engine step (prefill + decoded), by worker",
                           kTokenBounds, SeriesOf(&dm->step_tokens())));
  auto per_worker = [dm](uint64_t DriverMetrics::PrefixCacheTokens::*field) {
    return [dm, field] {
      Metrics::Samples out;
      for (const auto& [w, t] : dm->prefix_cache())
        out.push_back({Metrics::Label("worker", std::to_string(w)), double(t.*field)});
      return out;
    };
  };
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_prefix_cache_queries_total",
      "prefill tokens engines looked up in their prefix cache at admission, by worker",
      per_worker(&DriverMetrics::PrefixCacheTokens::queries)));
  return m->CounterCallback(
      "switchyard_prefix_cache_hits_total",
      "prefill tokens engines found in their prefix cache (not computed), by worker",
      per_worker(&DriverMetrics::PrefixCacheTokens::hits));
}

}  // namespace

DriverMetrics::DriverMetrics()
    : step_seconds_(kStepSecondsBounds),
      step_batch_(kBatchBounds),
      step_tokens_(kTokenBounds),
      transfer_seconds_(kTransferBounds),
      grant_wait_seconds_(kGrantWaitBounds) {}

void DriverMetrics::OnStep(const executors::StepReport& r) {
  const std::string worker = Metrics::Label("worker", std::to_string(r.worker));
  step_seconds_.Observe(worker, std::max(0.0, ToSeconds(r.end - r.start)));
  step_batch_.Observe(worker, double(r.seqs.size()));
  step_tokens_.Observe(worker, double(r.prefill_tokens + r.decode_seqs));
  MutexLock lock(&mu_);
  if (r.prefix_query_tokens > 0) {
    PrefixCacheTokens& t = prefix_cache_[r.worker];
    t.queries += static_cast<uint64_t>(r.prefix_query_tokens);
    t.hits += static_cast<uint64_t>(r.prefix_hit_tokens);
  }
  for (const executors::SeqProgress& p : r.seqs) {
    if (p.output_done != 1 || !first_token_ms_.emplace(p.key, r.end.millis()).second) continue;
    first_token_order_.push_back(p.key);
    if (first_token_order_.size() > kMaxFirstTokens) {
      first_token_ms_.erase(first_token_order_.front());
      first_token_order_.pop_front();
    }
  }
}

std::optional<int64_t> DriverMetrics::TakeFirstTokenMs(const std::string& key) {
  MutexLock lock(&mu_);
  auto it = first_token_ms_.find(key);
  if (it == first_token_ms_.end()) return std::nullopt;
  int64_t ms = it->second;
  first_token_ms_.erase(it);  // its key stays in the order until it ages out (harmless)
  return ms;
}

void DriverMetrics::OnTransferIssued(uint64_t transfer_id, Time now) {
  MutexLock lock(&mu_);
  issued_[transfer_id] = now;
}

void DriverMetrics::OnTransferEnded(uint64_t transfer_id, const std::vector<uint32_t>& links,
                                    int cls, uint64_t bytes, bool completed, Time now) {
  std::optional<Time> since;
  {
    MutexLock lock(&mu_);
    auto it = issued_.find(transfer_id);
    if (it != issued_.end()) {
      since = it->second;
      issued_.erase(it);
    }
    if (completed)
      for (uint32_t l : links) link_bytes_[{l, cls}] += bytes;
  }
  if (since)
    transfer_seconds_.Observe(Metrics::Labels({{"class", ClassName(cls)},
                                               {"outcome", completed ? "completed" : "failed"}}),
                              std::max(0.0, ToSeconds(now - *since)));
}

void DriverMetrics::SetQueuedNodes(size_t n) {
  MutexLock lock(&mu_);
  queued_nodes_ = n;
}

void DriverMetrics::SetRunningNodes(size_t n) {
  MutexLock lock(&mu_);
  running_nodes_ = n;
}

std::map<std::pair<uint32_t, int>, uint64_t> DriverMetrics::link_bytes() const {
  MutexLock lock(&mu_);
  return link_bytes_;
}

void DriverMetrics::OnCommand(const scheduler::Command& c) {
  if (c.grant.valid())
    grant_wait_seconds_.Observe(
        Metrics::Label("class", scheduler::TrafficClassName(c.grant.traffic_class)),
        std::max(0.0, ToSeconds(c.grant_wait)));
  MutexLock lock(&mu_);
  if (c.kind == scheduler::CommandKind::kPrefetch) {
    ++kv_reuse_.hits_by_tier[scheduler::TierName(c.src.tier)];
  } else if (c.kind == scheduler::CommandKind::kPlace && c.recompute_tokens > 0) {
    ++kv_reuse_.misses;
    kv_reuse_.recomputed_tokens += static_cast<uint64_t>(c.recompute_tokens);
  }
}

DriverMetrics::KvReuse DriverMetrics::kv_reuse() const {
  MutexLock lock(&mu_);
  return kv_reuse_;
}

std::map<int, DriverMetrics::PrefixCacheTokens> DriverMetrics::prefix_cache() const {
  MutexLock lock(&mu_);
  return prefix_cache_;
}

size_t DriverMetrics::queued_nodes() const {
  MutexLock lock(&mu_);
  return queued_nodes_;
}

size_t DriverMetrics::running_nodes() const {
  MutexLock lock(&mu_);
  return running_nodes_;
}

Status RegisterSchedulerMetrics(Metrics* m, const SchedulerDriver* driver) {
  auto snap = std::make_shared<ClusterSnapshot>();
  m->BeforeRender([snap, driver] {
    auto c = std::make_shared<v1::ClusterState>();
    driver->FillCluster(c.get());
    MutexLock lock(&snap->mu);
    snap->c = std::move(c);
  });
  const DriverMetrics* dm = &driver->metrics();
  SY_RETURN_IF_ERROR(RegisterTiers(m, snap));
  SY_RETURN_IF_ERROR(RegisterLinks(m, snap, dm));
  SY_RETURN_IF_ERROR(RegisterDecisions(m, snap, dm));
  SY_RETURN_IF_ERROR(RegisterCredits(m, snap));
  return RegisterEngines(m, dm);
}

}  // namespace switchyard::driver
