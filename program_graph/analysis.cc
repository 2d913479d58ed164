// Analysis: work estimates, critical path and slack (cached per definition), KVFlow
// steps-to-execution (cached per state), and KV context sharing.
#include <algorithm>

#include "program_graph/workflow.h"

namespace switchyard::program_graph {
namespace {

// Saturating addition: a custom estimator may return huge values.
Duration AddSat(Duration a, Duration b) {
  int64_t out;
  if (__builtin_add_overflow(a.count(), b.count(), &out)) return Duration::max();
  return Duration(out);
}

Duration SubSat(Duration a, Duration b) {
  int64_t out;
  if (__builtin_sub_overflow(a.count(), b.count(), &out)) {
    return b.count() > 0 ? Duration::min() : Duration::max();
  }
  return Duration(out);
}

// count * unit, negative counts as 0, saturating (Limits may be raised far beyond defaults).
Duration Scaled(int64_t count, Duration unit) {
  int64_t out;
  if (__builtin_mul_overflow(std::max<int64_t>(count, 0), unit.count(), &out)) {
    return Duration::max();
  }
  return Duration(out);
}

const std::vector<NodeIndex>& EmptyNodes() {
  static const std::vector<NodeIndex> kEmpty;
  return kEmpty;
}

}  // namespace

Duration DefaultWorkEstimate(const v1::ProgramNode& node) {
  const v1::Hints& h = node.hints();
  if (node.kind() == v1::TOOL) return Scaled(h.expected_duration_ms(), Millis(1));
  int64_t prefill = h.extend_tokens() > 0 ? h.extend_tokens() : h.prompt_tokens();
  return AddSat(Scaled(prefill, Micros(50)), Scaled(h.max_output_tokens(), Millis(20)));
}

void Workflow::SetWorkEstimator(WorkEstimator estimator) {
  estimator_ = estimator ? std::move(estimator) : WorkEstimator(DefaultWorkEstimate);
  critical_valid_ = false;
}

// Reverse topological sweep: remaining(i) = work(i) + max over children remaining(c).
void Workflow::EnsureCriticalPath() const {
  if (critical_valid_) return;
  size_t n = size();
  work_.assign(n, Duration::zero());
  remaining_.assign(n, Duration::zero());
  next_on_path_.assign(n, UINT32_MAX);
  for (NodeIndex i = 0; i < n; ++i) work_[i] = std::max(estimator_(nodes_[i]), Duration::zero());
  for (auto it = topo_.rbegin(); it != topo_.rend(); ++it) {
    NodeIndex i = *it;
    Duration best = Duration::zero();
    for (NodeIndex c : children_[i]) {
      // Ties go to the lowest index, so the reported path is deterministic.
      if (next_on_path_[i] == UINT32_MAX || remaining_[c] > best ||
          (remaining_[c] == best && c < next_on_path_[i])) {
        best = remaining_[c];
        next_on_path_[i] = c;
      }
    }
    remaining_[i] = AddSat(work_[i], best);
  }
  critical_valid_ = true;
}

Duration Workflow::Work(NodeIndex i) const {
  EnsureCriticalPath();
  return work_[i];
}

Duration Workflow::RemainingCriticalWork(NodeIndex i) const {
  EnsureCriticalPath();
  return remaining_[i];
}

Duration Workflow::CriticalPathLength() const {
  EnsureCriticalPath();
  Duration best = Duration::zero();
  for (Duration d : remaining_) best = std::max(best, d);
  return best;
}

std::vector<NodeIndex> Workflow::CriticalPath() const {
  EnsureCriticalPath();
  std::vector<NodeIndex> path;
  if (size() == 0) return path;
  NodeIndex start = 0;
  for (NodeIndex i = 1; i < size(); ++i) {
    if (remaining_[i] > remaining_[start]) start = i;
  }
  for (NodeIndex i = start; i != UINT32_MAX; i = next_on_path_[i]) path.push_back(i);
  return path;
}

std::optional<Duration> Workflow::Slack(NodeIndex i, Time now) const {
  std::optional<Time> deadline = EffectiveDeadline(i);
  if (!deadline) return std::nullopt;
  return SubSat(SubSat(Duration(deadline->ns), Duration(now.ns)), RemainingCriticalWork(i));
}

// Forward topological sweep over non-terminal nodes (AND-join: the slowest dep decides).
void Workflow::EnsureSteps() const {
  if (steps_valid_) return;
  steps_.assign(size(), kNeverRuns);
  for (NodeIndex i : topo_) {
    v1::NodeState s = state_[i];
    if (s == v1::NODE_READY || s == v1::NODE_RUNNING ||
        (s == v1::NODE_FAILED && !terminal_failure_[i])) {
      steps_[i] = 0;
    } else if (s == v1::NODE_PENDING) {
      uint32_t best = 0;
      for (NodeIndex d : deps_[i]) {
        if (steps_[d] != kNeverRuns) best = std::max(best, steps_[d] + 1);
      }
      steps_[i] = best;
    }
  }
  steps_valid_ = true;
}

uint32_t Workflow::StepsToExecution(NodeIndex i) const {
  EnsureSteps();
  return steps_[i];
}

const std::vector<NodeIndex>& Workflow::NodesUsingContext(std::string_view context) const {
  auto it = contexts_.find(context);
  return it == contexts_.end() ? EmptyNodes() : it->second;
}

std::vector<std::string> Workflow::ContextsOf(NodeIndex i) const {
  std::vector<std::string> out;
  for (const v1::CacheRef& ref : nodes_[i].cache_refs()) out.push_back(ref.context());
  return out;
}

std::vector<std::string> Workflow::Contexts() const {
  std::vector<std::string> out;
  for (const auto& [name, users] : contexts_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace switchyard::program_graph
