// TimelineRecorder: one workflow's timeline in the scheduler driver's mirror, what
// GET /v1/workflows/{id}/timeline renders (docs/design.md "Observability").
//
// SchedulerDriver::Observe feeds it, on the scheduler's loop thread, what the core and the
// runtime did for the workflow:
//   - node events: `submitted` when a node reaches the core, `ready` once every node it
//     depends on succeeded, `admitted` / `placed` / `preempted` / `retry` from the core's
//     decisions, `started` / `finished` / `failed` and `tool_started` / `tool_finished` /
//     `tool_failed` from the runtime's events, `first_token` from the engine's steps;
//   - transfers: each demote / prefetch decision opens one, keyed by its transfer id, with
//     the decision (kind, node, context, time), class, route and bytes. Its four events
//     (invariant 3) are: `transport_completed` and `validated`, the mover's (kv_tiers'
//     block transfers: the last block's); `committed`, when the core committed the move
//     (the runtime's kTransferCompleted: readers see it from then); `consumed`, when the
//     first LLM node reading the transfer's context finished after the commit (the node is
//     the event's detail). A failed or cancelled move ends with `failed` / `cancelled`
//     instead of the events it did not reach.
// Bounded: at most `limit` node events and `limit` transfers; the oldest are dropped and
// counted.
//
// Thread-safety: none; the driver's mirror mutex guards it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "proto/switchyard/v1/api.pb.h"
#include "proto/switchyard/v1/service_state.pb.h"
#include "scheduler/events.h"

namespace switchyard::driver {

// Where a transfer goes: tiers ("hbm", "host", ...), workers and net_budget's route.
struct TransferRoute {
  std::string src_tier, dst_tier;
  int src_worker = -1, dst_worker = -1;
  std::vector<std::string> links;
};

// What the mover recorded of a move (unset times: no block reached that event).
struct MoverTimes {
  std::optional<Time> transport_completed, validated;
  uint32_t blocks = 0;
  uint64_t bytes = 0;
};

class TimelineRecorder {
 public:
  explicit TimelineRecorder(size_t limit = 256) : limit_(limit) {}
  void set_limit(size_t limit) { limit_ = limit < 1 ? 1 : limit; }

  // A node reached the core (submitted with its workflow, or appended).
  void AddNode(const v1::ProgramNode& node, Time now);
  // A runtime event of one of the workflow's nodes. Returns the transfers it consumed (an
  // LLM node that finished after reading their context), for the mover's record.
  std::vector<uint64_t> OnEvent(const scheduler::Event& e, Time now);
  void OnFirstToken(const std::string& node_id, Time now);
  // One of the workflow's decisions (as the driver records it); a demote or prefetch
  // opens its transfer, going along `route`. Returns the node the decision concerns: its
  // own, or for a transfer (the core names none) the node that caused it — a demote: the
  // tool node the workflow waits on (else the last LLM node that used the context); a
  // prefetch: the first unfinished LLM node that reads the context ("" when none).
  std::string OnDecision(const v1::Decision& d, Time now, const TransferRoute& route);
  // A move ended: OK (committed by the core now) or the status that ended it.
  void OnTransferEnd(uint64_t transfer_id, const Status& st, const MoverTimes& times, Time now);

  void Fill(v1::WorkflowTimeline* out) const;
  // The transfer as recorded so far; null when unknown (or dropped by the bound).
  const v1::TimelineTransfer* FindTransfer(uint64_t transfer_id) const;
  size_t node_events() const { return events_.size(); }
  size_t transfers() const { return transfers_.size(); }

 private:
  struct Node {
    std::vector<std::string> deps;
    std::set<std::string> contexts;
    bool llm = false, ready = false, succeeded = false;
    bool waiting = false;  // a tool admitted or started, not yet finished
  };
  std::string CauseOf(const v1::Decision& d) const;
  void AddEvent(const std::string& node, const char* event, Time now, int worker = -1,
                std::string detail = "");
  void Succeeded(const std::string& node, Time now);  // marks dependants ready
  void MaybeReady(const std::string& id, Node& n, Time now);
  static void AddTransferEvent(v1::TimelineTransfer* t, const char* event, Time at,
                               std::string detail = "");

  size_t limit_;
  std::map<std::string, Node> nodes_;
  std::vector<std::string> order_;  // node ids as they reached the core
  std::deque<v1::TimelineNodeEvent> events_;
  std::map<uint64_t, v1::TimelineTransfer> transfers_;
  std::deque<uint64_t> transfer_order_;  // by decision, for dropping the oldest
  uint64_t events_dropped_ = 0, transfers_dropped_ = 0;
};

}  // namespace switchyard::driver
