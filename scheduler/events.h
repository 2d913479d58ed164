// Events the scheduler core consumes and the commands it produces.
//
// The runtime (executors::Runtime) turns engine callbacks, tool reports, mover
// completions, membership changes and API calls into Events and feeds them, one at a
// time, to scheduler::Core::handle(). The core answers with Commands that the runtime
// carries out. Both are plain values: an Event is a tagged struct (only the fields its
// kind names are meaningful), a Command likewise. Commands render to one canonical line
// (ToString) so tests can compare exact command lists.
//
// Thread-safety: values only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "proto/switchyard/v1/workflow.pb.h"
#include "scheduler/disaggregation.h"
#include "scheduler/reported_load.h"
#include "scheduler/types.h"

namespace switchyard::scheduler {

enum class EventKind : uint8_t {
  kWorkflowSubmitted,  // workflow (nodes may be empty; more may be appended)
  kNodeAppended,       // workflow_id, node
  kWorkflowClosed,     // workflow_id: no more nodes will be appended
  kEngineStep,         // worker, workflow_id, node_id, tokens_done: a prefill chunk ended
  kEngineReport,       // worker, steps, exhausted: one engine step of a batching engine
  kLlmStarted,         // workflow_id, node_id, worker
  kLlmFinished,        // workflow_id, node_id, status, output_tokens, model_time
  kToolStarted,        // workflow_id, node_id
  kToolFinished,       // workflow_id, node_id, status
  kTransferCompleted,  // transfer_id: transport done, validated and committed (inv. 3)
  kTransferFailed,     // transfer_id, status
  kWorkerLost,         // worker
  kModelEpochChanged,  // model_id, epoch
  kDeadlineTick,       // time passed (the runtime posts one at Commands::wakeup)
  kCancel,         // workflow_id; status OK: the client cancelled it (ends with `cancel`); not OK:
                   // it failed outside the core (the service's durable graph: a node failed for
                   // good), node_id names the node and status.message() says why (ends with `fail`)
  kWorkerJoined,   // worker: a lost worker is back (a new incarnation, empty): placed on again
  kDrainWorker,    // worker: no new placements; its idle contexts move off (drained: empty)
  kUndrainWorker,  // worker: placed on again
  kWorkerLoad,     // worker, load: what the worker's engine says of its load (proxy mode)
  kContextEvicted,  // context, worker: the worker's engine no longer holds the context's KV
};
const char* EventKindName(EventKind k);

// Progress of one running LLM node in an engine step (kEngineReport).
struct SeqStep {
  std::string workflow_id, node_id;
  int64_t prefill_done = 0;  // prefill tokens computed so far (recompute first, then new)
  int64_t output_done = 0;   // output tokens decoded so far (earlier attempts included)
  bool finished = false;     // the sequence ended in this step (its kLlmFinished follows)
};

struct Event {
  EventKind kind = EventKind::kDeadlineTick;
  std::string workflow_id;
  std::string node_id;
  int worker = -1;
  uint64_t transfer_id = 0;
  int64_t tokens_done = 0;  // kEngineStep: prefill tokens computed so far
  // kEngineReport: progress of the worker's running nodes that did not finish in the step
  // (finished ones arrive as kLlmFinished right after), and the running nodes that found
  // no free KV block for their next token (the pool ran out: the policy picks a victim).
  std::vector<SeqStep> steps;
  std::vector<SeqStep> exhausted;
  int64_t output_tokens = 0;  // kLlmFinished
  Duration model_time{0};     // kLlmFinished: executor time the call used; kEngineReport: step time
  Status status;              // kLlmFinished / kToolFinished / kTransferFailed
  std::string model_id;       // kModelEpochChanged
  uint64_t epoch = 0;         // kModelEpochChanged
  // kWorkerJoined: the new incarnation's role (CoreOptions::worker_roles; none: unchanged).
  std::optional<WorkerRole> role;
  ReportedLoad load;      // kWorkerLoad
  std::string context;    // kContextEvicted: the context's key ("<workflow>/<context>")
  v1::Workflow workflow;  // kWorkflowSubmitted
  v1::ProgramNode node;   // kNodeAppended
};

enum class CommandKind : uint8_t {
  kAdmit,     // node may start (tool: the framework/tool waiter runs it)
  kPlace,     // run LLM node on worker; recompute_tokens of context must be prefilled first
  kPreempt,   // stop LLM node at its current chunk boundary; it returns to the ready queue
  kKeep,      // keep context in HBM during a wait
  kDemote,    // move context HBM -> tier (host, disk, peer) with a grant
  kPrefetch,  // move context back to HBM with a grant
  kDiscard,   // drop context (recompute later if needed)
  kRetry,     // node will be re-admitted at not_before (attempt = next attempt number)
  kFail,      // workflow failed closed; reason says why (node = the node that caused it)
  kComplete,  // workflow ended: completed (reason empty) or cancelled (reason "cancelled")
};
const char* CommandKindName(CommandKind k);

struct Command {
  CommandKind kind = CommandKind::kKeep;
  std::string workflow_id;
  std::string node_id;
  std::string context;  // context key "<wf>/<ctx>" for keep/demote/prefetch/discard
  int worker = -1;      // place / preempt: the worker
  Location src;         // transfers
  Location dst;
  uint64_t bytes = 0;
  uint64_t transfer_id = 0;
  Grant grant;  // transfers: never invalid (invariant 6)
  // Transfers: how long the move waited for its link budget before this grant (the time
  // since the budget first refused it; 0 when granted at the first ask).
  Duration grant_wait{0};
  int64_t recompute_tokens = 0;  // place: tokens to prefill before the node's own extend
  int64_t prefill_done = 0;      // place: prefill tokens already computed (resumed node)
  int64_t output_done = 0;       // place: output tokens decoded by earlier attempts
  Time not_before{0};            // retry: earliest re-admission; demote: planned prefetch
  int attempt = 0;               // retry
  std::string reason;            // fail / discard / complete
};

// True for the kComplete that ends a cancelled workflow.
inline bool IsCancel(const Command& c) {
  return c.kind == CommandKind::kComplete && !c.reason.empty();
}

// The kind a client sees for a command (decisions in GET /v1/workflows/{id}, the embedded
// command stream, decisionsByKind): CommandKindName, except "cancel" for the kComplete of
// a cancelled workflow. A workflow therefore ends with "complete", "cancel" or "fail".
const char* DecisionKindName(const Command& c);

// Canonical one-line rendering (led by DecisionKindName), e.g.
//   "demote wf1/main hbm@0->host@0 bytes=1048576 xfer=1 grant=1 prefetch_at=3.5s"
std::string ToString(const Command& c);

struct Commands {
  std::vector<Command> list;
  // Earliest time the core wants a kDeadlineTick (Time::Max() when it needs none).
  Time wakeup = Time::Max();
};

std::vector<std::string> ToStrings(const Commands& c);

}  // namespace switchyard::scheduler
