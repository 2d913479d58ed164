// Workflow: one agent program as a validated, growing DAG of program nodes, with readiness
// tracking and lazily cached analysis (critical path, slack, steps-to-execution, KV
// context sharing).
//
// A Workflow is built from the proto `switchyard::v1::Workflow` (and so from JSON through
// proto/json.h) by Create(), which validates every rule in validation.h and returns
// InvalidArgument naming the node and field on the first violation. Append() grows a
// running workflow atomically: on any error nothing changes (definition, readiness state
// and cached analysis). Nodes are immutable once added and get a dense NodeIndex in
// insertion order; since existing nodes never depend on later ones, an append can only
// close a cycle among its own new nodes.
//
// Readiness uses in-degree counters: MarkSucceeded costs O(out-degree); failure
// propagation and Cancel cost O(nodes reached). Analysis is recomputed lazily in O(n + e)
// on the first query after a change (Append/SetWorkEstimator invalidate the critical-path
// cache; any state change invalidates steps-to-execution).
//
// Ownership: the Workflow owns copies of its nodes. Thread-safety: none; one owner (the
// scheduler core) drives it from one thread. Const queries may fill mutable caches, so
// even concurrent const calls need external synchronisation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "base/time.h"
#include "program_graph/validation.h"
#include "proto/switchyard/v1/workflow.pb.h"

namespace switchyard::program_graph {

using NodeIndex = uint32_t;  // dense, stable index in insertion order

// Work of one node on an otherwise idle system, used for critical path and slack.
using WorkEstimator = std::function<Duration(const v1::ProgramNode&)>;

// The default estimator, a placeholder until the scheduler installs its cost model:
// TOOL = hints.expected_duration_ms; LLM = 50 us per prefill token (extend_tokens, or
// prompt_tokens when extend_tokens is 0) + 20 ms per max_output_tokens token.
Duration DefaultWorkEstimate(const v1::ProgramNode& node);

// StepsToExecution() of a node that will never run (terminal).
inline constexpr uint32_t kNeverRuns = UINT32_MAX;

// How MarkFailed treats a failure.
enum class FailMode {
  kAllowRetry,  // terminal only if the node cannot be retried (not retryable / budget spent)
  kTerminal,    // terminal now: descendants are cancelled, the workflow fails
};

class Workflow {
 public:
  static Result<std::unique_ptr<Workflow>> Create(const v1::Workflow& proto, Time now,
                                                  Limits limits = {});

  // Adds nodes whose deps may name existing or new nodes. Validates the union; atomic.
  // FailedPrecondition once the workflow is closed, failed or cancelled.
  Status Append(const std::vector<v1::ProgramNode>& nodes, Time now);

  // ---- definition ----
  const std::string& id() const { return header_.id(); }
  const std::string& tenant() const { return header_.tenant(); }
  std::optional<Time> deadline() const;  // nullopt when the workflow has none
  const Limits& limits() const { return limits_; }
  size_t size() const { return nodes_.size(); }
  std::optional<NodeIndex> Find(std::string_view node_id) const;
  const v1::ProgramNode& node(NodeIndex i) const { return nodes_[i]; }
  const std::string& node_id(NodeIndex i) const { return nodes_[i].id(); }
  const std::vector<NodeIndex>& deps(NodeIndex i) const { return deps_[i]; }
  const std::vector<NodeIndex>& children(NodeIndex i) const { return children_[i]; }
  // The node's own deadline, else the workflow's; nullopt when neither has one.
  std::optional<Time> EffectiveDeadline(NodeIndex i) const;
  // A topological order of all nodes (deps before dependents).
  const std::vector<NodeIndex>& TopologicalOrder() const { return topo_; }
  v1::Workflow ToProto() const;  // current definition (all nodes)

  // ---- retry ----
  // False for a TOOL node with side_effect and no idempotency_key (not an error).
  bool retryable(NodeIndex i) const { return retry_block_[i].empty(); }
  // Why the node is not retryable; empty when it is.
  const std::string& retry_block_reason(NodeIndex i) const { return retry_block_[i]; }
  // The current attempt number, starting at 1; ResetForRetry increments it.
  uint32_t attempts(NodeIndex i) const { return attempts_[i]; }
  // retry.max_attempts, or 3 when unset.
  uint32_t max_attempts(NodeIndex i) const;
  // True for a FAILED node awaiting a decision that ResetForRetry would accept.
  bool CanRetry(NodeIndex i) const;
  // Whether a failure of node i's current attempt would be retried, whatever its state now:
  // retryable, attempts left, not failed for good, the workflow not cancelled.
  bool RetryAllowed(NodeIndex i) const;

  // ---- readiness ----
  v1::NodeState state(NodeIndex i) const { return state_[i]; }
  // Failure or cancellation reason of a node; empty otherwise.
  const std::string& reason(NodeIndex i) const { return reason_[i]; }
  std::vector<NodeIndex> ReadyNodes() const;  // in index order
  size_t ready_count() const { return ready_.size(); }
  Status MarkRunning(NodeIndex i);                            // READY -> RUNNING
  Result<std::vector<NodeIndex>> MarkSucceeded(NodeIndex i);  // returns newly ready nodes
  // RUNNING -> FAILED (or a retry-pending FAILED node made terminal with kTerminal).
  // Returns the descendants cancelled (empty while the failure awaits a retry decision).
  Result<std::vector<NodeIndex>> MarkFailed(NodeIndex i, std::string reason,
                                            FailMode mode = FailMode::kAllowRetry);
  // FAILED (retry pending) -> READY, attempts + 1. FailedPrecondition otherwise.
  Status ResetForRetry(NodeIndex i);
  // Cancels one non-terminal node and its descendants; the workflow becomes CANCELLED.
  Result<std::vector<NodeIndex>> CancelNode(NodeIndex i, std::string reason);
  // Cancels every non-terminal node (RUNNING included); the workflow becomes CANCELLED
  // unless it already failed or completed.
  void Cancel(std::string reason);
  // The client will append no more nodes.
  void Close() { closed_ = true; }
  bool closed() const { return closed_; }

  // RUNNING until: COMPLETED (closed and every node SUCCEEDED), FAILED (a node failed
  // terminally), CANCELLED (Cancel or CancelNode).
  v1::WorkflowState state() const;
  // COMPLETED, or FAILED/CANCELLED with every node terminal.
  bool done() const;
  const std::string& failure_reason() const { return failure_reason_; }

  // ---- analysis ----
  void SetWorkEstimator(WorkEstimator estimator);  // invalidates analysis
  Duration Work(NodeIndex i) const;
  // Work along the longest path from i to any sink, i included (definition only: the
  // states of nodes do not change it).
  Duration RemainingCriticalWork(NodeIndex i) const;
  Duration CriticalPathLength() const;
  std::vector<NodeIndex> CriticalPath() const;  // source to sink; ties by lowest index
  // EffectiveDeadline - now - RemainingCriticalWork; nullopt when no deadline.
  std::optional<Duration> Slack(NodeIndex i, Time now) const;
  // KVFlow steps-to-execution: 0 for READY/RUNNING (and FAILED awaiting retry), else the
  // max over non-terminal deps of steps(dep) + 1; kNeverRuns for terminal nodes.
  uint32_t StepsToExecution(NodeIndex i) const;
  // Nodes referencing a KV context, creator first; empty for an unknown context.
  const std::vector<NodeIndex>& NodesUsingContext(std::string_view context) const;
  std::vector<std::string> ContextsOf(NodeIndex i) const;  // in cache_refs order
  std::vector<std::string> Contexts() const;               // sorted

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using IdMap = std::unordered_map<std::string, NodeIndex, StringHash, std::equal_to<>>;
  struct Staged;  // an append under validation (workflow.cc)

  Workflow(const v1::Workflow& proto, Limits limits);
  Status Stage(const std::vector<v1::ProgramNode>& nodes, Time now, Staged* st) const;
  Status StageDeps(Staged* st) const;
  Status StageContexts(Staged* st) const;
  bool HasAncestorUsing(const Staged& st, NodeIndex reader, std::string_view context) const;
  void Commit(Staged st);

  void SetState(NodeIndex i, v1::NodeState s);
  void FailTerminally(NodeIndex i);
  // Ends a non-final node by cancellation (a retry-pending failure becomes final).
  void EndByCancel(NodeIndex i, const std::string& reason);
  std::vector<NodeIndex> CancelDescendants(NodeIndex i, const std::string& reason);
  Status CheckIndex(NodeIndex i, std::string_view op) const;
  void EnsureCriticalPath() const;
  void EnsureSteps() const;

  v1::Workflow header_;  // the workflow without its nodes
  Limits limits_;
  std::vector<v1::ProgramNode> nodes_;
  IdMap index_;
  std::vector<std::vector<NodeIndex>> deps_, children_;
  std::vector<NodeIndex> topo_;
  std::vector<std::string> retry_block_;
  std::unordered_map<std::string, std::vector<NodeIndex>, StringHash, std::equal_to<>> contexts_;

  // Readiness.
  std::vector<v1::NodeState> state_;
  std::vector<uint32_t> unmet_deps_;  // deps not yet SUCCEEDED
  std::vector<uint32_t> attempts_;
  std::vector<char> terminal_failure_;  // FAILED and final (no retry pending)
  std::vector<std::string> reason_;
  std::vector<NodeIndex> ready_;     // unordered set of READY nodes
  std::vector<uint32_t> ready_pos_;  // position in ready_, or UINT32_MAX
  size_t succeeded_ = 0;
  size_t terminal_ = 0;
  bool closed_ = false;
  bool failed_ = false;
  bool cancelled_ = false;
  std::string failure_reason_;

  // Analysis caches.
  WorkEstimator estimator_;
  mutable bool critical_valid_ = false;
  mutable std::vector<Duration> work_, remaining_;
  mutable std::vector<NodeIndex> next_on_path_;
  mutable bool steps_valid_ = false;
  mutable std::vector<uint32_t> steps_;
  mutable std::vector<uint32_t> visit_stamp_;  // scratch for ancestor searches
  mutable uint32_t stamp_ = 0;
};

}  // namespace switchyard::program_graph
