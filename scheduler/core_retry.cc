// Failure handling (DESIGN.md invariant 5): retry only what is provably idempotent, within
// the attempt budget, the tenant's retry credit and the deadline, with exponential
// backoff; everything else fails the workflow closed with a reason.
#include <algorithm>
#include <cmath>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler::internal {

Duration CoreState::Backoff(const NodeRec& n) const {
  const v1::RetryPolicy& r = n.spec.retry();
  double initial = r.initial_backoff_ms() > 0 ? static_cast<double>(r.initial_backoff_ms()) : 100;
  double mult = r.backoff_multiplier() > 0 ? r.backoff_multiplier() : 2.0;
  double cap = r.max_backoff_ms() > 0 ? static_cast<double>(r.max_backoff_ms()) : 10'000;
  double ms = std::min(cap, initial * std::pow(mult, std::max(0, n.attempts - 1)));
  return Millis(static_cast<int64_t>(ms));
}

std::string CoreState::RetryBlocker(WfRec& wf, NodeRec& n, const Status& st, Duration backoff) {
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
  int max_attempts = n.spec.retry().max_attempts() > 0 ? n.spec.retry().max_attempts() : 3;
  if (n.attempts >= max_attempts)
    return "retry budget exhausted after " + std::to_string(n.attempts) + " attempts";
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
  Duration backoff = Backoff(n);
  std::string blocker = RetryBlocker(wf, n, st, backoff);
  if (blocker.empty()) {
    Tenant(wf.tenant).credit -= 1.0;
    n.state = NState::kRetryWait;
    Time at = now + backoff;
    timers.insert({at, TimerKind::kRetry, wf.id, idx});
    Emit({.kind = CommandKind::kRetry,
          .workflow_id = wf.id,
          .node_id = n.spec.id(),
          .not_before = at,
          .attempt = n.attempts + 1,
          .reason = st.ToString()});
    return;
  }
  n.state = NState::kFailed;
  wf.terminal++;
  EndWorkflow(wf, CommandKind::kFail, n.spec.id(),
              "node '" + n.spec.id() + "' failed (" + st.ToString() + "); not retried: " + blocker);
}

}  // namespace switchyard::scheduler::internal
