// kill -9 the server while clients post events; after a restart nothing acknowledged is
// missing and nothing is applied twice. Runs the real `switchyard serve` binary.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "proto/json.h"
#include "proto/switchyard/v1/api.pb.h"
#include "tests/common/child_process.h"
#include "tests/common/wait_until.h"
#include "tests/http/http_test_client.h"

namespace switchyard::service {
namespace {

using ::switchyard::testing::FreePort;
using ::switchyard::testing::WaitUntil;
using testing::Request;
constexpr char kCrashToken[] = "crash-tenant-token-0123";
constexpr int kWorkflows = 8;
constexpr int kNodes = 40;

pid_t StartServer(const std::string& config, uint16_t port, const std::string& dir) {
  std::string bin = std::string(SY_BINARY_DIR) + "/bin/switchyard";
  std::string listen = "127.0.0.1:" + std::to_string(port);
  std::filesystem::create_directories(dir);  // for the log; serve fills it
  pid_t pid = ::switchyard::testing::Spawn(
      {bin, "serve", "--config", config, "--listen", listen, "--data-dir", dir},
      dir + "/server.log", /*append=*/true);
  if (WaitUntil([&] { return Request(port, "GET", "/healthz").status == 200; },
                testing::kWaitSeconds, std::chrono::milliseconds(50)))
    return pid;
  ::switchyard::testing::Kill(pid);
  return -1;
}

std::map<std::string, std::string> Auth(const std::string& key = "") {
  std::map<std::string, std::string> h = {{"Authorization", std::string("Bearer ") + kCrashToken}};
  if (!key.empty()) h["Idempotency-Key"] = key;
  return h;
}

std::string EventBody(int step) {  // step 2i: node i starts; 2i+1: node i finishes
  return "{\"nodeId\":\"n" + std::to_string(step / 2) + "\",\"type\":\"" +
         (step % 2 ? "TOOL_FINISHED" : "TOOL_STARTED") + "\"}";
}

// Events applied so far to a chain workflow, read from its status; -1 if inconsistent.
int Progress(const v1::WorkflowStatus& st) {
  int p = 0;
  bool open = true;
  for (const auto& n : st.nodes()) {
    if (n.attempts() != 1) return -1;
    if (n.state() == v1::NODE_SUCCEEDED && open)
      p += 2;
    else if (n.state() == v1::NODE_RUNNING && open)
      p += 1, open = false;
    else
      open = false;
  }
  return p;
}

TEST(CrashTest, KillNineLosesNothingAcknowledgedAndDuplicatesNothing) {
  std::string dir = ::testing::TempDir() + "/sy_crash_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string config = dir + "/config.json";
  std::ofstream(config) << "{\"tenants\":[{\"name\":\"t\",\"token\":\"" << kCrashToken
                        << "\"}],\"adminToken\":\"crash-admin-token-0123\","
                        << "\"endedInMemory\":-1}";  // archive each workflow as it ends
  uint16_t port = FreePort();
  pid_t pid = StartServer(config, port, dir + "/data");
  ASSERT_GT(pid, 0) << "server did not start; see " << dir << "/server.log";

  std::vector<std::string> ids;
  for (int w = 0; w < kWorkflows; ++w) {
    std::string body = "{\"id\":\"chain-" + std::to_string(w) + "\",\"nodes\":[";
    for (int i = 0; i < kNodes; ++i) {
      body += std::string(i ? "," : "") + "{\"id\":\"n" + std::to_string(i) +
              "\",\"kind\":\"TOOL\"" + (i ? ",\"deps\":[\"n" + std::to_string(i - 1) + "\"]" : "") +
              "}";
    }
    body += "]}";
    auto r = Request(port, "POST", "/v1/workflows", body, Auth());
    ASSERT_EQ(r.status, 201) << r.body;
    ids.push_back("chain-" + std::to_string(w));
  }
  // Ended workflows are archived at once (endedInMemory -1): they must survive the crash.
  std::vector<std::string> ended;
  for (int w = 0; w < 4; ++w) {
    std::string id = "ended-" + std::to_string(w);
    auto r =
        Request(port, "POST", "/v1/workflows",
                "{\"id\":\"" + id + "\",\"nodes\":[{\"id\":\"a\",\"kind\":\"TOOL\"}]}", Auth());
    ASSERT_EQ(r.status, 201) << r.body;
    ASSERT_EQ(Request(port, "DELETE", "/v1/workflows/" + id, "", Auth()).status, 200);
    ended.push_back(id);
  }
  // Clients post events round-robin; acked[w] counts acknowledged events of workflow w.
  std::vector<int> acked(kWorkflows, 0);
  std::atomic<int> total_acked{0};
  std::atomic<bool> stop{false};
  std::thread client([&] {
    for (int step = 0; step < 2 * kNodes && !stop; ++step) {
      for (int w = 0; w < kWorkflows && !stop; ++w) {
        auto r = Request(port, "POST", "/v1/workflows/" + ids[w] + "/events", EventBody(step),
                         Auth(ids[w] + "/" + std::to_string(step)));
        if (r.status != 200) {
          stop = true;  // the server died under us: this event is in doubt
          break;
        }
        acked[w] = step + 1;
        ++total_acked;
      }
    }
  });
  // Killed once 150 events were acknowledged (the client goes on posting meanwhile).
  EXPECT_TRUE(WaitUntil([&] { return total_acked.load() >= 150; }, testing::kWaitSeconds,
                        std::chrono::milliseconds(1)))
      << "the client stopped after " << total_acked.load() << " acknowledged events";
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  stop = true;
  client.join();

  pid = StartServer(config, port, dir + "/data");
  ASSERT_GT(pid, 0) << "server did not restart; see " << dir << "/server.log";
  for (int w = 0; w < kWorkflows; ++w) {
    auto r = Request(port, "GET", "/v1/workflows/" + ids[w], "", Auth());
    ASSERT_EQ(r.status, 200) << r.body;
    v1::WorkflowStatus st;
    ASSERT_TRUE(proto::ParseJson(r.body, &st).ok());
    int p = Progress(st);
    EXPECT_TRUE(p == acked[w] || p == acked[w] + 1)
        << ids[w] << ": progress " << p << " after " << acked[w] << " acknowledged events";
    // Re-sending the in-doubt event with its key applies it at most once.
    if (acked[w] < 2 * kNodes) {
      auto again = Request(port, "POST", "/v1/workflows/" + ids[w] + "/events", EventBody(acked[w]),
                           Auth(ids[w] + "/" + std::to_string(acked[w])));
      EXPECT_EQ(again.status, 200) << again.body;
      auto after = Request(port, "GET", "/v1/workflows/" + ids[w], "", Auth());
      ASSERT_TRUE(proto::ParseJson(after.body, &st).ok());
      EXPECT_EQ(Progress(st), acked[w] + 1) << ids[w];
    }
  }
  for (const std::string& id : ended) {
    auto r = Request(port, "GET", "/v1/workflows/" + id, "", Auth());
    ASSERT_EQ(r.status, 200) << id << ": " << r.body;
    v1::WorkflowStatus st;
    ASSERT_TRUE(proto::ParseJson(r.body, &st).ok());
    EXPECT_EQ(st.state(), v1::WORKFLOW_CANCELLED) << id;
    EXPECT_TRUE(st.archived()) << id;
  }
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace switchyard::service
