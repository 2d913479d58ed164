// An in-process Service with the real scheduler (simulated engine, emulated tiers) and its
// HttpApi, called through HttpApi::Handle (no sockets), for the timeline and log tests.
// Small HBM: the "big" workflow's long tool wait is worth a demotion of its context, and
// the next call needs a prefetch.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "proto/json.h"
#include "serve/http_api.h"
#include "tests/common/wait_until.h"

namespace switchyard::testing {

class SchedulerApiEnv {
 public:
  static constexpr char kToken[] = "timeline-tenant-token-0123456789";
  static constexpr char kAdmin[] = "timeline-admin-token-0123456789";

  explicit SchedulerApiEnv(const std::string& name)
      : dir_(::testing::TempDir() + "/sy_" + name + "_" + std::to_string(::getpid())) {
    std::filesystem::remove_all(dir_);
    service::ServiceOptions so;
    so.data_dir = dir_;
    so.sync_writes = false;
    so.scheduler.hbm_bytes_per_worker = 1280ULL << 20;
    so.scheduler.host_bytes = 4ULL << 30;
    so.scheduler.disk_bytes = 4ULL << 30;
    so.scheduler.kv_bytes_scale = 256;
    auto svc = service::Service::Open(so, RealClock::Default());
    EXPECT_TRUE(svc.ok()) << svc.status();
    if (!svc.ok()) return;
    service_ = std::move(*svc);
    v1::ServiceConfig cfg;
    auto* t = cfg.add_tenants();
    t->set_name("t");
    t->set_token(kToken);
    cfg.set_admin_token(kAdmin);
    api_ = std::make_unique<serve::HttpApi>(service_.get(), *service::Auth::Create(cfg, dir_),
                                            RealClock::Default());
  }
  ~SchedulerApiEnv() {
    api_.reset();
    service_.reset();
    std::filesystem::remove_all(dir_);
  }
  bool ok() const { return api_ != nullptr; }

  http::HttpResponse Call(const std::string& method, const std::string& target,
                          const std::string& body = "",
                          std::map<std::string, std::string> headers = {}) {
    http::HttpRequest req;
    req.method = method;
    req.target = target;
    req.body = body;
    req.headers = std::move(headers);
    if (!req.headers.count("authorization"))
      req.headers["authorization"] = std::string("Bearer ") + kToken;
    return api_->Handle(req);
  }
  template <typename Msg>
  Msg Get(const std::string& target) {
    http::HttpResponse r = Call("GET", target);
    EXPECT_EQ(r.status, 200) << target << ": " << r.body;
    Msg m;
    EXPECT_TRUE(proto::ParseJson(r.body, &m).ok()) << r.body;
    return m;
  }
  // Polls GET /v1/workflows/{id} until `pred` holds (WaitUntil's bound: a failure then).
  v1::WorkflowStatus WaitFor(const std::string& id,
                             const std::function<bool(const v1::WorkflowStatus&)>& pred) {
    v1::WorkflowStatus s;
    if (!WaitUntil([&] {
          s = Get<v1::WorkflowStatus>("/v1/workflows/" + id);
          return pred(s);
        }))
      ADD_FAILURE() << "timed out; last status: " << *proto::ToJson(s);
    return s;
  }
  void Event(const std::string& id, const std::string& node, const std::string& type) {
    http::HttpResponse r = Call("POST", "/v1/workflows/" + id + "/events",
                                "{\"nodeId\":\"" + node + "\",\"type\":\"" + type + "\"}");
    EXPECT_EQ(r.status, 200) << r.body;
  }
  static std::string NodeState(const v1::WorkflowStatus& s, const std::string& node) {
    for (const auto& n : s.nodes())
      if (n.id() == node) return v1::NodeState_Name(n.state());
    return "missing";
  }

  // llm-0 creates "main" (8000 tokens: 1 GiB of KV in a 1.25 GiB HBM), a long tool waits
  // (demote), llm-1 extends main (prefetch).
  static constexpr char kBig[] =
      R"({"id":"big","nodes":[
        {"id":"llm-0","kind":"LLM","modelId":"Llama-3.1-8B","cacheRefs":[{"context":"main","mode":"CREATE"}],
         "hints":{"promptTokens":8000,"extendTokens":8000,"maxOutputTokens":4}},
        {"id":"bash","kind":"TOOL","toolName":"Bash","deps":["llm-0"],"hints":{"expectedDurationMs":600000}},
        {"id":"llm-1","kind":"LLM","modelId":"Llama-3.1-8B","deps":["bash"],
         "cacheRefs":[{"context":"main","mode":"EXTEND"}],
         "hints":{"promptTokens":8300,"extendTokens":300,"maxOutputTokens":4}}]})";

  // Runs "big" to completion through a demotion during the tool wait; the final status.
  v1::WorkflowStatus RunBig() {
    http::HttpResponse r = Call("POST", "/v1/workflows", kBig);
    EXPECT_EQ(r.status, 201) << r.body;
    WaitFor("big", [](const auto& s) { return NodeState(s, "llm-0") == "NODE_SUCCEEDED"; });
    Event("big", "bash", "TOOL_STARTED");
    WaitFor("big", [](const auto& s) {
      for (const auto& kv : s.kv())
        if (kv.context() == "main" && !kv.in_flight() && kv.tier() != "hbm") return true;
      return false;
    });
    Event("big", "bash", "TOOL_FINISHED");
    EXPECT_EQ(Call("POST", "/v1/workflows/big:close").status, 200);
    return WaitFor("big", [](const auto& s) { return s.state() == v1::WORKFLOW_COMPLETED; });
  }

 private:
  std::string dir_;
  std::unique_ptr<service::Service> service_;
  std::unique_ptr<serve::HttpApi> api_;
};

}  // namespace switchyard::testing
