// ServiceMetrics and the service's /metrics families (service_metrics.h).
#include "service/service_metrics.h"

#include <vector>

#include "base/mutex.h"
#include "driver/scheduler_driver_metrics.h"
#include "service/service.h"

namespace switchyard::service {
namespace {

// TTFT: a simulated step (~10 ms) to a CPU engine's long prefill (~a minute).
const std::vector<double> kTtftBounds = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                         2.5,  5,     10,   30,  60,   120};
// Workflows and tool calls: sub-second to an agent session of an hour.
const std::vector<double> kLongBounds = {0.01, 0.05, 0.1, 0.5, 1,   2.5,  5,   10,
                                         30,   60,   120, 300, 600, 1800, 3600};

const char* StateName(v1::WorkflowState s) {
  switch (s) {
    case v1::WORKFLOW_COMPLETED:
      return "completed";
    case v1::WORKFLOW_FAILED:
      return "failed";
    case v1::WORKFLOW_CANCELLED:
      return "cancelled";
    default:
      return "other";
  }
}

// Observes `to - from` (ms) in seconds unless the clocks disagree.
void ObserveSpan(HistogramSeries* h, const std::string& labels, int64_t from, int64_t to) {
  if (from > 0 && to >= from) h->Observe(labels, double(to - from) / 1000);
}

Metrics::HistogramFn SeriesOf(const HistogramSeries* s) {
  return [s] { return s->Snapshot(); };
}

// The store's latency histogram (ms bounds, per-bucket counts) in seconds.
HistogramValue StoreHistogram(const std::array<uint64_t, Store::kBucketsMs.size() + 1>& counts,
                              double sum_seconds) {
  HistogramValue h;
  h.counts.assign(counts.begin(), counts.end());
  for (uint64_t n : counts) h.count += n;
  h.sum = sum_seconds;
  return h;
}

std::vector<double> StoreBoundsSeconds() {
  std::vector<double> out;
  for (double ms : Store::kBucketsMs) out.push_back(ms / 1000);
  return out;
}

Status RegisterWorkflowFamilies(Metrics* m, const Service* s) {
  SY_RETURN_IF_ERROR(m->Gauge("switchyard_workflows", "workflows by state", [s] {
    auto c = s->counts();
    return Metrics::Samples{{"state=\"running\"", double(c.running)},
                            {"state=\"completed\"", double(c.completed)},
                            {"state=\"failed\"", double(c.failed)},
                            {"state=\"cancelled\"", double(c.cancelled)}};
  }));
  SY_RETURN_IF_ERROR(
      m->Gauge("switchyard_workflows_memory",
               "workflows held whole in memory, and ended ones archived (remembered by id)", [s] {
                 return Metrics::Samples{{"where=\"memory\"", double(s->in_memory())},
                                         {"where=\"archived\"", double(s->archived())}};
               }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_archived_reads_total",
      "reads of archived workflows: from the stored snapshot, or by replaying history", [s] {
        auto c = s->counts();
        return Metrics::Samples{{"via=\"snapshot\"", double(c.archived_reads_snapshot)},
                                {"via=\"replay\"", double(c.archived_reads_replay)}};
      }));
  SY_RETURN_IF_ERROR(m->CounterCallback(
      "switchyard_documents_expired_total",
      "stored documents (OpenAI Responses) deleted by retention since the service opened", [s] {
        return Metrics::Samples{{"", double(s->documents_expired())}};
      }));
  return m->CounterCallback("switchyard_node_events_total", "node events applied (durable)", [s] {
    return Metrics::Samples{{"", double(s->counts().events_applied)}};
  });
}

Status RegisterStoreFamilies(Metrics* m, const Service* s) {
  using Stats = Store::Stats;
  auto counter = [m, s](const char* name, const char* help, uint64_t Stats::*field) {
    return m->CounterCallback(name, help, [s, field] {
      return Metrics::Samples{{"", double(s->store_stats().*field)}};
    });
  };
  SY_RETURN_IF_ERROR(counter("switchyard_store_records_total",
                             "log records made durable by group commits", &Stats::records));
  SY_RETURN_IF_ERROR(counter("switchyard_store_delayed_commits_total",
                             "group commits that waited for the commit delay", &Stats::delayed));
  SY_RETURN_IF_ERROR(m->Gauge("switchyard_store_max_batch_records",
                              "the most records one group commit held since start", [s] {
                                return Metrics::Samples{{"", double(s->store_stats().max_batch)}};
                              }));
  SY_RETURN_IF_ERROR(m->Gauge("switchyard_store_max_write_seconds",
                              "the longest WriteBatch + WAL fsync since start", [s] {
                                return Metrics::Samples{{"", s->store_stats().max_write_seconds}};
                              }));
  SY_RETURN_IF_ERROR(
      m->Gauge("switchyard_store_queued_records", "records queued for the next group commit", [s] {
        return Metrics::Samples{{"", double(s->store_stats().queued)}};
      }));
  SY_RETURN_IF_ERROR(m->HistogramCallback(
      "switchyard_store_commit_seconds", "group commits by WriteBatch + WAL fsync time",
      StoreBoundsSeconds(), [s] {
        Stats st = s->store_stats();
        return std::vector<std::pair<std::string, HistogramValue>>{
            {"", StoreHistogram(st.commit_ms, st.write_seconds)}};
      }));
  return m->HistogramCallback("switchyard_store_record_seconds",
                              "records by time from enqueue to durable (queue wait + commit)",
                              StoreBoundsSeconds(), [s] {
                                Stats st = s->store_stats();
                                return std::vector<std::pair<std::string, HistogramValue>>{
                                    {"", StoreHistogram(st.record_ms, st.record_seconds)}};
                              });
}

}  // namespace

ServiceMetrics::ServiceMetrics() : ttft_(kTtftBounds), jct_(kLongBounds), tool_wait_(kLongBounds) {}

std::string ServiceMetrics::BoundedTenant(const std::string& tenant) {
  if (!tenants_.count(tenant)) {
    if (tenants_.size() >= kMaxTenants) return "other";
    tenants_.insert(tenant);
  }
  return tenant;
}

void ServiceMetrics::OnDurable(const std::string& tenant, const std::string& wf,
                               const v1::WorkflowLogRecord& rec, bool ended,
                               v1::WorkflowState state, int64_t arrival_ms,
                               driver::DriverMetrics* driver) {
  MutexLock lock(&mu_);
  const std::string bounded = BoundedTenant(tenant);
  const std::string labels = Metrics::Label("tenant", bounded);
  if (rec.has_event()) {
    const v1::NodeEvent& ev = rec.event();
    const int64_t at = ev.time_ms() > 0 ? ev.time_ms() : rec.time_ms();
    Starts& s = starts_[wf];
    switch (ev.type()) {
      case v1::LLM_STARTED:
        s.llm[ev.node_id()] = at;
        break;
      case v1::TOOL_STARTED:
        s.tool[ev.node_id()] = at;
        break;
      case v1::LLM_FINISHED:
      case v1::LLM_FAILED: {
        auto it = s.llm.find(ev.node_id());
        // Taken either way: the driver forgets it.
        const int64_t first =
            driver ? driver->TakeFirstTokenMs(wf + "/" + ev.node_id()).value_or(-1) : -1;
        if (it != s.llm.end() && ev.type() == v1::LLM_FINISHED) {
          // The engine's first token when it lies within the attempt, else its end.
          int64_t to = first >= 0 && first >= it->second && first <= at ? first : at;
          ObserveSpan(&ttft_, labels, it->second, to);
        }
        if (it != s.llm.end()) s.llm.erase(it);
        break;
      }
      case v1::TOOL_FINISHED:
      case v1::TOOL_FAILED: {
        auto it = s.tool.find(ev.node_id());
        if (it == s.tool.end()) break;
        ObserveSpan(&tool_wait_, labels, it->second, at);
        s.tool.erase(it);
        break;
      }
      default:
        break;
    }
  }
  if (ended) {
    starts_.erase(wf);
    ObserveSpan(&jct_, Metrics::Labels({{"tenant", bounded}, {"state", StateName(state)}}),
                arrival_ms, rec.time_ms());
  }
}

Status RegisterServiceMetrics(Metrics* m, const Service* s) {
  SY_RETURN_IF_ERROR(RegisterWorkflowFamilies(m, s));
  SY_RETURN_IF_ERROR(RegisterStoreFamilies(m, s));
  const ServiceMetrics& sm = s->latency_metrics();
  SY_RETURN_IF_ERROR(m->HistogramCallback(
      "switchyard_llm_ttft_seconds",
      "LLM nodes: LLM_STARTED to the first token (or to LLM_FINISHED), by tenant", kTtftBounds,
      SeriesOf(&sm.ttft_seconds())));
  SY_RETURN_IF_ERROR(m->HistogramCallback(
      "switchyard_workflow_seconds",
      "workflow completion time (JCT): arrival to end, by tenant and final state", kLongBounds,
      SeriesOf(&sm.workflow_seconds())));
  return m->HistogramCallback("switchyard_tool_wait_seconds",
                              "tool calls: TOOL_STARTED to TOOL_FINISHED / TOOL_FAILED, by tenant",
                              kLongBounds, SeriesOf(&sm.tool_wait_seconds()));
}

}  // namespace switchyard::service
