// Failure handling (docs/design.md invariant 5): retry only what is provably idempotent, within
// the attempt budget, the tenant's retry credit and the deadline, with exponential
// backoff; everything else fails the workflow closed with a reason.
#include <algorithm>
#include <cmath>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler::internal {

Duration CoreState::Backoff(const WfRec& wf, int idx) const {
  const NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  const v1::RetryPolicy& r = n.spec.retry();
  int attempts = static_cast<int>(wf.graph->attempts(static_cast<program_graph::NodeIndex>(idx)));
  double initial = r.initial_backoff_ms() > 0 ? static_cast<double>(r.initial_backoff_ms()) : 100;
  double mult = r.backoff_multiplier() > 0 ? r.backoff_multiplier() : 2.0;
  double cap = r.max_backoff_ms() > 0 ? static_cast<double>(r.max_backoff_ms()) : 10'000;
  double ms = std::min(cap, initial * std::pow(mult, std::max(0, attempts - 1)));
  return Millis(static_cast<int64_t>(ms));
}

std::string CoreState::RetryBlocker(WfRec& wf, int idx, const Status& st, Duration backoff) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  auto gi = static_cast<program_graph::NodeIndex>(idx);
  // The program's rule first (program_graph: a side effect without an idempotency key).
  if (!wf.graph->retryable(gi)) return wf.graph->retry_block_reason(gi);
  if (n.spec.side_effect() && n.spec.idempotency_key().empty())
    return "side-effect node has no idempotency key, so a retry cannot be proven safe";
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kPermissionDenied:
    case StatusCode::kUnauthenticated:
    case StatusCode::kNotSupported:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kCancelled:
      return "the error is not retryable";
    default:
      break;
  }
  if (!wf.graph->CanRetry(gi))
    return "retry budget exhausted after " + std::to_string(wf.graph->attempts(gi)) + " attempts";
  TenantRec& t = Tenant(wf.tenant);
  t.credit = std::min(opt.retry_credit_capacity,
                      t.credit + ToSeconds(now - t.credit_at) * opt.retry_credit_per_second);
  t.credit_at = now;
  if (t.credit < 1.0) return "tenant '" + wf.tenant + "' has no retry credit left";
  Duration run = n.spec.kind() == v1::LLM ? EstimateRun(wf, n) : Duration(0);
  Time dl = NodeDeadline(wf, n);
  if (dl != Time::Max() && now + backoff + run > dl) return "a retry would miss the deadline";
  return "";
}

void CoreState::OnNodeFailed(WfRec& wf, int idx, const Status& st) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  auto gi = static_cast<program_graph::NodeIndex>(idx);
  if (wf.graph->state(gi) == v1::NODE_READY) (void)wf.graph->MarkRunning(gi);
  (void)wf.graph->MarkFailed(gi, st.ToString(), program_graph::FailMode::kAllowRetry);
  // A worker-scoped failure (ErrorScope::kRemote: the node's worker was lost) says nothing about
  // the node itself and the retry goes to another worker: no backoff (the attempt and credit still
  // count).
  Duration backoff = st.scope() == ErrorScope::kRemote ? Duration(0) : Backoff(wf, idx);
  std::string blocker = RetryBlocker(wf, idx, st, backoff);
  if (blocker.empty()) {
    Tenant(wf.tenant).credit -= 1.0;
    n.state = NState::kRetryWait;
    Time at = now + backoff;
    timers.insert({at, TimerKind::kRetry, wf.id, idx});
    Emit({.kind = CommandKind::kRetry,
          .workflow_id = wf.id,
          .node_id = n.spec.id(),
          .not_before = at,
          .attempt = static_cast<int>(wf.graph->attempts(gi)) + 1,
          .reason = st.ToString()});
    return;
  }
  FailNode(wf, idx,
           "node '" + n.spec.id() + "' failed (" + st.ToString() + "); not retried: " + blocker);
}

}  // namespace switchyard::scheduler::internal
