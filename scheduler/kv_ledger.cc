// KvLedger: contexts, their locations, moves in flight, shared-prefix copies and each
// worker's KV room (scheduler/internal/kv_ledger.h).
#include "scheduler/internal/kv_ledger.h"

#include <algorithm>

namespace switchyard::scheduler::internal {

KvLedger::KvLedger(const CoreOptions& options, const ComputeCostModel* cost, size_t workers)
    : host_capacity_(options.host_bytes_per_worker),
      disk_capacity_(options.disk_bytes_per_worker),
      block_tokens_(options.kv_block_tokens),
      model_costs_(options.model_costs),
      cost_(cost),
      workers_(workers) {
  hbm_capacity_.reserve(workers);
  for (size_t w = 0; w < workers; ++w)
    hbm_capacity_.push_back(options.worker_hbm_bytes.empty() ? options.hbm_bytes_per_worker
                                                             : options.worker_hbm_bytes[w]);
}

uint64_t KvLedger::BytesPerToken(const std::string& model) const {
  auto it = model_costs_.find(model);
  const ComputeCostModel& cost = it == model_costs_.end() || !it->second ? *cost_ : *it->second;
  return cost.KvBytesPerToken();
}

// --- room ---

bool KvLedger::OffloadRoom(const Location& l, uint64_t bytes) const {
  if (l.worker < 0 || l.worker >= workers()) return true;
  const WorkerKv& w = workers_[static_cast<size_t>(l.worker)];
  if (l.tier == Tier::kHost && host_capacity_ > 0) return w.host_used + bytes <= host_capacity_;
  if (l.tier == Tier::kDisk && disk_capacity_ > 0) return w.disk_used + bytes <= disk_capacity_;
  return true;
}

void KvLedger::Hold(const Location& l, int64_t delta) {
  if (l.worker < 0 || l.worker >= workers()) return;
  WorkerKv& w = workers_[static_cast<size_t>(l.worker)];
  uint64_t* used = HbmAccounted(l)         ? &w.used
                   : l.tier == Tier::kHost ? &w.host_used
                   : l.tier == Tier::kDisk ? &w.disk_used
                                           : nullptr;
  if (!used) return;
  if (delta < 0) {
    *used -= std::min(*used, static_cast<uint64_t>(-delta));
  } else {
    *used += static_cast<uint64_t>(delta);
  }
}

// --- contexts ---

CtxRec* KvLedger::Find(const std::string& key) {
  auto it = ctxs_.find(key);
  return it == ctxs_.end() ? nullptr : &it->second;
}

const CtxRec* KvLedger::Find(const std::string& key) const {
  auto it = ctxs_.find(key);
  return it == ctxs_.end() ? nullptr : &it->second;
}

CtxRec& KvLedger::Create(const std::string& key) {
  CtxRec& c = ctxs_[key];
  c.key = key;
  return c;
}

void KvLedger::SetLoc(CtxRec& c, const Location& l) {
  auto offload_tier = [&](const Location& x) {
    return (x.tier == Tier::kHost || x.tier == Tier::kDisk) && x.worker >= 0 &&
           x.worker < workers();
  };
  if (HbmAccounted(c.loc)) workers_[static_cast<size_t>(c.loc.worker)].resident.erase(&c);
  if (offload_tier(c.loc)) workers_[static_cast<size_t>(c.loc.worker)].offloaded.erase(&c);
  c.loc = l;
  if (HbmAccounted(l)) workers_[static_cast<size_t>(l.worker)].resident.insert(&c);
  if (offload_tier(l)) workers_[static_cast<size_t>(l.worker)].offloaded.insert(&c);
  AttachPrefix(c);  // a context references its prefix's copy where its HBM blocks are
}

uint64_t KvLedger::Grow(CtxRec& c, int64_t tokens, bool hold) {
  c.tokens += tokens;
  uint64_t was = c.bytes;
  c.bytes = BlockBytes(c.tokens, c.model);
  uint64_t grown = c.bytes - std::min(c.bytes, was);
  if (hold) Hold(c.loc, static_cast<int64_t>(grown));
  return grown;
}

void KvLedger::Truncate(CtxRec& c, int64_t tokens, bool release) {
  const uint64_t was = c.bytes;
  c.tokens = tokens;
  c.bytes = BlockBytes(c.tokens, c.model);
  if (release) Hold(c.loc, -static_cast<int64_t>(was - std::min(was, c.bytes)));
}

void KvLedger::CommitInHbm(CtxRec& c, int w) {
  if (c.loc.tier == Tier::kPeer) Hold(c.loc, -static_cast<int64_t>(c.bytes));
  SetLoc(c, {Tier::kHbm, w});
  Hold(c.loc, static_cast<int64_t>(c.bytes));
}

std::optional<Location> KvLedger::Discard(CtxRec& c) {
  if (c.transfer != 0) {
    xfers_[c.transfer].discard_on_done = true;
    return c.loc;
  }
  if (c.loc.tier == Tier::kNone) return std::nullopt;
  Hold(c.loc, -static_cast<int64_t>(c.bytes));
  Location was = c.loc;
  SetLoc(c, {});
  return was;
}

void KvLedger::Retire(CtxRec& c) {
  c.dead = true;
  EraseIfRetired(c);
}

bool KvLedger::EraseIfRetired(CtxRec& c) {
  if (!c.dead || c.transfer != 0) return false;
  DetachPrefix(c);
  ctxs_.erase(c.key);
  return true;
}

std::vector<std::string> KvLedger::ContextsOn(int w) const {
  std::vector<std::string> keys;
  for (const auto& [key, c] : ctxs_)
    if (c.loc.worker == w && c.loc.tier != Tier::kNone) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<std::string> KvLedger::StaleContexts(const std::string& model, uint64_t epoch) const {
  std::vector<std::string> keys;
  for (const auto& [key, c] : ctxs_)
    if (c.model == model && c.epoch < epoch && !c.dead &&
        (c.loc.tier != Tier::kNone || c.transfer != 0))
      keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

// --- moves ---

uint64_t KvLedger::BeginMove(CtxRec& c, const Location& dst, uint64_t grant) {
  uint64_t id = next_xfer_++;
  xfers_[id] = XferRec{c.key, c.loc, dst, c.bytes, grant, false};
  c.transfer = id;
  Hold(dst, static_cast<int64_t>(c.bytes));
  return id;
}

std::optional<XferRec> KvLedger::TakeMove(uint64_t id) {
  auto it = xfers_.find(id);
  if (it == xfers_.end()) return std::nullopt;
  XferRec x = it->second;
  xfers_.erase(it);
  return x;
}

CtxRec* KvLedger::SettleMove(const XferRec& x, bool ok) {
  auto cit = ctxs_.find(x.ctx);
  if (cit == ctxs_.end()) return nullptr;
  CtxRec& c = cit->second;
  c.transfer = 0;
  bool drop = x.discard_on_done || c.dead;
  if (ok) {
    Hold(x.src, -static_cast<int64_t>(x.bytes));  // source buffer released only now
    SetLoc(c, x.dst);
    c.failed_moves = 0;
  } else {
    Hold(x.dst, -static_cast<int64_t>(x.bytes));
    if (x.src.tier == Tier::kHbm) ++c.failed_moves;
  }
  if (drop) {
    Hold(c.loc, -static_cast<int64_t>(c.bytes));
    SetLoc(c, {});
  }
  if (EraseIfRetired(c)) return nullptr;
  return ok && !drop ? &c : nullptr;
}

std::vector<XferRec> KvLedger::AbortMovesTouching(int w) {
  std::vector<XferRec> ended;
  for (auto it = xfers_.begin(); it != xfers_.end();) {
    if (it->second.src.worker != w && it->second.dst.worker != w) {
      ++it;
      continue;
    }
    XferRec x = it->second;
    it = xfers_.erase(it);
    CtxRec& c = ctxs_.at(x.ctx);
    c.transfer = 0;
    Hold(x.dst, -static_cast<int64_t>(x.bytes));
    if (x.discard_on_done) {
      Hold(c.loc, -static_cast<int64_t>(c.bytes));
      SetLoc(c, {});
    }
    ended.push_back(std::move(x));
  }
  return ended;
}

bool KvLedger::MovesTouchHbm(int w) const {
  auto here = [w](const Location& l) {
    return l.worker == w && (l.tier == Tier::kHbm || l.tier == Tier::kPeer);
  };
  for (const auto& [id, x] : xfers_)
    if (here(x.src) || here(x.dst)) return true;
  return false;
}

uint64_t KvLedger::BytesLeavingHbm(int w) const {
  uint64_t bytes = 0;
  for (const auto& [id, x] : xfers_)
    if (x.src.tier == Tier::kHbm && x.src.worker == w && x.dst.tier != Tier::kHbm) bytes += x.bytes;
  return bytes;
}

KvLedger::EvictionView KvLedger::EvictionCandidates(int w,
                                                    const std::vector<std::string>& keep) const {
  EvictionView view;
  for (CtxRec* cp : Resident(w)) {
    const CtxRec& c = *cp;
    if (c.evict_pending) {
      view.leaving += c.bytes;
      continue;
    }
    if (c.transfer != 0) {
      auto x = xfers_.find(c.transfer);
      if (x != xfers_.end() && x->second.src.worker == w && x->second.src.tier == Tier::kHbm &&
          !(x->second.dst.tier == Tier::kHbm && x->second.dst.worker == w))
        view.leaving += c.bytes;
      continue;
    }
    if (c.users > 0 || c.dead) continue;
    if (std::find(keep.begin(), keep.end(), c.key) != keep.end()) continue;  // the node's own
    view.idle.push_back(cp);
  }
  return view;
}

// --- shared-prefix copies ---

PrefixRec* KvLedger::FindPrefix(const std::string& key, int worker) {
  auto it = prefixes_.find({key, worker});
  return it == prefixes_.end() ? nullptr : &it->second;
}

const PrefixRec* KvLedger::FindPrefix(const std::string& key, int worker) const {
  auto it = prefixes_.find({key, worker});
  return it == prefixes_.end() ? nullptr : &it->second;
}

bool KvLedger::PrefixBuilding(const std::string& key, int worker) const {
  const PrefixRec* p = FindPrefix(key, worker);
  return p && p->builder.second >= 0;
}

PrefixRec& KvLedger::AddPrefix(const std::string& key, int64_t tokens, int worker,
                               std::pair<std::string, int> builder, const std::string& model,
                               uint64_t epoch) {
  PrefixRec& p = prefixes_[{key, worker}];
  p.key = key;
  p.model = model;
  p.epoch = epoch;
  p.worker = worker;
  p.tokens = tokens;
  p.bytes = BlockBytes(tokens, model);
  p.builder = std::move(builder);
  Hold({Tier::kHbm, worker}, static_cast<int64_t>(p.bytes));
  return p;
}

void KvLedger::PrefixBuilt(PrefixRec& p) {
  p.builder = {"", -1};
  ++changes_;  // nodes waiting for it may be placed now
}

void KvLedger::RemovePrefixUser(PrefixRec& p) {
  p.users = std::max(0, p.users - 1);
  if (p.idle()) p.idle_since = now_;
}

void KvLedger::AttachPrefix(CtxRec& c) {
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

void KvLedger::DetachPrefix(CtxRec& c) {
  if (c.prefix_worker < 0) return;
  PrefixRec* p = FindPrefix(c.prefix, c.prefix_worker);
  c.prefix_worker = -1;
  if (!p) return;
  p->holders.erase(&c);
  if (p->idle()) {
    p->idle_since = now_;
    ++changes_;
  }
}

void KvLedger::DropPrefix(PrefixRec& p) {
  for (CtxRec* h : p.holders) h->prefix_worker = -1;
  Hold({Tier::kHbm, p.worker}, -static_cast<int64_t>(p.bytes));
  ++changes_;
  prefixes_.erase({p.key, p.worker});
}

void KvLedger::ForgetPrefixesOn(int w) {
  for (auto it = prefixes_.begin(); it != prefixes_.end();) {
    if (it->first.second != w) {
      ++it;
      continue;
    }
    for (CtxRec* h : it->second.holders) h->prefix_worker = -1;
    it = prefixes_.erase(it);
  }
}

uint64_t KvLedger::IdlePrefixBytes(int w) const {
  uint64_t bytes = 0;
  for (const auto& [id, p] : prefixes_)
    if (id.second == w && p.idle()) bytes += p.bytes;
  return bytes;
}

std::vector<PrefixRec*> KvLedger::IdlePrefixesLru(int w) {
  std::vector<PrefixRec*> idle;
  for (auto& [id, p] : prefixes_)
    if (id.second == w && p.idle()) idle.push_back(&p);
  std::sort(idle.begin(), idle.end(), [](const PrefixRec* a, const PrefixRec* b) {
    return a->idle_since != b->idle_since ? a->idle_since < b->idle_since : a->key < b->key;
  });
  return idle;
}

std::vector<PrefixRec*> KvLedger::StalePrefixes(const std::string& model, uint64_t epoch) {
  std::vector<PrefixRec*> stale;
  for (auto& [id, p] : prefixes_)
    if (p.model == model && p.epoch < epoch) stale.push_back(&p);
  return stale;
}

int64_t KvLedger::PrefixTokensOn(const std::string& key, int worker) const {
  const PrefixRec* p = FindPrefix(key, worker);
  return p ? p->tokens : -1;
}

// --- workers ---

void KvLedger::ClearWorker(int w) {
  WorkerKv& r = workers_[static_cast<size_t>(w)];
  r.used = r.host_used = r.disk_used = 0;
  r.resident.clear();
}

void KvLedger::ResetWorker(int w) { workers_[static_cast<size_t>(w)] = WorkerKv{}; }

}  // namespace switchyard::scheduler::internal
