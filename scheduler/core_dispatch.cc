// Ordering, admission against HBM, placement with KV locality, eviction and preemption.
#include <algorithm>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler::internal {
namespace {
const Location kNowhere{};
}

std::vector<std::string> CoreState::NodeContexts(const WfRec& wf, const NodeRec& n) const {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(n.spec.cache_refs_size()));
  for (const v1::CacheRef& r : n.spec.cache_refs()) out.push_back(ContextKey(wf.id, r.context()));
  return out;
}

Duration CoreState::EstimateRun(const WfRec& wf, const NodeRec& n) const {
  int64_t total = 0, recompute = 0;
  for (const std::string& key : NodeContexts(wf, n)) {
    auto it = ctxs.find(key);
    if (it == ctxs.end()) continue;
    total += it->second.tokens;
    if (it->second.loc.tier == Tier::kNone) recompute += it->second.tokens;
  }
  int64_t out = n.spec.hints().max_output_tokens() > 0 ? n.spec.hints().max_output_tokens()
                                                       : opt.default_max_output_tokens;
  int64_t fresh = n.new_tokens - n.new_done;
  return cost->PrefillTime(recompute + fresh, total - recompute) +
         cost->DecodeTime(out, total + fresh);
}

bool CoreState::ContextsResident(const WfRec& wf, const NodeRec& n) const {
  for (const v1::CacheRef& r : n.spec.cache_refs()) {
    auto it = ctxs.find(ContextKey(wf.id, r.context()));
    if (it == ctxs.end() || it->second.tokens == 0) continue;
    if (it->second.loc.tier != Tier::kHbm || it->second.transfer != 0) return false;
  }
  return true;
}

double CoreState::Pressure(int w) const {
  int alive = 0;
  for (const WorkerRec& r : workers) alive += r.alive ? 1 : 0;
  double share = static_cast<double>(queued_demand) / std::max(1, alive);
  return std::min(1.0, share / static_cast<double>(std::max<uint64_t>(Free(w), 1)));
}

void CoreState::Enqueue(WfRec& wf, int idx) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  n.state = NState::kReady;
  n.queued = true;
  n.inherited = wf.atlas;
  n.est_run = EstimateRun(wf, n);
  ReadyNodeInfo info{wf.tenant,
                     wf.priority,
                     wf.atlas,
                     wf.plas,
                     wf.arrival,
                     n.ready_since,
                     NodeDeadline(wf, n),
                     n.est_run,
                     n.spec.hints().prompt_tokens(),
                     ContextsResident(wf, n),
                     n.resumed};
  OrderKey k = policy->Order(info);
  std::string tname = policy->FairShareAcrossTenants() ? wf.tenant : std::string();
  TenantRec& t = Tenant(tname);
  if (t.ready.empty() && policy->FairShareAcrossTenants()) {
    // A tenant coming back from idle starts at the least normalised service of the active
    // ones, so it cannot claim the service it did not ask for (virtual-time fair share).
    double least = -1;
    for (const auto& [name, other] : tenants)
      if (!other.ready.empty()) {
        double norm = ToSeconds(other.service) / other.weight;
        if (least < 0 || norm < least) least = norm;
      }
    if (least >= 0) t.service = std::max(t.service, Seconds(least * t.weight));
  }
  n.qkey = QKey{k.band, k.key, next_seq++, wf.id, idx};
  wf.queued_nodes++;
  t.ready.insert(n.qkey);
  Time dl = NodeDeadline(wf, n);
  if (policy->DeadlineAware() && dl != Time::Max()) {
    n.latest_start = dl - n.est_run;
    urgent.insert({n.latest_start, n.qkey.seq, wf.id, idx});
  }
  uint64_t bpt = BytesPerToken();
  n.demand = static_cast<uint64_t>(n.new_tokens - n.new_done) * bpt;
  for (const std::string& key : NodeContexts(wf, n)) {
    const CtxRec& c = ctxs[key];
    if (c.loc.tier != Tier::kHbm) n.demand += c.bytes;
  }
  queued_demand += n.demand;
  ++queued;
}

void CoreState::Dequeue(WfRec& wf, int idx) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  if (!n.queued) return;
  std::string tname = policy->FairShareAcrossTenants() ? wf.tenant : std::string();
  tenants[tname].ready.erase(n.qkey);
  if (n.latest_start != Time::Max()) urgent.erase({n.latest_start, n.qkey.seq, wf.id, idx});
  n.latest_start = Time::Max();
  queued_demand -= std::min(queued_demand, n.demand);
  n.demand = 0;
  n.queued = false;
  wf.queued_nodes--;
  --queued;
}

const QKey* CoreState::PickNext(const std::set<std::pair<std::string, int>>& skipped) {
  auto usable = [&](const QKey& k) { return !skipped.count({k.wf, k.node}); };
  if (policy->DeadlineAware()) {
    int looked = 0;
    auto from = urgent.begin();
    if (policy->SkipHopelessDeadlines()) from = urgent.lower_bound({now, 0, std::string(), 0});
    for (auto it = from; it != urgent.end(); ++it) {
      const auto& [latest, seq, wf_id, idx] = *it;
      if (++looked > 8) break;
      NodeRec& n = wfs[wf_id].nodes[static_cast<size_t>(idx)];
      if (!usable(n.qkey)) continue;
      // Urgent: its latest start is within the horizon.
      if (latest < now + opt.urgent_horizon) return &n.qkey;
      break;
    }
  }
  const QKey* best = nullptr;
  double best_norm = 0;
  for (auto& [name, t] : tenants) {
    const QKey* head = nullptr;
    for (const QKey& k : t.ready)
      if (usable(k)) {
        head = &k;
        break;
      }
    if (!head) continue;
    double norm = ToSeconds(t.service) / t.weight;
    if (!best || norm < best_norm) {
      best = head;
      best_norm = norm;
    }
  }
  return best;
}

void CoreState::Dispatch() {
  std::set<std::pair<std::string, int>> skipped;
  for (int tries = 0; tries < opt.dispatch_tries && queued > skipped.size(); ++tries) {
    bool free_slot = false;
    for (const WorkerRec& w : workers) free_slot |= w.alive && w.running < opt.slots_per_worker;
    if (!free_slot) return;
    const QKey* k = PickNext(skipped);
    if (!k) return;
    std::string wf_id = k->wf;
    int idx = k->node;
    if (!TryPlace(wfs[wf_id], idx)) skipped.insert({wf_id, idx});
  }
}

bool CoreState::TryPlace(WfRec& wf, int idx) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  std::vector<std::string> keys = NodeContexts(wf, n);
  for (const std::string& key : keys) {
    const CtxRec& c = ctxs[key];
    if (c.transfer != 0 || c.users > 0) return false;  // not committed / being written
  }
  uint64_t bpt = BytesPerToken();
  int64_t out = n.spec.hints().max_output_tokens() > 0 ? n.spec.hints().max_output_tokens()
                                                       : opt.default_max_output_tokens;
  uint64_t growth = static_cast<uint64_t>(n.new_tokens - n.new_done + out) * bpt;
  int best = -1, any = -1;
  double best_cost = 0, any_cost = 0;
  uint64_t best_need = 0, any_need = 0;
  for (int w = 0; w < static_cast<int>(workers.size()); ++w) {
    const WorkerRec& wr = workers[static_cast<size_t>(w)];
    if (!wr.alive || wr.running >= opt.slots_per_worker) continue;
    uint64_t need = growth;
    double cost_s = 0;
    for (const std::string& key : keys) {
      const CtxRec& c = ctxs[key];
      if (c.tokens == 0 || (c.loc.worker == w && c.loc.tier != Tier::kHost &&
                            c.loc.tier != Tier::kDisk && c.loc.tier != Tier::kNone))
        continue;
      need += c.bytes;
      double rc = ToSeconds(cost->PrefillTime(c.tokens, 0));
      if (c.loc.tier == Tier::kNone) {
        cost_s += rc;
      } else {
        TransferEstimate e =
            planner->Estimate(c.loc, {Tier::kHbm, w}, c.bytes, TrafficClass::kLatency);
        cost_s += e.reachable ? std::min(rc, ToSeconds(e.duration)) : rc;
      }
    }
    cost_s += 1e-9 * wr.running;  // locality first, then the less loaded worker
    if (any < 0 || cost_s < any_cost) any = w, any_cost = cost_s, any_need = need;
    if (Free(w) >= need && (best < 0 || cost_s < best_cost))
      best = w, best_cost = cost_s, best_need = need;
  }
  uint64_t whole = growth;  // the node with all its contexts on one worker
  for (const std::string& key : keys) whole += ctxs[key].bytes;
  if (best < 0) {
    if (whole > opt.hbm_bytes_per_worker) {
      Dequeue(wf, idx);
      FailNode(wf, idx,
               "node '" + n.spec.id() + "' needs " + std::to_string(whole) +
                   " bytes of HBM, more than a worker's capacity of " +
                   std::to_string(opt.hbm_bytes_per_worker));
      return false;
    }
    // Discards free HBM at once: try again now (no later event may come to trigger it).
    if (any >= 0 && any_need > Free(any) && EvictFor(any, any_need - Free(any), keys) &&
        any_need <= Free(any))
      return TryPlace(wf, idx);
    return false;
  }
  (void)best_need;
  int64_t recompute = 0;
  bool waiting = false;
  for (const std::string& key : keys) {
    CtxRec& c = ctxs[key];
    if (c.tokens == 0) continue;
    if (c.loc.worker == best && (c.loc.tier == Tier::kHbm || c.loc.tier == Tier::kPeer)) continue;
    if (c.loc.tier == Tier::kNone) {
      recompute += c.tokens;
      continue;
    }
    Location dst{Tier::kHbm, best};
    TransferEstimate e = planner->Estimate(c.loc, dst, c.bytes, TrafficClass::kLatency);
    Duration rc = cost->PrefillTime(c.tokens, 0);
    if (e.reachable && e.duration < rc) {
      StartTransfer(c, dst, TrafficClass::kLatency, CommandKind::kPrefetch, Time::Max());
      waiting = true;  // placed when the move commits (or retried if no grant yet)
    } else {
      DiscardContext(c, "recompute cheaper than moving");
      recompute += c.tokens;
    }
  }
  if (waiting) return false;
  Place(wf, idx, best, recompute);
  return true;
}

void CoreState::Place(WfRec& wf, int idx, int w, int64_t recompute) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  n.est_run = EstimateRun(wf, n);
  // Recent queueing delay (EWMA over ~20 placements).
  queue_delay_ewma += (now - n.ready_since - queue_delay_ewma) / 20;
  Dequeue(wf, idx);
  uint64_t epoch = std::max(model_epoch[n.spec.model_id()], n.spec.model_epoch());
  for (const std::string& key : NodeContexts(wf, n)) {
    CtxRec& c = ctxs[key];
    if (c.loc.tier == Tier::kNone || c.loc.tier == Tier::kPeer || c.tokens == 0) {
      if (c.loc.tier == Tier::kPeer) Hold(c.loc, -static_cast<int64_t>(c.bytes));
      SetLoc(c, {Tier::kHbm, w});
      Hold(c.loc, static_cast<int64_t>(c.bytes));
    }
    if (c.model.empty()) c.model = n.spec.model_id();
    if (c.loc.tier == Tier::kHbm && c.tokens == 0) c.epoch = epoch;
    if (recompute > 0) c.epoch = epoch;
    c.users++;
    c.prefetch_at = c.reeval_at = Time::Max();
    c.wait_tool = -1;
    c.deferrals = 0;
    c.evict_pending = false;
  }
  int64_t out = n.spec.hints().max_output_tokens() > 0 ? n.spec.hints().max_output_tokens()
                                                       : opt.default_max_output_tokens;
  n.reserved = static_cast<uint64_t>(n.new_tokens - n.new_done + out) * BytesPerToken();
  WorkerRec& wr = workers[static_cast<size_t>(w)];
  wr.used += n.reserved;
  wr.running++;
  wr.nodes.insert({wf.id, idx});
  n.state = NState::kRunning;
  auto gi = static_cast<program_graph::NodeIndex>(idx);
  if (wf.graph->state(gi) == v1::NODE_READY) (void)wf.graph->MarkRunning(gi);
  n.worker = w;
  n.attempts++;
  n.started = now;
  n.recompute_at_place = recompute;
  n.charged = n.est_run;
  Tenant(wf.tenant).service += n.charged;
  Emit({.kind = CommandKind::kPlace,
        .workflow_id = wf.id,
        .node_id = n.spec.id(),
        .worker = w,
        .recompute_tokens = recompute,
        .prefill_done = n.new_done});
}

void CoreState::StopRunning(WfRec& wf, int idx) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  if (n.worker < 0) return;
  WorkerRec& wr = workers[static_cast<size_t>(n.worker)];
  wr.used -= std::min(wr.used, n.reserved);
  wr.running--;
  wr.nodes.erase({wf.id, idx});
  n.reserved = 0;
  n.worker = -1;
  for (const std::string& key : NodeContexts(wf, n)) {
    auto it = ctxs.find(key);
    if (it == ctxs.end()) continue;
    it->second.users = std::max(0, it->second.users - 1);
    it->second.idle_since = now;
  }
}

int CoreState::StepsToUse(const CtxRec& c) const {
  auto it = wfs.find(c.wf);
  if (it == wfs.end() || !it->second.graph) return INT32_MAX;
  const program_graph::Workflow& g = *it->second.graph;
  uint32_t best = program_graph::kNeverRuns;
  for (program_graph::NodeIndex i : g.NodesUsingContext(c.name))
    best = std::min(best, g.StepsToExecution(i));
  return best == program_graph::kNeverRuns ? INT32_MAX : static_cast<int>(best);
}

bool CoreState::EvictFor(int w, uint64_t need, const std::vector<std::string>& keep) {
  struct Cand {
    double pri;
    CtxRec* ctx;
  };
  std::vector<Cand> cands;
  // Bytes already on their way out of this HBM (demotions in flight, or deferred until the
  // link budget allows): evicting more for them would only thrash.
  uint64_t leaving = 0;
  for (CtxRec* cp : workers[static_cast<size_t>(w)].resident) {
    const CtxRec& c = *cp;
    if (c.evict_pending) {
      leaving += c.bytes;
      continue;
    }
    if (c.transfer != 0) {
      auto x = xfers.find(c.transfer);
      if (x != xfers.end() && x->second.src.worker == w && x->second.src.tier == Tier::kHbm &&
          !(x->second.dst.tier == Tier::kHbm && x->second.dst.worker == w))
        leaving += c.bytes;
      continue;
    }
    if (c.users > 0 || c.dead) continue;
    if (std::find(keep.begin(), keep.end(), c.key) != keep.end()) continue;  // the node's own
    const WfRec& wf = *c.owner;
    // Its tool is about to start: the tool-wait rule decides then.
    if (wf.admitted_tools > 0) continue;
    bool queued_user = wf.queued_nodes > 0;
    IdleContextInfo info{c.bytes, c.idle_since, Duration::max(), StepsToUse(c)};
    if (c.wait_tool >= 0) {
      const NodeRec& tool = wf.nodes[static_cast<size_t>(c.wait_tool)];
      Duration predicted = durations.Predict(wf.tenant, tool.spec.tool_name(), 0.5,
                                             Millis(tool.spec.hints().expected_duration_ms()));
      info.until_next_use = std::max(Duration(0), predicted - (now - tool.started));
    }
    double pri = policy->EvictionPriority(info);
    // Contexts a queued node is about to use go last (evicting them only thrashes, but
    // two such workflows must not deadlock each other).
    if (queued_user) pri += 1e12;
    cands.push_back({pri, cp});
  }
  if (leaving >= need) return true;  // room is coming: wait for it
  need -= leaving;
  uint64_t evictable = 0;
  for (const Cand& cand : cands) evictable += cand.ctx->bytes;
  if (evictable < need) return false;  // would not make room: do not thrash
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return a.pri != b.pri ? a.pri < b.pri : a.ctx->key < b.ctx->key;
  });
  uint64_t freed = 0;
  for (const Cand& cand : cands) {
    if (freed >= need) break;
    CtxRec& c = *cand.ctx;
    uint64_t bytes = c.bytes;
    std::vector<Duration> q(5, Seconds(1.0));
    DecideWait(c, WaitReason::kEviction, q, Duration::max());
    if (c.loc.tier != Tier::kHbm || c.transfer != 0 || c.evict_pending) freed += bytes;
  }
  return freed >= need;
}

void CoreState::OnEngineStep(WfRec& wf, int idx, int64_t tokens_done) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  int64_t total_prefill = n.recompute_at_place + n.new_tokens - n.new_done;
  int64_t remaining = total_prefill - tokens_done;
  if (remaining <= 0 || !policy->DeadlineAware() || urgent.empty()) return;
  for (const WorkerRec& w : workers)
    if (w.alive && w.running < opt.slots_per_worker) return;  // a slot is free anyway
  auto first = urgent.begin();
  if (policy->SkipHopelessDeadlines()) first = urgent.lower_bound({now, 0, std::string(), 0});
  if (first == urgent.end()) return;
  const auto& [latest, seq, uwf_id, uidx] = *first;
  WfRec& uwf = wfs[uwf_id];
  NodeRec& u = uwf.nodes[static_cast<size_t>(uidx)];
  Duration wait = Duration::max();
  for (const WorkerRec& w : workers)
    for (const auto& [rid, ridx] : w.nodes) {
      const NodeRec& r = wfs[rid].nodes[static_cast<size_t>(ridx)];
      wait = std::min(wait, std::max(Duration(0), r.started + r.est_run - now));
    }
  PreemptionInput in{NodeDeadline(uwf, u) - now - u.est_run, wait, u.est_run};
  Duration left = std::max(Duration(0), n.started + n.est_run - now);
  Time dl = NodeDeadline(wf, n);
  RunningInfo me{remaining, left, dl == Time::Max() ? Duration::max() : dl - now - left,
                 wf.priority};
  if (!policy->ChoosePreemptionVictim(in, {me})) return;
  Emit({.kind = CommandKind::kPreempt,
        .workflow_id = wf.id,
        .node_id = n.spec.id(),
        .worker = n.worker});
  // Keep the prefill progress of the node's own tokens in its context.
  int64_t own =
      std::clamp<int64_t>(tokens_done - n.recompute_at_place, 0, n.new_tokens - n.new_done);
  std::vector<std::string> keys = NodeContexts(wf, n);
  if (!keys.empty() && n.spec.cache_refs(0).mode() != v1::CacheRef::READ && own > 0) {
    CtxRec& c = ctxs[keys[0]];
    uint64_t bytes = static_cast<uint64_t>(own) * BytesPerToken();
    c.tokens += own;
    c.bytes += bytes;
    n.reserved -= std::min(n.reserved, bytes);  // now held by the context itself
    n.new_done += own;
  }
  StopRunning(wf, idx);
  n.resumed = true;
  n.ready_since = now;
  Enqueue(wf, idx);
  Duration slack = dl == Time::Max() ? Duration::max() : dl - now;
  for (const std::string& key : keys) {
    CtxRec& c = ctxs[key];
    if (c.loc.tier == Tier::kHbm && c.users == 0 && c.transfer == 0)
      DecideWait(c, WaitReason::kPreempted, std::vector<Duration>(5, u.est_run), slack);
  }
}

}  // namespace switchyard::scheduler::internal
