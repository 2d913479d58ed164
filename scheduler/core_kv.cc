// Decisions about KV (the ledger keeps the facts): tool-wait decisions, transfers (grants,
// commit on completion), prefetch timing and re-evaluation of late tools, worker loss and
// model-epoch invalidation.
#include <algorithm>
#include <optional>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler::internal {

void CoreState::LoadAhead() {
  int limit = policy->LoadAheadSteps();
  if (limit < 0) return;
  struct Cand {
    int steps;
    CtxRec* ctx;
  };
  std::vector<Cand> cands;
  for (int w = 0; w < kv.workers(); ++w)
    for (CtxRec* c : kv.Offloaded(w)) {
      if (c->dead || c->transfer != 0 || c->users > 0) continue;
      int steps = StepsToUse(*c);
      if (steps <= limit) cands.push_back({steps, c});
    }
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return a.steps != b.steps ? a.steps < b.steps : a.ctx->key < b.ctx->key;
  });
  for (const Cand& cand : cands) {
    CtxRec& c = *cand.ctx;
    int home = c.home >= 0 && Placeable(c.home) ? c.home : c.loc.worker;
    if (home < 0 || !Placeable(home)) continue;
    if (kv.Free(home) < c.bytes) return;  // stops at the first that does not fit
    StartTransfer(c, {Tier::kHbm, home}, TrafficClass::kBackground, CommandKind::kPrefetch,
                  Time::Max());
  }
}

Duration CoreState::PredictTool(const WfRec& wf, const NodeRec& tool, double q) const {
  if (const Foresight* f = foresight()) {
    if (std::optional<Duration> d = f->ToolDuration(wf.id, tool.spec.id())) return *d;
  }
  return durations.Predict(wf.tenant, tool.spec.tool_name(), q,
                           Millis(tool.spec.hints().expected_duration_ms()));
}

std::vector<Duration> CoreState::ToolQuantiles(const WfRec& wf, const NodeRec& tool,
                                               Duration elapsed) {
  static constexpr double kQ[] = {0.1, 0.25, 0.5, 0.75, 0.9};
  if (const Foresight* f = foresight()) {  // the oracle: the recorded remaining time
    if (std::optional<Duration> d = f->ToolDuration(wf.id, tool.spec.id()))
      return std::vector<Duration>(std::size(kQ), std::max(Millis(1), *d - elapsed));
  }
  std::vector<Duration> out;
  for (double q : kQ) {
    Duration d = PredictTool(wf, tool, q) - elapsed;
    // Past the learned quantile: a late tool's remaining time grows with what it has
    // already taken.
    if (d <= Millis(1))
      d = std::max(Millis(1),
                   Duration(static_cast<int64_t>(static_cast<double>(elapsed.count()) * q)));
    out.push_back(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void CoreState::OnToolStarted(WfRec& wf, int idx) {
  NodeRec& tool = wf.nodes[static_cast<size_t>(idx)];
  std::vector<Duration> q = ToolQuantiles(wf, tool, Duration(0));
  Duration slack = wf.deadline == Time::Max() ? Duration::max() : wf.deadline - now - q[2];
  for (const std::string& key : wf.contexts) {
    CtxRec& c = kv.At(key);
    if (c.dead || c.users > 0 || c.transfer != 0 || c.loc.tier != Tier::kHbm) continue;
    c.wait_tool = idx;
    c.wait_started = now;
    const int64_t retain_ms = tool.spec.hints().retain_ms();
    c.retain_until = retain_ms > 0 ? now + Millis(retain_ms) : Time{0};
    DecideWait(c, WaitReason::kToolWait, q, slack);
  }
}

WaitInput CoreState::MakeWaitInput(const CtxRec& c, WaitReason reason, std::vector<Duration> q,
                                   Duration slack) {
  int w = c.loc.worker;
  WaitInput in;
  in.reason = reason;
  in.bytes = c.bytes;
  in.tokens = c.tokens;
  double cap = static_cast<double>(std::max<uint64_t>(1, kv.Capacity(w)));
  in.hbm_fraction = static_cast<double>(c.bytes) / cap;
  in.hbm_pressure = Pressure(w);
  in.hbm_occupancy = std::min(1.0, static_cast<double>(kv.Used(w)) / cap);
  in.running_fraction = RunningFraction(w);
  in.queue_delay = queue_delay_ewma;
  in.wait_quantiles = std::move(q);
  in.recompute = CostOf(c.model).PrefillTime(c.tokens, c.prefix_tokens);
  in.slack = slack;
  in.elapsed = c.wait_tool >= 0 ? now - c.wait_started : Duration(0);
  in.step_time = workers[static_cast<size_t>(w)].step_time;
  in.batch_headroom = BatchHeadroom(w);
  in.swap_backlog = SwapBacklog(w);
  in.all_samples = durations.samples();
  if (c.wait_tool >= 0 && c.owner)
    in.tool_samples =
        durations.ToolSamples(c.owner->nodes[static_cast<size_t>(c.wait_tool)].spec.tool_name());
  AddDemotionOptions(c, in);
  return in;
}

void CoreState::AddDemotionOptions(const CtxRec& c, WaitInput& in) {
  int w = c.loc.worker;
  double cap = static_cast<double>(std::max<uint64_t>(1, kv.Capacity(w)));
  Location here{Tier::kHbm, w};
  auto add = [&](Location dst, double dst_pressure, double dst_fraction) {
    TransferEstimate out = planner->Estimate(here, dst, c.bytes, TrafficClass::kBackground);
    TransferEstimate back = planner->Estimate(dst, here, c.bytes, TrafficClass::kBackground);
    if (!out.reachable || !back.reachable) return;
    in.options.push_back({dst, out.duration, back.duration, std::max(out.path_load, back.path_load),
                          dst_pressure, dst_fraction});
  };
  constexpr int kMaxFailedMoves = 3;
  const bool offload = c.failed_moves < kMaxFailedMoves;
  if (offload && opt.use_host && kv.OffloadRoom({Tier::kHost, w}, c.bytes))
    add({Tier::kHost, w}, 0, 0);
  if (offload && opt.use_disk && kv.OffloadRoom({Tier::kDisk, w}, c.bytes))
    add({Tier::kDisk, w}, 0, 0);
  if (!offload || !opt.use_peer) return;
  // The peers with the most free HBM (a few: each option costs two planner estimates, and
  // on a large cluster most peers are alike).
  constexpr size_t kPeerOptions = 4;
  std::vector<std::pair<uint64_t, int>> peers;
  for (int x = 0; x < static_cast<int>(workers.size()); ++x)
    if (x != w && Placeable(x) && Serves(x, c.model) && kv.Free(x) >= c.bytes)
      peers.push_back({kv.Free(x), x});
  size_t k = std::min(kPeerOptions, peers.size());
  std::partial_sort(peers.begin(), peers.begin() + static_cast<std::ptrdiff_t>(k), peers.end(),
                    [](const auto& a, const auto& b) {
                      return a.first != b.first ? a.first > b.first : a.second < b.second;
                    });
  for (size_t i = 0; i < k; ++i)
    add({Tier::kPeer, peers[i].second}, Pressure(peers[i].second),
        static_cast<double>(c.bytes) / cap);
}

void CoreState::DecideWait(CtxRec& c, WaitReason reason, std::vector<Duration> q, Duration slack) {
  int w = c.loc.worker;
  WaitInput in = MakeWaitInput(c, reason, std::move(q), slack);
  WaitDecision d = policy->OnWait(in);
  if (d.action == WaitAction::kDiscard && c.retain_until > now) d = Retained(c, in, reason);
  if (d.action == WaitAction::kDemote) {
    Time prefetch_at = reason == WaitReason::kEviction ? Time::Max() : now + d.prefetch_after;
    c.home = w;
    bool refused_grant = false;
    if (StartTransfer(c, d.dst, TrafficClass::kBackground, CommandKind::kDemote, prefetch_at,
                      &refused_grant)) {
      c.deferrals = 0;
      return;
    }
    if (refused_grant && DeferDemotion(c, reason, in, d)) return;
    in.options.clear();  // no room, or waiting for budget costs more: keep or discard
    d = policy->OnWait(in);
    if (d.action == WaitAction::kDiscard && c.retain_until > now) d = Retained(c, in, reason);
  }
  c.deferrals = 0;
  c.grant_refused_since = Time::Max();  // the move is no longer wanted
  if (d.action == WaitAction::kDiscard) {
    DiscardContext(c, reason == WaitReason::kEviction ? "evicted: " + d.why : d.why);
    return;
  }
  if (reason == WaitReason::kEviction) return;  // nothing freed
  Emit({.kind = CommandKind::kKeep, .workflow_id = c.wf, .context = c.key});
  c.pinned_until = d.pin_for > Duration(0) ? now + d.pin_for : Time{0};
  if (reason == WaitReason::kToolWait || reason == WaitReason::kReevaluate) {
    // If the tool is still out 25% past its predicted p90, look again: a late tool must not
    // strand HBM. A policy may ask to look again sooner (or later).
    Duration after = d.reevaluate_after > Duration(0)
                         ? d.reevaluate_after
                         : std::max(Millis(100), in.wait_quantiles.back() * 5 / 4);
    c.reeval_at = now + after;
    timers.insert({c.reeval_at, TimerKind::kReeval, c.key, -1});
  }
}

// The client asked for the context to be retained (Hints.retain_ms) and the policy would
// drop it: it moves to the reachable tier whose move out is quickest, its reload timed to
// the wait's median; with no tier room it stays where it is, pinned until the retention
// ends — unless HBM must be freed (an eviction), which a retention does not stop.
WaitDecision CoreState::Retained(const CtxRec& c, const WaitInput& in, WaitReason reason) const {
  const WaitOption* best = nullptr;
  for (const WaitOption& o : in.options)
    if (!best || o.out < best->out) best = &o;
  if (best) {
    Duration median = in.wait_quantiles.empty() ? Duration(0) : in.wait_quantiles[2];
    Duration reload_after = std::max(Duration(0), median - best->in);
    return {WaitAction::kDemote, best->dst, reload_after, 0, "retained (client's cache ttl)"};
  }
  if (reason == WaitReason::kEviction)
    return {WaitAction::kDiscard, {}, Duration(0), 0, "no tier room for a retained context"};
  WaitDecision keep{WaitAction::kKeep, {}, Duration(0), 0, "retained (client's cache ttl)"};
  keep.pin_for = c.retain_until - now;
  return keep;
}

bool CoreState::DeferDemotion(CtxRec& c, WaitReason reason, const WaitInput& in,
                              const WaitDecision& d) {
  // The class budget on the path is in debt from earlier moves; it is repaid within about
  // one move's time. Waiting that long still beats discarding when the policy chose to
  // demote over discarding, unless the wait is already over or retries keep failing.
  constexpr int kMaxDeferrals = 50;
  if (c.deferrals >= kMaxDeferrals) return false;
  Duration retry = Millis(1);
  for (const WaitOption& o : in.options)
    if (o.dst == d.dst) retry = std::max(retry, o.out);
  if (reason != WaitReason::kEviction && !in.wait_quantiles.empty() &&
      in.wait_quantiles.front() <= retry * 2)
    return false;  // the tool is likely back before the move could even start
  ++c.deferrals;
  ++deferred_demotions;
  c.evict_pending = reason == WaitReason::kEviction;
  c.reeval_at = now + retry;
  timers.insert({c.reeval_at, TimerKind::kReeval, c.key, -1});
  return true;
}

double CoreState::BatchHeadroom(int w) const {
  // Decode time of one step alone is the weights' read; each running context adds its KV.
  const ComputeCostModel& cost = CostOf(ModelOf(w));
  double weights = ToSeconds(cost.DecodeTime(1, 0));
  if (!(weights > 0)) return -1;
  int64_t tokens = 0;
  const WorkerRec& wr = workers[static_cast<size_t>(w)];
  for (const auto& [id, ref] : wr.nodes) {
    const NodeRec& n = ref.wf->nodes[static_cast<size_t>(id.second)];
    tokens += n.base_tokens + n.new_tokens;
  }
  double kv = ToSeconds(cost.DecodeTime(1, tokens)) - weights;
  return weights / (weights + std::max(0.0, kv));
}

Duration CoreState::SwapBacklog(int w) const {
  uint64_t bytes = kv.BytesLeavingHbm(w);
  if (bytes == 0) return Duration(0);
  TransferEstimate e =
      planner->Estimate({Tier::kHbm, w}, {Tier::kHost, w}, bytes, TrafficClass::kBackground);
  return e.reachable ? e.duration : Duration(0);
}

double CoreState::RunningFraction(int w) const {
  const WorkerRec& wr = workers[static_cast<size_t>(w)];
  uint64_t held = 0;
  for (const auto& [id, ref] : wr.nodes) {
    held += ref.wf->nodes[static_cast<size_t>(id.second)].reserved;
    for (const CtxRec* c : ref.contexts)
      if (c->loc.worker == w && kv.HbmAccounted(c->loc)) held += c->bytes;
  }
  return std::min(
      1.0, static_cast<double>(held) / static_cast<double>(std::max<uint64_t>(1, kv.Capacity(w))));
}

bool CoreState::StartTransfer(CtxRec& c, Location dst, TrafficClass cls, CommandKind kind,
                              Time prefetch_at, bool* refused_grant) {
  if (!kv.HasRoom(dst, c.bytes)) return false;
  Result<Grant> g = grants->Acquire(c.loc, dst, c.bytes, cls, now);
  if (!g.ok()) {
    if (refused_grant) *refused_grant = true;
    if (c.grant_refused_since == Time::Max()) c.grant_refused_since = now;
    return false;
  }
  Duration waited =
      c.grant_refused_since == Time::Max() ? Duration(0) : now - c.grant_refused_since;
  c.grant_refused_since = Time::Max();
  Location src = c.loc;
  uint64_t id = kv.BeginMove(c, dst, g->id);
  Command cmd{.kind = kind,
              .workflow_id = c.wf,
              .context = c.key,
              .src = src,
              .dst = dst,
              .bytes = c.bytes,
              .transfer_id = id,
              .grant = *g,
              .grant_wait = waited};
  if (kind == CommandKind::kDemote && prefetch_at != Time::Max()) {
    cmd.not_before = prefetch_at;
    c.prefetch_at = prefetch_at;
    timers.insert({prefetch_at, TimerKind::kPrefetch, c.key, -1});
  }
  Emit(std::move(cmd));
  return true;
}

void CoreState::OnTransferDone(uint64_t id, bool ok) {
  std::optional<XferRec> x = kv.TakeMove(id);
  if (!x) {
    ++ignored;
    return;
  }
  grants->Release(x->grant);
  CtxRec* moved = kv.SettleMove(*x, ok);
  if (!moved) return;  // failed, dropped, erased
  CtxRec& c = *moved;
  WfRec* wf = FindWf(c.wf);
  bool tool_out = wf && c.wait_tool >= 0 &&
                  wf->nodes[static_cast<size_t>(c.wait_tool)].state == NState::kRunning;
  if (c.loc.tier != Tier::kHbm && c.prefetch_at <= now) {
    OnPrefetchTimer(c);
  } else if (c.loc.tier == Tier::kHbm && tool_out) {
    // A timed reload landed before the tool returned: re-evaluate if it stays out.
    const NodeRec& tool = wf->nodes[static_cast<size_t>(c.wait_tool)];
    std::vector<Duration> q = ToolQuantiles(*wf, tool, now - tool.started);
    c.reeval_at = now + std::max(Millis(100), q.back() * 5 / 4);
    timers.insert({c.reeval_at, TimerKind::kReeval, c.key, -1});
  }
}

void CoreState::DiscardContext(CtxRec& c, const std::string& reason) {
  c.prefetch_at = c.reeval_at = Time::Max();
  std::optional<Location> was = kv.Discard(c);
  if (!was) return;
  Emit({.kind = CommandKind::kDiscard,
        .workflow_id = c.wf,
        .context = c.key,
        .src = *was,
        .transfer_id = c.transfer,
        .reason = reason});
}

void CoreState::OnPrefetchTimer(CtxRec& c) {
  c.prefetch_at = Time::Max();
  if (c.transfer != 0 || c.loc.tier == Tier::kHbm || c.loc.tier == Tier::kNone) return;
  WfRec* wf = FindWf(c.wf);
  if (!wf || c.wait_tool < 0) return;
  if (wf->nodes[static_cast<size_t>(c.wait_tool)].state != NState::kRunning) return;
  int home = c.home >= 0 && Placeable(c.home) ? c.home : c.loc.worker;
  if (home < 0 || !Placeable(home)) return;
  // A timed reload has the first claim on memory over idle contexts used later: without
  // room now it evicts them (farthest next use first), and while the bytes it freed are
  // still leaving it looks again shortly. If there is no room or budget even so, the
  // reload happens on demand when the node is ready.
  if (kv.Free(home) < c.bytes) {
    bool coming = EvictFor(home, c.bytes - kv.Free(home), {c.key});
    if (kv.Free(home) < c.bytes) {
      constexpr int kMaxPrefetchRetries = 20;
      if (coming && c.prefetch_retries++ < kMaxPrefetchRetries) {
        c.prefetch_at = now + Millis(20);
        timers.insert({c.prefetch_at, TimerKind::kPrefetch, c.key, -1});
      }
      return;
    }
  }
  c.prefetch_retries = 0;
  StartTransfer(c, {Tier::kHbm, home}, TrafficClass::kBackground, CommandKind::kPrefetch,
                Time::Max());
}

void CoreState::OnReevalTimer(CtxRec& c) {
  c.reeval_at = Time::Max();
  bool evict = c.evict_pending;
  c.evict_pending = false;
  if (c.users > 0 || c.transfer != 0 || c.loc.tier != Tier::kHbm) {
    c.deferrals = 0;
    c.grant_refused_since = Time::Max();  // the move is no longer wanted
    return;
  }
  if (evict) {
    // A deferred eviction: still wanted while nodes wait for memory.
    if (queued > 0 || workers[static_cast<size_t>(c.loc.worker)].draining)
      DecideWait(c, WaitReason::kEviction, std::vector<Duration>(5, Seconds(1.0)), Duration::max());
    return;
  }
  WfRec* wf = FindWf(c.wf);
  if (!wf || c.wait_tool < 0) return;
  const NodeRec& tool = wf->nodes[static_cast<size_t>(c.wait_tool)];
  if (tool.state != NState::kRunning) return;
  std::vector<Duration> q = ToolQuantiles(*wf, tool, now - tool.started);
  Duration slack = wf->deadline == Time::Max() ? Duration::max() : wf->deadline - now - q[2];
  DecideWait(c, WaitReason::kReevaluate, q, slack);
}

void CoreState::OnWorkerLost(int w) {
  if (w < 0 || w >= static_cast<int>(workers.size()) || !workers[static_cast<size_t>(w)].alive)
    return;
  workers[static_cast<size_t>(w)].alive = false;
  // 1. Transfers touching the lost worker end now; their late completions are ignored.
  for (const XferRec& x : kv.AbortMovesTouching(w)) grants->Release(x.grant);
  // 2. Everything stored on the worker is gone: invalidate it (recompute on next use).
  kv.ForgetPrefixesOn(w);
  std::vector<std::string> lost = kv.ContextsOn(w);
  // 3. Nodes running there failed with a worker-scoped error (ErrorScope::kRemote).
  const std::vector<std::pair<std::string, int>> running =
      workers[static_cast<size_t>(w)].RunningIds();
  for (const auto& [wf_id, idx] : running) StopRunning(wfs[wf_id], idx);
  for (const std::string& key : lost) {
    CtxRec* c = kv.Find(key);
    if (!c) continue;
    DiscardContext(*c, "worker " + std::to_string(w) + " lost");
    kv.EraseIfRetired(*c);
  }
  kv.ClearWorker(w);
  for (const auto& [wf_id, idx] : running) {
    WfRec* wf = FindWf(wf_id);
    if (!wf) continue;
    OnNodeFailed(*wf, idx,
                 Status::Unavailable("worker " + std::to_string(w) + " lost", ErrorScope::kRemote));
  }
}

void CoreState::OnWorkerJoined(int w) {
  if (w < 0 || w >= static_cast<int>(workers.size()) || workers[static_cast<size_t>(w)].alive)
    return;
  // OnWorkerLost left it empty; a new incarnation starts from nothing of the old one's.
  WorkerRec& r = workers[static_cast<size_t>(w)];
  r = WorkerRec{};  // also not draining: a new incarnation is in service
  r.alive = true;
  kv.ResetWorker(w);
}

void CoreState::OnDrain(int w, bool on) {
  if (w < 0 || w >= static_cast<int>(workers.size())) return;
  workers[static_cast<size_t>(w)].draining = on && workers[static_cast<size_t>(w)].alive;
}

void CoreState::DrainStep() {
  for (int w = 0; w < static_cast<int>(workers.size()); ++w) {
    if (!workers[static_cast<size_t>(w)].draining || kv.Resident(w).empty()) continue;
    std::vector<CtxRec*> idle;
    for (CtxRec* c : kv.Resident(w))
      if (c->users == 0 && c->transfer == 0 && !c->evict_pending && !c->dead) idle.push_back(c);
    std::sort(idle.begin(), idle.end(),
              [](const CtxRec* a, const CtxRec* b) { return a->key < b->key; });
    const std::string why = "drained: worker " + std::to_string(w) + " is draining";
    for (CtxRec* c : idle) {
      if (c->loc.worker != w || c->transfer != 0) continue;
      // Its own contexts: the policy's eviction choice (another tier, a peer, discard).
      if (c->loc.tier == Tier::kHbm)
        DecideWait(*c, WaitReason::kEviction, std::vector<Duration>(5, Seconds(1.0)),
                   Duration::max());
      // Kept (the policy's keep frees nothing), or another worker's context demoted here:
      // the bytes must leave, so they are dropped and recomputed when next needed.
      if ((c->loc.tier == Tier::kHbm || c->loc.tier == Tier::kPeer) && c->loc.worker == w &&
          c->transfer == 0 && !c->evict_pending)
        DiscardContext(*c, why);
    }
  }
}

bool CoreState::Drained(int w) const {
  if (w < 0 || w >= static_cast<int>(workers.size())) return false;
  const WorkerRec& r = workers[static_cast<size_t>(w)];
  if (!r.alive || !r.draining || r.running > 0 || !kv.Resident(w).empty()) return false;
  return !kv.MovesTouchHbm(w);
}

void CoreState::OnEpochChanged(const std::string& model, uint64_t epoch) {
  uint64_t& cur = model_epoch[model];
  if (epoch <= cur) return;
  cur = epoch;
  std::vector<std::string> stale = kv.StaleContexts(model, epoch);
  // Running nodes writing a stale context stop at once and start over on the new epoch.
  for (WorkerRec& wr : workers) {
    const std::vector<std::pair<std::string, int>> running = wr.RunningIds();
    for (const auto& [wf_id, idx] : running) {
      WfRec& wf = wfs[wf_id];
      NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
      bool hit = n.spec.model_id() == model;
      // A node of another model reading or extending a stale context stops too: its
      // blocks are about to be dropped.
      for (const std::string& key : NodeContexts(wf, n))
        hit = hit || std::binary_search(stale.begin(), stale.end(), key);
      if (!hit) continue;
      Emit({.kind = CommandKind::kPreempt,
            .workflow_id = wf_id,
            .node_id = n.spec.id(),
            .worker = n.worker});
      StopRunning(wf, idx);
      n.new_done = 0;
      n.ready_since = now;
      Enqueue(wf, idx);
    }
  }
  for (const std::string& key : stale) {
    CtxRec& c = kv.At(key);
    DiscardContext(c,
                   "stale model epoch " + std::to_string(c.epoch) + " < " + std::to_string(epoch));
  }
  for (PrefixRec* p : kv.StalePrefixes(model, epoch))
    DropPrefix(*p, "stale model epoch " + std::to_string(p->epoch) + " < " + std::to_string(epoch));
}

}  // namespace switchyard::scheduler::internal
