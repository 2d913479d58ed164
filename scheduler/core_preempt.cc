// Eviction and preemption: room made in HBM for a placement, engine step reports (growth,
// completion), preemption of running nodes, and a worker's exhausted KV pool.
#include <algorithm>
#include <optional>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler::internal {

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
      Duration predicted = PredictTool(wf, tool, 0.5);
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
    for (const auto& [id, ref] : w.nodes) {
      const NodeRec& r = ref.wf->nodes[static_cast<size_t>(id.second)];
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

void CoreState::PreemptNode(WfRec& wf, int idx, int64_t tokens_done, int64_t out_total,
                            const char* reason) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  Emit({.kind = CommandKind::kPreempt,
        .workflow_id = wf.id,
        .node_id = n.spec.id(),
        .worker = n.worker,
        .reason = reason});
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
    wr.decode_kv_tokens += st.output_done - n.prog_out;
    n.prog_out = st.output_done;
    if (n.builds_prefix) OnPrefixProgress(*wf, idx, st.prefill_done);
    int64_t total_prefill = n.recompute_at_place + n.new_tokens - n.new_done;
    if (st.prefill_done < total_prefill) OnEngineStep(*wf, idx, st.prefill_done);
    MaybeHandOff(*wf, idx, st);
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
    for (const auto& [id, ref] : wr.nodes) {
      const auto& [wf_id, idx] = id;
      const WfRec& wf = *ref.wf;
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
