// One scheduler and three workers on three "hosts": `switchyard serve --remote-workers 3
// --local-workers 0` in this machine's namespace, and a `switchyard worker --join` in each
// of three network namespaces that this test creates, each joined to the root namespace
// by its own veth pair (removed by a destructor, also when an assertion fails). The
// control connections and every KV byte cross the veth links: each worker's KV store
// listens on its namespace's address, and a workload whose contexts are demoted during a
// tool wait (to serve's host tier) and brought back makes each store serve gets and take
// puts, every block validated against its checksum. Skipped with the reason where
// namespaces are not permitted (not root, no `ip`, `ip netns add` refused).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proto/json.h"
#include "proto/switchyard/v1/api.pb.h"
#include "proto/switchyard/v1/service_state.pb.h"
#include "tests/api/http_test_client.h"
#include "tests/workers/processes.h"

namespace switchyard::workers {
namespace {

using api::testing::ClientResponse;
using testing::Binary;
using testing::KillOnExit;
using testing::Slurp;
using testing::Spawn;
constexpr int kWorkers = 3;

int Shell(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) text += buf;
  int rc = ::pclose(p);
  if (out) *out = text;
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// A hub namespace "sy-<pid>-s" for serve and one "sy-<pid>-w<k>" per worker, worker k
// joined to the hub by veth "syr<n><k>" (hub side, 10.<k+201>.<n>.1/30) <-> "syw<n><k>"
// (worker side, .2), n = pid % 250. Nothing is added to this machine's own namespace, so
// processes of other tests (their UCX lists every interface it sees) never meet these
// links, nor their removal.
class Namespaces {
 public:
  Namespaces() : n_(static_cast<int>(::getpid() % 250)) {}
  ~Namespaces() {
    for (const std::string& name : created_) Shell("ip netns del " + name);
  }
  static std::string Unsupported() {
    if (::geteuid() != 0) return "not root (creating network namespaces needs CAP_SYS_ADMIN)";
    if (Shell("command -v ip") != 0) return "no `ip` command (iproute2)";
    return "";
  }
  // "" on success; else the failing step. *not_permitted: a refusal of the kernel's.
  std::string Create(bool* not_permitted) {
    std::string out;
    *not_permitted = true;
    for (const std::string& name : All()) {
      Shell("ip netns del " + name);  // a stale one from a killed run with this pid
      if (Shell("ip netns add " + name, &out) != 0) return "ip netns add: " + out;
      created_.push_back(name);
      if (Shell("ip -n " + name + " link set lo up", &out) != 0) return "lo up: " + out;
    }
    for (int k = 0; k < kWorkers; ++k) {
      const std::string hub = Hub(), w = Name(k), h_if = HubIf(k), w_if = WorkerIf(k);
      const std::string steps[] = {
          "ip link add " + h_if + " netns " + hub + " type veth peer name " + w_if + " netns " + w,
          "ip -n " + hub + " addr add " + HubAddr(k) + "/30 dev " + h_if,
          "ip -n " + w + " addr add " + WorkerAddr(k) + "/30 dev " + w_if,
          "ip -n " + hub + " link set " + h_if + " up",
          "ip -n " + w + " link set " + w_if + " up",
          // The hub routes between the links: UCX's wireup may name any of serve's
          // addresses (those of the other links too), as on a routed network.
          "ip -n " + w + " route add default via " + HubAddr(k),
      };
      for (const std::string& s : steps) {
        if (Shell(s, &out) != 0) {
          *not_permitted = s.find("type veth") != std::string::npos;
          return s + ": " + out;
        }
      }
    }
    *not_permitted = false;
    return "";
  }
  bool WaitForCarrier(std::chrono::seconds bound) {
    auto until = std::chrono::steady_clock::now() + bound;
    auto up = [](const std::string& ns, const std::string& dev) {
      std::string s;
      Shell("ip netns exec " + ns + " cat /sys/class/net/" + dev + "/operstate", &s);
      return s.rfind("up", 0) == 0;
    };
    while (std::chrono::steady_clock::now() < until) {
      bool all = true;
      for (int k = 0; k < kWorkers && all; ++k)
        all = up(Hub(), HubIf(k)) && up(Name(k), WorkerIf(k));
      if (all) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  std::string Hub() const { return "sy-" + std::to_string(::getpid()) + "-s"; }
  std::string Name(int k) const {
    return "sy-" + std::to_string(::getpid()) + "-w" + std::to_string(k);
  }
  std::string HubIf(int k) const { return "syr" + std::to_string(n_) + std::to_string(k); }
  std::string WorkerIf(int k) const { return "syw" + std::to_string(n_) + std::to_string(k); }
  std::string HubAddr(int k) const { return Net(k) + ".1"; }
  std::string WorkerAddr(int k) const { return Net(k) + ".2"; }

 private:
  std::vector<std::string> All() const {
    std::vector<std::string> v = {Hub()};
    for (int k = 0; k < kWorkers; ++k) v.push_back(Name(k));
    return v;
  }
  std::string Net(int k) const {  // the first three octets
    return "10." + std::to_string(201 + k) + "." + std::to_string(n_);
  }
  int n_;
  std::vector<std::string> created_;
};

// Runs `fn` on a thread that entered network namespace `ns` (a thread's own sockets are
// created there; the rest of the process stays where it was). A default value when the
// namespace cannot be entered.
template <typename F>
auto InNamespace(const std::string& ns, F fn) -> decltype(fn()) {
  decltype(fn()) out{};
  std::thread t([&] {
    int fd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && ::setns(fd, CLONE_NEWNET) == 0) out = fn();
    if (fd >= 0) ::close(fd);
  });
  t.join();
  return out;
}

TEST(NetnsCluster, ThreeWorkersOnThreeHostsKeepTheirKvAndMoveItOverTheirLinks) {
  if (!std::filesystem::exists(Binary()))
    GTEST_SKIP() << "no switchyard binary at " << Binary() << " (build the `switchyard` target)";
  if (std::string why = Namespaces::Unsupported(); !why.empty()) GTEST_SKIP() << why;
  Namespaces ns;
  bool not_permitted = false;
  std::string err = ns.Create(&not_permitted);
  if (!err.empty() && not_permitted) GTEST_SKIP() << "network namespaces not permitted: " << err;
  ASSERT_TRUE(err.empty()) << err;
  ASSERT_TRUE(ns.WaitForCarrier(std::chrono::seconds(10))) << "veth links never came up";

  std::string dir = ::testing::TempDir() + "/sy_netns_cluster_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/data");
  {
    std::ofstream cfg(dir + "/config.json");
    cfg << R"({"hbmBytesPerWorker": 1342177280})";  // 8000 tokens of KV fill most of it
  }
  // serve's HTTP port is in the hub: every request goes from a thread that entered it.
  auto Request = [&ns](uint16_t port, const std::string& method, const std::string& target,
                       const std::string& body = "",
                       const std::map<std::string, std::string>& headers = {}) {
    return InNamespace(ns.Hub(), [&]() -> ClientResponse {
      return api::testing::Request(port, method, target, body, headers);
    });
  };
  // Fresh namespaces: nothing listens in the hub yet.
  const uint16_t http = 20000 + ::getpid() % 20000, control = http + 1;
  KillOnExit reaper;
  reaper.pids.push_back(Spawn({"ip",
                               "netns",
                               "exec",
                               ns.Hub(),
                               Binary(),
                               "serve",
                               "--config",
                               dir + "/config.json",
                               "--listen",
                               "127.0.0.1:" + std::to_string(http),
                               "--data-dir",
                               dir + "/data",
                               "--local-workers",
                               "0",
                               "--remote-workers",
                               std::to_string(kWorkers),
                               "--control-listen",
                               "0.0.0.0:" + std::to_string(control),
                               "--join-timeout-s",
                               "120"},
                              dir + "/serve.log"));
  for (int k = 0; k < kWorkers; ++k)
    reaper.pids.push_back(
        Spawn({"ip", "netns", "exec", ns.Name(k), Binary(), "worker", "--join",
               ns.HubAddr(k) + ":" + std::to_string(control), "--engine", "simulated", "--id",
               "h" + std::to_string(k), "--connect-timeout-s", "60"},
              dir + "/worker" + std::to_string(k) + ".log"));
  auto logs = [&] {
    std::string all = "serve:\n" + Slurp(dir + "/serve.log");
    for (int k = 0; k < kWorkers; ++k)
      all += "worker " + std::to_string(k) + ":\n" +
             Slurp(dir + "/worker" + std::to_string(k) + ".log");
    return all;
  };
  bool up = false;
  for (int i = 0; i < 1200 && !up; ++i) {
    up = Request(http, "GET", "/healthz").status == 200;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(up) << logs();
  std::string token = Slurp(dir + "/data/tokens/default");
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  std::map<std::string, std::string> auth = {{"Authorization", "Bearer " + token}};
  auto cluster = [&] {
    v1::ClusterState c;
    auto r = Request(http, "GET", "/v1/cluster", "", auth);
    EXPECT_TRUE(proto::ParseJson(r.body, &c).ok()) << r.body;
    return c;
  };
  v1::ClusterState c = cluster();
  ASSERT_EQ(c.joined_workers_size(), kWorkers) << *proto::ToJson(c);
  for (const auto& w : c.joined_workers()) {
    int k = w.id().back() - '0';
    // Each store listens on its own host's address: its blocks cross that veth link.
    EXPECT_EQ(w.kv_address().rfind(ns.WorkerAddr(k) + ":", 0), 0u) << *proto::ToJson(w);
  }

  // Two workflows per worker: a big context, a long tool, the context extended after it.
  std::vector<std::string> ids;
  for (int i = 0; i < 2 * kWorkers; ++i) {
    std::string id = "nc-" + std::to_string(i);
    ids.push_back(id);
    std::string body = R"({"id":")" + id + R"(","nodes":[
        {"id":"llm-0","kind":"LLM","cacheRefs":[{"context":"main","mode":"CREATE"}],
         "hints":{"promptTokens":8000,"extendTokens":8000,"maxOutputTokens":4}},
        {"id":"bash","kind":"TOOL","toolName":"Bash","deps":["llm-0"],"hints":{"expectedDurationMs":600000}},
        {"id":"llm-1","kind":"LLM","deps":["bash"],"cacheRefs":[{"context":"main","mode":"EXTEND"}],
         "hints":{"promptTokens":8300,"extendTokens":300,"maxOutputTokens":4}}]})";
    ASSERT_EQ(Request(http, "POST", "/v1/workflows", body, auth).status, 201);
    ASSERT_EQ(Request(http, "POST", "/v1/workflows/" + id + ":close", "", auth).status, 200);
  }
  auto status = [&](const std::string& id) {
    v1::WorkflowStatus s;
    auto r = Request(http, "GET", "/v1/workflows/" + id, "", auth);
    EXPECT_TRUE(proto::ParseJson(r.body, &s).ok()) << r.body;
    return s;
  };
  auto event = [&](const std::string& id, const char* type) {
    auto r = Request(http, "POST", "/v1/workflows/" + id + "/events",
                     std::string(R"({"nodeId":"bash","type":")") + type + R"("})", auth);
    EXPECT_EQ(r.status, 200) << r.body;
  };
  // Start each tool once its LLM node is done; finish it once the context left HBM (or
  // after a while if the policy kept it).
  std::map<std::string, std::chrono::steady_clock::time_point> started;
  std::set<std::string> finished;
  bool all_done = false;
  for (int i = 0; i < 12000 && !all_done; ++i) {
    all_done = true;
    for (const std::string& id : ids) {
      v1::WorkflowStatus s = status(id);
      if (s.state() == v1::WORKFLOW_COMPLETED) continue;
      all_done = false;
      ASSERT_NE(s.state(), v1::WORKFLOW_FAILED) << *proto::ToJson(s);
      bool llm0 = false;
      for (const auto& n : s.nodes()) llm0 |= n.id() == "llm-0" && n.state() == v1::NODE_SUCCEEDED;
      if (llm0 && !started.count(id)) {
        event(id, "TOOL_STARTED");
        started[id] = std::chrono::steady_clock::now();
      }
      if (!started.count(id) || finished.count(id)) continue;
      bool out_of_hbm = false;
      for (const auto& kv : s.kv())
        out_of_hbm |= kv.context() == "main" && !kv.in_flight() && kv.tier() != "hbm";
      if (out_of_hbm || std::chrono::steady_clock::now() - started[id] > std::chrono::seconds(5)) {
        event(id, "TOOL_FINISHED");
        finished.insert(id);
      }
    }
    if (!all_done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(all_done) << logs();
  // Wait for a heartbeat with the stores' figures after the last moves.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  c = cluster();
  uint64_t gets = 0, puts = 0;
  for (const auto& w : c.joined_workers()) {
    EXPECT_EQ(w.state(), "alive") << *proto::ToJson(w);
    EXPECT_EQ(w.kv().puts_refused_credit(), 0u) << *proto::ToJson(w);
    EXPECT_EQ(w.kv().puts_rejected(), 0u) << *proto::ToJson(w);
    gets += w.kv().gets_served();
    puts += w.kv().puts_committed();
  }
  // Contexts were demoted out of the workers' stores (gets over the links) and came back
  // (puts, after those that first wrote the emulated KV there); validated and committed
  // at both ends, none refused.
  EXPECT_GT(gets, 0u) << *proto::ToJson(c);
  EXPECT_GE(puts, gets) << *proto::ToJson(c);
  EXPECT_GT(c.decisions_by_kind().count("demote"), 0u) << *proto::ToJson(c);
  EXPECT_GT(c.decisions_by_kind().count("prefetch"), 0u) << *proto::ToJson(c);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace switchyard::workers
