// Readiness tracking: node state transitions with in-degree counters (unmet_deps_), failure
// propagation, cancellation, retry, and the workflow-level state.
#include <algorithm>

#include "program_graph/workflow.h"

namespace switchyard::program_graph {
namespace {

bool IsFinalState(v1::NodeState s) { return s == v1::NODE_SUCCEEDED || s == v1::NODE_CANCELLED; }

Status BadTransition(const std::string& id, std::string_view op, v1::NodeState have,
                     std::string_view want) {
  return Status::FailedPrecondition("node '" + id + "': " + std::string(op) + ": state " +
                                    v1::NodeState_Name(have) + ", want " + std::string(want));
}

}  // namespace

Status Workflow::CheckIndex(NodeIndex i, std::string_view op) const {
  if (i < size()) return Status::OK();
  return Status::OutOfRange(std::string(op) + ": node index " + std::to_string(i) +
                            " out of range (size " + std::to_string(size()) + ")");
}

// The only writer of state_: keeps the ready set, the terminal count and caches in step.
void Workflow::SetState(NodeIndex i, v1::NodeState s) {
  bool was_terminal =
      IsFinalState(state_[i]) || (state_[i] == v1::NODE_FAILED && terminal_failure_[i]);
  if (state_[i] == v1::NODE_READY) {
    NodeIndex last = ready_.back();
    ready_[ready_pos_[i]] = last;
    ready_pos_[last] = ready_pos_[i];
    ready_.pop_back();
    ready_pos_[i] = UINT32_MAX;
  }
  if (state_[i] == v1::NODE_SUCCEEDED) --succeeded_;
  state_[i] = s;
  if (s == v1::NODE_READY) {
    ready_pos_[i] = static_cast<uint32_t>(ready_.size());
    ready_.push_back(i);
  }
  if (s == v1::NODE_SUCCEEDED) ++succeeded_;
  bool is_terminal = IsFinalState(s) || (s == v1::NODE_FAILED && terminal_failure_[i]);
  terminal_ += is_terminal;
  terminal_ -= was_terminal;
  steps_valid_ = false;
}

void Workflow::FailTerminally(NodeIndex i) {
  if (terminal_failure_[i]) return;
  terminal_failure_[i] = 1;
  ++terminal_;
  steps_valid_ = false;
}

std::vector<NodeIndex> Workflow::ReadyNodes() const {
  std::vector<NodeIndex> out = ready_;
  std::sort(out.begin(), out.end());
  return out;
}

uint32_t Workflow::max_attempts(NodeIndex i) const {
  int32_t m = nodes_[i].retry().max_attempts();
  return m > 0 ? static_cast<uint32_t>(m) : 3;
}

bool Workflow::CanRetry(NodeIndex i) const {
  return i < size() && state_[i] == v1::NODE_FAILED && RetryAllowed(i);
}

bool Workflow::RetryAllowed(NodeIndex i) const {
  return i < size() && !terminal_failure_[i] && retryable(i) && attempts_[i] < max_attempts(i) &&
         !cancelled_;
}

Status Workflow::MarkRunning(NodeIndex i) {
  SY_RETURN_IF_ERROR(CheckIndex(i, "MarkRunning"));
  if (state_[i] != v1::NODE_READY) {
    return BadTransition(node_id(i), "MarkRunning", state_[i], "NODE_READY");
  }
  SetState(i, v1::NODE_RUNNING);
  return Status::OK();
}

Result<std::vector<NodeIndex>> Workflow::MarkSucceeded(NodeIndex i) {
  SY_RETURN_IF_ERROR(CheckIndex(i, "MarkSucceeded"));
  if (state_[i] != v1::NODE_RUNNING) {
    return BadTransition(node_id(i), "MarkSucceeded", state_[i], "NODE_RUNNING");
  }
  SetState(i, v1::NODE_SUCCEEDED);
  std::vector<NodeIndex> ready;
  for (NodeIndex c : children_[i]) {
    if (--unmet_deps_[c] == 0 && state_[c] == v1::NODE_PENDING) {
      SetState(c, v1::NODE_READY);
      ready.push_back(c);
    }
  }
  return ready;
}

Result<std::vector<NodeIndex>> Workflow::MarkFailed(NodeIndex i, std::string reason,
                                                    FailMode mode) {
  SY_RETURN_IF_ERROR(CheckIndex(i, "MarkFailed"));
  bool retry_pending = state_[i] == v1::NODE_FAILED && !terminal_failure_[i];
  if (state_[i] == v1::NODE_RUNNING) {
    reason_[i] = std::move(reason);
    SetState(i, v1::NODE_FAILED);
  } else if (!(retry_pending && mode == FailMode::kTerminal)) {
    return BadTransition(node_id(i), "MarkFailed", state_[i],
                         "NODE_RUNNING (or NODE_FAILED awaiting retry, with kTerminal)");
  }
  if (mode == FailMode::kAllowRetry && CanRetry(i)) return std::vector<NodeIndex>{};
  FailTerminally(i);
  if (!failed_ && !cancelled_) {
    failed_ = true;
    failure_reason_ = "node '" + node_id(i) + "' failed: " + reason_[i];
  }
  return CancelDescendants(i, "ancestor '" + node_id(i) + "' failed: " + reason_[i]);
}

std::vector<NodeIndex> Workflow::CancelDescendants(NodeIndex i, const std::string& reason) {
  std::vector<NodeIndex> cancelled;
  std::vector<NodeIndex> stack(children_[i].begin(), children_[i].end());
  while (!stack.empty()) {
    NodeIndex c = stack.back();
    stack.pop_back();
    // A node already cancelled had its descendants cancelled with it.
    if (IsFinalState(state_[c]) || state_[c] == v1::NODE_FAILED) continue;
    reason_[c] = reason;
    SetState(c, v1::NODE_CANCELLED);
    cancelled.push_back(c);
    stack.insert(stack.end(), children_[c].begin(), children_[c].end());
  }
  std::sort(cancelled.begin(), cancelled.end());
  return cancelled;
}

Status Workflow::ResetForRetry(NodeIndex i) {
  SY_RETURN_IF_ERROR(CheckIndex(i, "ResetForRetry"));
  if (state_[i] != v1::NODE_FAILED) {
    return BadTransition(node_id(i), "ResetForRetry", state_[i], "NODE_FAILED");
  }
  const std::string who = "node '" + node_id(i) + "': ResetForRetry: ";
  if (!retryable(i)) return Status::FailedPrecondition(who + "not retryable: " + retry_block_[i]);
  if (attempts_[i] >= max_attempts(i)) {
    return Status::FailedPrecondition(who + "all " + std::to_string(max_attempts(i)) +
                                      " attempts used");
  }
  if (!CanRetry(i)) return Status::FailedPrecondition(who + "the failure is terminal");
  ++attempts_[i];
  reason_[i].clear();
  SetState(i, v1::NODE_READY);
  return Status::OK();
}

void Workflow::EndByCancel(NodeIndex i, const std::string& reason) {
  if (state_[i] == v1::NODE_FAILED) {  // a failure awaiting a retry decision becomes final
    FailTerminally(i);
  } else {
    reason_[i] = reason;
    SetState(i, v1::NODE_CANCELLED);
  }
}

Result<std::vector<NodeIndex>> Workflow::CancelNode(NodeIndex i, std::string reason) {
  SY_RETURN_IF_ERROR(CheckIndex(i, "CancelNode"));
  if (IsFinalState(state_[i]) || (state_[i] == v1::NODE_FAILED && terminal_failure_[i])) {
    return BadTransition(node_id(i), "CancelNode", state_[i], "a non-terminal state");
  }
  EndByCancel(i, reason);
  if (!failed_ && !cancelled_) {
    cancelled_ = true;
    failure_reason_ = "node '" + node_id(i) + "' cancelled: " + reason;
  }
  std::vector<NodeIndex> out =
      CancelDescendants(i, "ancestor '" + node_id(i) + "' cancelled: " + reason);
  out.insert(std::lower_bound(out.begin(), out.end(), i), i);
  return out;
}

void Workflow::Cancel(std::string reason) {
  if (state() == v1::WORKFLOW_COMPLETED) return;
  for (NodeIndex i = 0; i < size(); ++i) {
    if (!IsFinalState(state_[i])) EndByCancel(i, reason);
  }
  if (!failed_ && !cancelled_) {
    cancelled_ = true;
    failure_reason_ = std::move(reason);
  }
}

v1::WorkflowState Workflow::state() const {
  if (failed_) return v1::WORKFLOW_FAILED;
  if (cancelled_) return v1::WORKFLOW_CANCELLED;
  if (closed_ && succeeded_ == size()) return v1::WORKFLOW_COMPLETED;
  return v1::WORKFLOW_RUNNING;
}

bool Workflow::done() const {
  v1::WorkflowState s = state();
  if (s == v1::WORKFLOW_COMPLETED) return true;
  return s != v1::WORKFLOW_RUNNING && terminal_ == size();
}

}  // namespace switchyard::program_graph
