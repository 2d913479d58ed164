// GET /v1/workflows/{id}/timeline against the real scheduler: a workflow whose context is
// demoted during a long tool wait and prefetched for the next call shows both transfers,
// each linked to its decision's transfer id, with its four events (transport completed,
// validated, committed, consumed) in order and with non-decreasing times, and its nodes'
// events; the route's auth and errors are those of GET /v1/workflows/{id}.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/serve/scheduler_api_env.h"

namespace switchyard::serve {
namespace {

using testing::SchedulerApiEnv;

std::vector<std::string> NodeEvents(const v1::WorkflowTimeline& t, const std::string& node) {
  std::vector<std::string> out;
  for (const auto& e : t.node_events())
    if (e.node_id() == node) out.push_back(e.event());
  return out;
}

int64_t TimeOf(const v1::WorkflowTimeline& t, const std::string& node, const std::string& ev) {
  for (const auto& e : t.node_events())
    if (e.node_id() == node && e.event() == ev) return e.time_us();
  return -1;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(Timeline, DemotionDuringToolWaitAndPrefetchWithTheirFourEvents) {
  SchedulerApiEnv env("timeline");
  ASSERT_TRUE(env.ok());
  v1::WorkflowStatus done = env.RunBig();
  ASSERT_EQ(done.state(), v1::WORKFLOW_COMPLETED);
  // The decisions that moved "main", by transfer id.
  std::map<uint64_t, v1::Decision> moves;
  for (const auto& d : done.decisions())
    if (d.kind() == "demote" || d.kind() == "prefetch") moves[d.transfer_id()] = d;

  auto t = env.Get<v1::WorkflowTimeline>("/v1/workflows/big/timeline");
  EXPECT_EQ(t.workflow_id(), "big");
  EXPECT_FALSE(t.archived());
  ASSERT_GE(t.transfers_size(), 2) << *proto::ToJson(t);
  std::set<std::string> kinds;
  const std::vector<std::string> four = {"transport_completed", "validated", "committed",
                                         "consumed"};
  for (const auto& x : t.transfers()) {
    SCOPED_TRACE(*proto::ToJson(x));
    ASSERT_TRUE(moves.count(x.transfer_id())) << "no decision with transferId " << x.transfer_id();
    const v1::Decision& d = moves[x.transfer_id()];
    EXPECT_EQ(x.kind(), d.kind());
    EXPECT_EQ(x.context(), "main");
    EXPECT_EQ(x.traffic_class(), d.traffic_class());
    EXPECT_EQ(x.bytes(), d.bytes());
    EXPECT_EQ(x.src_tier() + "@" + std::to_string(x.src_worker()), d.src());
    EXPECT_EQ(x.dst_tier() + "@" + std::to_string(x.dst_worker()), d.dst());
    EXPECT_FALSE(x.links().empty());  // net_budget's route: at least worker 0's PCIe
    EXPECT_GT(x.blocks(), 0u);
    EXPECT_GT(x.moved_bytes(), 0u);
    std::vector<std::string> stages;
    for (const auto& e : x.events()) stages.push_back(e.event());
    EXPECT_EQ(stages, four);
    int64_t prev = x.decided_us();
    EXPECT_EQ(prev / 1000, d.time_ms());  // the same moment as the decision
    for (const auto& e : x.events()) {
      EXPECT_GE(e.time_us(), prev) << e.event();
      prev = e.time_us();
    }
    EXPECT_EQ(x.outcome(), "consumed");
    EXPECT_EQ(x.events(3).detail(), "llm-1");  // the next call read the context
    EXPECT_EQ(x.events(3).time_us(), TimeOf(t, "llm-1", "finished"));
    kinds.insert(x.kind());
  }
  EXPECT_TRUE(kinds.count("demote")) << *proto::ToJson(t);
  EXPECT_TRUE(kinds.count("prefetch")) << *proto::ToJson(t);
  // The demotion happened during the tool wait, on its account; the prefetch was for llm-1.
  for (const auto& x : t.transfers()) {
    if (x.kind() == "demote") {
      EXPECT_EQ(x.node_id(), "bash");
      EXPECT_GE(x.decided_us(), TimeOf(t, "bash", "tool_started"));
      EXPECT_LE(x.decided_us(), TimeOf(t, "bash", "tool_finished"));
    } else {
      EXPECT_EQ(x.node_id(), "llm-1");
      EXPECT_LE(x.events(2).time_us(), TimeOf(t, "llm-1", "finished"));
    }
  }
  // Node events, each node's in time order.
  for (const char* ev : {"submitted", "ready", "placed", "finished"}) {
    EXPECT_TRUE(Contains(NodeEvents(t, "llm-0"), ev)) << ev;
    EXPECT_TRUE(Contains(NodeEvents(t, "llm-1"), ev)) << ev;
  }
  for (const char* ev : {"submitted", "ready", "admitted", "tool_started", "tool_finished"})
    EXPECT_TRUE(Contains(NodeEvents(t, "bash"), ev)) << ev;
  EXPECT_LE(TimeOf(t, "llm-0", "finished"), TimeOf(t, "bash", "ready"));
  EXPECT_LE(TimeOf(t, "bash", "tool_finished"), TimeOf(t, "llm-1", "ready"));
  EXPECT_LE(TimeOf(t, "llm-1", "placed"), TimeOf(t, "llm-1", "finished"));
  int64_t prev = 0;
  for (const auto& e : t.node_events()) {
    EXPECT_GE(e.time_us(), prev) << e.node_id() << " " << e.event();
    prev = e.time_us();
  }
  EXPECT_EQ(t.node_events_dropped(), 0u);
  EXPECT_EQ(t.transfers_dropped(), 0u);
}

TEST(Timeline, SameAuthAndErrorsAsTheWorkflow) {
  SchedulerApiEnv env("timeline_auth");
  ASSERT_TRUE(env.ok());
  ASSERT_EQ(env.Call("POST", "/v1/workflows", R"({"id":"w","nodes":[]})").status, 201);
  http::HttpResponse unknown = env.Call("GET", "/v1/workflows/nope/timeline");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_NE(unknown.body.find("nope"), std::string::npos) << unknown.body;
  EXPECT_EQ(env.Call("GET", "/v1/workflows/w/timeline", "", {{"authorization", ""}}).status, 401);
  EXPECT_EQ(env.Call("GET", "/v1/workflows/w/timeline", "",
                     {{"authorization", std::string("Bearer ") + SchedulerApiEnv::kAdmin}})
                .status,
            403);
  EXPECT_EQ(env.Call("POST", "/v1/workflows/w/timeline").status, 405);
  auto t = env.Get<v1::WorkflowTimeline>("/v1/workflows/w/timeline");
  EXPECT_EQ(t.workflow_id(), "w");
  EXPECT_EQ(t.transfers_size(), 0);
}

}  // namespace
}  // namespace switchyard::serve
