#include "scheduler/events.h"

#include <cstdio>

namespace switchyard::scheduler {

const char* TierName(Tier t) {
  switch (t) {
    case Tier::kHbm:
      return "hbm";
    case Tier::kHost:
      return "host";
    case Tier::kDisk:
      return "disk";
    case Tier::kPeer:
      return "peer";
    case Tier::kNone:
      return "none";
  }
  return "?";
}

std::string LocationString(const Location& l) {
  if (l.tier == Tier::kNone) return "none";
  return std::string(TierName(l.tier)) + "@" + std::to_string(l.worker);
}

const char* EventKindName(EventKind k) {
  static const char* kNames[] = {
      "workflow_submitted",  "node_appended",      "workflow_closed", "engine_step",
      "engine_report",       "llm_started",        "llm_finished",    "tool_started",
      "tool_finished",       "transfer_completed", "transfer_failed", "worker_lost",
      "model_epoch_changed", "deadline_tick",      "cancel",          "worker_joined",
      "drain_worker",        "undrain_worker",     "worker_load",     "context_evicted"};
  return kNames[static_cast<int>(k)];
}

const char* CommandKindName(CommandKind k) {
  static const char* kNames[] = {"admit",    "place",   "preempt", "keep", "demote",
                                 "prefetch", "discard", "retry",   "fail", "complete"};
  return kNames[static_cast<int>(k)];
}

const char* DecisionKindName(const Command& c) {
  return IsCancel(c) ? "cancel" : CommandKindName(c.kind);
}

namespace {
std::string Secs(Time t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fs", t.seconds());
  return buf;
}
std::string Transfer(const Command& c) {
  return " " + LocationString(c.src) + "->" + LocationString(c.dst) +
         " bytes=" + std::to_string(c.bytes) + " xfer=" + std::to_string(c.transfer_id) +
         " grant=" + std::to_string(c.grant.id) +
         " class=" + TrafficClassName(c.grant.traffic_class);
}
}  // namespace

std::string ToString(const Command& c) {
  std::string s = DecisionKindName(c);
  std::string node = c.workflow_id + "/" + c.node_id;
  switch (c.kind) {
    case CommandKind::kAdmit:
      return s + " " + node;
    case CommandKind::kPlace:
      return s + " " + node + " worker=" + std::to_string(c.worker) +
             " recompute=" + std::to_string(c.recompute_tokens) +
             " done=" + std::to_string(c.prefill_done);
    case CommandKind::kPreempt:
      return s + " " + node + " worker=" + std::to_string(c.worker);
    case CommandKind::kKeep:
      return s + " " + c.context;
    case CommandKind::kDemote:
      return s + " " + c.context + Transfer(c) + " prefetch_at=" + Secs(c.not_before);
    case CommandKind::kPrefetch:
      return s + " " + c.context + Transfer(c);
    case CommandKind::kDiscard:
      return s + " " + c.context + " (" + c.reason + ")";
    case CommandKind::kRetry:
      return s + " " + node + " attempt=" + std::to_string(c.attempt) + " at=" + Secs(c.not_before);
    case CommandKind::kFail:
      return s + " " + c.workflow_id + " node=" + c.node_id + ": " + c.reason;
    case CommandKind::kComplete:
      return s + " " + c.workflow_id + (c.reason.empty() ? "" : " (" + c.reason + ")");
  }
  return s;
}

std::vector<std::string> ToStrings(const Commands& c) {
  std::vector<std::string> out;
  out.reserve(c.list.size());
  for (const Command& x : c.list) out.push_back(ToString(x));
  return out;
}

}  // namespace switchyard::scheduler
