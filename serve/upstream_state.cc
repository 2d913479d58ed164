#include "serve/upstream_state.h"

#include <string>
#include <utility>

namespace switchyard::serve {
namespace {

using Figures = frontends::FrontCore::UpstreamFigures;

void AddCapabilities(const upstream::Capabilities& caps, v1::UpstreamState* u) {
  const std::pair<const char*, const upstream::Capability*> flags[] = {
      {"prefix_caching", &caps.prefix_caching},
      {"session_id", &caps.session_id},
      {"priority", &caps.priority},
      {"kv_transfer_params", &caps.kv_transfer_params},
      {"open_session", &caps.open_session},
      {"close_session", &caps.close_session},
      {"slots", &caps.slots},
      {"slot_files", &caps.slot_files},
      {"token_ids", &caps.token_ids},
  };
  for (const auto& [name, cap] : flags) (*u->mutable_capabilities())[name] = cap->on;
  u->set_total_slots(caps.total_slots);
}

// The adapter's actions and warm-ups by name.
std::map<std::string, uint64_t> Actions(const upstream::SteeringCounters& c) {
  return {{"probe", c.probes}, {"decorated", c.decorated}, {"open", c.opens},
          {"close", c.closes}, {"save", c.saves},          {"restore", c.restores},
          {"erase", c.erases}, {"failed", c.failures},     {"kept_urgent", c.kept_urgent}};
}
std::map<std::string, uint64_t> Warmups(const upstream::SteeringCounters& c) {
  return {{"sent", c.warmups_sent},       {"done", c.warmups_done},
          {"hit", c.warmups_hit},         {"wasted", c.warmups_wasted},
          {"dropped", c.warmups_dropped}, {"cancelled", c.warmups_cancelled}};
}

// One sample per upstream (and per key of `split`, when given) of what `get` reads.
template <typename Fn>
Metrics::Samples PerUpstream(const frontends::FrontCore* core, Fn get) {
  Metrics::Samples out;
  for (const Figures& f : core->upstream_figures()) get(f, Metrics::Label("upstream", f.url), &out);
  return out;
}

void AddKvEvents(const Figures& f, v1::UpstreamState* u) {
  const upstream::KvEventSubscriber::Figures& k = *f.kv_events;
  v1::UpstreamKvEvents* e = u->mutable_kv_events();
  e->set_endpoint(k.endpoint);
  e->set_batches(k.batches);
  e->set_events(k.events);
  e->set_gaps(k.gaps);
  e->set_bad(k.bad);
  e->set_error(k.error);
  e->set_unchained(k.unchained);
  e->set_gpu_blocks(k.gpu_blocks);
  e->set_cpu_blocks(k.cpu_blocks);
  e->set_evictions_reported(f.evictions_reported);
}

void AddRetention(const upstream::RetentionModel::Figures& r, uint64_t predicted,
                  v1::UpstreamState* u) {
  v1::UpstreamRetention* out = u->mutable_retention();
  out->set_observations(r.observations);
  out->set_held(r.held);
  out->set_churn_tokens(r.churn);
  out->set_has_capacity(r.capacity.has_value());
  out->set_capacity_tokens(r.capacity.value_or(0));
  out->set_evictions_predicted(predicted);
}

void AddLoad(const upstream::LoadMonitor::Scrapes& s, v1::UpstreamState* u) {
  v1::UpstreamLoad* l = u->mutable_load();
  l->set_scrapes(s.scrapes);
  l->set_failures(s.failures);
  l->set_error(s.error);
  if (!s.last) return;
  l->set_engine(s.last->engine);
  l->set_running(s.last->running);
  l->set_waiting(s.last->waiting);
  l->set_kv_usage(s.last->kv_usage);
}

// What the upstreams report of themselves: their load (/metrics) and KV events.
Status RegisterReportedMetrics(Metrics* m, const frontends::FrontCore* core) {
  using S = Metrics::Samples;
  SY_RETURN_IF_ERROR(m->Gauge(
      "switchyard_upstream_requests",
      "proxy mode: requests an upstream's /metrics last reported, every client's, by state",
      [core] {
        return PerUpstream(core, [](const Figures& f, const std::string& l, S* out) {
          if (!f.load || !f.load->last) return;
          for (const auto& [state, v] : {std::pair{"running", f.load->last->running},
                                         std::pair{"waiting", f.load->last->waiting}})
            if (v >= 0) out->push_back({l + "," + Metrics::Label("state", state), v});
        });
      }));
  SY_RETURN_IF_ERROR(m->Gauge(
      "switchyard_upstream_kv_usage_ratio",
      "proxy mode: the share of an upstream's KV cache in use, as its /metrics last said", [core] {
        return PerUpstream(core, [](const Figures& f, const std::string& l, S* out) {
          if (f.load && f.load->last && f.load->last->kv_usage >= 0)
            out->push_back({l, f.load->last->kv_usage});
        });
      }));
  SY_RETURN_IF_ERROR(m->Gauge(
      "switchyard_upstream_kv_blocks",
      "proxy mode: KV blocks an upstream holds as its KV events say, by medium (GPU, CPU)", [core] {
        return PerUpstream(core, [](const Figures& f, const std::string& l, S* out) {
          if (!f.kv_events) return;
          out->push_back(
              {l + "," + Metrics::Label("medium", "GPU"), double(f.kv_events->gpu_blocks)});
          out->push_back(
              {l + "," + Metrics::Label("medium", "CPU"), double(f.kv_events->cpu_blocks)});
        });
      }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_upstream_evictions_reported_total",
      "proxy mode: sessions whose next turn found their KV gone from the upstream's cache", [core] {
        return PerUpstream(core, [](const Figures& f, const std::string& l, S* out) {
          if (f.kv_events) out->push_back({l, double(f.evictions_reported)});
        });
      }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_upstream_evictions_predicted_total",
      "proxy mode: sessions whose prefix the upstream's retention model (its reported cached "
      "tokens) predicted gone at their next turn",
      [core] {
        return PerUpstream(core, [](const Figures& f, const std::string& l, S* out) {
          if (f.steering) out->push_back({l, double(f.evictions_predicted)});
        });
      }));
  return m->Gauge(
      "switchyard_upstream_retention_capacity_tokens",
      "proxy mode: the KV an upstream writes before a waiting session's prefix is gone, as "
      "learned from its reported cached tokens",
      [core] {
        return PerUpstream(core, [](const Figures& f, const std::string& l, S* out) {
          if (f.steering && f.steering->retention.capacity)
            out->push_back({l, double(*f.steering->retention.capacity)});
        });
      });
}

}  // namespace

void AddUpstreamStates(const frontends::FrontCore& core, v1::ClusterState* out) {
  for (const Figures& f : core.upstream_figures()) {
    v1::UpstreamState* u = out->add_upstreams();
    u->set_url(f.url);
    u->set_requests(f.stats.requests);
    u->set_failures(f.stats.failures);
    u->set_steering(f.steering.has_value());
    if (f.load) AddLoad(*f.load, u);
    if (f.kv_events) AddKvEvents(f, u);
    if (!f.steering) {
      u->set_kind("generic");
      continue;
    }
    const upstream::ProxySteering::Figures& s = *f.steering;
    u->set_kind(s.kind);
    AddCapabilities(s.caps, u);
    u->set_sessions(s.sessions);
    for (const auto& [k, n] : s.decisions) (*u->mutable_decisions())[k] = n;
    for (const auto& [k, n] : Actions(s.counters)) (*u->mutable_actions())[k] = n;
    for (const auto& [k, n] : Warmups(s.counters)) (*u->mutable_warmups())[k] = n;
    u->set_prompt_tokens(s.prompt_tokens);
    u->set_cached_tokens(s.cached_tokens);
    AddRetention(s.retention, f.evictions_predicted, u);
  }
}

Status RegisterUpstreamMetrics(Metrics* m, const frontends::FrontCore* core) {
  using S = Metrics::Samples;
  SY_RETURN_IF_ERROR(m->Gauge(
      "switchyard_upstream_sessions", "proxy mode: sessions whose turns go to an upstream", [core] {
        return PerUpstream(core, [](const Figures& f, const std::string& l, S* out) {
          if (f.steering) out->push_back({l, double(f.steering->sessions)});
        });
      }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_upstream_decisions_total",
      "proxy mode: the scheduler's KV decisions for an upstream's waiting sessions, by kind",
      [core] {
        return PerUpstream(core, [](const Figures& f, const std::string& l, S* out) {
          if (!f.steering) return;
          for (const auto& [k, n] : f.steering->decisions)
            out->push_back({l + "," + Metrics::Label("decision", k), double(n)});
        });
      }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_upstream_steering_actions_total",
      "proxy mode: what an upstream's adapter sent or added, by action", [core] {
        return PerUpstream(core, [](const Figures& f, const std::string& l, S* out) {
          if (!f.steering) return;
          for (const auto& [k, n] : Actions(f.steering->counters))
            out->push_back({l + "," + Metrics::Label("action", k), double(n)});
        });
      }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_upstream_warmups_total", "proxy mode: warm-ups of sessions' prefixes, by outcome",
      [core] {
        return PerUpstream(core, [](const Figures& f, const std::string& l, S* out) {
          if (!f.steering) return;
          for (const auto& [k, n] : Warmups(f.steering->counters))
            out->push_back({l + "," + Metrics::Label("outcome", k), double(n)});
        });
      }));
  SY_RETURN_IF_ERROR(RegisterReportedMetrics(m, core));
  return m->CounterCallback(
      "switchyard_upstream_prompt_tokens_total",
      "proxy mode: prompt tokens an upstream's answers reported, by whether it had them cached",
      [core] {
        return PerUpstream(core, [](const Figures& f, const std::string& l, S* out) {
          if (!f.steering) return;
          out->push_back(
              {l + "," + Metrics::Label("cached", "true"), double(f.steering->cached_tokens)});
          out->push_back({l + "," + Metrics::Label("cached", "false"),
                          double(f.steering->prompt_tokens -
                                 std::min(f.steering->prompt_tokens, f.steering->cached_tokens))});
        });
      });
}

}  // namespace switchyard::serve
