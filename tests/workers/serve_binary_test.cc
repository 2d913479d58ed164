// `switchyard serve --local-workers 1 --remote-workers 1 --control-listen ...` and one
// `switchyard worker --join` process, both the real binary over loopback: the joined worker
// is listed, runs LLM nodes, and once stopped (SIGSTOP: its connection stays open, nothing
// more is heard) is marked lost after missed heartbeats while every workflow completes on
// serve's own worker.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proto/json.h"
#include "proto/switchyard/v1/api.pb.h"
#include "proto/switchyard/v1/service_state.pb.h"
#include "tests/http/http_test_client.h"
#include "tests/workers/processes.h"

namespace switchyard::workers {
namespace {

using switchyard::testing::Request;
using testing::Binary;
using testing::FreePort;
using testing::KillOnExit;
using testing::Reap;
using testing::Slurp;
using testing::Spawn;
using testing::WaitUntil;

TEST(ServeBinary, JoinedWorkerRunsNodesAndAStoppedOneIsLostAfterMissedHeartbeats) {
  if (!std::filesystem::exists(Binary()))
    GTEST_SKIP() << "no switchyard binary at " << Binary() << " (build the `switchyard` target)";
  std::string dir = ::testing::TempDir() + "/sy_serve_join_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  uint16_t http = FreePort(), control = FreePort();
  std::string control_addr = "127.0.0.1:" + std::to_string(control);
  pid_t serve =
      Spawn({Binary(), "serve", "--listen", "127.0.0.1:" + std::to_string(http), "--data-dir",
             dir + "/data", "--local-workers", "1", "--remote-workers", "1", "--control-listen",
             control_addr, "--heartbeat-ms", "500", "--join-timeout-s", "120"},
            dir + "/serve.log");
  pid_t worker = Spawn({Binary(), "worker", "--join", control_addr, "--engine", "simulated", "--id",
                        "sw", "--connect-timeout-s", "60"},
                       dir + "/worker.log");
  KillOnExit guard{{serve, worker}};
  // Serve waits for the join first.
  const bool up = WaitUntil([&] { return Request(http, "GET", "/healthz").status == 200; });
  ASSERT_TRUE(up) << Slurp(dir + "/serve.log") << Slurp(dir + "/worker.log");
  std::string token = Slurp(dir + "/data/tokens/default");
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  std::map<std::string, std::string> auth = {{"Authorization", "Bearer " + token}};
  auto cluster = [&]() {
    v1::ClusterState c;
    auto r = Request(http, "GET", "/v1/cluster", "", auth);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(proto::ParseJson(r.body, &c).ok()) << r.body;
    return c;
  };
  v1::ClusterState c = cluster();
  EXPECT_EQ(c.workers(), 2);
  ASSERT_EQ(c.joined_workers_size(), 2) << *proto::ToJson(c);
  EXPECT_EQ(c.joined_workers(0).id(), "local-0");
  EXPECT_EQ(c.joined_workers(1).id(), "sw");
  EXPECT_EQ(c.joined_workers(1).worker_index(), 1);
  EXPECT_EQ(c.joined_workers(1).state(), "alive");

  // Workflows with long LLM nodes until one is placed on the joined worker (index 1).
  std::vector<std::string> wfs;
  auto status = [&](const std::string& id) {
    v1::WorkflowStatus s;
    auto r = Request(http, "GET", "/v1/workflows/" + id, "", auth);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(proto::ParseJson(r.body, &s).ok()) << r.body;
    return s;
  };
  bool on_remote = false;
  for (int i = 0; i < 8 && !on_remote; ++i) {
    std::string id = "sb-" + std::to_string(i);
    wfs.push_back(id);
    std::string body = R"({"id":")" + id + R"(","nodes":[{"id":"llm-0","kind":"LLM",
      "cacheRefs":[{"context":"main","mode":"CREATE"}],
      "hints":{"promptTokens":500,"extendTokens":500,"maxOutputTokens":800}}]})";
    ASSERT_EQ(Request(http, "POST", "/v1/workflows", body, auth).status, 201);
    ASSERT_EQ(Request(http, "POST", "/v1/workflows/" + id + ":close", "", auth).status, 200);
    // Until its node is placed (on either worker): the next workflow then.
    WaitUntil([&] {
      bool placed = false;
      const v1::WorkflowStatus s = status(id);
      for (const auto& d : s.decisions()) {
        if (d.kind() != "place") continue;
        placed = true;
        on_remote |= d.worker() == 1;
      }
      return placed;
    });
  }
  ASSERT_TRUE(on_remote) << "no LLM node was placed on the joined worker";

  ASSERT_EQ(::kill(worker, SIGSTOP), 0);  // alive but silent
  std::string reason;
  WaitUntil([&] {
    v1::ClusterState now = cluster();
    for (const auto& w : now.joined_workers())
      if (w.id() == "sw" && w.state() == "lost") reason = w.lost_reason();
    return !reason.empty();
  });
  EXPECT_NE(reason.find("missed heartbeats"), std::string::npos) << reason;

  const bool all_done = WaitUntil(
      [&] {
        for (const std::string& id : wfs)
          if (status(id).state() != v1::WORKFLOW_COMPLETED) return false;
        return true;
      },
      120, std::chrono::milliseconds(20));
  EXPECT_TRUE(all_done);
  for (const std::string& id : wfs) {
    v1::WorkflowStatus s = status(id);
    EXPECT_EQ(s.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(s);
  }

  // Resumed, the worker finds its connection gone and exits 1.
  ::kill(worker, SIGCONT);
  int ws = Reap(worker, 60);
  guard.pids = {serve};
  EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 1) << ws << ": " << Slurp(dir + "/worker.log");
  ::kill(serve, SIGTERM);
  int ss = Reap(serve, 60);
  guard.pids.clear();
  EXPECT_TRUE(WIFEXITED(ss) && WEXITSTATUS(ss) == 0) << Slurp(dir + "/serve.log");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace switchyard::workers
