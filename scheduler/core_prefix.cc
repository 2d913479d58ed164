// Shared prefixes: one worker's copy of a tenant's prefix, charged once in that worker's
// HBM and referenced by the contexts resident there that start with it (scheduler/README.md
// "Shared prefixes").
#include <algorithm>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler::internal {

std::vector<std::pair<std::string, int64_t>> CoreState::NodePrefixes(const WfRec& wf,
                                                                     const NodeRec& n) const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const v1::CacheRef& r : n.spec.cache_refs()) {
    auto it = ctxs.find(ContextKey(wf.id, r.context()));
    if (it == ctxs.end() || it->second.prefix.empty()) continue;
    const CtxRec& c = it->second;
    bool seen = false;
    for (const auto& [key, tokens] : out) seen = seen || key == c.prefix;
    if (!seen) out.push_back({c.prefix, c.prefix_tokens});
  }
  return out;
}

bool CoreState::PrefixSaves(const WfRec& wf, const NodeRec& n, const std::string& key) const {
  for (const v1::CacheRef& r : n.spec.cache_refs()) {
    std::string ctx = ContextKey(wf.id, r.context());
    auto it = ctxs.find(ctx);
    if (it == ctxs.end() || it->second.prefix != key) continue;
    if (r.mode() == v1::CacheRef::CREATE && it->second.tokens == 0) return true;
    if (std::find(n.rebuilding.begin(), n.rebuilding.end(), ctx) != n.rebuilding.end()) return true;
  }
  return false;
}

PrefixRec* CoreState::FindPrefix(const std::string& key, int worker) {
  auto it = prefixes.find({key, worker});
  return it == prefixes.end() ? nullptr : &it->second;
}

const PrefixRec* CoreState::ReadyPrefix(const std::string& key, int worker) const {
  auto it = prefixes.find({key, worker});
  if (it == prefixes.end() || it->second.builder.second >= 0) return nullptr;
  return &it->second;
}

bool CoreState::PrefixBuilding(const std::string& key, int worker) const {
  auto it = prefixes.find({key, worker});
  return it != prefixes.end() && it->second.builder.second >= 0;
}

PrefixRec& CoreState::BuildPrefix(const std::string& key, int64_t tokens, int worker,
                                  const WfRec& wf, int idx, const std::string& model,
                                  uint64_t epoch) {
  PrefixRec& p = prefixes[{key, worker}];
  p.key = key;
  p.model = model;
  p.epoch = epoch;
  p.worker = worker;
  p.tokens = tokens;
  p.bytes = BlockBytes(tokens, model);
  p.builder = {wf.id, idx};
  Hold({Tier::kHbm, worker}, static_cast<int64_t>(p.bytes));
  prefix_stats.built_tokens += tokens;
  ++prefix_stats.builds;
  return p;
}

void CoreState::AttachPrefix(CtxRec& c) {
  if (c.prefix.empty()) return;
  int w = c.loc.tier == Tier::kHbm && HbmAccounted(c.loc) ? c.loc.worker : -1;
  if (w == c.prefix_worker) return;
  DetachPrefix(c);
  if (w < 0) return;
  PrefixRec* p = FindPrefix(c.prefix, w);
  if (!p) return;  // not on that worker: the next node there rebuilds it
  p->holders.insert(&c);
  c.prefix_worker = w;
}

void CoreState::DetachPrefix(CtxRec& c) {
  if (c.prefix_worker < 0) return;
  PrefixRec* p = FindPrefix(c.prefix, c.prefix_worker);
  c.prefix_worker = -1;
  if (!p) return;
  p->holders.erase(&c);
  if (p->idle()) {
    p->idle_since = now;
    ++changes;
  }
}

void CoreState::DropPrefix(PrefixRec& p, const std::string& reason) {
  for (CtxRec* h : p.holders) h->prefix_worker = -1;
  Location at{Tier::kHbm, p.worker};
  Hold(at, -static_cast<int64_t>(p.bytes));
  Emit({.kind = CommandKind::kDiscard, .context = p.key, .src = at, .reason = reason});
  ++changes;
  prefixes.erase({p.key, p.worker});
}

void CoreState::OnPrefixProgress(WfRec& wf, int idx, int64_t prefill_done) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  if (!n.builds_prefix || prefill_done < n.recompute_at_place) return;
  n.builds_prefix = false;
  for (const auto& [key, tokens] : NodePrefixes(wf, n)) {
    PrefixRec* p = FindPrefix(key, n.worker);
    if (p && p->builder.first == wf.id && p->builder.second == idx) {
      p->builder = {"", -1};
      ++changes;  // nodes waiting for it may be placed now
    }
  }
}

void CoreState::ReleaseNodePrefixes(WfRec& wf, int idx) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  for (const auto& [key, tokens] : NodePrefixes(wf, n)) {
    PrefixRec* p = FindPrefix(key, n.worker);
    if (!p) continue;
    p->users = std::max(0, p->users - 1);
    if (p->builder.first == wf.id && p->builder.second == idx) {
      // Stopped before its prefill covered the prefix: the blocks hold part of it.
      DropPrefix(*p, "shared prefix left unfinished");
      continue;
    }
    if (p->idle()) p->idle_since = now;
  }
  n.builds_prefix = false;
}

uint64_t CoreState::IdlePrefixBytes(int worker) const {
  uint64_t bytes = 0;
  for (const auto& [id, p] : prefixes)
    if (id.second == worker && p.idle()) bytes += p.bytes;
  return bytes;
}

uint64_t CoreState::EvictIdlePrefixes(int worker, uint64_t need) {
  std::vector<PrefixRec*> idle;
  for (auto& [id, p] : prefixes)
    if (id.second == worker && p.idle()) idle.push_back(&p);
  std::sort(idle.begin(), idle.end(), [](const PrefixRec* a, const PrefixRec* b) {
    return a->idle_since != b->idle_since ? a->idle_since < b->idle_since : a->key < b->key;
  });
  uint64_t freed = 0;
  for (PrefixRec* p : idle) {
    if (freed >= need) break;
    freed += p->bytes;
    ++prefix_stats.evictions;
    DropPrefix(*p, "evicted: unreferenced shared prefix");
  }
  return freed;
}

}  // namespace switchyard::scheduler::internal
