// ServiceMetrics: per-tenant latency histograms of the service's durable records, and the
// registration of the service's Prometheus families.
//
// The Service hands every durable record to OnDurable() (its committer thread, in each
// workflow's sequence order). From them it derives, per tenant:
//   - TTFT: LLM_STARTED to the node's first token (the engine's, when the scheduler's
//     engine computes tokens: DriverMetrics::TakeFirstTokenMs), else to LLM_FINISHED;
//   - JCT: the workflow's arrival to the record that ended it, by final state;
//   - tool wait: TOOL_STARTED to TOOL_FINISHED / TOOL_FAILED.
// Event times are the reporter's (NodeEvent.time_ms) when given, else the record's; a
// negative span (clocks that disagree) is not observed. Starts are kept per live workflow
// only (dropped when it ends). The tenant label is bounded: past kMaxTenants distinct
// tenants, further ones are counted as "other".
//
// RegisterServiceMetrics() adds the service's families to a registry: workflows by state,
// memory and archive, archived reads, node events, the store's group commits and its
// commit / record latency histograms, and the three histograms above.
//
// Thread-safety: thread-safe. The Service must outlive the registry's renders.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "base/metrics.h"
#include "base/mutex.h"
#include "proto/switchyard/v1/api.pb.h"

namespace switchyard::driver {
class DriverMetrics;
}  // namespace switchyard::driver

namespace switchyard::service {

class Service;

class ServiceMetrics {
 public:
  static constexpr size_t kMaxTenants = 64;
  ServiceMetrics();

  // A record of workflow `wf` of `tenant` became durable. `ended`: it ended the workflow,
  // in `state`, which arrived at `arrival_ms`. `driver`: the scheduler's (null if none).
  void OnDurable(const std::string& tenant, const std::string& wf, const v1::WorkflowLogRecord& rec,
                 bool ended, v1::WorkflowState state, int64_t arrival_ms,
                 driver::DriverMetrics* driver);

  const HistogramSeries& ttft_seconds() const { return ttft_; }
  const HistogramSeries& workflow_seconds() const { return jct_; }
  const HistogramSeries& tool_wait_seconds() const { return tool_wait_; }

 private:
  std::string BoundedTenant(const std::string& tenant)
      REQUIRES(mu_);  // mu_ held: the name, or "other"

  HistogramSeries ttft_, jct_, tool_wait_;
  Mutex mu_;
  std::set<std::string> tenants_ GUARDED_BY(mu_);
  // Live workflows: node -> start (ms) of its running LLM attempt / tool call.
  struct Starts {
    std::unordered_map<std::string, int64_t> llm, tool;
  };
  std::unordered_map<std::string, Starts> starts_ GUARDED_BY(mu_);
};

// Adds the service's families to `metrics`; InvalidArgument if one cannot be registered.
Status RegisterServiceMetrics(Metrics* metrics, const Service* service);

}  // namespace switchyard::service
