// Service: recovery at Open, and the history records applied to a workflow (one record,
// a node event, a workflow's whole durable history) — used live and on recovery.
#include <algorithm>

#include "base/logging.h"
#include "base/utf8.h"
#include "service/service.h"

namespace switchyard::service {

namespace pg = program_graph;

// Runs in Open, before any other thread can see the service, and calls NoteEnded and Sweep,
// which take mu_ themselves: workflows_ and live_ are read and written here without it.
Status Service::Recover() NO_THREAD_SAFETY_ANALYSIS {
  // Recovery archives without storing snapshots: a workflow archived by an earlier run
  // has one already, and one that has none is read back from its history.
  recovering_ = true;
  struct Done {
    bool* flag;
    ~Done() { *flag = false; }
  } done_recovering{&recovering_};
  size_t records = 0;
  std::string current;  // the workflow being replayed (records come in id order)
  auto finished = [&]() NO_THREAD_SAFETY_ANALYSIS {  // (see above)
    if (current.empty()) return;
    if (workflows_[current]->graph->done()) NoteEnded(current);
  };
  Status st = store_->ForEachRecord(
      [&](const std::string& id, uint64_t seq, const v1::WorkflowLogRecord& rec)
          NO_THREAD_SAFETY_ANALYSIS -> Status {
            if (id != current) {
              finished();  // archives as it goes: recovery's memory is bounded like the live one's
              current = id;
            }
            auto& slot = workflows_[id];
            if (!slot) slot = std::make_shared<Entry>();
            if (seq != slot->next_seq) {
              return Status::DataLoss("workflow " + id + ": history gap at record " +
                                      std::to_string(seq));
            }
            Status applied = ApplyRecord(slot.get(), rec);
            if (!applied.ok()) {
              return Status::DataLoss("workflow " + id + ": record " + std::to_string(seq) +
                                      " does not replay: " + applied.message());
            }
            slot->next_seq = seq + 1;
            ++records;
            return Status::OK();
          });
  SY_RETURN_IF_ERROR(st);
  finished();
  // Recovery archived in id order: retention needs the order of their ends.
  std::sort(archive_order_.begin(), archive_order_.end(),
            [this](const std::string& a, const std::string& b) {
              return archived_.at(a).ended_ms < archived_.at(b).ended_ms;
            });
  Sweep(/*force=*/true);
  for (const auto& [id, e] : workflows_) {
    if (!e->graph->done()) ++live_[e->tenant];
  }
  Log(LogLevel::kInfo, "state recovered",
      LogKeys()
          .With("workflows", std::to_string(workflows_.size() + archived_.size()))
          .With("archived", std::to_string(archived_.size()))
          .With("records", std::to_string(records)));
  return Status::OK();
}

Status Service::ApplyEvent(pg::Workflow* wf, const v1::NodeEvent& ev) const {
  SY_RETURN_IF_ERROR(CheckEventFields(ev));  // before the lookup: no node '' to miss
  auto idx = wf->Find(ev.node_id());
  if (!idx) {
    return Status::NotFound("workflow " + wf->id() + " has no node '" + ev.node_id() + "'");
  }
  bool tool_event = ev.type() == v1::TOOL_STARTED || ev.type() == v1::TOOL_FINISHED ||
                    ev.type() == v1::TOOL_FAILED;
  bool is_tool = wf->node(*idx).kind() == v1::TOOL;
  if (tool_event != is_tool) {
    return Status::InvalidArgument("event " + v1::NodeEventType_Name(ev.type()) + " does not fit " +
                                   (is_tool ? "TOOL" : "LLM") + " node '" + ev.node_id() + "'");
  }
  if (ev.attempt() != 0 && ev.attempt() != wf->attempts(*idx)) {
    return Status::FailedPrecondition("event for attempt " + std::to_string(ev.attempt()) +
                                      " of node '" + ev.node_id() + "', which is on attempt " +
                                      std::to_string(wf->attempts(*idx)));
  }
  switch (ev.type()) {
    case v1::TOOL_STARTED:
    case v1::LLM_STARTED:
      return wf->MarkRunning(*idx);
    case v1::TOOL_FINISHED:
    case v1::LLM_FINISHED:
      return wf->MarkSucceeded(*idx).status();
    case v1::TOOL_FAILED:
    case v1::LLM_FAILED: {
      std::string reason = ev.error().empty() ? "reported failed" : ev.error();
      // The reporter's word first: retryable false (the default) fails the node for good.
      // A retryable node with attempts left is offered again (READY, attempt + 1); any
      // other failure is terminal and fails the workflow (program_graph's rule), and a
      // side effect without an idempotency key is never retried whatever the flag says.
      if (!ev.retryable()) reason += " (reported not retryable)";
      auto failed = wf->MarkFailed(
          *idx, reason, ev.retryable() ? pg::FailMode::kAllowRetry : pg::FailMode::kTerminal);
      if (!failed.ok()) return failed.status();
      if (wf->CanRetry(*idx)) return wf->ResetForRetry(*idx);
      return Status::OK();
    }
    default:
      return Status::InvalidArgument("unknown event type");
  }
}

Status Service::CheckEventFields(const v1::NodeEvent& ev) {
  if (ev.node_id().empty()) return Status::InvalidArgument("event.nodeId is required");
  if (ev.type() == v1::NODE_EVENT_UNSPECIFIED) {
    return Status::InvalidArgument("event.type is required");
  }
  return CheckUtf8("event.error", ev.error());
}

Status Service::CheckUtf8(std::string_view field, std::string_view value) {
  std::string problem = Utf8Problem(value);
  if (problem.empty()) return Status::OK();
  return Status::InvalidArgument(std::string(field) + ": " + problem + " (want UTF-8 text)");
}

Status Service::ApplyRecord(Entry* e, const v1::WorkflowLogRecord& rec) const {
  Time now = Time::FromMillis(rec.time_ms());
  e->last_ms = std::max(e->last_ms, rec.time_ms());
  switch (rec.entry_case()) {
    case v1::WorkflowLogRecord::kSubmitted: {
      if (e->graph) return Status::AlreadyExists("workflow already submitted");
      SY_ASSIGN_OR_RETURN(e->graph, pg::Workflow::Create(rec.submitted(), now, options_.limits));
      e->tenant = rec.submitted().tenant();
      e->arrival_ms = rec.submitted().arrival_ms();
      return Status::OK();
    }
    case v1::WorkflowLogRecord::kAppended: {
      std::vector<v1::ProgramNode> nodes(rec.appended().nodes().begin(),
                                         rec.appended().nodes().end());
      return e->graph->Append(nodes, now);
    }
    case v1::WorkflowLogRecord::kEvent: {
      SY_RETURN_IF_ERROR(ApplyEvent(e->graph.get(), rec.event()));
      const v1::NodeEvent& ev = rec.event();
      int64_t at = ev.time_ms() > 0 ? ev.time_ms() : rec.time_ms();
      auto& t = e->times[ev.node_id()];
      if (ev.type() == v1::TOOL_STARTED || ev.type() == v1::LLM_STARTED) t = {at, 0};
      if (ev.type() == v1::TOOL_FINISHED || ev.type() == v1::LLM_FINISHED ||
          ev.type() == v1::TOOL_FAILED || ev.type() == v1::LLM_FAILED)
        t.second = at;
      return Status::OK();
    }
    case v1::WorkflowLogRecord::kClosed:
      if (e->graph->closed()) return Status::FailedPrecondition("workflow already closed");
      e->graph->Close();
      return Status::OK();
    case v1::WorkflowLogRecord::kCancelled:
      if (e->graph->done()) {
        return Status::FailedPrecondition("workflow already ended (" +
                                          v1::WorkflowState_Name(e->graph->state()) + ")");
      }
      e->graph->Cancel(rec.cancelled());
      return Status::OK();
    case v1::WorkflowLogRecord::kSchedulerFailed: {
      if (e->graph->done()) return Status::FailedPrecondition("workflow already ended");
      const auto& f = rec.scheduler_failed();
      std::string reason = "scheduler: " + f.reason();
      auto idx = e->graph->Find(f.node_id());
      if (idx && e->graph->state(*idx) == v1::NODE_READY)
        SY_RETURN_IF_ERROR(e->graph->MarkRunning(*idx));
      if (idx &&
          (e->graph->state(*idx) == v1::NODE_RUNNING || e->graph->state(*idx) == v1::NODE_FAILED)) {
        return e->graph->MarkFailed(*idx, reason, pg::FailMode::kTerminal).status();
      }
      e->graph->Cancel(reason);
      return Status::OK();
    }
    case v1::WorkflowLogRecord::kWorkerLost:
      e->losses.push_back(rec.worker_lost());
      return Status::OK();
    case v1::WorkflowLogRecord::ENTRY_NOT_SET:
      break;
  }
  return Status::InvalidArgument("empty workflow record");
}

Status Service::Replay(const std::string& id, Entry* e) const {
  // The callback runs synchronously, within this call, which holds e->mu.
  return store_->ForEachRecordOf(
      id, [&](uint64_t seq, const v1::WorkflowLogRecord& rec) NO_THREAD_SAFETY_ANALYSIS -> Status {
        if (seq != e->next_seq)
          return Status::DataLoss("workflow " + id + ": history gap at record " +
                                  std::to_string(seq));
        SY_RETURN_IF_ERROR(ApplyRecord(e, rec));
        e->next_seq = seq + 1;
        return Status::OK();
      });
}

Status Service::Rebuild(const std::string& id, Entry* e) const {
  Entry fresh;
  MutexLock lock(&fresh.mu);  // unshared: for the analysis
  SY_RETURN_IF_ERROR(Replay(id, &fresh));
  e->graph = std::move(fresh.graph);
  e->next_seq = fresh.next_seq;
  e->last_ms = fresh.last_ms;
  return Status::OK();
}

}  // namespace switchyard::service
