// JoinedCluster: a test's serve with joined workers — an in-process Service whose
// scheduler has no local worker and N `switchyard worker --join` processes (the binary
// under SY_BINARY_DIR) on loopback, with the calls the tests make (workflows, tool events,
// /v1/cluster) and the worker processes' control (kill, respawn, replace).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cpu_engine/cpu_engine.h"
#include "proto/json.h"
#include "serve/http_api.h"
#include "serve/serve_join.h"
#include "service/service.h"
#include "tests/workers/processes.h"

namespace switchyard::workers {

using testing::Binary;

inline constexpr char kToken[] = "joined-tenant-token-0123456789";
inline constexpr char kAdmin[] = "joined-admin-token-0123456789";

using testing::Binary;

class JoinedCluster {
 public:
  explicit JoinedCluster(const std::string& name)
      : dir_(::testing::TempDir() + "/sy_" + name + "_" + std::to_string(::getpid())) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~JoinedCluster() {
    Stop();
    if (::testing::Test::HasFailure()) PrintWorkerLogs();
    std::filesystem::remove_all(dir_);
  }
  // Stops the service (its bye ends the workers) and reaps the workers: their waitpid
  // statuses by id.
  std::map<std::string, int> Stop() {
    api_.reset();
    if (join_) join_->Detach();  // before the service goes (serve_join.h "Teardown")
    service_.reset();
    join_.reset();
    for (auto& [id, pid] : pids_) exit_[id] = testing::Reap(pid, 30);
    pids_.clear();
    return exit_;
  }

  // Starts the service, waiting for `n` workers it starts itself.
  // `tweak` adjusts serve's join options; worker_args are added to each worker's command.
  // `service` adjusts the service's options (after the defaults here: e.g. engine "cpu";
  // the workers then run `--engine` what the scheduler's engine is, with `--model`).
  bool Start(int n, uint64_t hbm_bytes = 4ULL << 30,
             std::function<void(serve::ServeJoinOptions*)> tweak = {},
             std::vector<std::string> worker_args = {},
             std::function<void(service::ServiceOptions*)> service = {}) {
    worker_args_ = std::move(worker_args);
    service::ServiceOptions so;
    so.data_dir = dir_ + "/data";
    so.sync_writes = false;
    so.scheduler.hbm_bytes_per_worker = hbm_bytes;
    so.scheduler.host_bytes = 4ULL << 30;
    so.scheduler.disk_bytes = 4ULL << 30;
    so.scheduler.kv_bytes_scale = 256;
    if (service) service(&so);
    engine_ = so.scheduler.engine;
    model_path_ = so.scheduler.model_path;
    serve::ServeJoinOptions jo;
    jo.listen = "127.0.0.1:0";
    jo.local_workers = 0;
    jo.remote_workers = n;
    jo.join_timeout = Seconds(120);
    jo.heartbeat = Seconds(1);  // lost after 3 s of silence (a loaded VM stalls)
    jo.listening = [this, n](const std::string& address) {
      address_ = address;
      for (int i = 0; i < n; ++i) Spawn("w" + std::to_string(i), address);
    };
    if (tweak) tweak(&jo);
    auto join = serve::JoinRemoteWorkers(jo, &so.scheduler);
    EXPECT_TRUE(join.ok()) << join.status();
    if (!join.ok()) return false;
    join_ = std::move(*join);
    token_log_ = so.scheduler.cpu_token_log;
    auto svc = service::Service::Open(so, RealClock::Default());
    EXPECT_TRUE(svc.ok()) << svc.status();
    if (!svc.ok()) return false;
    service_ = std::move(*svc);
    serve::Attach(join_.get(), service_->scheduler());
    v1::ServiceConfig cfg;
    auto* t = cfg.add_tenants();
    t->set_name("t");
    t->set_token(kToken);
    cfg.set_admin_token(kAdmin);
    api_ = std::make_unique<serve::HttpApi>(service_.get(), *service::Auth::Create(cfg, dir_),
                                            RealClock::Default());
    return true;
  }

  // Adds `args` to worker `id`'s command only (before Start, or before its respawn).
  void AddWorkerArgs(const std::string& id, std::vector<std::string> args) {
    own_args_[id] = std::move(args);
  }

  service::Service* service() { return service_.get(); }
  // Engine "cpu": serve's record of every context's token ids (read once the workflows
  // ended: the scheduler's thread writes it while they run).
  const cpu_engine::TokenLog* token_log() const { return token_log_.get(); }

  http::HttpResponse Call(const std::string& method, const std::string& target,
                          const std::string& body = "", const char* token = kToken) {
    http::HttpRequest req;
    req.method = method;
    req.target = target;
    req.body = body;
    req.headers["authorization"] = std::string("Bearer ") + token;
    return api_->Handle(req);
  }
  template <typename Msg>
  Msg Get(const std::string& target, const char* token = kToken) {
    http::HttpResponse r = Call("GET", target, "", token);
    EXPECT_EQ(r.status, 200) << target << ": " << r.body;
    Msg m;
    EXPECT_TRUE(proto::ParseJson(r.body, &m).ok()) << r.body;
    return m;
  }
  v1::ClusterState Cluster() { return Get<v1::ClusterState>("/v1/cluster", kAdmin); }

  // A workflow: llm-0 creates "main" (`out` output tokens), a side-effect tool, llm-1
  // extends main; closed at once.
  void Submit(const std::string& id, int out) {
    std::ostringstream w;
    w << R"({"id":")" << id << R"(","nodes":[
      {"id":"llm-0","kind":"LLM","modelId":"Llama-3.1-8B","cacheRefs":[{"context":"main","mode":"CREATE"}],
       "hints":{"promptTokens":600,"extendTokens":600,"maxOutputTokens":)"
      << out << R"(}},
      {"id":"side","kind":"TOOL","toolName":"Write","sideEffect":true,"deps":["llm-0"]},
      {"id":"llm-1","kind":"LLM","modelId":"Llama-3.1-8B","deps":["side"],
       "cacheRefs":[{"context":"main","mode":"EXTEND"}],
       "hints":{"promptTokens":)"
      << 700 + out << R"(,"extendTokens":100,"maxOutputTokens":8}}]})";
    http::HttpResponse r = Call("POST", "/v1/workflows", w.str());
    ASSERT_EQ(r.status, 201) << r.body;
    ASSERT_EQ(Call("POST", "/v1/workflows/" + id + ":close").status, 200);
  }

  // A workflow whose context ("main", 8000 tokens) outlives a long tool: llm-0, the tool
  // "bash" (started and finished by the test), llm-1 extending main; closed at once.
  void SubmitBig(const std::string& id) {
    std::string body = R"({"id":")" + id + R"(","nodes":[
        {"id":"llm-0","kind":"LLM","modelId":"Llama-3.1-8B","cacheRefs":[{"context":"main","mode":"CREATE"}],
         "hints":{"promptTokens":8000,"extendTokens":8000,"maxOutputTokens":4}},
        {"id":"bash","kind":"TOOL","toolName":"Bash","deps":["llm-0"],"hints":{"expectedDurationMs":600000}},
        {"id":"llm-1","kind":"LLM","modelId":"Llama-3.1-8B","deps":["bash"],
         "cacheRefs":[{"context":"main","mode":"EXTEND"}],
         "hints":{"promptTokens":8300,"extendTokens":300,"maxOutputTokens":4}}]})";
    ASSERT_EQ(Call("POST", "/v1/workflows", body).status, 201);
    ASSERT_EQ(Call("POST", "/v1/workflows/" + id + ":close").status, 200);
  }
  // Polls the workflow until `pred` holds (testing::WaitUntil's bound: a test failure then).
  v1::WorkflowStatus WaitFor(const std::string& id,
                             const std::function<bool(const v1::WorkflowStatus&)>& pred) {
    v1::WorkflowStatus s;
    if (!testing::WaitUntil([&] {
          s = Get<v1::WorkflowStatus>("/v1/workflows/" + id);
          return pred(s);
        }))
      ADD_FAILURE() << "timed out: " << *proto::ToJson(s);
    return s;
  }
  static bool NodeDone(const v1::WorkflowStatus& s, const std::string& node) {
    for (const auto& n : s.nodes())
      if (n.id() == node) return n.state() == v1::NODE_SUCCEEDED;
    return false;
  }
  static bool Demoted(const v1::WorkflowStatus& s) {
    for (const auto& kv : s.kv())
      if (kv.context() == "main" && !kv.in_flight() && (kv.tier() == "host" || kv.tier() == "disk"))
        return true;
    return false;
  }

  // Runs every ready tool once (the test is the tool runner) until all workflows ended or
  // `seconds` passed; the final statuses.
  std::map<std::string, v1::WorkflowStatus> Drive(const std::vector<std::string>& ids,
                                                  double seconds) {
    std::map<std::string, v1::WorkflowStatus> st;
    testing::WaitUntil(
        [&] {
          bool all = true;
          for (const std::string& id : ids) {
            v1::WorkflowStatus s = Get<v1::WorkflowStatus>("/v1/workflows/" + id);
            st[id] = s;
            if (Ended(s)) continue;
            all = false;
            for (const auto& n : s.nodes()) {
              if (n.kind() != v1::TOOL || n.state() != v1::NODE_READY) continue;
              if (!tools_started_.insert(id + "/" + n.id()).second) continue;
              Event(id, n.id(), "TOOL_STARTED");
              Event(id, n.id(), "TOOL_FINISHED");
            }
          }
          return all;
        },
        seconds, std::chrono::milliseconds(20));
    return st;
  }
  static bool Ended(const v1::WorkflowStatus& s) {
    return s.state() == v1::WORKFLOW_COMPLETED || s.state() == v1::WORKFLOW_FAILED ||
           s.state() == v1::WORKFLOW_CANCELLED;
  }
  void Event(const std::string& id, const std::string& node, const std::string& type) {
    http::HttpResponse r = Call("POST", "/v1/workflows/" + id + "/events",
                                R"({"nodeId":")" + node + R"(","type":")" + type + R"("})");
    EXPECT_EQ(r.status, 200) << r.body;
  }

  pid_t pid(const std::string& id) const { return pids_.at(id); }
  // SIGKILLs worker `id` and reaps it.
  void Kill(const std::string& id) {
    ASSERT_EQ(::kill(pids_.at(id), SIGKILL), 0);
    testing::Reap(pids_.at(id), 30);
    pids_.erase(id);
  }
  // Starts worker `id` again (a new process: a new epoch), joining the same serve.
  void Respawn(const std::string& id) { Spawn(id, address_); }
  // Starts a worker with a new id (a replacement: it takes a lost member's place).
  void SpawnNew(const std::string& id) { Spawn(id, address_); }
  // Polls /v1/cluster until worker `id`'s listing satisfies `pred` (testing::WaitUntil's
  // bound: a test failure then).
  v1::JoinedWorker WaitWorker(const std::string& id,
                              const std::function<bool(const v1::JoinedWorker&)>& pred) {
    v1::JoinedWorker last;
    if (!testing::WaitUntil([&] {
          const v1::ClusterState c = Cluster();
          for (const auto& w : c.joined_workers())
            if (w.id() == id) last = w;
          return pred(last);
        }))
      ADD_FAILURE() << "worker " << id << " never got there: " << *proto::ToJson(last);
    return last;
  }
  std::string Log(const std::string& id) const { return testing::Slurp(dir_ + "/" + id + ".log"); }

 private:
  // A failed test's evidence: the end of each worker's log (the directory goes away).
  void PrintWorkerLogs() const {
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      if (e.path().extension() != ".log") continue;
      std::string log = testing::Slurp(e.path().string());
      if (log.size() > 6000) log = "[...]" + log.substr(log.size() - 6000);
      std::fprintf(stderr, "---- %s ----\n%s\n", e.path().filename().c_str(), log.c_str());
    }
  }

  void Spawn(const std::string& id, const std::string& address) {
    std::string bin = Binary();
    std::string log = dir_ + "/" + id + ".log";
    std::vector<std::string> args = {bin,        "worker", "--join", address,
                                     "--engine", engine_,  "--id",   id};
    if (engine_ == "cpu") {
      args.insert(args.end(), {"--model", model_path_});
    } else {
      args.insert(args.end(), {"--kv-pool-bytes", "1G"});
    }
    args.insert(args.end(), worker_args_.begin(), worker_args_.end());
    if (auto own = own_args_.find(id); own != own_args_.end())
      args.insert(args.end(), own->second.begin(), own->second.end());
    pid_t pid = testing::Spawn(args, log);
    pids_[id] = pid;
  }

  std::string dir_;
  std::string address_;  // serve's control address
  std::unique_ptr<JoinServer> join_;
  std::unique_ptr<service::Service> service_;
  std::unique_ptr<serve::HttpApi> api_;
  std::map<std::string, pid_t> pids_;
  std::map<std::string, int> exit_;
  std::set<std::string> tools_started_;
  std::vector<std::string> worker_args_;
  std::map<std::string, std::vector<std::string>> own_args_;  // by worker id
  std::string engine_ = "simulated", model_path_;
  std::shared_ptr<cpu_engine::TokenLog> token_log_;
};

}  // namespace switchyard::workers
