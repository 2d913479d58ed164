// EvictionPolicy: which committed, unpinned blocks of a tier to give up first.
//
// The BlockManager tells the policy about every block it makes evictable (Insert), every
// read (Touch) and every removal (Remove); when a tier needs space it asks for victims.
// The default LruEvictionPolicy evicts least recently used first; a priority hook (set by
// the scheduler, e.g. steps-to-execution or deadline slack) overrides recency: a block
// with a lower priority value is evicted first, LRU breaks ties.
//
// Thread-safety: not thread-safe; used by the BlockManager on its loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/ids.h"

namespace switchyard::kv_tiers {

struct EvictionCandidate {
  BlockId id;
  std::string tier;  // tier name
  std::string tenant;
  std::string workflow_id;
  std::string context_id;
  uint64_t bytes = 0;
};

// Lower values are evicted first (e.g. -steps_to_execution, or deadline slack).
using PriorityFn = std::function<double(const EvictionCandidate&)>;

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual void Insert(const EvictionCandidate& block) = 0;
  virtual void Touch(BlockId id) = 0;
  virtual void Remove(BlockId id) = 0;
  // Victims in `tier` (and of `tenant` when non-empty) until `bytes` are covered, in
  // eviction order; may return fewer when not enough is evictable.
  virtual std::vector<BlockId> PickVictims(const std::string& tier, const std::string& tenant,
                                           uint64_t bytes) = 0;
  virtual void SetPriorityFn(PriorityFn fn) = 0;
};

class LruEvictionPolicy final : public EvictionPolicy {
 public:
  void Insert(const EvictionCandidate& block) override;
  void Touch(BlockId id) override;
  void Remove(BlockId id) override;
  std::vector<BlockId> PickVictims(const std::string& tier, const std::string& tenant,
                                   uint64_t bytes) override;
  void SetPriorityFn(PriorityFn fn) override { priority_ = std::move(fn); }
  size_t size() const { return index_.size(); }

 private:
  std::list<EvictionCandidate> lru_;  // front: least recently used
  std::unordered_map<BlockId, std::list<EvictionCandidate>::iterator> index_;
  PriorityFn priority_;
};

}  // namespace switchyard::kv_tiers
