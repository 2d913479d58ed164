// The service drives the real scheduler: over real HTTP on loopback, GET shows where each
// context's KV lives and the decisions taken after a tool wait; a restart restores and
// re-feeds workflows so they run to the end; /v1/cluster shows tiers and link budgets; a
// demotion moves real blocks through the TieredKvMover into the emulated kv_tiers tiers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "http/http_server.h"
#include "proto/json.h"
#include "serve/http_api.h"
#include "serve/serve_config.h"
#include "tests/common/wait_until.h"
#include "tests/http/http_test_client.h"
#include "tests/serve/loopback_api.h"

namespace switchyard::serve {
namespace {

constexpr char kSchedToken[] = "sched-tenant-token-0123456789";
constexpr char kSchedAdmin[] = "sched-admin-token-0123456789";

class SchedulerServiceTest : public testing::LoopbackApiTest {
 protected:
  void Start(uint64_t hbm_bytes = 1ULL << 30, int workers = 1,
             const std::function<void(driver::SchedulerConfig*)>& tune = nullptr) {
    service::ServiceOptions so;
    so.scheduler.hbm_bytes_per_worker = hbm_bytes;  // small: a long wait is worth a demote
    so.scheduler.host_bytes = 4ULL << 30;
    so.scheduler.disk_bytes = 4ULL << 30;
    so.scheduler.kv_bytes_scale = 256;  // emulated tiers hold 1/256 of the KV bytes
    so.scheduler.workers = workers;
    if (tune) tune(&so.scheduler);
    Serve(so, OneTenant(kSchedToken, kSchedAdmin), {}, {}, /*async=*/false);
  }
  void Stop() { StopServing(); }
  v1::ClusterState Cluster() {
    auto r = Call("GET", "/v1/cluster");
    EXPECT_EQ(r.status, 200) << r.body;
    v1::ClusterState c;
    EXPECT_TRUE(proto::ParseJson(r.body, &c).ok()) << r.body;
    return c;
  }
  static const v1::TierState* TierOf(const v1::ClusterState& c, const std::string& tier) {
    for (const auto& t : c.tiers())
      if (t.tier() == tier && t.worker() == 0) return &t;
    return nullptr;
  }
  testing::ClientResponse Call(const std::string& method, const std::string& target,
                               const std::string& body = "", const char* token = kSchedToken) {
    return Send(method, target, body, token);
  }
  v1::WorkflowStatus Get(const std::string& id) {
    auto r = Call("GET", "/v1/workflows/" + id);
    EXPECT_EQ(r.status, 200) << r.body;
    v1::WorkflowStatus s;
    EXPECT_TRUE(proto::ParseJson(r.body, &s).ok()) << r.body;
    return s;
  }
  static const v1::NodeStatus* Node(const v1::WorkflowStatus& s, const std::string& id) {
    for (const auto& n : s.nodes())
      if (n.id() == id) return &n;
    return nullptr;
  }
  // Polls GET until `pred` holds (testing::WaitUntil's bound; the scheduler runs in real
  // time): a failure then.
  v1::WorkflowStatus WaitFor(const std::string& id,
                             const std::function<bool(const v1::WorkflowStatus&)>& pred) {
    v1::WorkflowStatus s;
    if (!testing::WaitUntil([&] {
          s = Get(id);
          return pred(s);
        }))
      ADD_FAILURE() << "timed out; last status: " << *proto::ToJson(s);
    return s;
  }
  void Event(const std::string& id, const std::string& node, const std::string& type) {
    auto r = Call("POST", "/v1/workflows/" + id + "/events",
                  "{\"nodeId\":\"" + node + "\",\"type\":\"" + type + "\"}");
    ASSERT_EQ(r.status, 200) << r.body;
  }
  static bool Has(const v1::WorkflowStatus& s, const std::string& kind) {
    for (const auto& d : s.decisions())
      if (d.kind() == kind) return true;
    return false;
  }
  static std::string NodeState(const v1::WorkflowStatus& s, const std::string& node) {
    const v1::NodeStatus* n = Node(s, node);
    return n ? v1::NodeState_Name(n->state()) : "missing";
  }

  // llm-0 creates context "main" (2000 tokens), a long tool waits, llm-1 extends main.
  static constexpr char kAgent[] =
      R"({"id":"agent","nodes":[
        {"id":"llm-0","kind":"LLM","modelId":"Llama-3.1-8B","cacheRefs":[{"context":"main","mode":"CREATE"}],
         "hints":{"promptTokens":2000,"extendTokens":2000,"maxOutputTokens":4}},
        {"id":"bash","kind":"TOOL","toolName":"Bash","deps":["llm-0"],"hints":{"expectedDurationMs":60000}},
        {"id":"llm-1","kind":"LLM","modelId":"Llama-3.1-8B","deps":["bash"],
         "cacheRefs":[{"context":"main","mode":"EXTEND"}],
         "hints":{"promptTokens":2300,"extendTokens":300,"maxOutputTokens":4}}]})";
};

TEST_F(SchedulerServiceTest, GetShowsKvLocationAndDecisionsAfterToolWait) {
  Start();
  ASSERT_EQ(Call("POST", "/v1/workflows", kAgent).status, 201);
  // The simulated engine runs llm-0; the service records its result durably.
  WaitFor("agent", [](const auto& s) { return NodeState(s, "llm-0") == "NODE_SUCCEEDED"; });
  Event("agent", "bash", "TOOL_STARTED");
  // During the tool wait the scheduler decided what to do with "main" (keep, demote or
  // discard), and GET says where its KV is.
  auto during = WaitFor("agent", [](const auto& s) {
    bool decided = false, settled = false;
    for (const auto& d : s.decisions())
      if ((d.kind() == "keep" || d.kind() == "demote" || d.kind() == "discard") &&
          d.context() == "main")
        decided = true;
    for (const auto& kv : s.kv())
      if (kv.context() == "main" && !kv.in_flight()) settled = true;
    return decided && settled;
  });
  EXPECT_TRUE(Has(during, "place"));
  EXPECT_TRUE(Has(during, "admit"));
  ASSERT_EQ(during.kv_size(), 1);
  const auto& kv = during.kv(0);
  EXPECT_EQ(kv.context(), "main");
  EXPECT_EQ(kv.tokens(), 2004) << "2000 prompt tokens + 4 generated";
  if (Has(during, "discard")) {
    EXPECT_EQ(kv.tier(), "none");
  } else {
    EXPECT_TRUE(kv.tier() == "hbm" || kv.tier() == "host" || kv.tier() == "disk") << kv.tier();
    EXPECT_EQ(kv.worker(), 0);
    EXPECT_EQ(kv.bytes(), 2004u * 131072u) << "Llama-3.1-8B: 128 KiB of KV per token";
  }
  for (const auto& d : during.decisions()) {
    EXPECT_GT(d.time_ms(), 0);
    EXPECT_FALSE(d.line().empty());
    if (d.kind() == "demote") {
      EXPECT_EQ(d.src(), "hbm@0");
      EXPECT_FALSE(d.traffic_class().empty());
      EXPECT_GT(d.bytes(), 0u);
    }
  }
  Event("agent", "bash", "TOOL_FINISHED");
  ASSERT_EQ(Call("POST", "/v1/workflows/agent:close").status, 200);
  auto done = WaitFor("agent", [](const auto& s) { return s.state() == v1::WORKFLOW_COMPLETED; });
  EXPECT_TRUE(Has(done, "complete"));
  EXPECT_EQ(NodeState(done, "llm-1"), "NODE_SUCCEEDED");

  auto cluster = Call("GET", "/v1/cluster");
  ASSERT_EQ(cluster.status, 200);
  v1::ClusterState c;
  ASSERT_TRUE(proto::ParseJson(cluster.body, &c).ok()) << cluster.body;
  EXPECT_EQ(c.workers(), 1);
  EXPECT_EQ(c.model_executor(), "simulated engine");
  EXPECT_EQ(c.tiers_size(), 3);
  EXPECT_EQ(c.tiers(0).tier(), "hbm");
  EXPECT_EQ(c.tiers(0).capacity_bytes(), 1ULL << 30);
  ASSERT_GE(c.links_size(), 2);
  EXPECT_EQ(c.links(0).classes_size(), 4);
  EXPECT_GE(c.decisions_by_kind().at("place"), 2u);
  EXPECT_EQ(c.workflows().completed(), 1u);
}

// Under a small HBM, a long tool wait makes the scheduler demote "main" (8000 tokens, 1 GiB
// of KV in a 1.25 GiB HBM). The TieredKvMover copies its blocks out of the emulated HBM
// arena into the host (or disk) tier: GET shows "main" there, /v1/cluster shows that tier
// holding the blocks, and after the tool the context comes back and the workflow completes.
TEST_F(SchedulerServiceTest, DemotionMovesRealBlocksThroughTheTiers) {
  Start(1280ULL << 20);
  constexpr char kBig[] =
      R"({"id":"big","nodes":[
        {"id":"llm-0","kind":"LLM","modelId":"Llama-3.1-8B","cacheRefs":[{"context":"main","mode":"CREATE"}],
         "hints":{"promptTokens":8000,"extendTokens":8000,"maxOutputTokens":4}},
        {"id":"bash","kind":"TOOL","toolName":"Bash","deps":["llm-0"],"hints":{"expectedDurationMs":600000}},
        {"id":"llm-1","kind":"LLM","modelId":"Llama-3.1-8B","deps":["bash"],
         "cacheRefs":[{"context":"main","mode":"EXTEND"}],
         "hints":{"promptTokens":8300,"extendTokens":300,"maxOutputTokens":4}}]})";
  ASSERT_EQ(Call("POST", "/v1/workflows", kBig).status, 201);
  WaitFor("big", [](const auto& s) { return NodeState(s, "llm-0") == "NODE_SUCCEEDED"; });
  Event("big", "bash", "TOOL_STARTED");
  auto demoted = WaitFor("big", [](const auto& s) {
    for (const auto& kv : s.kv())
      if (kv.context() == "main" && !kv.in_flight() && (kv.tier() == "host" || kv.tier() == "disk"))
        return true;
    return false;
  });
  ASSERT_TRUE(Has(demoted, "demote")) << *proto::ToJson(demoted);
  ASSERT_EQ(demoted.kv_size(), 1);
  const std::string tier = demoted.kv(0).tier();
  uint64_t kv_bytes = 8004ULL * 131072;
  EXPECT_EQ(demoted.kv(0).bytes(), kv_bytes);

  v1::ClusterState during = Cluster();
  const v1::TierState* t = TierOf(during, tier);
  ASSERT_NE(t, nullptr);
  // 1/256 of 1 GiB in 2 MiB blocks (16 tokens of Llama-3.1-8B): 2 blocks, reported x256.
  EXPECT_EQ(t->used_bytes(), 2 * (2ULL << 20) * 256) << t->backing();
  EXPECT_EQ(t->contexts(), 1);
  EXPECT_NE(t->backing().find("emulated"), std::string::npos) << t->backing();
  EXPECT_NE(during.kv_mover().find("tiered kv mover"), std::string::npos) << during.kv_mover();
  EXPECT_NE(during.planner().find("net_budget"), std::string::npos) << during.planner();
  EXPECT_GE(during.bytes_moved_by_tier().at(tier), kv_bytes);
  ASSERT_GE(during.links_size(), 2);  // pcie (worker <-> host memory), disk (host <-> NVMe)
  std::set<std::string> links;
  uint64_t pcie_granted = 0;  // the demotion crossed worker 0's PCIe link under a grant
  for (const auto& l : during.links()) {
    EXPECT_EQ(l.classes_size(), 4) << l.name();
    EXPECT_GT(l.bandwidth_bytes_per_s(), 0) << l.name();
    links.insert(l.name() + ":" + l.kind());
    if (l.name() == "pcie0")
      for (const auto& c : l.classes()) pcie_granted += c.granted_bytes();
  }
  EXPECT_GE(pcie_granted, kv_bytes) << *proto::ToJson(during);
  EXPECT_TRUE(links.count("pcie0:pcie")) << *proto::ToJson(during);
  EXPECT_TRUE(links.count("disk0:disk")) << *proto::ToJson(during);

  Event("big", "bash", "TOOL_FINISHED");
  ASSERT_EQ(Call("POST", "/v1/workflows/big:close").status, 200);
  auto done = WaitFor("big", [](const auto& s) { return s.state() == v1::WORKFLOW_COMPLETED; });
  EXPECT_EQ(NodeState(done, "llm-1"), "NODE_SUCCEEDED");
  EXPECT_TRUE(Has(done, "complete"));
  // The context went back to HBM (a prefetch) and was dropped with the workflow: the
  // demoted tier holds nothing any more.
  v1::ClusterState after = Cluster();
  ASSERT_NE(TierOf(after, tier), nullptr);
  EXPECT_EQ(TierOf(after, tier)->used_bytes(), 0u) << TierOf(after, tier)->backing();
  EXPECT_EQ(after.workflows().completed(), 1u);
}

// engine "cpu": the CPU engine computes the calls (a tiny model with random weights) and
// its KV pool holds real bytes. Under a small pool a long tool wait demotes "main": the
// engine's real blocks are copied into the host (or disk) tier and its pool is freed; after
// the tool they come back and the workflow completes.
TEST_F(SchedulerServiceTest, CpuEngineDemotionCopiesTheEnginesRealKv) {
  Start(0, 1, [](driver::SchedulerConfig* c) {
    c->engine = "cpu";
    c->model_path = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json";
    c->kv_pool_bytes = 1ULL << 20;  // 2048 tokens of this model's 512 B per token
  });
  constexpr char kCpu[] =
      R"({"id":"cpu","nodes":[
        {"id":"llm-0","kind":"LLM","modelId":"tiny-llama-2l","cacheRefs":[{"context":"main","mode":"CREATE"}],
         "hints":{"promptTokens":1500,"extendTokens":1500,"maxOutputTokens":4}},
        {"id":"bash","kind":"TOOL","toolName":"Bash","deps":["llm-0"],"hints":{"expectedDurationMs":600000}},
        {"id":"llm-1","kind":"LLM","modelId":"tiny-llama-2l","deps":["bash"],
         "cacheRefs":[{"context":"main","mode":"EXTEND"}],
         "hints":{"promptTokens":1600,"extendTokens":100,"maxOutputTokens":4}}]})";
  ASSERT_EQ(Call("POST", "/v1/workflows", kCpu).status, 201);
  WaitFor("cpu", [](const auto& s) { return NodeState(s, "llm-0") == "NODE_SUCCEEDED"; });
  v1::ClusterState before = Cluster();
  ASSERT_EQ(before.worker_engines_size(), 1);
  const v1::WorkerEngine& e = before.worker_engines(0);
  EXPECT_EQ(e.engine(), "cpu engine");
  EXPECT_TRUE(e.random_weights());
  EXPECT_NE(e.model().find("random weights"), std::string::npos) << e.model();
  EXPECT_EQ(e.kv_bytes_per_token(), 512u);
  EXPECT_EQ(e.kv_pool_capacity_bytes(), 1ULL << 20);
  const uint64_t blocks = (1504 + 15) / 16, block_bytes = 16 * 512;
  EXPECT_EQ(e.kv_pool_used_bytes(), blocks * block_bytes) << "main's real blocks";
  Event("cpu", "bash", "TOOL_STARTED");
  auto demoted = WaitFor("cpu", [](const auto& s) {
    for (const auto& kv : s.kv())
      if (kv.context() == "main" && !kv.in_flight() && (kv.tier() == "host" || kv.tier() == "disk"))
        return true;
    return false;
  });
  ASSERT_TRUE(Has(demoted, "demote")) << *proto::ToJson(demoted);
  v1::ClusterState during = Cluster();
  EXPECT_EQ(during.worker_engines(0).kv_pool_used_bytes(), 0u) << "the pool freed main";
  uint64_t real = 0;
  for (const auto& [dst, n] : during.real_bytes_moved()) real += n;
  EXPECT_EQ(real, blocks * block_bytes) << *proto::ToJson(during);
  const v1::TierState* t = TierOf(during, demoted.kv(0).tier());
  ASSERT_NE(t, nullptr);
  EXPECT_NE(t->backing().find("real bytes"), std::string::npos) << t->backing();

  Event("cpu", "bash", "TOOL_FINISHED");
  ASSERT_EQ(Call("POST", "/v1/workflows/cpu:close").status, 200);
  auto done = WaitFor("cpu", [](const auto& s) { return s.state() == v1::WORKFLOW_COMPLETED; });
  EXPECT_EQ(NodeState(done, "llm-1"), "NODE_SUCCEEDED");
  v1::ClusterState after = Cluster();
  uint64_t to_pool = 0;
  for (const auto& [dst, n] : after.real_bytes_moved())
    if (dst.find("cpu engine KV pool") != std::string::npos) to_pool += n;
  // Prefetched back (real bytes into the pool), unless the scheduler chose to recompute.
  if (!Has(done, "discard")) {
    EXPECT_EQ(to_pool, blocks * block_bytes) << *proto::ToJson(after);
  }
}

// Two workers: an emulated HBM arena each, the node's host and disk tiers, a PCIe and an
// NVLink per worker in the loopback topology; two agents run to the end.
TEST_F(SchedulerServiceTest, TwoWorkersRunOnTheirOwnEmulatedHbm) {
  Start(1280ULL << 20, 2);
  std::string second = kAgent;
  second.replace(second.find("\"agent\""), 7, "\"agent2\"");
  ASSERT_EQ(Call("POST", "/v1/workflows", kAgent).status, 201);
  ASSERT_EQ(Call("POST", "/v1/workflows", second).status, 201);
  for (const std::string id : {"agent", "agent2"}) {
    WaitFor(id, [](const auto& s) { return NodeState(s, "llm-0") == "NODE_SUCCEEDED"; });
    Event(id, "bash", "TOOL_STARTED");
  }
  for (const std::string id : {"agent", "agent2"}) {
    Event(id, "bash", "TOOL_FINISHED");
    ASSERT_EQ(Call("POST", "/v1/workflows/" + id + ":close").status, 200);
  }
  for (const std::string id : {"agent", "agent2"}) {
    auto done = WaitFor(id, [](const auto& s) { return s.state() == v1::WORKFLOW_COMPLETED; });
    EXPECT_EQ(NodeState(done, "llm-1"), "NODE_SUCCEEDED") << id;
  }
  v1::ClusterState c = Cluster();
  EXPECT_EQ(c.workers(), 2);
  std::set<std::string> tiers, links;
  for (const auto& t : c.tiers()) {
    tiers.insert(t.tier() + "@" + std::to_string(t.worker()));
    EXPECT_EQ(t.contexts(), 0) << t.tier();
  }
  EXPECT_EQ(tiers, (std::set<std::string>{"hbm@0", "hbm@1", "host@0", "disk@0"}));
  for (const auto& l : c.links()) links.insert(l.name());
  for (const char* name : {"pcie0", "pcie1", "nvlink0", "nvlink1", "disk0"})
    EXPECT_TRUE(links.count(name)) << name << " in " << *proto::ToJson(c);
  EXPECT_EQ(c.workflows().completed(), 2u);
}

// POST /v1/workers/{w}:drain takes the worker that holds a waiting context out of service:
// the context leaves its HBM, the worker is listed draining and then drained, new work and
// the workflow's next call run on the other worker; :undrain puts it back. Admin only,
// POST only, errors name the worker.
TEST_F(SchedulerServiceTest, ADrainedWorkerIsEmptiedAndTakesNoNewWork) {
  Start(1280ULL << 20, 2);
  ASSERT_EQ(Call("POST", "/v1/workflows", kAgent).status, 201);
  WaitFor("agent", [](const auto& s) { return NodeState(s, "llm-0") == "NODE_SUCCEEDED"; });
  Event("agent", "bash", "TOOL_STARTED");
  auto held =
      WaitFor("agent", [](const auto& s) { return s.kv_size() == 1 && !s.kv(0).in_flight(); });
  const int w = held.kv(0).worker();
  ASSERT_GE(w, 0) << *proto::ToJson(held);
  const std::string drain = "/v1/workers/" + std::to_string(w) + ":drain";

  EXPECT_EQ(Call("POST", drain).status, 403) << "a tenant token";
  EXPECT_EQ(Call("GET", drain, "", kSchedAdmin).status, 405);
  EXPECT_EQ(Call("POST", "/v1/workers/1:pause", "", kSchedAdmin).status, 404);
  auto bad = Call("POST", "/v1/workers/one:drain", "", kSchedAdmin);
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("worker 'one'"), std::string::npos) << bad.body;
  auto unknown = Call("POST", "/v1/workers/7:drain", "", kSchedAdmin);
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body.find("worker 7"), std::string::npos) << unknown.body;

  auto r = Call("POST", drain, "", kSchedAdmin);
  ASSERT_EQ(r.status, 200) << r.body;
  v1::WorkerDrain answer;
  ASSERT_TRUE(proto::ParseJson(r.body, &answer).ok()) << r.body;
  EXPECT_EQ(answer.worker(), w);
  EXPECT_EQ(answer.state(), "draining");
  // The context leaves the draining worker's HBM (demoted or dropped for recompute).
  auto off = WaitFor("agent", [w](const auto& s) {
    return s.kv_size() == 1 && !s.kv(0).in_flight() &&
           !(s.kv(0).tier() == "hbm" && s.kv(0).worker() == w);
  });
  EXPECT_TRUE(Has(off, "demote") || Has(off, "discard")) << *proto::ToJson(off);
  const bool drained = testing::WaitUntil([&] {
    bool now = false;
    v1::ClusterState c = Cluster();
    for (const auto& e : c.worker_engines()) {
      if (e.worker() != w) {
        EXPECT_EQ(e.state(), "alive");
      }
      if (e.worker() == w) {
        EXPECT_EQ(e.state(), "draining");
        now = e.drained();
      }
    }
    return now;
  });
  EXPECT_TRUE(drained) << *proto::ToJson(Cluster());

  // New work and the agent's next call run on the other worker.
  std::string second = kAgent;
  second.replace(second.find("\"agent\""), 7, "\"agent2\"");
  ASSERT_EQ(Call("POST", "/v1/workflows", second).status, 201);
  auto s2 =
      WaitFor("agent2", [](const auto& s) { return NodeState(s, "llm-0") == "NODE_SUCCEEDED"; });
  ASSERT_EQ(s2.kv_size(), 1);
  EXPECT_NE(s2.kv(0).worker(), w) << *proto::ToJson(s2);
  Event("agent", "bash", "TOOL_FINISHED");
  ASSERT_EQ(Call("POST", "/v1/workflows/agent:close").status, 200);
  auto done = WaitFor("agent", [](const auto& s) { return s.state() == v1::WORKFLOW_COMPLETED; });
  EXPECT_EQ(NodeState(done, "llm-1"), "NODE_SUCCEEDED");

  r = Call("POST", "/v1/workers/" + std::to_string(w) + ":undrain", "", kSchedAdmin);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(proto::ParseJson(r.body, &answer).ok()) << r.body;
  EXPECT_EQ(answer.state(), "alive");
  EXPECT_FALSE(answer.drained());
  const v1::ClusterState after = Cluster();
  for (const auto& e : after.worker_engines()) EXPECT_EQ(e.state(), "alive") << e.worker();
}

TEST_F(SchedulerServiceTest, ClientLlmEventsAreRefusedWhileTheSimulatedExecutorRunsThem) {
  Start();
  ASSERT_EQ(Call("POST", "/v1/workflows", kAgent).status, 201);
  auto r = Call("POST", "/v1/workflows/agent/events", R"({"nodeId":"llm-0","type":"LLM_STARTED"})");
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("simulated engine"), std::string::npos) << r.body;
}

TEST_F(SchedulerServiceTest, RestartRestoresAndRefeedsWorkflows) {
  Start();
  ASSERT_EQ(Call("POST", "/v1/workflows", kAgent).status, 201);
  WaitFor("agent", [](const auto& s) { return NodeState(s, "llm-0") == "NODE_SUCCEEDED"; });
  Event("agent", "bash", "TOOL_STARTED");
  ASSERT_EQ(Call("POST", "/v1/workflows/agent:close").status, 200);
  Stop();  // the process goes away with the tool still running

  Start();
  auto restored = Get("agent");
  EXPECT_EQ(restored.state(), v1::WORKFLOW_RUNNING);
  EXPECT_EQ(NodeState(restored, "llm-0"), "NODE_SUCCEEDED");
  EXPECT_EQ(NodeState(restored, "bash"), "NODE_RUNNING");
  // Re-fed: the scheduler admits the running tool again, so its finish is acted upon, and
  // llm-1 runs (recomputing "main", whose KV did not survive) to the end.
  WaitFor("agent", [](const auto& s) { return Has(s, "admit"); });
  Event("agent", "bash", "TOOL_FINISHED");
  auto done = WaitFor("agent", [](const auto& s) { return s.state() == v1::WORKFLOW_COMPLETED; });
  EXPECT_EQ(NodeState(done, "llm-1"), "NODE_SUCCEEDED");
  EXPECT_TRUE(Has(done, "place"));
  EXPECT_TRUE(Has(done, "complete"));
  for (const auto& n : done.nodes()) EXPECT_EQ(n.attempts(), 1u) << n.id();
}

// Learned tool durations survive a restart: they are saved in the state store after tools
// finish (and when the service stops) and restored before workflows are fed.
TEST_F(SchedulerServiceTest, LearnedToolDurationsSurviveARestart) {
  Start();
  ASSERT_EQ(Call("POST", "/v1/workflows", kAgent).status, 201);
  WaitFor("agent", [](const auto& s) { return NodeState(s, "llm-0") == "NODE_SUCCEEDED"; });
  Event("agent", "bash", "TOOL_STARTED");
  Event("agent", "bash", "TOOL_FINISHED");  // whatever it lasted, one sample to learn
  ASSERT_EQ(Call("POST", "/v1/workflows/agent:close").status, 200);
  WaitFor("agent", [](const auto& s) { return s.state() == v1::WORKFLOW_COMPLETED; });
  v1::LearnedDurations before = service_->scheduler()->LearnedDurations();
  ASSERT_DOUBLE_EQ(before.samples(), 1.0) << before.DebugString();
  Stop();

  Start();
  v1::LearnedDurations after = service_->scheduler()->LearnedDurations();
  EXPECT_DOUBLE_EQ(after.samples(), 1.0);
  ASSERT_EQ(after.entries_size(), before.entries_size());
  for (int i = 0; i < after.entries_size(); ++i) {
    EXPECT_EQ(after.entries(i).tool(), "Bash");
    EXPECT_EQ(after.entries(i).sketch().SerializeAsString(),
              before.entries(i).sketch().SerializeAsString());
  }
}

// A workflow's last decision says how it ended: "cancel" after DELETE of a running one,
// "fail" (naming the node, with the reason) after a tool reported failed and not
// retryable; neither ends with "complete", and the failure is not retried.
TEST_F(SchedulerServiceTest, CancelledAndFailedWorkflowsEndWithCancelAndFail) {
  Start();
  auto last_is = [](const std::string& kind) {
    return [kind](const v1::WorkflowStatus& s) {
      return s.decisions_size() > 0 && s.decisions(s.decisions_size() - 1).kind() == kind;
    };
  };
  std::string gone = kAgent, broken = kAgent;
  gone.replace(gone.find("\"agent\""), 7, "\"gone\"");
  broken.replace(broken.find("\"agent\""), 7, "\"broken\"");
  for (const std::string* body : {&gone, &broken})
    ASSERT_EQ(Call("POST", "/v1/workflows", *body).status, 201) << *body;
  for (const char* id : {"gone", "broken"}) {
    WaitFor(id, [](const auto& s) { return NodeState(s, "llm-0") == "NODE_SUCCEEDED"; });
    Event(id, "bash", "TOOL_STARTED");
  }

  ASSERT_EQ(Call("DELETE", "/v1/workflows/gone").status, 200);
  auto cancelled = WaitFor("gone", last_is("cancel"));
  EXPECT_EQ(cancelled.state(), v1::WORKFLOW_CANCELLED);
  EXPECT_FALSE(Has(cancelled, "complete"));
  EXPECT_FALSE(Has(cancelled, "fail"));

  auto r = Call("POST", "/v1/workflows/broken/events",
                R"({"nodeId":"bash","type":"TOOL_FAILED","error":"exit 2","retryable":false})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto failed = WaitFor("broken", last_is("fail"));
  EXPECT_EQ(failed.state(), v1::WORKFLOW_FAILED);
  const v1::Decision& end = failed.decisions(failed.decisions_size() - 1);
  EXPECT_EQ(end.node_id(), "bash");
  EXPECT_NE(end.reason().find("exit 2"), std::string::npos) << end.reason();
  EXPECT_FALSE(Has(failed, "complete"));
  EXPECT_FALSE(Has(failed, "retry"));
  EXPECT_EQ(NodeState(failed, "bash"), "NODE_FAILED");
  EXPECT_EQ(NodeState(failed, "llm-1"), "NODE_CANCELLED");

  auto c = Cluster();
  EXPECT_EQ(c.decisions_by_kind().count("cancel"), 1u);
  EXPECT_GE(c.decisions_by_kind().at("fail"), 1u);
  EXPECT_EQ(c.decisions_by_kind().count("complete"), 0u);
}

// The service config's link figures and policy reach the scheduler: /v1/cluster shows the
// configured PCIe and NVMe bandwidths and the policy; a bad figure or policy is refused with
// what is wrong named.
TEST_F(SchedulerServiceTest, ConfiguredLinkFiguresAndPolicyReachTheScheduler) {
  Start(1ULL << 30, 1, [](driver::SchedulerConfig* c) {
    c->pcie_bytes_per_s = 12.5e9;
    c->disk_bytes_per_s = 2e9;
    c->disk_latency_s = 80e-6;
    c->policy = "switchyard:order=arrival";
  });
  v1::ClusterState c = Cluster();
  std::map<std::string, const v1::LinkState*> by_name;
  for (const auto& l : c.links()) by_name[l.name()] = &l;
  ASSERT_TRUE(by_name.count("pcie0")) << *proto::ToJson(c);
  ASSERT_TRUE(by_name.count("disk0")) << *proto::ToJson(c);
  EXPECT_DOUBLE_EQ(by_name["pcie0"]->bandwidth_bytes_per_s(), 12.5e9);
  EXPECT_DOUBLE_EQ(by_name["disk0"]->bandwidth_bytes_per_s(), 2e9);
  EXPECT_NEAR(by_name["disk0"]->alpha_s(), 80e-6, 1e-9);
  EXPECT_EQ(c.policy(), "switchyard:order=arrival");
}

// Nodes name the served model: an empty modelId runs on it, an alias is its id, and any
// other name is refused with 400 naming the node's field and what is served.
TEST_F(SchedulerServiceTest, ModelIdsAreResolvedOrRefusedByName) {
  Start(1ULL << 30, 1, [](driver::SchedulerConfig* c) {
    c->model_id = "llama-8b";
    c->model_aliases = {"meta-llama/Llama-3.1-8B-Instruct"};
  });
  constexpr char kWrong[] =
      R"({"id":"wrong","nodes":[{"id":"a","kind":"LLM","modelId":"gpt-9",
          "hints":{"promptTokens":10,"extendTokens":10,"maxOutputTokens":2}}]})";
  auto r = Call("POST", "/v1/workflows", kWrong);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("nodes[0].modelId 'gpt-9' is not served here"), std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("llama-8b"), std::string::npos) << r.body;
  constexpr char kOk[] =
      R"({"id":"ok","nodes":[{"id":"a","kind":"LLM",
          "hints":{"promptTokens":10,"extendTokens":10,"maxOutputTokens":2}},
         {"id":"b","kind":"LLM","deps":["a"],"modelId":"meta-llama/Llama-3.1-8B-Instruct",
          "hints":{"promptTokens":10,"extendTokens":10,"maxOutputTokens":2}}]})";
  ASSERT_EQ(Call("POST", "/v1/workflows", kOk).status, 201);
  auto appended = Call("POST", "/v1/workflows/ok/nodes",
                       R"({"nodes":[{"id":"c","kind":"LLM","deps":["b"],"modelId":"nope",
                           "hints":{"promptTokens":1,"extendTokens":1,"maxOutputTokens":1}}]})");
  EXPECT_EQ(appended.status, 400) << appended.body;
  EXPECT_NE(appended.body.find("nodes[0].modelId 'nope'"), std::string::npos) << appended.body;
  ASSERT_EQ(Call("POST", "/v1/workflows/ok:close").status, 200);
  auto done = WaitFor("ok", [](const auto& s) { return s.state() == v1::WORKFLOW_COMPLETED; });
  EXPECT_EQ(NodeState(done, "b"), "NODE_SUCCEEDED");
  v1::ClusterState c = Cluster();
  EXPECT_EQ(c.model(), "llama-8b");
}

// With no sizes configured the tiers come from the GPU and model, never from this machine:
// HBM = 80 GB less Llama-3.1-8B's BF16 weights, host 64 GiB, disk 256 GiB.
TEST_F(SchedulerServiceTest, DefaultTierSizesAreDocumentedFiguresNotTheMachines) {
  Start(0, 1, [](driver::SchedulerConfig* c) { c->host_bytes = c->disk_bytes = 0; });
  v1::ClusterState c = Cluster();
  const v1::TierState* hbm = TierOf(c, "hbm");
  const v1::TierState* host = TierOf(c, "host");
  const v1::TierState* disk = TierOf(c, "disk");
  ASSERT_TRUE(hbm && host && disk) << *proto::ToJson(c);
  EXPECT_EQ(hbm->capacity_bytes(), 80000000000ULL - 2 * 8030261248ULL);
  EXPECT_EQ(host->capacity_bytes(), 64ULL << 30);
  EXPECT_EQ(disk->capacity_bytes(), 256ULL << 30);
}

// Real bytes (the CPU engine) live in this process: unset host and disk tiers default to
// 8x and 32x the workers' KV pools (capped), not to the emulated tiers' 64 and 256 GiB.
TEST_F(SchedulerServiceTest, RealByteTiersDefaultToMultiplesOfThePools) {
  Start(0, 1, [](driver::SchedulerConfig* c) {
    c->engine = "cpu";
    c->model_path = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json";
    c->kv_pool_bytes = 1ULL << 20;
    c->host_bytes = c->disk_bytes = 0;
  });
  v1::ClusterState c = Cluster();
  ASSERT_TRUE(TierOf(c, "host") && TierOf(c, "disk")) << *proto::ToJson(c);
  EXPECT_EQ(TierOf(c, "host")->capacity_bytes(), 8ULL << 20);
  EXPECT_EQ(TierOf(c, "disk")->capacity_bytes(), 32ULL << 20);
}

// A tenant's host and disk quotas are enforced on the tiers: with both below one context's
// KV, the long wait cannot park "main" outside HBM (the moves are refused), and the
// workflow still completes.
TEST_F(SchedulerServiceTest, TenantTierQuotasKeepItsContextsOutOfFullTiers) {
  Start(1280ULL << 20, 1, [](driver::SchedulerConfig* c) {
    c->tenant_quotas["t"] = {.hbm = 0, .host = 1ULL << 20, .disk = 1ULL << 20};
  });
  constexpr char kBig[] =
      R"({"id":"big","nodes":[
        {"id":"llm-0","kind":"LLM","cacheRefs":[{"context":"main","mode":"CREATE"}],
         "hints":{"promptTokens":8000,"extendTokens":8000,"maxOutputTokens":4}},
        {"id":"bash","kind":"TOOL","toolName":"Bash","deps":["llm-0"],"hints":{"expectedDurationMs":600000}},
        {"id":"llm-1","kind":"LLM","deps":["bash"],"cacheRefs":[{"context":"main","mode":"EXTEND"}],
         "hints":{"promptTokens":8300,"extendTokens":300,"maxOutputTokens":4}}]})";
  ASSERT_EQ(Call("POST", "/v1/workflows", kBig).status, 201);
  WaitFor("big", [](const auto& s) { return NodeState(s, "llm-0") == "NODE_SUCCEEDED"; });
  Event("big", "bash", "TOOL_STARTED");
  // Wait until the scheduler has decided about "main" and nothing is in flight.
  auto during = WaitFor("big", [](const auto& s) {
    bool decided = false, settled = false;
    for (const auto& d : s.decisions())
      if (d.context() == "main" &&
          (d.kind() == "keep" || d.kind() == "demote" || d.kind() == "discard"))
        decided = true;
    for (const auto& kv : s.kv())
      if (kv.context() == "main" && !kv.in_flight()) settled = true;
    return decided && settled;
  });
  for (const auto& kv : during.kv())
    EXPECT_TRUE(kv.tier() == "hbm" || kv.tier() == "none") << *proto::ToJson(during);
  v1::ClusterState c = Cluster();
  EXPECT_EQ(TierOf(c, "host")->used_bytes(), 0u);
  EXPECT_EQ(TierOf(c, "disk")->used_bytes(), 0u);
  // /v1/cluster shows each quota'd tenant's use and quota: 1 MiB rounds up to one 2 MiB
  // emulated block (16 tokens of Llama-3.1-8B at 1/256), reported x256.
  for (const char* tier : {"host", "disk"}) {
    const auto& quota = TierOf(c, tier)->tenant_quota_bytes();
    ASSERT_TRUE(quota.count("t")) << *proto::ToJson(c);
    EXPECT_EQ(quota.at("t"), (2ULL << 20) * 256) << tier;
    EXPECT_EQ(TierOf(c, tier)->tenant_used_bytes().at("t"), 0u) << tier;
  }
  EXPECT_TRUE(TierOf(c, "hbm")->tenant_quota_bytes().empty()) << "no HBM quota was set";
  Event("big", "bash", "TOOL_FINISHED");
  ASSERT_EQ(Call("POST", "/v1/workflows/big:close").status, 200);
  auto done = WaitFor("big", [](const auto& s) { return s.state() == v1::WORKFLOW_COMPLETED; });
  EXPECT_EQ(NodeState(done, "llm-1"), "NODE_SUCCEEDED");
  // Not only when the tool started: through the whole run (ended, with every move of it),
  // no move into host or disk completed.
  const v1::ClusterState end = Cluster();
  for (const char* tier : {"host", "disk"}) {
    auto moved = end.bytes_moved_by_tier().find(tier);
    EXPECT_TRUE(moved == end.bytes_moved_by_tier().end() || moved->second == 0)
        << tier << ": " << *proto::ToJson(end);
  }
}

TEST(SchedulerConfigTest, BadLinkFigureOrPolicyIsRefusedByName) {
  std::string dir = ::testing::TempDir() + "/sy_sched_cfg_" + std::to_string(::getpid());
  service::ServiceOptions so;
  so.data_dir = dir;
  so.sync_writes = false;
  so.scheduler.hbm_bytes_per_worker = 1ULL << 30;
  so.scheduler.host_bytes = so.scheduler.disk_bytes = 1ULL << 30;
  so.scheduler.pcie_bytes_per_s = -1;
  auto bad = service::Service::Open(so, RealClock::Default());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("links.pcieBytesPerS"), std::string::npos) << bad.status();
  so.scheduler.pcie_bytes_per_s = 0;
  so.scheduler.policy = "switchyard:no_such_key=1";
  auto bad_policy = service::Service::Open(so, RealClock::Default());
  ASSERT_FALSE(bad_policy.ok());
  EXPECT_NE(bad_policy.status().message().find("no_such_key"), std::string::npos)
      << bad_policy.status();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// The shipped example config parses (unknown fields are refused by name) and its tenants
// pass Auth's checks.
TEST(SchedulerConfigTest, ShippedExampleConfigParses) {
  v1::ServiceConfig cfg;
  Status st =
      proto::ParseJsonFile(std::string(SY_SOURCE_DIR) + "/configs/service/example.json", &cfg);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(cfg.tenants_size(), 2);
  EXPECT_EQ(cfg.policy(), "switchyard:deadline_weight=1");
  EXPECT_DOUBLE_EQ(cfg.links().pcie_bytes_per_s(), 50e9);
  std::string dir = ::testing::TempDir() + "/sy_example_cfg_" + std::to_string(::getpid());
  EXPECT_TRUE(service::Auth::Create(cfg, dir).ok());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  // Its model and GPU files (relative to the repo root, where `serve` runs) load, and its
  // tier quotas reach the scheduler.
  std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(SY_SOURCE_DIR);
  auto setup = MakeServeSetup(cfg, {});
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const driver::SchedulerConfig& sc = setup->service.scheduler;
  EXPECT_EQ(sc.model_id, "Llama-3.1-8B");
  ASSERT_TRUE(sc.model_config && sc.gpu);
  EXPECT_EQ(sc.gpu->name(), "H100-SXM");
  EXPECT_EQ(sc.host_bytes, 64ULL << 30);
  EXPECT_EQ(sc.tenant_quotas.at("team-b").host, 16ULL << 30);
}

}  // namespace
}  // namespace switchyard::serve
