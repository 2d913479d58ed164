// DriverMetrics: what the SchedulerDriver counts for /metrics beyond its mirror, and the
// registration of the scheduler's Prometheus families.
//
// The driver feeds a DriverMetrics on its loop thread: every engine step (batch size,
// tokens, step time per worker, each node's first token for the service's TTFT, and the
// prompt tokens engines looked up in their prefix caches and found there, per worker),
// every KV transfer's grant and end (bytes moved per topology link and traffic class, the
// time a grant is held until its transfer ends), and the core's queue of ready LLM nodes
// after each event. Readers (the metrics scrape, the service) read it from any thread.
//
// RegisterSchedulerMetrics() adds the scheduler's families to a registry; at each scrape
// they read one SchedulerDriver::FillCluster() snapshot (tier occupancy and capacity,
// link budgets and grants in flight by class, decisions by kind, bytes moved by tier)
// and this object's counters. Labels are bounded: tiers, workers, topology links, traffic
// classes, decision kinds.
//
// Thread-safety: thread-safe. The driver must outlive the registry's renders.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/metrics.h"
#include "base/mutex.h"
#include "base/time.h"
#include "scheduler/events.h"

namespace switchyard::executors {
struct StepReport;
}  // namespace switchyard::executors

namespace switchyard::driver {

class SchedulerDriver;

class DriverMetrics {
 public:
  DriverMetrics();

  // Loop thread (the driver's observers).
  void OnStep(const executors::StepReport& r);
  void OnTransferIssued(uint64_t transfer_id, Time now);
  // `links`: the topology link indices of the route; `cls`: the traffic class index.
  void OnTransferEnded(uint64_t transfer_id, const std::vector<uint32_t>& links, int cls,
                       uint64_t bytes, bool completed, Time now);
  void SetQueuedNodes(size_t n);
  void SetRunningNodes(size_t n);
  // KV reuse, from the scheduler's commands: a prefetch is a hit in its source tier (the
  // context's KV was kept there and comes back instead of being recomputed); a placement
  // that must first recompute tokens of its contexts is a miss (their KV was discarded,
  // evicted or lost), counted with those tokens.
  // Every grant's wait for its link budget (the grant-wait histogram).
  void OnCommand(const scheduler::Command& c);

  // When the node "wf/node" produced its first token (loop clock, ms), once: the entry is
  // dropped. nullopt for a node whose engine computes no tokens (or one long forgotten).
  std::optional<int64_t> TakeFirstTokenMs(const std::string& key);

  // Readers.
  const HistogramSeries& step_seconds() const { return step_seconds_; }
  const HistogramSeries& step_batch_size() const { return step_batch_; }
  const HistogramSeries& step_tokens() const { return step_tokens_; }
  const HistogramSeries& transfer_seconds() const { return transfer_seconds_; }
  // Each grant's wait for its link budget (Command::grant_wait), by traffic class.
  const HistogramSeries& grant_wait_seconds() const { return grant_wait_seconds_; }
  // Bytes of completed transfers by (link index, traffic class index).
  std::map<std::pair<uint32_t, int>, uint64_t> link_bytes() const;
  size_t queued_nodes() const;
  size_t running_nodes() const;
  struct KvReuse {
    std::map<std::string, uint64_t> hits_by_tier;  // prefetch source tier -> prefetches
    uint64_t misses = 0, recomputed_tokens = 0;
  };
  KvReuse kv_reuse() const;
  // Automatic prefix caching, per worker (engines with a prefix cache only): prefill tokens
  // looked up at admission, and those found (StepReport::prefix_query_tokens / _hit_tokens).
  struct PrefixCacheTokens {
    uint64_t queries = 0, hits = 0;
  };
  std::map<int, PrefixCacheTokens> prefix_cache() const;

  static constexpr size_t kMaxFirstTokens = 4096;  // nodes remembered for TakeFirstTokenMs

 private:
  HistogramSeries step_seconds_, step_batch_, step_tokens_, transfer_seconds_, grant_wait_seconds_;
  mutable Mutex mu_;
  std::map<std::pair<uint32_t, int>, uint64_t> link_bytes_ GUARDED_BY(mu_);
  std::unordered_map<uint64_t, Time> issued_ GUARDED_BY(mu_);  // transfers in flight: when granted
  std::unordered_map<std::string, int64_t> first_token_ms_ GUARDED_BY(mu_);
  std::deque<std::string> first_token_order_ GUARDED_BY(mu_);  // oldest first, for the bound
  size_t queued_nodes_ GUARDED_BY(mu_) = 0;
  size_t running_nodes_ GUARDED_BY(mu_) = 0;
  KvReuse kv_reuse_ GUARDED_BY(mu_);
  std::map<int, PrefixCacheTokens> prefix_cache_ GUARDED_BY(mu_);
};

// Adds the scheduler's families (tiers, links, transfers, decisions, queue, engine steps)
// to `metrics`; InvalidArgument if one cannot be registered (a name taken).
Status RegisterSchedulerMetrics(Metrics* metrics, const SchedulerDriver* driver);

}  // namespace switchyard::driver
