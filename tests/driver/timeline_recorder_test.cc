// TimelineRecorder on its own: node events with readiness from deps, transfers with their
// four events in order (consumed by the node that read the context after the commit),
// failures and cancellations ending a transfer, the cause of a transfer, and the bounds.
#include "driver/timeline_recorder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace switchyard::driver {
namespace {

using scheduler::Event;
using scheduler::EventKind;

v1::ProgramNode Node(const std::string& id, v1::NodeKind kind, std::vector<std::string> deps,
                     const std::string& context = "main") {
  v1::ProgramNode n;
  n.set_id(id);
  n.set_kind(kind);
  for (auto& d : deps) n.add_deps(d);
  if (!context.empty()) n.add_cache_refs()->set_context(context);
  return n;
}

Event Ev(EventKind kind, const std::string& node, Status st = Status::OK()) {
  Event e;
  e.kind = kind;
  e.workflow_id = "wf";
  e.node_id = node;
  e.status = std::move(st);
  return e;
}

v1::Decision Decision(const std::string& kind, const std::string& node, uint64_t xfer = 0) {
  v1::Decision d;
  d.set_kind(kind);
  d.set_node_id(node);
  d.set_transfer_id(xfer);
  d.set_context("main");
  d.set_bytes(1000);
  d.set_traffic_class("background");
  return d;
}

Time At(int64_t ms) { return Time::FromMillis(ms); }

std::vector<std::string> EventsOf(const v1::WorkflowTimeline& t, const std::string& node) {
  std::vector<std::string> out;
  for (const auto& e : t.node_events())
    if (e.node_id() == node) out.push_back(e.event());
  return out;
}

std::vector<std::string> StagesOf(const v1::TimelineTransfer& t) {
  std::vector<std::string> out;
  for (const auto& e : t.events()) out.push_back(e.event());
  return out;
}

TransferRoute Route() {
  TransferRoute r;
  r.src_tier = "hbm";
  r.src_worker = 0;
  r.dst_tier = "host";
  r.dst_worker = 0;
  r.links = {"pcie-0"};
  return r;
}

MoverTimes Moved(int64_t transport_ms, int64_t validated_ms) {
  MoverTimes m;
  m.transport_completed = At(transport_ms);
  m.validated = At(validated_ms);
  m.blocks = 2;
  m.bytes = 4096;
  return m;
}

TEST(TimelineRecorder, DemotionDuringToolWaitAndPrefetchAreConsumedByTheNextCall) {
  TimelineRecorder r;
  r.AddNode(Node("llm-0", v1::LLM, {}), At(1));
  r.AddNode(Node("bash", v1::TOOL, {"llm-0"}, ""), At(1));
  r.AddNode(Node("llm-1", v1::LLM, {"bash"}), At(1));
  r.OnDecision(Decision("place", "llm-0"), At(2), {});
  r.OnEvent(Ev(EventKind::kLlmFinished, "llm-0"), At(10));
  r.OnDecision(Decision("admit", "bash"), At(10), {});
  r.OnEvent(Ev(EventKind::kToolStarted, "bash"), At(11));
  // Demoted during the wait: the cause is the tool node.
  EXPECT_EQ(r.OnDecision(Decision("demote", "", 7), At(12), Route()), "bash");
  r.OnTransferEnd(7, Status::OK(), Moved(13, 14), At(15));
  r.OnEvent(Ev(EventKind::kToolFinished, "bash"), At(20));
  // The prefetch is for the node that reads main next.
  EXPECT_EQ(r.OnDecision(Decision("prefetch", "", 8), At(21), Route()), "llm-1");
  r.OnTransferEnd(8, Status::OK(), Moved(22, 22), At(23));
  r.OnDecision(Decision("place", "llm-1"), At(24), {});
  std::vector<uint64_t> consumed = r.OnEvent(Ev(EventKind::kLlmFinished, "llm-1"), At(30));
  EXPECT_EQ(consumed, (std::vector<uint64_t>{7, 8}));

  v1::WorkflowTimeline t;
  r.Fill(&t);
  EXPECT_EQ(EventsOf(t, "llm-0"),
            (std::vector<std::string>{"submitted", "ready", "placed", "finished"}));
  EXPECT_EQ(EventsOf(t, "bash"), (std::vector<std::string>{"submitted", "ready", "admitted",
                                                           "tool_started", "tool_finished"}));
  EXPECT_EQ(EventsOf(t, "llm-1"),
            (std::vector<std::string>{"submitted", "ready", "placed", "finished"}));
  ASSERT_EQ(t.transfers_size(), 2);
  const std::vector<std::string> four = {"transport_completed", "validated", "committed",
                                         "consumed"};
  for (const auto& x : t.transfers()) {
    EXPECT_EQ(StagesOf(x), four) << x.transfer_id();
    EXPECT_EQ(x.outcome(), "consumed");
    EXPECT_EQ(x.events(3).detail(), "llm-1");
    EXPECT_EQ(x.blocks(), 2u);
    EXPECT_EQ(x.moved_bytes(), 4096u);
    EXPECT_EQ(x.links_size(), 1);
    int64_t prev = x.decided_us();
    for (const auto& e : x.events()) {
      EXPECT_GE(e.time_us(), prev) << e.event();
      prev = e.time_us();
    }
  }
  EXPECT_EQ(t.transfers(0).transfer_id(), 7u);
  EXPECT_EQ(t.transfers(0).kind(), "demote");
  EXPECT_EQ(t.transfers(0).node_id(), "bash");
  EXPECT_EQ(t.transfers(0).events(0).time_us(), 13000);
  EXPECT_EQ(t.transfers(0).events(1).time_us(), 14000);
  EXPECT_EQ(t.transfers(0).events(2).time_us(), 15000);
  EXPECT_EQ(t.transfers(0).events(3).time_us(), 30000);
  EXPECT_EQ(t.transfers(1).node_id(), "llm-1");
}

TEST(TimelineRecorder, NodeReadyOnlyOnceEveryDepSucceeded) {
  TimelineRecorder r;
  r.AddNode(Node("a", v1::TOOL, {}, ""), At(1));
  r.AddNode(Node("b", v1::TOOL, {}, ""), At(1));
  r.AddNode(Node("c", v1::LLM, {"a", "b"}), At(1));
  r.OnEvent(Ev(EventKind::kToolFinished, "a"), At(2));
  v1::WorkflowTimeline t1;
  r.Fill(&t1);
  EXPECT_EQ(EventsOf(t1, "c"), (std::vector<std::string>{"submitted"}));
  r.OnEvent(Ev(EventKind::kToolFinished, "b", Status::Aborted("exit 1")), At(3));
  v1::WorkflowTimeline t2;
  r.Fill(&t2);
  EXPECT_EQ(EventsOf(t2, "b"), (std::vector<std::string>{"submitted", "ready", "tool_failed"}));
  EXPECT_EQ(EventsOf(t2, "c"), (std::vector<std::string>{"submitted"}));
  r.OnEvent(Ev(EventKind::kToolFinished, "b"), At(4));  // the retry succeeded
  v1::WorkflowTimeline t3;
  r.Fill(&t3);
  EXPECT_EQ(EventsOf(t3, "c"), (std::vector<std::string>{"submitted", "ready"}));
  EXPECT_EQ(t3.node_events(t3.node_events_size() - 1).time_us(), 4000);
}

TEST(TimelineRecorder, FailedAndCancelledMovesEndWithThatEventAndAreNeverConsumed) {
  TimelineRecorder r;
  r.AddNode(Node("llm-0", v1::LLM, {}), At(1));
  r.OnDecision(Decision("prefetch", "", 1), At(2), Route());
  r.OnDecision(Decision("prefetch", "", 2), At(2), Route());
  r.OnDecision(Decision("prefetch", "", 3), At(2), Route());
  MoverTimes partial;
  partial.transport_completed = At(3);  // arrived, then failed validation
  r.OnTransferEnd(1, Status::DataLoss("checksum mismatch"), partial, At(4));
  r.OnTransferEnd(2, Status::Cancelled("transfer 2 cancelled"), {}, At(5));
  EXPECT_TRUE(r.OnEvent(Ev(EventKind::kLlmFinished, "llm-0"), At(6)).empty());
  v1::WorkflowTimeline t;
  r.Fill(&t);
  ASSERT_EQ(t.transfers_size(), 3);
  EXPECT_EQ(StagesOf(t.transfers(0)), (std::vector<std::string>{"transport_completed", "failed"}));
  EXPECT_EQ(t.transfers(0).outcome(), "failed");
  EXPECT_NE(t.transfers(0).events(1).detail().find("checksum mismatch"), std::string::npos);
  EXPECT_EQ(StagesOf(t.transfers(1)), (std::vector<std::string>{"cancelled"}));
  EXPECT_EQ(t.transfers(1).outcome(), "cancelled");
  EXPECT_TRUE(t.transfers(2).events().empty());
  EXPECT_EQ(t.transfers(2).outcome(), "in_flight");
  // A second end of the same move changes nothing.
  r.OnTransferEnd(1, Status::OK(), {}, At(7));
  v1::WorkflowTimeline again;
  r.Fill(&again);
  EXPECT_EQ(again.transfers(0).outcome(), "failed");
}

TEST(TimelineRecorder, EmptyMoveHasItsEventsAtTheCommit) {
  TimelineRecorder r;
  r.OnDecision(Decision("demote", "", 4), At(1), Route());
  r.OnTransferEnd(4, Status::OK(), {}, At(2));
  v1::WorkflowTimeline t;
  r.Fill(&t);
  ASSERT_EQ(t.transfers_size(), 1);
  EXPECT_EQ(StagesOf(t.transfers(0)),
            (std::vector<std::string>{"transport_completed", "validated", "committed"}));
  EXPECT_EQ(t.transfers(0).events(0).detail(), "no blocks to move");
}

TEST(TimelineRecorder, BoundedOldestDroppedAndCounted) {
  TimelineRecorder r(3);
  for (int i = 0; i < 5; ++i) r.AddNode(Node("n" + std::to_string(i), v1::TOOL, {"x"}, ""), At(i));
  for (uint64_t x = 1; x <= 4; ++x) r.OnDecision(Decision("demote", "", x), At(10), Route());
  v1::WorkflowTimeline t;
  r.Fill(&t);
  ASSERT_EQ(t.node_events_size(), 3);
  EXPECT_EQ(t.node_events(0).node_id(), "n2");
  EXPECT_EQ(t.node_events_dropped(), 2u);
  ASSERT_EQ(t.transfers_size(), 3);
  EXPECT_EQ(t.transfers(0).transfer_id(), 2u);
  EXPECT_EQ(t.transfers_dropped(), 1u);
}

}  // namespace
}  // namespace switchyard::driver
