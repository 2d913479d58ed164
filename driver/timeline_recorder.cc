#include "driver/timeline_recorder.h"

#include <algorithm>

namespace switchyard::driver {

using scheduler::EventKind;

namespace {

int64_t Micros(Time t) { return t.ns / 1000; }

}  // namespace

void TimelineRecorder::AddEvent(const std::string& node, const char* event, Time now, int worker,
                                std::string detail) {
  v1::TimelineNodeEvent e;
  e.set_time_us(Micros(now));
  e.set_node_id(node);
  e.set_event(event);
  e.set_worker(worker);
  e.set_detail(std::move(detail));
  events_.push_back(std::move(e));
  while (events_.size() > limit_) {
    events_.pop_front();
    ++events_dropped_;
  }
}

void TimelineRecorder::MaybeReady(const std::string& id, Node& n, Time now) {
  if (n.ready) return;
  for (const std::string& d : n.deps) {
    auto it = nodes_.find(d);
    if (it == nodes_.end() || !it->second.succeeded) return;
  }
  n.ready = true;
  AddEvent(id, "ready", now);
}

void TimelineRecorder::AddNode(const v1::ProgramNode& node, Time now) {
  if (!nodes_.count(node.id())) order_.push_back(node.id());
  Node& n = nodes_[node.id()];
  n.deps.assign(node.deps().begin(), node.deps().end());
  n.llm = node.kind() == v1::LLM;
  for (const v1::CacheRef& r : node.cache_refs()) n.contexts.insert(r.context());
  AddEvent(node.id(), "submitted", now);
  MaybeReady(node.id(), n, now);
}

void TimelineRecorder::Succeeded(const std::string& node, Time now) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  it->second.succeeded = true;
  for (auto& [id, n] : nodes_)
    if (std::find(n.deps.begin(), n.deps.end(), node) != n.deps.end()) MaybeReady(id, n, now);
}

std::vector<uint64_t> TimelineRecorder::OnEvent(const scheduler::Event& e, Time now) {
  std::vector<uint64_t> consumed;
  switch (e.kind) {
    case EventKind::kLlmStarted:
      AddEvent(e.node_id, "started", now, e.worker);
      break;
    case EventKind::kToolStarted:
      AddEvent(e.node_id, "tool_started", now);
      break;
    case EventKind::kToolFinished:
      if (auto n = nodes_.find(e.node_id); n != nodes_.end()) n->second.waiting = false;
      if (!e.status.ok()) {
        AddEvent(e.node_id, "tool_failed", now, -1, e.status.message());
        break;
      }
      AddEvent(e.node_id, "tool_finished", now);
      Succeeded(e.node_id, now);
      break;
    case EventKind::kLlmFinished: {
      if (!e.status.ok()) {
        AddEvent(e.node_id, "failed", now, e.worker, e.status.message());
        break;
      }
      AddEvent(e.node_id, "finished", now, e.worker);
      auto n = nodes_.find(e.node_id);
      if (n != nodes_.end()) {
        // Invariant 3's fourth event: the node read the committed data of these moves.
        for (auto& [id, t] : transfers_) {
          if (t.outcome() != "committed" || !n->second.contexts.count(t.context())) continue;
          AddTransferEvent(&t, "consumed", now, e.node_id);
          t.set_outcome("consumed");
          consumed.push_back(id);
        }
      }
      Succeeded(e.node_id, now);
      break;
    }
    default:
      break;
  }
  return consumed;
}

void TimelineRecorder::OnFirstToken(const std::string& node_id, Time now) {
  AddEvent(node_id, "first_token", now);
}

std::string TimelineRecorder::CauseOf(const v1::Decision& d) const {
  if (d.kind() == "demote") {
    std::string last_user;
    for (const std::string& id : order_) {
      const Node& n = nodes_.at(id);
      if (n.waiting) return id;
      if (n.llm && n.succeeded && n.contexts.count(d.context())) last_user = id;
    }
    return last_user;
  }
  for (const std::string& id : order_) {
    const Node& n = nodes_.at(id);
    if (n.llm && !n.succeeded && n.contexts.count(d.context())) return id;
  }
  return "";
}

std::string TimelineRecorder::OnDecision(const v1::Decision& d, Time now,
                                         const TransferRoute& route) {
  const std::string& k = d.kind();
  if (k == "admit") {
    if (auto n = nodes_.find(d.node_id()); n != nodes_.end()) n->second.waiting = true;
    AddEvent(d.node_id(), "admitted", now);
  } else if (k == "place") {
    AddEvent(d.node_id(), "placed", now, d.worker());
  } else if (k == "preempt") {
    AddEvent(d.node_id(), "preempted", now, d.worker());
  } else if (k == "retry") {
    AddEvent(d.node_id(), "retry", now, -1, d.line());
  }
  if (k != "demote" && k != "prefetch") return d.node_id();
  const std::string cause = d.node_id().empty() ? CauseOf(d) : d.node_id();
  v1::TimelineTransfer& t = transfers_[d.transfer_id()];
  t.set_transfer_id(d.transfer_id());
  t.set_kind(k);
  t.set_node_id(cause);
  t.set_context(d.context());
  t.set_decided_us(Micros(now));
  t.set_traffic_class(d.traffic_class());
  for (const std::string& l : route.links) t.add_links(l);
  t.set_bytes(d.bytes());
  t.set_src_tier(route.src_tier);
  t.set_src_worker(route.src_worker);
  t.set_dst_tier(route.dst_tier);
  t.set_dst_worker(route.dst_worker);
  t.set_outcome("in_flight");
  transfer_order_.push_back(d.transfer_id());
  while (transfer_order_.size() > limit_) {
    transfers_.erase(transfer_order_.front());
    transfer_order_.pop_front();
    ++transfers_dropped_;
  }
  return cause;
}

void TimelineRecorder::AddTransferEvent(v1::TimelineTransfer* t, const char* event, Time at,
                                        std::string detail) {
  auto* e = t->add_events();
  e->set_event(event);
  e->set_time_us(Micros(at));
  e->set_detail(std::move(detail));
}

void TimelineRecorder::OnTransferEnd(uint64_t transfer_id, const Status& st,
                                     const MoverTimes& times, Time now) {
  auto it = transfers_.find(transfer_id);
  if (it == transfers_.end() || it->second.outcome() != "in_flight") return;
  v1::TimelineTransfer& t = it->second;
  t.set_blocks(times.blocks);
  t.set_moved_bytes(times.bytes);
  if (st.ok() && times.blocks == 0) {
    // Nothing to copy (an empty context): the events happen at the commit.
    AddTransferEvent(&t, "transport_completed", now, "no blocks to move");
    AddTransferEvent(&t, "validated", now, "no blocks to move");
  } else {
    if (times.transport_completed)
      AddTransferEvent(&t, "transport_completed", *times.transport_completed);
    if (times.validated) AddTransferEvent(&t, "validated", *times.validated);
  }
  if (st.ok()) {
    AddTransferEvent(&t, "committed", now);
    t.set_outcome("committed");
  } else {
    bool cancelled = st.IsCancelled();
    AddTransferEvent(&t, cancelled ? "cancelled" : "failed", now, st.ToString());
    t.set_outcome(cancelled ? "cancelled" : "failed");
  }
}

const v1::TimelineTransfer* TimelineRecorder::FindTransfer(uint64_t transfer_id) const {
  auto it = transfers_.find(transfer_id);
  return it == transfers_.end() ? nullptr : &it->second;
}

void TimelineRecorder::Fill(v1::WorkflowTimeline* out) const {
  for (const v1::TimelineNodeEvent& e : events_) *out->add_node_events() = e;
  for (uint64_t id : transfer_order_) {
    auto it = transfers_.find(id);
    if (it != transfers_.end()) *out->add_transfers() = it->second;
  }
  out->set_node_events_dropped(events_dropped_);
  out->set_transfers_dropped(transfers_dropped_);
}

}  // namespace switchyard::driver
