// The service drives the real scheduler: over real HTTP on loopback, GET shows where each
// context's KV lives and the decisions taken after a tool wait; a restart restores and
// re-feeds workflows so they run to the end; /v1/cluster shows tiers and link budgets.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "api/http_api.h"
#include "api/http_server.h"
#include "proto/json.h"
#include "tests/api/http_test_client.h"

namespace switchyard::api {
namespace {

constexpr char kToken[] = "sched-tenant-token-0123456789";

class SchedulerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/sy_sched_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    Stop();
    std::filesystem::remove_all(dir_);
  }
  void Start() {
    ServiceOptions so;
    so.data_dir = dir_;
    so.sync_writes = false;
    so.scheduler.hbm_bytes_per_worker = 1ULL << 30;  // small: a long wait is worth a demote
    auto svc = Service::Open(so, RealClock::Default());
    ASSERT_TRUE(svc.ok()) << svc.status();
    service_ = std::move(*svc);
    v1::ServiceConfig cfg;
    auto* t = cfg.add_tenants();
    t->set_name("t");
    t->set_token(kToken);
    cfg.set_admin_token("sched-admin-token-0123456789");
    api_ =
        std::make_unique<HttpApi>(service_.get(), *Auth::Create(cfg, dir_), RealClock::Default());
    HttpServerOptions ho;
    ho.port = 0;
    server_ =
        std::make_unique<HttpServer>(ho, [this](const HttpRequest& r) { return api_->Handle(r); });
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
  }
  void Stop() {
    if (server_) server_->Stop();
    server_.reset();
    api_.reset();
    service_.reset();
  }
  testing::ClientResponse Call(const std::string& method, const std::string& target,
                               const std::string& body = "") {
    return testing::Request(port_, method, target, body,
                            {{"Authorization", std::string("Bearer ") + kToken}});
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
  // Polls GET until `pred` holds (at most ~20 s; the scheduler runs in real time).
  v1::WorkflowStatus WaitFor(const std::string& id,
                             const std::function<bool(const v1::WorkflowStatus&)>& pred) {
    v1::WorkflowStatus s;
    for (int i = 0; i < 2000; ++i) {
      s = Get(id);
      if (pred(s)) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
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

  std::string dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpApi> api_;
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
};

TEST_F(SchedulerServiceTest, GetShowsKvLocationAndDecisionsAfterToolWait) {
  Start();
  ASSERT_EQ(Call("POST", "/v1/workflows", kAgent).status, 201);
  // The simulated model executor runs llm-0; the service records its result durably.
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
  EXPECT_EQ(c.model_executor(), "simulated model executor");
  EXPECT_EQ(c.tiers_size(), 3);
  EXPECT_EQ(c.tiers(0).tier(), "hbm");
  EXPECT_EQ(c.tiers(0).capacity_bytes(), 1ULL << 30);
  ASSERT_GE(c.links_size(), 2);
  EXPECT_EQ(c.links(0).classes_size(), 4);
  EXPECT_GE(c.decisions_by_kind().at("place"), 2u);
  EXPECT_EQ(c.workflows().completed(), 1u);
}

TEST_F(SchedulerServiceTest, ClientLlmEventsAreRefusedWhileTheSimulatedExecutorRunsThem) {
  Start();
  ASSERT_EQ(Call("POST", "/v1/workflows", kAgent).status, 201);
  auto r = Call("POST", "/v1/workflows/agent/events", R"({"nodeId":"llm-0","type":"LLM_STARTED"})");
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("simulated model executor"), std::string::npos) << r.body;
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

}  // namespace
}  // namespace switchyard::api
