// Ordering, admission against HBM, placement with KV locality, eviction and preemption.
#include <algorithm>
#include <optional>

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
    const CtxRec* c = kv.Find(key);
    if (!c) continue;
    total += c->tokens;
    if (c->loc.tier == Tier::kNone) recompute += c->tokens;
  }
  for (const auto& [key, tokens] : NodePrefixes(wf, n)) total += tokens;  // read, not computed
  int64_t out = n.spec.hints().max_output_tokens() > 0 ? n.spec.hints().max_output_tokens()
                                                       : opt.default_max_output_tokens;
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

double CoreState::LoadedDecodeSeconds(const NodeRec& n, int w, int64_t kv_tokens) const {
  auto mean = output_mean.find(n.spec.model_id());
  if (mean == output_mean.end()) return 0;  // nothing learned yet: locality decides
  const WorkerRec& wr = workers[static_cast<size_t>(w)];
  for (const auto& [wf_id, idx] : wr.nodes) {
    auto it = wfs.find(wf_id);
    if (it == wfs.end()) continue;
    const WfRec& other = it->second;
    const NodeRec& r = other.nodes[static_cast<size_t>(idx)];
    kv_tokens += r.base_tokens + r.new_tokens - r.new_done + r.prog_out;  // its primary's KV
  }
  // One step of the batch: the weights read once, every sequence's KV read.
  const Duration step = CostOf(n.spec.model_id()).DecodeTime(1, kv_tokens);
  return mean->second * ToSeconds(step);
}

void CoreState::CutToKept(WfRec& wf, NodeRec& n, int worker) {
  if (n.keep_tokens <= 0 || n.new_done > 0 || n.out_done > 0 || !ExtendsPrimary(n)) return;
  CtxRec* found = kv.Find(ContextKey(wf.id, n.spec.cache_refs(0).context()));
  if (!found) return;
  CtxRec& c = *found;
  if (c.tokens <= n.keep_tokens || c.transfer != 0 || c.users > 0 || c.prefix_tokens > 0) return;
  const bool dropped = c.loc.tier == Tier::kNone;
  const bool resident = worker >= 0 && c.loc.tier == Tier::kHbm && c.loc.worker == worker;
  if (!dropped && !resident) return;  // cut once it is back in HBM
  kv.Truncate(c, n.keep_tokens, resident);
}

bool CoreState::TryPlace(WfRec& wf, int idx) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  std::vector<std::string> keys = NodeContexts(wf, n);
  for (const std::string& key : keys) {
    const CtxRec& c = kv.At(key);
    if (c.transfer != 0 || c.users > 0) return false;  // not committed / being written
  }
  CutToKept(wf, n, -1);  // a discarded context is rebuilt only up to what the node keeps
  // Admission by free KV blocks: the prefill's blocks now (the engine allocates them at
  // admission), the decode's as it goes; the watermark keeps room for running decodes.
  uint64_t growth = Growth(wf, n, n.out_done);
  const std::string& model = n.spec.model_id();
  int best = -1, any = -1;
  uint64_t cap = 0;  // the largest KV capacity of a worker of the node's model
  double best_cost = 0, any_cost = 0;
  uint64_t any_need = 0;
  const std::vector<std::pair<std::string, int64_t>> prefixes_read = NodePrefixes(wf, n);
  for (int w = 0; w < static_cast<int>(workers.size()); ++w) {
    if (!Serves(w, model)) continue;
    cap = std::max(cap, kv.Capacity(w));
    std::optional<WorkerFit> fit = FitOn(n, w, growth, keys, prefixes_read);
    if (!fit) continue;
    if (any < 0 || fit->cost_s < any_cost) any = w, any_cost = fit->cost_s, any_need = fit->need;
    if (kv.Free(w) >= fit->need && (best < 0 || fit->cost_s < best_cost))
      best = w, best_cost = fit->cost_s;
  }
  if (best < 0) {
    // The node's prefill with all its contexts and one block to decode into on one worker
    // (the output cap is not required to fit: most calls end well before it).
    uint64_t whole = growth + kv.BlockBytes(1, model);
    for (const std::string& key : keys) whole += kv.At(key).bytes;
    for (const auto& [pkey, ptokens] : prefixes_read) whole += kv.BlockBytes(ptokens, model);
    return NoRoom(wf, idx, keys, whole, cap, any, any_need);
  }
  std::optional<int64_t> recompute = ReadyContexts(n, best, keys);
  if (!recompute) return false;  // placed when the moves commit (or retried if no grant yet)
  Place(wf, idx, best, *recompute);
  return true;
}

std::optional<CoreState::WorkerFit> CoreState::FitOn(
    const NodeRec& n, int w, uint64_t growth, const std::vector<std::string>& keys,
    const std::vector<std::pair<std::string, int64_t>>& prefixes_read) {
  const WorkerRec& wr = workers[static_cast<size_t>(w)];
  if (!wr.alive || wr.draining || wr.running >= opt.max_num_seqs) return std::nullopt;
  const std::string& model = n.spec.model_id();
  const ComputeCostModel& cost = CostOf(model);
  uint64_t watermark =
      static_cast<uint64_t>(opt.admission_watermark * static_cast<double>(kv.Capacity(w)));
  WorkerFit fit;
  fit.need = growth + (wr.running > 0 ? watermark : 0);
  // A shared prefix resident here costs nothing; one still being computed here cannot be
  // read yet; one absent is computed by this node (its blocks and its prefill).
  bool building = false;
  for (const auto& [pkey, ptokens] : prefixes_read) {
    if (kv.PrefixBuilding(pkey, w)) building = true;
    if (kv.FindPrefix(pkey, w)) continue;
    fit.need += kv.BlockBytes(ptokens, model);
    fit.cost_s += ToSeconds(cost.PrefillTime(ptokens, 0));
  }
  if (building) return std::nullopt;
  for (const std::string& key : keys) {
    const CtxRec& c = kv.At(key);
    if (c.tokens == 0 || (c.loc.worker == w && c.loc.tier != Tier::kHost &&
                          c.loc.tier != Tier::kDisk && c.loc.tier != Tier::kNone))
      continue;
    fit.need += c.bytes;
    double rc = ToSeconds(cost.PrefillTime(c.tokens, 0));
    if (c.loc.tier == Tier::kNone) {
      fit.cost_s += rc;
    } else {
      TransferEstimate e =
          planner->Estimate(c.loc, {Tier::kHbm, w}, c.bytes, TrafficClass::kLatency);
      fit.cost_s += e.reachable ? std::min(rc, ToSeconds(e.duration)) : rc;
    }
  }
  if (const double lw = policy->PlacementLoadWeight(); lw > 0) {
    int64_t kv_tokens = n.new_tokens - n.new_done;
    for (const std::string& key : keys) kv_tokens += kv.At(key).tokens;
    fit.cost_s += lw * LoadedDecodeSeconds(n, w, kv_tokens);
  }
  fit.cost_s += 1e-9 * wr.running;  // locality first, then the less loaded worker
  return fit;
}

bool CoreState::NoRoom(WfRec& wf, int idx, const std::vector<std::string>& keys, uint64_t whole,
                       uint64_t cap, int any, uint64_t any_need) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  if (cap == 0) {  // no worker runs its model (the service refuses such nodes first)
    Dequeue(wf, idx);
    FailNode(wf, idx,
             "node '" + n.spec.id() + "': no worker runs model '" + n.spec.model_id() + "'");
    return false;
  }
  if (whole > cap) {
    Dequeue(wf, idx);
    FailNode(wf, idx,
             "node '" + n.spec.id() + "' needs " + std::to_string(whole) +
                 " bytes of HBM, more than a worker's capacity of " + std::to_string(cap));
    return false;
  }
  // Discards free HBM at once: try again now (no later event may come to trigger it).
  if (any >= 0 && any_need > kv.Free(any) && EvictFor(any, any_need - kv.Free(any), keys) &&
      any_need <= kv.Free(any))
    return TryPlace(wf, idx);
  return false;
}

std::optional<int64_t> CoreState::ReadyContexts(const NodeRec& n, int w,
                                                const std::vector<std::string>& keys) {
  const ComputeCostModel& cost = CostOf(n.spec.model_id());
  int64_t recompute = 0;
  bool waiting = false;
  for (const std::string& key : keys) {
    CtxRec& c = kv.At(key);
    if (c.tokens == 0) continue;
    if (c.loc.worker == w && (c.loc.tier == Tier::kHbm || c.loc.tier == Tier::kPeer)) continue;
    if (c.loc.tier == Tier::kNone) {
      recompute += c.tokens;
      continue;
    }
    Location dst{Tier::kHbm, w};
    TransferEstimate e = planner->Estimate(c.loc, dst, c.bytes, TrafficClass::kLatency);
    Duration rc = cost.PrefillTime(c.tokens, 0);
    if (e.reachable && e.duration < rc) {
      StartTransfer(c, dst, TrafficClass::kLatency, CommandKind::kPrefetch, Time::Max());
      waiting = true;  // placed when the move commits (or retried if no grant yet)
    } else {
      DiscardContext(c, "recompute cheaper than moving");
      recompute += c.tokens;
    }
  }
  if (waiting) return std::nullopt;
  return recompute;
}

void CoreState::Place(WfRec& wf, int idx, int w, int64_t recompute) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  n.est_run = EstimateRun(wf, n);
  // Recent queueing delay (EWMA over ~20 placements).
  queue_delay_ewma += (now - n.ready_since - queue_delay_ewma) / 20;
  wf.waited += now - n.ready_since;
  Dequeue(wf, idx);
  uint64_t epoch = std::max(model_epoch[n.spec.model_id()], n.spec.model_epoch());
  CutToKept(wf, n, w);  // in the same event as the kPlace the engine admits it by
  n.rebuilding.clear();
  for (const std::string& key : NodeContexts(wf, n)) {
    CtxRec& c = kv.At(key);
    if (c.loc.tier == Tier::kNone && c.tokens > 0) n.rebuilding.push_back(key);
    if (c.loc.tier == Tier::kNone || c.loc.tier == Tier::kPeer || c.tokens == 0)
      kv.CommitInHbm(c, w);
    if (c.model.empty()) c.model = n.spec.model_id();
    if (c.loc.tier == Tier::kHbm && c.tokens == 0) c.epoch = epoch;
    if (recompute > 0) c.epoch = epoch;
    kv.AddUser(c);
    c.prefetch_at = c.reeval_at = Time::Max();
    c.wait_tool = -1;
    c.deferrals = 0;
    c.grant_refused_since = Time::Max();  // the move is no longer wanted
    c.evict_pending = false;
  }
  recompute += ReadPrefixes(wf, idx, w, epoch);
  std::vector<std::string> keys = NodeContexts(wf, n);
  for (const std::string& key : keys) kv.AttachPrefix(kv.At(key));
  n.base_tokens = !keys.empty() && ExtendsPrimary(n) ? kv.At(keys[0]).tokens : 0;
  n.prog_prefill = 0;
  n.prog_out = n.out_done;
  n.reserved = Growth(wf, n, n.out_done);
  n.place_seq = next_seq++;
  WorkerRec& wr = workers[static_cast<size_t>(w)];
  kv.Reserve(w, n.reserved);
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
        .prefill_done = n.new_done,
        .output_done = n.out_done});
}

int64_t CoreState::ReadPrefixes(WfRec& wf, int idx, int w, uint64_t epoch) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  // The shared prefixes it reads: found resident here (not prefilled), or computed by this
  // node first, as part of what it recomputes.
  int64_t recompute = 0;
  n.prefix_hit = 0;
  n.builds_prefix = false;
  for (const auto& [pkey, ptokens] : NodePrefixes(wf, n)) {
    PrefixRec* p = kv.FindPrefix(pkey, w);
    if (p) {
      n.prefix_hit += ptokens;
      ++prefix_stats.reads;
      // Saved: what the node would have prefilled were the prefix part of its context (it
      // creates the context, or rebuilds a discarded one). A context that kept its blocks
      // would not have computed it again anyway.
      if (PrefixSaves(wf, n, pkey)) {
        prefix_stats.hit_tokens += ptokens;
        ++prefix_stats.hits;
      }
    } else {
      p = &BuildPrefix(pkey, ptokens, w, wf, idx, n.spec.model_id(), epoch);
      recompute += ptokens;
      n.builds_prefix = true;
    }
    kv.AddPrefixUser(*p);
  }
  return recompute;
}

void CoreState::StopRunning(WfRec& wf, int idx) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  if (n.worker < 0) return;
  WorkerRec& wr = workers[static_cast<size_t>(n.worker)];
  kv.Unreserve(n.worker, n.reserved);
  wr.running--;
  wr.nodes.erase({wf.id, idx});
  n.reserved = 0;
  ReleaseNodePrefixes(wf, idx);
  n.worker = -1;
  ++changes;
  for (const std::string& key : NodeContexts(wf, n))
    if (CtxRec* c = kv.Find(key)) kv.RemoveUser(*c);
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
  KvLedger::EvictionView view = kv.EvictionCandidates(w, keep);
  uint64_t leaving = view.leaving;
  for (CtxRec* cp : view.idle) {
    const CtxRec& c = *cp;
    const WfRec& wf = *c.owner;
    // Its tool is about to start: the tool-wait rule decides then.
    if (wf.admitted_tools > 0) continue;
    bool queued_user = wf.queued_nodes > 0;
    int steps = StepsToUse(c);
    IdleContextInfo info{c.bytes,
                         c.idle_since,
                         Duration::max(),
                         steps,
                         c.pinned_until > now,
                         steps == INT32_MAX && !wf.contexts.empty() && wf.contexts.back() != c.key};
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
  uint64_t evictable = kv.IdlePrefixBytes(w);
  for (const Cand& cand : cands) evictable += cand.ctx->bytes;
  if (evictable < need) return false;  // would not make room: do not thrash
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return a.pri != b.pri ? a.pri < b.pri : a.ctx->key < b.ctx->key;
  });
  // Shared prefixes no context references go first (like vLLM's free cached blocks): they
  // are only a cache, recomputed by the next node that needs them.
  uint64_t freed = EvictIdlePrefixes(w, need);
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

uint64_t CoreState::Growth(const WfRec& wf, const NodeRec& n, int64_t out_total) const {
  int64_t base = 0;
  if (ExtendsPrimary(n)) {
    const CtxRec* c = kv.Find(ContextKey(wf.id, n.spec.cache_refs(0).context()));
    base = c ? c->tokens : 0;
  }
  return GrowthFrom(n, base, out_total);
}

uint64_t CoreState::GrowthFrom(const NodeRec& n, int64_t base, int64_t out_total) const {
  int64_t own = n.new_tokens - n.new_done + std::max<int64_t>(0, out_total - n.out_done);
  const std::string& model = n.spec.model_id();
  if (!ExtendsPrimary(n)) return kv.BlockBytes(own, model);
  return kv.BlockBytes(base + own, model) - kv.BlockBytes(base, model);
}

void CoreState::OnEngineStep(WfRec& wf, int idx, int64_t tokens_done) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  int64_t total_prefill = n.recompute_at_place + n.new_tokens - n.new_done;
  int64_t remaining = total_prefill - tokens_done;
  if (remaining <= 0 || !policy->DeadlineAware() || urgent.empty()) return;
  auto first = urgent.begin();
  if (policy->SkipHopelessDeadlines()) first = urgent.lower_bound({now, 0, std::string(), 0});
  if (first == urgent.end()) return;
  const auto& [latest, seq, uwf_id, uidx] = *first;
  WfRec& uwf = wfs[uwf_id];
  NodeRec& u = uwf.nodes[static_cast<size_t>(uidx)];
  // Preempt only for a node that cannot be admitted anywhere now (no free sequence or not
  // enough free KV): otherwise it runs beside the prefill in the same batch.
  uint64_t u_need = Growth(uwf, u, u.out_done);
  for (const std::string& key : NodeContexts(uwf, u)) {
    const CtxRec* c = kv.Find(key);
    if (c && c->loc.tier != Tier::kHbm) u_need += c->bytes;
  }
  for (size_t w = 0; w < workers.size(); ++w)
    if (Placeable(static_cast<int>(w)) && workers[w].running < opt.max_num_seqs &&
        kv.Free(static_cast<int>(w)) >= u_need)
      return;
  Duration wait = Duration::max();
  for (const WorkerRec& w : workers)
    for (const auto& [rid, ridx] : w.nodes) {
      const NodeRec& r = wfs[rid].nodes[static_cast<size_t>(ridx)];
      wait = std::min(wait, std::max(Duration(0), r.started + r.est_run - now));
    }
  PreemptionInput in{NodeDeadline(uwf, u) - now - u.est_run, wait, u.est_run};
  Duration left = std::max(Duration(0), n.started + n.est_run - now);
  Time dl = NodeDeadline(wf, n);
  // A preemption before the rebuild completes drops the partly rebuilt context
  // (PreemptNode).
  int64_t lost = n.recompute_at_place > 0 && tokens_done < n.recompute_at_place ? tokens_done : 0;
  RunningInfo me{remaining, lost, left, dl == Time::Max() ? Duration::max() : dl - now - left,
                 wf.priority};
  if (!policy->ChoosePreemptionVictim(in, {me})) return;
  std::vector<std::string> keys = NodeContexts(wf, n);
  PreemptNode(wf, idx, tokens_done, n.prog_out);
  Duration slack = dl == Time::Max() ? Duration::max() : dl - now;
  for (const std::string& key : keys) {
    CtxRec& c = kv.At(key);
    if (c.loc.tier == Tier::kHbm && c.users == 0 && c.transfer == 0)
      DecideWait(c, WaitReason::kPreempted, std::vector<Duration>(5, u.est_run), slack);
  }
}

void CoreState::PreemptNode(WfRec& wf, int idx, int64_t tokens_done, int64_t out_total) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  Emit({.kind = CommandKind::kPreempt,
        .workflow_id = wf.id,
        .node_id = n.spec.id(),
        .worker = n.worker});
  std::vector<std::string> keys = NodeContexts(wf, n);
  int64_t recompute = n.recompute_at_place;
  bool extends = !keys.empty() && ExtendsPrimary(n);
  // Keep the KV the node computed for its own tokens (and the output decoded so far, which
  // a resumed node reads as part of its context, as vLLM's resumed requests do).
  int64_t own = std::clamp<int64_t>(tokens_done - recompute, 0, n.new_tokens - n.new_done);
  int64_t decoded = std::max<int64_t>(0, out_total - n.out_done);
  if (own < n.new_tokens - n.new_done) decoded = 0;  // decode starts after the prefill
  OnPrefixProgress(wf, idx, tokens_done);            // a copy it completed stays
  StopRunning(wf, idx);
  if (extends && (own > 0 || decoded > 0)) {
    kv.Grow(kv.At(keys[0]), own + decoded, true);
    n.new_done += own;
    n.out_done += decoded;
  }
  // Stopped part-way through rebuilding a discarded context: the blocks hold a partial
  // context, so it is dropped and the next placement is charged the whole recompute.
  if (recompute > 0 && tokens_done < recompute) {
    for (const std::string& key : keys) {
      CtxRec& c = kv.At(key);
      bool rebuilt = std::find(n.rebuilding.begin(), n.rebuilding.end(), key) != n.rebuilding.end();
      if (rebuilt && c.loc.tier == Tier::kHbm && c.transfer == 0 && c.users == 0)
        DiscardContext(c, "preempted while recomputing");
    }
  }
  n.resumed = true;
  n.ready_since = now;
  Enqueue(wf, idx);
}

void CoreState::OnEngineReport(const Event& e) {
  if (e.worker < 0 || e.worker >= static_cast<int>(workers.size())) {
    ++ignored;
    return;
  }
  WorkerRec& wr = workers[static_cast<size_t>(e.worker)];
  if (e.model_time > Duration(0) && !e.steps.empty()) wr.step_time = e.model_time;
  for (const SeqStep& st : e.steps) {
    WfRec* wf = FindWf(st.workflow_id);
    if (!wf) continue;
    std::optional<program_graph::NodeIndex> found = wf->graph->Find(st.node_id);
    if (!found) continue;
    int idx = static_cast<int>(*found);
    NodeRec& n = wf->nodes[static_cast<size_t>(idx)];
    if (n.state != NState::kRunning || n.worker != e.worker) continue;
    // The primary context's tokens as placed: they do not change while the node runs, so
    // no context lookup per step.
    uint64_t res = GrowthFrom(n, n.base_tokens, st.output_done);
    kv.Unreserve(e.worker, n.reserved);
    kv.Reserve(e.worker, res);
    n.reserved = res;
    n.prog_prefill = st.prefill_done;
    n.prog_out = st.output_done;
    if (n.builds_prefix) OnPrefixProgress(*wf, idx, st.prefill_done);
    int64_t total_prefill = n.recompute_at_place + n.new_tokens - n.new_done;
    if (st.prefill_done < total_prefill) OnEngineStep(*wf, idx, st.prefill_done);
  }
  if (!e.exhausted.empty()) OnPoolExhausted(e.worker, e.exhausted.size());
}

void CoreState::OnPoolExhausted(int w, size_t needing) {
  WorkerRec& wr = workers[static_cast<size_t>(w)];
  uint64_t need = static_cast<uint64_t>(needing) * kv.BlockBytes(1, ModelOf(w));
  if (kv.Free(w) >= need) return;  // freed since the step (a later event got here first)
  // Idle contexts go first (vLLM reuses its cached free blocks before preempting)...
  if (EvictFor(w, need - kv.Free(w), {})) return;
  // ...then running nodes, the policy choosing each victim.
  uint64_t leaving = 0;  // demoted victims' bytes, freed when their moves commit
  while (kv.Free(w) + leaving < need && !wr.nodes.empty()) {
    std::vector<PoolVictimInfo> infos;
    std::vector<std::pair<std::string, int>> ids;
    for (const auto& [wf_id, idx] : wr.nodes) {
      const WfRec& wf = wfs[wf_id];
      const NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
      Time dl = NodeDeadline(wf, n);
      infos.push_back({n.place_seq, wf.arrival, n.ready_since, dl, wf.priority, wf.atlas,
                       n.reserved, now - n.started});
      ids.push_back({wf_id, idx});
    }
    size_t v = std::min(policy->ChoosePoolVictim(infos), infos.size() - 1);
    auto [wf_id, idx] = ids[v];
    WfRec& wf = wfs[wf_id];
    NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
    std::vector<std::string> keys = NodeContexts(wf, n);
    Time dl = NodeDeadline(wf, n);
    if (wr.nodes.size() == 1) {
      // Alone on the worker with nothing left to evict: it can never get its next block.
      Emit({.kind = CommandKind::kPreempt,
            .workflow_id = wf.id,
            .node_id = n.spec.id(),
            .worker = n.worker});
      StopRunning(wf, idx);
      FailNode(wf, idx,
               "node '" + n.spec.id() + "' needs more KV than a worker's pool holds (" +
                   std::to_string(kv.Capacity(w)) + " bytes) after " + std::to_string(n.prog_out) +
                   " output tokens");
      return;
    }
    ++pool_preemptions;
    PreemptNode(wf, idx, n.prog_prefill, n.prog_out);
    Duration slack = dl == Time::Max() ? Duration::max() : dl - now;
    for (const std::string& key : keys) {
      CtxRec& c = kv.At(key);
      if (c.loc.tier != Tier::kHbm || c.users > 0 || c.transfer != 0) continue;
      DecideWait(c, WaitReason::kPreempted, std::vector<Duration>(5, n.est_run), slack);
      // The pool must shrink now: a victim whose KV the policy would keep is dropped.
      if (c.loc.tier == Tier::kHbm && c.transfer == 0 && !c.evict_pending) {
        DiscardContext(c, "pool exhausted");
      } else if (c.loc.tier == Tier::kHbm) {
        leaving += c.bytes;
      }
    }
  }
}

}  // namespace switchyard::scheduler::internal
