// Several served models in one server (ServiceConfig.models; driver/scheduler_driver_models.cc),
// over real HTTP on loopback: each model runs on its own workers, named by its id or an
// alias, a node without modelId runs on the first model; /v1/cluster lists the models and
// each worker's model; a context holds one model's KV, so a node of another model that
// names it is refused; the OpenAI front lists every model and answers each with its own
// engine (CPU engines with random weights).
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "http/http_server.h"
#include "proto/json.h"
#include "serve/http_api.h"
#include "tests/common/wait_until.h"
#include "tests/http/http_test_client.h"
#include "tests/serve/loopback_api.h"

namespace switchyard::driver {
namespace {

using nlohmann::json;

constexpr char kModelsTenantToken[] = "models-tenant-token-0123456789";

class SeveralModelsTest : public testing::LoopbackApiTest {
 protected:
  static std::string Shape(const std::string& name) {
    return std::string(SY_SOURCE_DIR) + "/configs/models/" + name + ".json";
  }
  void Start(const std::function<void(SchedulerConfig*)>& tune) {
    service::ServiceOptions so;
    so.scheduler.host_bytes = 256ULL << 20;
    so.scheduler.disk_bytes = 256ULL << 20;
    tune(&so.scheduler);
    http::HttpServerOptions ho;
    ho.threads = 4;
    Serve(so, OneTenant(kModelsTenantToken, "models-admin-token-0123456789"), {}, ho);
  }
  // First model "big": the simulated engine's default (Llama-3.1-8B), on 1 worker; second
  // "tiny" (alias "tiny-alias"): the CPU engine on tiny-llama-2l, on 2 workers.
  void StartMixed() {
    Start([](SchedulerConfig* c) {
      c->model_id = "big";
      c->workers = 1;
      c->hbm_bytes_per_worker = 1ULL << 30;
      ServedModelSpec tiny;
      tiny.id = "tiny";
      tiny.aliases = {"tiny-alias"};
      tiny.engine = "cpu";
      tiny.model_path = Shape("tiny-llama-2l");
      tiny.kv_pool_bytes = 1ULL << 20;
      tiny.workers = 2;
      c->extra_models.push_back(tiny);
    });
  }
  testing::ClientResponse Call(const std::string& method, const std::string& target,
                               const std::string& body = "", const std::string& session = "") {
    std::map<std::string, std::string> h{
        {"Authorization", std::string("Bearer ") + kModelsTenantToken},
        {"Content-Type", "application/json"}};
    if (!session.empty()) h["x-session-id"] = session;
    return testing::Request(port_, method, target, body, h);
  }
  v1::WorkflowStatus Get(const std::string& id) {
    auto r = Call("GET", "/v1/workflows/" + id);
    EXPECT_EQ(r.status, 200) << r.body;
    v1::WorkflowStatus s;
    EXPECT_TRUE(proto::ParseJson(r.body, &s).ok()) << r.body;
    return s;
  }
  v1::WorkflowStatus WaitEnded(const std::string& id) {
    v1::WorkflowStatus s;
    if (!testing::WaitUntil([&] {
          s = Get(id);
          return s.state() == v1::WORKFLOW_COMPLETED || s.state() == v1::WORKFLOW_FAILED;
        }))
      ADD_FAILURE() << "timed out; last status: " << *proto::ToJson(s);
    return s;
  }
  v1::ClusterState Cluster() {
    auto r = Call("GET", "/v1/cluster");
    EXPECT_EQ(r.status, 200) << r.body;
    v1::ClusterState c;
    EXPECT_TRUE(proto::ParseJson(r.body, &c).ok()) << r.body;
    return c;
  }
  // The worker each node was placed on (its last place decision).
  static std::map<std::string, int> Placements(const v1::WorkflowStatus& s) {
    std::map<std::string, int> out;
    for (const auto& d : s.decisions())
      if (d.kind() == "place") out[d.node_id()] = d.worker();
    return out;
  }
};

TEST_F(SeveralModelsTest, EachModelRunsOnItsOwnWorkers) {
  StartMixed();
  // "a" and "d" (no modelId) run on big's worker 0; "b" (by id) and "c" (by alias) on
  // tiny's workers 1 and 2, "c" extending the context "b" created.
  constexpr char kWf[] = R"({"id":"mixed","nodes":[
      {"id":"a","kind":"LLM","modelId":"big","cacheRefs":[{"context":"x","mode":"CREATE"}],
       "hints":{"promptTokens":300,"extendTokens":300,"maxOutputTokens":3}},
      {"id":"b","kind":"LLM","modelId":"tiny","cacheRefs":[{"context":"y","mode":"CREATE"}],
       "hints":{"promptTokens":200,"extendTokens":200,"maxOutputTokens":3}},
      {"id":"c","kind":"LLM","modelId":"tiny-alias","deps":["b"],
       "cacheRefs":[{"context":"y","mode":"EXTEND"}],
       "hints":{"promptTokens":250,"extendTokens":50,"maxOutputTokens":3}},
      {"id":"d","kind":"LLM","deps":["a"],"cacheRefs":[{"context":"x","mode":"EXTEND"}],
       "hints":{"promptTokens":350,"extendTokens":50,"maxOutputTokens":3}}]})";
  auto r = Call("POST", "/v1/workflows", kWf);
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_EQ(Call("POST", "/v1/workflows/mixed:close").status, 200);
  v1::WorkflowStatus done = WaitEnded("mixed");
  ASSERT_EQ(done.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(done);
  std::map<std::string, int> at = Placements(done);
  ASSERT_EQ(at.size(), 4u) << *proto::ToJson(done);
  EXPECT_EQ(at["a"], 0);
  EXPECT_EQ(at["d"], 0);
  EXPECT_TRUE(at["b"] == 1 || at["b"] == 2) << at["b"];
  EXPECT_TRUE(at["c"] == 1 || at["c"] == 2) << at["c"];

  v1::ClusterState c = Cluster();
  EXPECT_EQ(c.workers(), 3);
  EXPECT_EQ(c.model(), "big");
  EXPECT_EQ(c.model_executor(), "simulated engine, cpu engine");
  ASSERT_EQ(c.models_size(), 2) << *proto::ToJson(c);
  EXPECT_EQ(c.models(0).id(), "big");
  EXPECT_EQ(c.models(0).engine(), "simulated");
  EXPECT_EQ(c.models(0).first_worker(), 0);
  EXPECT_EQ(c.models(0).workers(), 1);
  EXPECT_EQ(c.models(1).id(), "tiny");
  EXPECT_EQ(c.models(1).engine(), "cpu");
  EXPECT_EQ(c.models(1).first_worker(), 1);
  EXPECT_EQ(c.models(1).workers(), 2);
  EXPECT_EQ(c.models(1).kv_bytes_per_token(), 512u) << "tiny-llama-2l's layout";
  EXPECT_GT(c.models(0).kv_bytes_per_token(), c.models(1).kv_bytes_per_token());
  EXPECT_EQ(c.models(1).hbm_capacity_bytes_per_worker(), 1ULL << 20);
  // The host tier split by share of the workers (1 of 3, 2 of 3), up to rounding.
  EXPECT_NEAR(double(c.models(1).host_capacity_bytes()), (256ULL << 20) * 2.0 / 3, 3);
  EXPECT_NEAR(double(c.models(0).host_capacity_bytes()), (256ULL << 20) / 3.0, 3);
  ASSERT_EQ(c.worker_engines_size(), 3);
  EXPECT_EQ(c.worker_engines(0).model_id(), "big");
  EXPECT_EQ(c.worker_engines(0).engine(), "simulated engine");
  for (int w : {1, 2}) {
    EXPECT_EQ(c.worker_engines(w).model_id(), "tiny") << w;
    EXPECT_EQ(c.worker_engines(w).engine(), "cpu engine") << w;
    EXPECT_EQ(c.worker_engines(w).kv_pool_capacity_bytes(), 1ULL << 20) << w;
  }
}

TEST_F(SeveralModelsTest, AContextHoldsOneModelsKv) {
  StartMixed();
  constexpr char kCross[] = R"({"id":"cross","nodes":[
      {"id":"a","kind":"LLM","modelId":"big","cacheRefs":[{"context":"x","mode":"CREATE"}],
       "hints":{"promptTokens":30,"extendTokens":30,"maxOutputTokens":2}},
      {"id":"b","kind":"LLM","modelId":"tiny","deps":["a"],
       "cacheRefs":[{"context":"x","mode":"EXTEND"}],
       "hints":{"promptTokens":40,"extendTokens":10,"maxOutputTokens":2}}]})";
  auto r = Call("POST", "/v1/workflows", kCross);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("nodes[1].cacheRefs[0]: context 'x' holds model 'big''s KV (node 'a')"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("runs model 'tiny'"), std::string::npos) << r.body;
  // The same through an append: the context exists, the appended node names another model.
  constexpr char kOne[] = R"({"id":"one","nodes":[
      {"id":"a","kind":"LLM","cacheRefs":[{"context":"x","mode":"CREATE"}],
       "hints":{"promptTokens":30,"extendTokens":30,"maxOutputTokens":2}}]})";
  ASSERT_EQ(Call("POST", "/v1/workflows", kOne).status, 201);
  auto appended = Call("POST", "/v1/workflows/one/nodes", R"({"nodes":[
      {"id":"b","kind":"LLM","modelId":"tiny-alias","deps":["a"],
       "cacheRefs":[{"context":"x","mode":"EXTEND"}],
       "hints":{"promptTokens":40,"extendTokens":10,"maxOutputTokens":2}}]})");
  EXPECT_EQ(appended.status, 400) << appended.body;
  EXPECT_NE(appended.body.find("context 'x' holds model 'big''s KV"), std::string::npos)
      << appended.body;
  auto unknown = Call("POST", "/v1/workflows", R"({"id":"u","nodes":[
      {"id":"a","kind":"LLM","modelId":"huge","hints":{"promptTokens":3,"maxOutputTokens":1}}]})");
  EXPECT_EQ(unknown.status, 400) << unknown.body;
  EXPECT_NE(unknown.body.find("nodes[0].modelId 'huge' is not served here"), std::string::npos)
      << unknown.body;
  EXPECT_NE(unknown.body.find("tiny"), std::string::npos) << "lists the served ids";
  ASSERT_EQ(Call("POST", "/v1/workflows/one:close").status, 200);
  EXPECT_EQ(WaitEnded("one").state(), v1::WORKFLOW_COMPLETED);
}

// The OpenAI front over two CPU models: /v1/models lists both, each answers with its own
// engine, a session stays with its model, and an unknown model is a 404 naming the others.
TEST_F(SeveralModelsTest, TheOpenAiFrontServesEachModel) {
  Start([](SchedulerConfig* c) {
    c->engine = "cpu";
    c->model_path = Shape("tiny-llama-2l");
    c->model_id = "two";
    c->kv_pool_bytes = 2ULL << 20;
    ServedModelSpec four;
    four.id = "four";
    four.engine = "cpu";
    four.model_path = Shape("tiny-llama-4l");
    four.kv_pool_bytes = 2ULL << 20;
    c->extra_models.push_back(four);
  });
  auto models = Call("GET", "/v1/models");
  ASSERT_EQ(models.status, 200) << models.body;
  std::set<std::string> ids;
  const json listed = json::parse(models.body);
  for (const auto& m : listed["data"]) ids.insert(m["id"].get<std::string>());
  EXPECT_EQ(ids, (std::set<std::string>{"two", "four"})) << models.body;
  std::map<std::string, std::string> answers;
  for (const std::string model : {"two", "four"}) {
    json body{{"model", model},
              {"messages", json::array({{{"role", "user"}, {"content", "hello there"}}})},
              {"max_tokens", 6},
              {"temperature", 0}};
    auto r = Call("POST", "/v1/chat/completions", body.dump(), "s-" + model);
    ASSERT_EQ(r.status, 200) << r.body;
    json j = json::parse(r.body);
    EXPECT_EQ(j["model"], model);
    EXPECT_EQ(j["usage"]["completion_tokens"].get<int>() > 0, true) << r.body;
    answers[model] = j["choices"][0]["message"]["content"].get<std::string>();
  }
  // Different random weights: the two engines' greedy answers differ.
  EXPECT_NE(answers["two"], answers["four"]);
  json other{{"model", "four"},
             {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
             {"max_tokens", 2}};
  auto mismatch = Call("POST", "/v1/chat/completions", other.dump(), "s-two");
  EXPECT_EQ(mismatch.status, 400) << mismatch.body;
  EXPECT_NE(mismatch.body.find("model_mismatch"), std::string::npos) << mismatch.body;
  other["model"] = "six";
  auto unknown = Call("POST", "/v1/chat/completions", other.dump());
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_NE(unknown.body.find("four"), std::string::npos) << unknown.body;
  v1::ClusterState c = Cluster();
  ASSERT_EQ(c.worker_engines_size(), 2);
  EXPECT_EQ(c.worker_engines(0).model_id(), "two");
  EXPECT_EQ(c.worker_engines(1).model_id(), "four");
  EXPECT_GT(c.worker_engines(1).kv_bytes_per_token(), c.worker_engines(0).kv_bytes_per_token());
}

}  // namespace
}  // namespace switchyard::driver
