// Admission against HBM and placement with KV locality: which worker a node runs on, what
// of its contexts must be read back first, and starting or stopping it there.
#include <algorithm>
#include <cassert>
#include <optional>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler::internal {

double CoreState::LoadedDecodeSeconds(const NodeRec& n, int w, int64_t kv_tokens,
                                      int64_t other_seqs) const {
  auto mean = output_mean.find(n.spec.model_id());
  if (mean == output_mean.end()) return 0;  // nothing learned yet: locality decides
  const WorkerRec& wr = workers[static_cast<size_t>(w)];
#ifndef NDEBUG  // the running sum matches its definition (every test checks it)
  int64_t sum = 0;
  for (const auto& [id, ref] : wr.nodes) sum += DecodeKvTokens(ref.wf->nodes[size_t(id.second)]);
  assert(sum == wr.decode_kv_tokens);
#endif
  kv_tokens += wr.decode_kv_tokens;
  // One step of the batch (its running calls, other clients' and this one): on a GPU the
  // weights read once and every sequence's KV read; an engine that pays per sequence
  // prices that too (ComputeCostModel::BatchStepTime).
  const Duration step =
      CostOf(n.spec.model_id()).BatchStepTime(wr.running + other_seqs + 1, kv_tokens);
  return mean->second * ToSeconds(step);
}

bool CoreState::Movable(const Location& from, int w) const {
  return opt.kv_between_workers || from.worker == w;
}

const ReportedLoad* CoreState::FreshReport(int w) const {
  const WorkerRec& wr = workers[static_cast<size_t>(w)];
  if (wr.reported_at.ns < 0 || now - wr.reported_at > opt.reported_load_ttl) return nullptr;
  return &wr.reported;
}

double CoreState::LoadSeconds(const NodeRec& n, int w, int64_t kv_tokens) const {
  const ReportedLoad* r = FreshReport(w);
  if (!r) return LoadedDecodeSeconds(n, w, kv_tokens);
  const WorkerRec& wr = workers[static_cast<size_t>(w)];
  int64_t others = 0;  // the reported batch's KV beyond what the core runs there
  const int64_t other_seqs =
      std::max<int64_t>(0, static_cast<int64_t>(r->running) - static_cast<int64_t>(wr.running));
  if (r->kv_usage > 0) {
    const uint64_t bpt = std::max<uint64_t>(1, kv.BytesPerToken(n.spec.model_id()));
    const auto reported = static_cast<int64_t>(std::min(r->kv_usage, 1.0) *
                                               static_cast<double>(kv.Capacity(w)) / double(bpt));
    others = std::max<int64_t>(0, reported - wr.decode_kv_tokens);
  } else if (r->running > wr.running) {
    // No KV share reported: the other clients' requests count as large as the calls the
    // core runs there (or as this one, when it runs none).
    const double each =
        wr.running > 0 ? double(wr.decode_kv_tokens) / wr.running : static_cast<double>(kv_tokens);
    others = static_cast<int64_t>((r->running - wr.running) * each);
  }
  const double decode = LoadedDecodeSeconds(n, w, kv_tokens + others, other_seqs);
  if (r->waiting <= 0) return decode;
  const double slots = std::max({1.0, r->running, static_cast<double>(wr.running)});
  return decode * (1.0 + r->waiting / slots);
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
  if (std::optional<bool> routed = RouteToPrefill(wf, idx, growth, keys, prefixes_read))
    return *routed;
  for (int w = 0; w < static_cast<int>(workers.size()); ++w) {
    if (!Serves(w, model) || PrefillOnly(w)) continue;
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
    if (c.loc.tier == Tier::kNone || !Movable(c.loc, w)) {
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
    fit.cost_s += lw * LoadSeconds(n, w, kv_tokens);
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
    if (e.reachable && e.duration < rc && Movable(c.loc, w)) {
      const Location src = c.loc;
      if (StartTransfer(c, dst, TrafficClass::kLatency, CommandKind::kPrefetch, Time::Max()))
        CountHandOffMove(n, src, c.bytes, true);
      waiting = true;  // placed when the move commits (or retried if no grant yet)
    } else {
      CountHandOffMove(n, c.loc, c.bytes, false);
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
    c.retain_until = Time{0};
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
  RunningRef& ref = wr.nodes[{wf.id, idx}];
  ref.wf = &wf;
  ref.contexts.clear();
  for (const std::string& key : keys) ref.contexts.push_back(&kv.At(key));
  wr.decode_kv_tokens += DecodeKvTokens(n);
  if (n.attempts == 0) {
    ++pd_stats.calls;
    if (n.pd == PdPhase::kPrefill) ++pd_stats.disaggregated;
  }
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
  wr.decode_kv_tokens -= DecodeKvTokens(n);
  wr.nodes.erase({wf.id, idx});
  n.reserved = 0;
  ReleaseNodePrefixes(wf, idx);
  n.worker = -1;
  ++changes;
  for (const std::string& key : NodeContexts(wf, n))
    if (CtxRec* c = kv.Find(key)) kv.RemoveUser(*c);
}

}  // namespace switchyard::scheduler::internal
