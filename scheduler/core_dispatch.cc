// Ordering and dispatch: the queue of ready nodes, its keys, and the dispatch loop that
// hands the next node to placement (core_placement.cc).
#include <algorithm>
#include <optional>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler::internal {

std::vector<std::string> CoreState::NodeContexts(const WfRec& wf, const NodeRec& n) const {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(n.spec.cache_refs_size()));
  for (const v1::CacheRef& r : n.spec.cache_refs()) out.push_back(ContextKey(wf.id, r.context()));
  return out;
}

Duration CoreState::EstimateRun(const WfRec& wf, const NodeRec& n) const {
  int64_t total = 0, recompute = 0;
  for (const std::string& key : NodeContexts(wf, n)) {
    const CtxRec* c = kv.Find(key);
    if (!c) continue;
    total += c->tokens;
    if (c->loc.tier == Tier::kNone) recompute += c->tokens;
  }
  for (const auto& [key, tokens] : NodePrefixes(wf, n)) total += tokens;  // read, not computed
  int64_t out = n.spec.hints().max_output_tokens() > 0 ? n.spec.hints().max_output_tokens()
                                                       : opt.default_max_output_tokens;
  if (const Foresight* f = foresight()) out = f->OutputTokens(wf.id, n.spec.id()).value_or(out);
  int64_t fresh = n.new_tokens - n.new_done;
  const ComputeCostModel& cost = CostOf(n.spec.model_id());
  return cost.PrefillTime(recompute + fresh, total - recompute) +
         cost.DecodeTime(out, total + fresh);
}

bool CoreState::ContextsResident(const WfRec& wf, const NodeRec& n) const {
  for (const v1::CacheRef& r : n.spec.cache_refs()) {
    const CtxRec* c = kv.Find(ContextKey(wf.id, r.context()));
    if (!c || c->tokens == 0) continue;
    if (c->loc.tier != Tier::kHbm || c->transfer != 0) return false;
  }
  return true;
}

double CoreState::Pressure(int w) const {
  int alive = 0;
  for (const WorkerRec& r : workers) alive += r.alive ? 1 : 0;
  double share = static_cast<double>(queued_demand) / std::max(1, alive);
  return std::min(1.0, share / static_cast<double>(std::max<uint64_t>(kv.Free(w), 1)));
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
                     n.resumed,
                     now - n.ready_since,
                     wf.waited};
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
  uint64_t bpt = kv.BytesPerToken(n.spec.model_id());
  n.demand = static_cast<uint64_t>(n.new_tokens - n.new_done) * bpt;
  for (const std::string& key : NodeContexts(wf, n)) {
    const CtxRec& c = kv.At(key);
    if (c.loc.tier != Tier::kHbm) n.demand += c.bytes;
  }
  queued_demand += n.demand;
  ++queued;
  if (!rekey_pending && policy->RekeyInterval() > Duration(0)) {
    rekey_pending = true;
    timers.insert({now + policy->RekeyInterval(), TimerKind::kRekey, "", -1});
  }
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
    for (const WorkerRec& w : workers)
      free_slot |= w.alive && !w.draining && w.running < opt.max_num_seqs;
    if (!free_slot) return;
    const QKey* k = PickNext(skipped);
    if (!k) return;
    std::string wf_id = k->wf;
    int idx = k->node;
    if (!TryPlace(wfs[wf_id], idx)) {
      if (policy->HeadOfLineBlocking()) return;
      skipped.insert({wf_id, idx});
    }
  }
}

void CoreState::Rekey() {
  std::vector<std::pair<std::string, int>> all;
  for (const auto& [name, t] : tenants)
    for (const QKey& k : t.ready) all.push_back({k.wf, k.node});
  for (const auto& [wf_id, idx] : all) {
    WfRec& wf = wfs[wf_id];
    Dequeue(wf, idx);
    Enqueue(wf, idx);
  }
}

}  // namespace switchyard::scheduler::internal
