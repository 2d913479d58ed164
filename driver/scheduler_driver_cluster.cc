// SchedulerDriver's cluster view (GET /v1/cluster): workers, tiers with occupancy, and
// every topology link with its budget by traffic class.
#include <array>
#include <map>

#include "base/mutex.h"
#include "cpu_engine/cpu_engine.h"
#include "driver/scheduler_driver.h"
#include "executors/engine.h"
#include "executors/model_cost.h"
#include "kv_tiers/arena_tier.h"
#include "kv_tiers/block_manager.h"
#include "kv_tiers/disk_tier.h"
#include "scheduler/link_file.h"
#include "scheduler/net_budget_env.h"
#include "scheduler/policy.h"

namespace switchyard::driver {

using scheduler::Location;
using scheduler::Tier;

namespace {

// One link's budget by class: its floor share under load (BudgetPolicy), the grants in
// flight on it (`active`, by class; null when none) and both directions' class state.
void FillLinkClasses(net_budget::LinkIndex i, const net_budget::LinkBudgets& budgets,
                     const std::array<int, net_budget::kNumClasses>* active, v1::LinkState* l) {
  const net_budget::BudgetPolicy& bp = budgets.policy();
  const double shared = bp.weights[0] + bp.weights[1] + bp.weights[2];
  for (net_budget::TrafficClass c : net_budget::kAllClasses) {
    size_t k = net_budget::ClassIndex(c);
    auto* b = l->add_classes();
    b->set_traffic_class(scheduler::TrafficClassName(c));
    b->set_floor_share(c == net_budget::TrafficClass::kControl
                           ? bp.control_reserve
                           : (1 - bp.control_reserve) * bp.weights[k] / shared);
    b->set_max_grants(0);  // net_budget bounds bytes by rate, not the number of grants
    b->set_active_grants(active == nullptr ? 0 : (*active)[k]);
    net_budget::ClassState sum;
    for (net_budget::ChannelIndex ch : {i * 2, i * 2 + 1}) {
      net_budget::ClassState s = budgets.State(ch, c);
      sum.inflight_bytes += s.inflight_bytes;
      sum.granted_bytes += s.granted_bytes;
      sum.rate_bytes_per_s += s.rate_bytes_per_s;
      sum.queued += s.queued;
    }
    b->set_active_bytes(sum.inflight_bytes);
    b->set_granted_bytes(sum.granted_bytes);
    b->set_rate_bytes_per_s(sum.rate_bytes_per_s);
    b->set_queued(sum.queued);
  }
}

}  // namespace

void SchedulerDriver::FillCluster(v1::ClusterState* out) const {
  FillClusterLocked(out);
  // Last, and outside mu_: it reads the tiers above, and it takes the joined workers' locks,
  // under which a worker's loss calls WorkerLost (which takes mu_).
  if (config_.fill_cluster) config_.fill_cluster(out);
}

void SchedulerDriver::FillClusterLocked(v1::ClusterState* out) const {
  MutexLock lock(&mu_);
  out->set_workers(total_workers());
  out->set_model_executor(model_executor_name());
  out->set_model(config_.model_id);
  if (auto e = epochs_.find(config_.model_id); e != epochs_.end()) out->set_model_epoch(e->second);
  out->set_queued_nodes(metrics_.queued_nodes());
  for (const auto& a : config_.model_aliases) out->add_model_aliases(a);
  out->set_kv_mover(kv_mover_description());
  out->set_planner(
      "net_budget planner and link budgets (topology: " + stack_.env->topology().name() + ")");
  for (const scheduler::TopologyConflict& tc : topology_conflicts_) {
    v1::TopologyConflict* m = out->add_topology_conflicts();
    m->set_worker(tc.worker);
    m->set_link(tc.link);
    m->set_detail(tc.detail);
  }
  out->set_policy(std::string(stack_.policy->name()));
  out->set_hbm_capacity_bytes_per_worker(config_.hbm_bytes_per_worker);
  for (const auto& g : groups_) {
    v1::ServedModelState* m = out->add_models();
    m->set_id(g->spec.id);
    for (const auto& a : g->spec.aliases) m->add_aliases(a);
    m->set_engine(!config_.engines_run_llm ? "reported" : g->spec.engine);
    m->set_first_worker(g->first);
    m->set_workers(g->spec.workers);
    m->set_kv_bytes_per_token(g->cost->KvBytesPerToken());
    m->set_hbm_capacity_bytes_per_worker(g->spec.hbm_bytes_per_worker);
    if (auto e = epochs_.find(g->spec.id); e != epochs_.end()) m->set_model_epoch(e->second);
    m->set_host_capacity_bytes(g->host_bytes);
    m->set_disk_capacity_bytes(g->disk_bytes);
  }
  out->set_scheduler_events(events_);
  FillTiers(out);
  FillLinks(out);
  FillEngines(out);
  for (const auto& [k, n] : real_bytes_moved_) (*out->mutable_real_bytes_moved())[k] = n;
  for (const auto& [k, n] : decisions_by_kind_) (*out->mutable_decisions_by_kind())[k] = n;
  for (const auto& [k, n] : bytes_moved_by_tier_) (*out->mutable_bytes_moved_by_tier())[k] = n;
  v1::DisaggregationState* pd = out->mutable_disaggregation();
  pd->set_mode(scheduler::DisaggregationName(config_.disaggregation));
  pd->set_calls(pd_stats_.calls);
  pd->set_disaggregated(pd_stats_.disaggregated);
  pd->set_handoffs(pd_stats_.handoffs);
  pd->set_moves(pd_stats_.moves);
  pd->set_bytes_moved(pd_stats_.bytes_moved);
  pd->set_recomputed_on_decode(pd_stats_.recomputed_on_decode);
}

void SchedulerDriver::FillTiers(v1::ClusterState* out) const {
  std::map<std::pair<std::string, int>, int> contexts;  // (tier, worker)
  for (const auto& [key, v] : ctxs_) {
    if (!v.known || v.loc.tier == Tier::kNone) continue;
    ++contexts[{scheduler::TierName(v.loc.tier), v.loc.worker}];
  }
  // Tier occupancy: the kv_tiers tiers' own accounting (thread-safe), in scheduler bytes
  // (emulated bytes x scale). Host and disk are node-wide tiers, one per model, listed
  // under the model's first worker.
  for (int w = 0; w < total_workers(); ++w) {
    const Group& g = GroupOf(w);
    const uint64_t scale = g.kv_bytes_scale;
    const bool real = g.computes();
    FillWorkerTiers(w, g, scale, real, contexts, out);
  }
}

void SchedulerDriver::FillWorkerTiers(int w, const Group& g, uint64_t scale, bool real,
                                      std::map<std::pair<std::string, int>, int>& contexts,
                                      v1::ClusterState* out) const {
  auto scaled = [scale](const kv_tiers::Tier& t) {
    std::string s = std::to_string(scale);
    return "kv_tiers '" + t.name() + "': " + std::to_string(t.used_bytes()) + " of " +
           std::to_string(t.capacity_bytes()) + " B held at 1/" + s + " scale";
  };
  {
    for (const char* tier : {"hbm", "host", "disk"}) {
      std::string t_name = tier;
      if (t_name != "hbm" && w > g.first) continue;
      auto* t = out->add_tiers();
      t->set_tier(tier);
      t->set_worker(w);
      const kv_tiers::Tier* quota_tier = t_name == "hbm"    ? HbmOf(w)
                                         : t_name == "host" ? g.host_tier.get()
                                                            : g.disk_tier.get();
      for (const auto& [tenant, q] : config_.tenant_quotas) {
        if (uint64_t quota = quota_tier->tenant_quota(tenant); quota > 0) {
          (*t->mutable_tenant_quota_bytes())[tenant] = quota * scale;
          (*t->mutable_tenant_used_bytes())[tenant] = quota_tier->tenant_used_bytes(tenant) * scale;
        }
      }
      int n = 0;
      for (int k = g.first; k < g.first + g.spec.workers; ++k)
        if (t_name == "hbm" ? k == w : true) n += contexts[{t_name, k}];
      t->set_contexts(n);
      if (t_name == "hbm") {
        const kv_tiers::Tier& arena = *HbmOf(w);
        t->set_capacity_bytes(g.spec.hbm_bytes_per_worker);
        auto h = hbm_used_.find(w);
        t->set_used_bytes(h == hbm_used_.end() ? 0 : h->second);
        const bool remote = arena.name().rfind("peer:", 0) == 0;  // a joined worker's store
        t->set_backing(!g.computes()
                           ? std::string(remote ? "emulated HBM of a joined worker (used: "
                                                  "scheduler accounting; blocks of moved "
                                                  "contexts in its KV store over the peer "
                                                  "protocol, "
                                                : "emulated HBM (used: scheduler accounting, "
                                                  "committed + reserved; blocks of moved "
                                                  "contexts in ") +
                                 scaled(arena) + ")"
                       : remote ? "real bytes in a joined worker's cpu engine pool "
                                  "(used: scheduler accounting); its KV store, " +
                                      scaled(arena) + ", holds blocks being moved"
                                : "real bytes: kv_tiers '" + arena.name() + "' holds " +
                                      std::to_string(arena.used_bytes()) + " of " +
                                      std::to_string(arena.capacity_bytes()) +
                                      " B (used: scheduler accounting)");
      } else {
        const kv_tiers::Tier& kt = t_name == "host" ? *g.host_tier : *g.disk_tier;
        t->set_capacity_bytes(t_name == "host" ? g.host_bytes : g.disk_bytes);
        t->set_used_bytes(kt.used_bytes() * scale);
        if (real)
          t->set_backing((t_name == "host" ? "host memory tier, real bytes (kv_tiers '"
                                           : "disk tier, RocksDB, real bytes (kv_tiers '") +
                         kt.name() + "': " + std::to_string(kt.used_bytes()) + " of " +
                         std::to_string(kt.capacity_bytes()) + " B)");
        else
          t->set_backing((t_name == "host" ? "emulated host memory tier ("
                                           : "emulated disk tier, "
                                             "RocksDB (") +
                         scaled(kt) + ")");
      }
    }
  }
}

void SchedulerDriver::FillEngines(v1::ClusterState* out) const {
  for (int w = 0; w < total_workers(); ++w) {
    const Group& g = GroupOf(w);
    auto* e = out->add_worker_engines();
    e->set_worker(w);
    e->set_model_id(g.spec.id);
    const EngineWorker& slot = workers_[static_cast<size_t>(w)];
    e->set_engine(slot.engine ? std::string(slot.engine->name()) : "");
    e->set_kv_bytes_per_token(g.cost->KvBytesPerToken());
    auto ws = worker_state_.find(w);
    e->set_state(ws == worker_state_.end() ? "alive" : ws->second.first);
    e->set_drained(ws != worker_state_.end() && ws->second.second);
    // The core's view once an event ran, the configured one before.
    auto role = worker_role_.find(w);
    const auto given = static_cast<size_t>(w) < config_.worker_roles.size()
                           ? config_.worker_roles[static_cast<size_t>(w)]
                           : scheduler::WorkerRole::kMixed;
    e->set_role(scheduler::WorkerRoleName(role != worker_role_.end() ? role->second : given));
    if (g.cpu_model) {
      const cpu_engine::ModelShape& s = g.cpu_model->shape();
      e->set_model(s.name + (s.random_weights ? " (random weights: its text is meaningless)" : ""));
      e->set_random_weights(s.random_weights);
      const bool joined = slot.remote_kv != nullptr;
      if (joined) {  // a joined worker's pool: the scheduler's accounting of it
        auto h = hbm_used_.find(w);
        e->set_kv_pool(slot.remote_kv->kv_pool_name());
        e->set_kv_pool_capacity_bytes(g.spec.hbm_bytes_per_worker);
        e->set_kv_pool_used_bytes(h == hbm_used_.end() ? 0 : h->second);
      } else {
        const kv_tiers::Tier& pool = *HbmOf(w);  // thread-safe accounting
        e->set_kv_pool(pool.name());
        e->set_kv_pool_capacity_bytes(pool.capacity_bytes());
        e->set_kv_pool_used_bytes(pool.used_bytes());
      }
    } else {
      e->set_model(g.cost->model().name() + " (no weights: step times from a cost model)");
    }
  }
}

void SchedulerDriver::FillLinks(v1::ClusterState* out) const {
  const net_budget::Topology& topo = stack_.env->topology();
  std::map<uint32_t, std::array<int, net_budget::kNumClasses>> active;
  for (const auto& [id, x] : xfers_)
    for (uint32_t l : x.links) ++active[l][static_cast<size_t>(x.cls) % net_budget::kNumClasses];
  std::map<std::string, int> worker_of;  // device id -> worker
  for (int k = 0; k < total_workers(); ++k) {
    auto dev = stack_.device_of(Location{Tier::kHbm, k});
    if (dev.ok()) worker_of[*dev] = k;
  }
  for (net_budget::LinkIndex i = 0; i < topo.num_links(); ++i) {
    const net_budget::Link& link = topo.link(i);
    auto* l = out->add_links();
    const net_budget::Device &a = topo.device(link.src), &b = topo.device(link.dst);
    l->set_src(a.id);
    l->set_dst(b.id);
    bool disk = a.kind == v1::DEVICE_STORAGE || b.kind == v1::DEVICE_STORAGE;
    std::string kind = disk ? "disk" : std::string(net_budget::LinkKindName(link.kind));
    // Short names as before ("pcie0": worker 0 <-> host memory, "disk0": host memory <->
    // NVMe of node 0, "nvlink1": worker 1 <-> NVSwitch); the topology id otherwise.
    auto w = worker_of.find(a.id);
    if (w == worker_of.end()) w = worker_of.find(b.id);
    auto named = link.attributes.find(scheduler::kLinkNameAttribute);
    if (named != link.attributes.end())
      l->set_name(named->second);  // scheduler/link_file.h's name
    else if (disk)
      l->set_name("disk0");
    else if (w != worker_of.end() && (kind == "pcie" || kind == "nvlink"))
      l->set_name(kind + std::to_string(w->second));
    else
      l->set_name(a.id + "-" + b.id);
    l->set_kind(kind);
    l->set_bandwidth_bytes_per_s(link.bandwidth_bytes_per_s.value_or(0));
    l->set_alpha_s(link.latency_s.value_or(0));
    auto source = link.attributes.find(scheduler::kFigureSourceAttribute);
    if (source != link.attributes.end()) l->set_figure_source(source->second);
    auto act = active.find(i);
    FillLinkClasses(i, stack_.env->budgets(), act == active.end() ? nullptr : &act->second, l);
  }
}

}  // namespace switchyard::driver
