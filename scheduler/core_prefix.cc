// Shared prefixes as nodes read and build them (scheduler/README.md "Shared prefixes"). The
// copies themselves (one per tenant prefix and worker, charged once in that worker's HBM and
// referenced by the contexts resident there that start with it) are the KvLedger's.
#include <algorithm>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler::internal {

std::vector<std::pair<std::string, int64_t>> CoreState::NodePrefixes(const WfRec& wf,
                                                                     const NodeRec& n) const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const v1::CacheRef& r : n.spec.cache_refs()) {
    const CtxRec* c = kv.Find(ContextKey(wf.id, r.context()));
    if (!c || c->prefix.empty()) continue;
    bool seen = false;
    for (const auto& [key, tokens] : out) seen = seen || key == c->prefix;
    if (!seen) out.push_back({c->prefix, c->prefix_tokens});
  }
  return out;
}

bool CoreState::PrefixSaves(const WfRec& wf, const NodeRec& n, const std::string& key) const {
  for (const v1::CacheRef& r : n.spec.cache_refs()) {
    std::string ctx = ContextKey(wf.id, r.context());
    const CtxRec* c = kv.Find(ctx);
    if (!c || c->prefix != key) continue;
    if (r.mode() == v1::CacheRef::CREATE && c->tokens == 0) return true;
    if (std::find(n.rebuilding.begin(), n.rebuilding.end(), ctx) != n.rebuilding.end()) return true;
  }
  return false;
}

PrefixRec& CoreState::BuildPrefix(const std::string& key, int64_t tokens, int worker,
                                  const WfRec& wf, int idx, const std::string& model,
                                  uint64_t epoch) {
  PrefixRec& p = kv.AddPrefix(key, tokens, worker, {wf.id, idx}, model, epoch);
  prefix_stats.built_tokens += tokens;
  ++prefix_stats.builds;
  return p;
}

void CoreState::DropPrefix(PrefixRec& p, const std::string& reason) {
  Location at{Tier::kHbm, p.worker};
  Emit({.kind = CommandKind::kDiscard, .context = p.key, .src = at, .reason = reason});
  kv.DropPrefix(p);
}

void CoreState::OnPrefixProgress(WfRec& wf, int idx, int64_t prefill_done) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  if (!n.builds_prefix || prefill_done < n.recompute_at_place) return;
  n.builds_prefix = false;
  for (const auto& [key, tokens] : NodePrefixes(wf, n)) {
    PrefixRec* p = kv.FindPrefix(key, n.worker);
    if (p && p->builder.first == wf.id && p->builder.second == idx) kv.PrefixBuilt(*p);
  }
}

void CoreState::ReleaseNodePrefixes(WfRec& wf, int idx) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  for (const auto& [key, tokens] : NodePrefixes(wf, n)) {
    PrefixRec* p = kv.FindPrefix(key, n.worker);
    if (!p) continue;
    kv.RemovePrefixUser(*p);
    if (p->builder.first == wf.id && p->builder.second == idx) {
      // Stopped before its prefill covered the prefix: the blocks hold part of it.
      DropPrefix(*p, "shared prefix left unfinished");
    }
  }
  n.builds_prefix = false;
}

uint64_t CoreState::EvictIdlePrefixes(int worker, uint64_t need) {
  uint64_t freed = 0;
  for (PrefixRec* p : kv.IdlePrefixesLru(worker)) {
    if (freed >= need) break;
    freed += p->bytes;
    ++prefix_stats.evictions;
    DropPrefix(*p, "evicted: unreferenced shared prefix");
  }
  return freed;
}

}  // namespace switchyard::scheduler::internal
