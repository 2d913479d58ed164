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
#include <sys/stat.h>
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
#include <utility>
#include <vector>

#include "proto/json.h"
#include "proto/switchyard/v1/api.pb.h"
#include "proto/switchyard/v1/service_state.pb.h"
#include "tests/http/http_test_client.h"
#include "tests/workers/processes.h"

namespace switchyard::workers {
namespace {

using switchyard::testing::ClientResponse;
using ::switchyard::testing::kWaitSeconds;
using testing::Binary;
using testing::Slurp;
using testing::Spawn;
using testing::WaitUntil;
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
  bool WaitForCarrier() {
    auto up = [](const std::string& ns, const std::string& dev) {
      std::string s;
      Shell("ip netns exec " + ns + " cat /sys/class/net/" + dev + "/operstate", &s);
      return s.rfind("up", 0) == 0;
    };
    return WaitUntil(
        [&] {
          bool all = true;
          for (int k = 0; k < kWorkers && all; ++k)
            all = up(Hub(), HubIf(k)) && up(Name(k), WorkerIf(k));
          return all;
        },
        kWaitSeconds, std::chrono::milliseconds(50));
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

// serve in the hub and a worker per worker namespace, with the test's HTTP client in the
// hub. Skips (SetUp) where namespaces are not permitted.
class NetnsCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(Binary()))
      GTEST_SKIP() << "no switchyard binary at " << Binary() << " (build the `switchyard` target)";
    if (std::string why = Namespaces::Unsupported(); !why.empty()) GTEST_SKIP() << why;
    bool not_permitted = false;
    std::string err = ns_.Create(&not_permitted);
    if (!err.empty() && not_permitted) GTEST_SKIP() << "network namespaces not permitted: " << err;
    ASSERT_TRUE(err.empty()) << err;
    ASSERT_TRUE(ns_.WaitForCarrier()) << "veth links never came up";
    dir_ = ::testing::TempDir() + "/sy_netns_cluster_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/data");
    std::ofstream cfg(dir_ + "/config.json");
    cfg << R"({"hbmBytesPerWorker": 1342177280})";  // 8000 tokens of KV fill most of it
  }
  void TearDown() override {
    std::vector<pid_t> pids;
    for (const auto& [k, pid] : workers_) pids.push_back(pid);
    if (serve_ > 0) pids.push_back(serve_);
    for (pid_t pid : pids) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (!dir_.empty() && !HasFailure()) std::filesystem::remove_all(dir_);
  }

  // net_budget::HostIdentity() of a process in namespace `ns`.
  static std::string HostOf(const std::string& ns) {
    char hostname[256] = {0};
    ::gethostname(hostname, sizeof(hostname) - 1);
    struct stat st {};
    EXPECT_EQ(::stat(("/var/run/netns/" + ns).c_str(), &st), 0) << ns;
    return std::string(hostname) + "/netns:" + std::to_string(st.st_ino);
  }
  // A link file that gives every worker's port and serve's port toward it `bytes_per_s`
  // (as `switchyard calibrate` would write it); its path.
  std::string LinkFile(double bytes_per_s) {
    std::ostringstream f;
    f << R"({"links": [)";
    const char* sep = "";
    for (int k = 0; k < kWorkers; ++k)
      for (const std::string& port :
           {HostOf(ns_.Name(k)) + "/" + ns_.WorkerIf(k), HostOf(ns_.Hub()) + "/" + ns_.HubIf(k)})
        f << std::exchange(sep, ",") << R"({"link": "nic:)" << port
          << R"(", "label": "test", "calibration": {"alphaS": 0.00001, "betaSPerByte": )"
          << 1.0 / bytes_per_s << "}}";
    f << "]}";
    std::ofstream(dir_ + "/links.json") << f.str();
    return dir_ + "/links.json";
  }
  // Fresh namespaces: nothing listens in the hub yet.
  uint16_t http() const { return 20000 + ::getpid() % 20000; }
  uint16_t control() const { return http() + 1; }
  void StartServe(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"ip",
                                     "netns",
                                     "exec",
                                     ns_.Hub(),
                                     Binary(),
                                     "serve",
                                     "--config",
                                     dir_ + "/config.json",
                                     "--listen",
                                     "127.0.0.1:" + std::to_string(http()),
                                     "--data-dir",
                                     dir_ + "/data",
                                     "--local-workers",
                                     "0",
                                     "--remote-workers",
                                     std::to_string(kWorkers),
                                     "--control-listen",
                                     "0.0.0.0:" + std::to_string(control()),
                                     "--join-timeout-s",
                                     "120"};
    args.insert(args.end(), extra.begin(), extra.end());
    serve_ = Spawn(args, dir_ + "/serve.log");
  }
  // Worker k ("h<k>") in its namespace; `run` numbers its log (a restart gets a new one).
  void StartWorker(int k, int run = 0) {
    std::vector<std::string> args = {"ip",
                                     "netns",
                                     "exec",
                                     ns_.Name(k),
                                     Binary(),
                                     "worker",
                                     "--join",
                                     ns_.HubAddr(k) + ":" + std::to_string(control()),
                                     "--id",
                                     "h" + std::to_string(k),
                                     "--connect-timeout-s",
                                     "60"};
    args.insert(args.end(), engine_.begin(), engine_.end());
    workers_[k] = Spawn(args, WorkerLog(k, run));
  }
  std::string WorkerLog(int k, int run = 0) const {
    return dir_ + "/worker" + std::to_string(k) + (run ? "." + std::to_string(run) : "") + ".log";
  }
  std::string Logs() const {
    std::string all = "serve:\n" + Slurp(dir_ + "/serve.log");
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      if (e.path().filename().string().rfind("worker", 0) == 0)
        all += e.path().filename().string() + ":\n" + Slurp(e.path().string());
    return all;
  }
  // serve's HTTP port is in the hub: every request goes from a thread that entered it.
  ClientResponse Request(const std::string& method, const std::string& target,
                         const std::string& body = "") {
    return InNamespace(ns_.Hub(), [&]() -> ClientResponse {
      return switchyard::testing::Request(http(), method, target, body, auth_);
    });
  }
  // Waits for serve's health and reads the default tenant's token.
  bool AwaitServe() {
    const bool up = WaitUntil([&] { return Request("GET", "/healthz").status == 200; },
                              kWaitSeconds, std::chrono::milliseconds(50));
    std::string token = Slurp(dir_ + "/data/tokens/default");
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    auth_ = {{"Authorization", "Bearer " + token}};
    return up;
  }
  v1::ClusterState Cluster() {
    v1::ClusterState c;
    auto r = Request("GET", "/v1/cluster");
    EXPECT_TRUE(proto::ParseJson(r.body, &c).ok()) << r.body;
    return c;
  }
  v1::WorkflowStatus Status(const std::string& id) {
    v1::WorkflowStatus s;
    auto r = Request("GET", "/v1/workflows/" + id);
    EXPECT_TRUE(proto::ParseJson(r.body, &s).ok()) << r.body;
    return s;
  }
  // /v1/cluster once every worker's store figures (from its heartbeats) count every put and
  // get serve made with that store (serve_puts, serve_gets: one block each, all ended once
  // the workflows did): figures as of after the last moves, not an older heartbeat's.
  v1::ClusterState AfterTheLastMoves() {
    v1::ClusterState c;
    const bool fresh = WaitUntil([&] {
      c = Cluster();
      for (const auto& w : c.joined_workers()) {
        const v1::WorkerKvStats& kv = w.kv();
        if (kv.puts_committed() + kv.puts_rejected() + kv.puts_refused_credit() < w.serve_puts() ||
            kv.gets_served() < w.serve_gets())
          return false;
      }
      return c.joined_workers_size() > 0;
    });
    EXPECT_TRUE(fresh) << "the stores' figures never caught up with serve's moves: "
                       << *proto::ToJson(c);
    return c;
  }
  void Event(const std::string& id, const char* type) {
    auto r = Request("POST", "/v1/workflows/" + id + "/events",
                     std::string(R"({"nodeId":"bash","type":")") + type + R"("})");
    EXPECT_EQ(r.status, 200) << r.body;
  }
  // A big context, a long tool, the context extended after it; closed at once. `out`: the
  // first call's output tokens (a long decode keeps it running on its worker).
  // `prompt`: the first call's prompt tokens (the second extends it by 300).
  void Submit(const std::string& id, int out = 4, int prompt = 8000) {
    const std::string p = std::to_string(prompt), p2 = std::to_string(prompt + out + 300);
    std::string body = R"({"id":")" + id + R"(","nodes":[
        {"id":"llm-0","kind":"LLM","cacheRefs":[{"context":"main","mode":"CREATE"}],
         "hints":{"promptTokens":)" +
                       p + R"(,"extendTokens":)" + p + R"(,"maxOutputTokens":)" +
                       std::to_string(out) + R"(}},
        {"id":"bash","kind":"TOOL","toolName":"Bash","deps":["llm-0"],"hints":{"expectedDurationMs":600000}},
        {"id":"llm-1","kind":"LLM","deps":["bash"],"cacheRefs":[{"context":"main","mode":"EXTEND"}],
         "hints":{"promptTokens":)" +
                       p2 + R"(,"extendTokens":300,"maxOutputTokens":4}}]})";
    ASSERT_EQ(Request("POST", "/v1/workflows", body).status, 201);
    ASSERT_EQ(Request("POST", "/v1/workflows/" + id + ":close").status, 200);
  }
  // Drives the workflows' tools to the end: each tool starts once its LLM node is done and
  // finishes once the context left HBM (or after a while if the policy kept it). Each tool
  // is started and finished once (a side effect). False when one failed or time ran out.
  bool Drive(const std::vector<std::string>& ids) {
    std::map<std::string, std::chrono::steady_clock::time_point> started;
    std::set<std::string> finished;
    bool failed = false;
    const bool done = WaitUntil(
        [&] {
          bool all_done = true;
          for (const std::string& id : ids) {
            v1::WorkflowStatus s = Status(id);
            if (s.state() == v1::WORKFLOW_COMPLETED) continue;
            all_done = false;
            if (s.state() == v1::WORKFLOW_FAILED) {
              ADD_FAILURE() << *proto::ToJson(s);
              failed = true;
              return true;  // ends the wait
            }
            bool llm0 = false;
            for (const auto& n : s.nodes())
              llm0 |= n.id() == "llm-0" && n.state() == v1::NODE_SUCCEEDED;
            if (llm0 && !started.count(id)) {
              Event(id, "TOOL_STARTED");
              started[id] = std::chrono::steady_clock::now();
            }
            if (!started.count(id) || finished.count(id)) continue;
            bool out_of_hbm = false;
            for (const auto& kv : s.kv())
              out_of_hbm |= kv.context() == "main" && !kv.in_flight() && kv.tier() != "hbm";
            if (out_of_hbm ||
                std::chrono::steady_clock::now() - started[id] > std::chrono::seconds(5)) {
              Event(id, "TOOL_FINISHED");
              finished.insert(id);
            }
          }
          return all_done;
        },
        120);
    return done && !failed;
  }

  Namespaces ns_;
  std::string dir_;
  pid_t serve_ = -1;
  std::map<int, pid_t> workers_;
  std::map<std::string, std::string> auth_;
  std::vector<std::string> engine_ = {"--engine", "simulated"};  // each worker's engine
};

TEST_F(NetnsCluster, ThreeWorkersOnThreeHostsKeepTheirKvAndMoveItOverTheirLinks) {
  // The links' figures as measured on a fast network (the veths report 10 Gb/s, over which
  // the planner would rather recompute an 8000-token context than fetch it back).
  StartServe({"--links", LinkFile(25e9)});
  for (int k = 0; k < kWorkers; ++k) StartWorker(k);
  ASSERT_TRUE(AwaitServe()) << Logs();
  v1::ClusterState c = Cluster();
  ASSERT_EQ(c.joined_workers_size(), kWorkers) << *proto::ToJson(c);
  for (const auto& w : c.joined_workers()) {
    int k = w.id().back() - '0';
    // Each store listens on its own host's address: its blocks cross that veth link.
    EXPECT_EQ(w.kv_address().rfind(ns_.WorkerAddr(k) + ":", 0), 0u) << *proto::ToJson(w);
  }
  // Two workflows per worker.
  std::vector<std::string> ids;
  for (int i = 0; i < 2 * kWorkers; ++i) {
    ids.push_back("nc-" + std::to_string(i));
    Submit(ids.back());
  }
  ASSERT_TRUE(Drive(ids)) << Logs();
  c = AfterTheLastMoves();
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
}

// What each host is, as the machines say: serve's topology puts each worker on the host
// it reported (its network namespace here: its own interfaces), its pool behind that
// host's interface, whose port runs at the speed the interface reports (a veth: 10 Gb/s);
// serve's interface toward each worker likewise. A link file that gives one worker's port
// 400 Gb/s overrides the figure and is listed as a conflict with that worker's report.
TEST_F(NetnsCluster, ServeBuildsItsTopologyFromWhatTheWorkersDiscovered) {
  auto host_of = [](const std::string& ns) { return HostOf(ns); };
  const std::string serve_host = host_of(ns_.Hub());
  const std::string h0_port = "nic:" + host_of(ns_.Name(0)) + "/" + ns_.WorkerIf(0);
  std::ofstream(dir_ + "/links.json")
      << R"({"links": [{"link": ")" << h0_port
      << R"(", "label": "test", "calibration": {"alphaS": 0.00001, "betaSPerByte": 2e-11}}]})";
  StartServe({"--links", dir_ + "/links.json"});
  for (int k = 0; k < kWorkers; ++k) StartWorker(k);
  ASSERT_TRUE(AwaitServe()) << Logs();
  const v1::ClusterState c = Cluster();
  EXPECT_NE(c.planner().find("discovered from the joined workers' reports (4 hosts)"),
            std::string::npos)
      << c.planner();
  std::map<std::string, const v1::LinkState*> links;
  for (const auto& l : c.links()) links[l.name()] = &l;
  constexpr double kVeth = 10e9 / 8;  // 10000 Mb/s in sysfs
  for (const auto& w : c.joined_workers()) {
    const int k = w.id().back() - '0', idx = w.worker_index();
    const std::string host = host_of(ns_.Name(k)), port = "nic:" + host + "/" + ns_.WorkerIf(k);
    EXPECT_EQ(w.host(), host);
    const v1::LinkState* pool = links["pcie" + std::to_string(idx)];
    ASSERT_NE(pool, nullptr) << *proto::ToJson(c);
    EXPECT_EQ(pool->src(), host + "/w" + std::to_string(idx));
    EXPECT_EQ(pool->dst(), host + "/mem");
    ASSERT_NE(links[port], nullptr) << port << ": " << *proto::ToJson(c);
    EXPECT_EQ(links[port]->src(), host + "/" + ns_.WorkerIf(k));
    EXPECT_EQ(links[port]->dst(), "fabric");
    const v1::LinkState* hub = links["nic:" + serve_host + "/" + ns_.HubIf(k)];
    ASSERT_NE(hub, nullptr) << *proto::ToJson(c);
    EXPECT_DOUBLE_EQ(hub->bandwidth_bytes_per_s(), kVeth);
    EXPECT_EQ(hub->figure_source().rfind("discovered", 0), 0u) << hub->figure_source();
    if (k == 0) {  // the link file's figure, and the conflict with the report
      EXPECT_NEAR(links[port]->bandwidth_bytes_per_s(), 50e9, 1e6);
      EXPECT_EQ(links[port]->figure_source().rfind("calibrated", 0), 0u);
      ASSERT_EQ(w.topology_conflicts_size(), 1) << *proto::ToJson(w);
      EXPECT_NE(w.topology_conflicts(0).find(h0_port), std::string::npos);
      EXPECT_NE(w.topology_conflicts(0).find("reported 1.25"), std::string::npos)
          << w.topology_conflicts(0);
    } else {
      EXPECT_DOUBLE_EQ(links[port]->bandwidth_bytes_per_s(), kVeth);
      EXPECT_EQ(links[port]->figure_source().rfind("discovered", 0), 0u);
      EXPECT_EQ(w.topology_conflicts_size(), 0) << *proto::ToJson(w);
    }
  }
  EXPECT_EQ(c.topology_conflicts_size(), 1) << *proto::ToJson(c);
}

// The CPU engine on three hosts: each worker computes its calls with the tiny model (random
// weights), in a pool of 1 MiB that holds one context; during the tool waits the contexts
// leave the pools — each worker exports the real blocks into its store, serve takes them
// over that host's link — and come back into whichever worker runs the next call (an
// import, after the blocks crossed that host's link). Every workflow completes.
TEST_F(NetnsCluster, JoinedCpuEnginesMoveRealKvAcrossTheirHosts) {
  const std::string model = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json";
  engine_ = {"--engine", "cpu", "--model", model};
  StartServe({"--engine", "cpu", "--model", model, "--kv-pool-mib", "1"});
  for (int k = 0; k < kWorkers; ++k) StartWorker(k);
  ASSERT_TRUE(AwaitServe()) << Logs();
  std::vector<std::string> ids;
  for (int i = 0; i < 2 * kWorkers; ++i) {
    ids.push_back("ncpu-" + std::to_string(i));
    Submit(ids.back(), 6, 1200);
  }
  ASSERT_TRUE(Drive(ids)) << Logs();
  v1::ClusterState c = AfterTheLastMoves();
  uint64_t exported = 0, imported = 0;
  for (const auto& [dst, n] : c.real_bytes_moved()) {
    if (dst.rfind("peer:", 0) == 0) exported += n;
    if (dst.find("cpu engine KV pool of worker") != std::string::npos) imported += n;
  }
  EXPECT_GT(exported, 0u) << *proto::ToJson(c);
  EXPECT_GT(imported, 0u) << *proto::ToJson(c);
  for (const auto& w : c.joined_workers()) {
    EXPECT_EQ(w.engine(), "cpu");
    EXPECT_EQ(w.state(), "alive") << *proto::ToJson(w);
    EXPECT_EQ(w.kv().puts_rejected(), 0u) << *proto::ToJson(w);
    EXPECT_EQ(w.control_dscp(), 48) << "the control class, marked on the wire";
  }
  std::printf("cpu engines on three hosts: %llu B exported from pools, %llu B imported\n",
              static_cast<unsigned long long>(exported), static_cast<unsigned long long>(imported));
  std::fflush(stdout);
}

// A partition: worker h0's link goes down while calls run on it. serve hears nothing more
// from it and marks it lost for missed heartbeats (3 x 300 ms), the workflows it held
// record the loss and every workflow still completes on the other two hosts, each tool
// run once. The partitioned worker hears nothing from serve either and stops (serve
// lost); once the link is back a restarted h0 rejoins under its index with a new epoch and
// runs work again.
TEST_F(NetnsCluster, APartitionedWorkerIsLostEveryWorkflowEndsAndItRejoinsAfterTheHeal) {
  StartServe({"--heartbeat-ms", "300"});
  for (int k = 0; k < kWorkers; ++k) StartWorker(k);
  ASSERT_TRUE(AwaitServe()) << Logs();
  v1::ClusterState c = Cluster();
  ASSERT_EQ(c.joined_workers_size(), kWorkers) << *proto::ToJson(c);
  int index = -1;
  for (const auto& w : c.joined_workers())
    if (w.id() == "h0") index = w.worker_index();
  ASSERT_GE(index, 0) << *proto::ToJson(c);
  // Long first calls: some are still decoding on h0 when its link goes.
  std::vector<std::string> ids;
  for (int i = 0; i < 2 * kWorkers; ++i) {
    ids.push_back("np-" + std::to_string(i));
    Submit(ids.back(), 600);
  }
  auto on_h0 = [&]() {
    for (const std::string& id : ids) {
      const v1::WorkflowStatus s = Status(id);
      for (const auto& kv : s.kv())
        if (kv.worker() == index && kv.tier() == "hbm") return true;
    }
    return false;
  };
  ASSERT_TRUE(WaitUntil(on_h0)) << "nothing ever ran on h0: " << Logs();
  auto cut = std::chrono::steady_clock::now();
  ASSERT_EQ(Shell("ip -n " + ns_.Hub() + " link set " + ns_.HubIf(0) + " down"), 0);
  std::string state;
  WaitUntil([&] {
    const v1::ClusterState now = Cluster();
    for (const auto& w : now.joined_workers())
      if (w.id() == "h0") state = w.state();
    return state == "lost";
  });
  ASSERT_EQ(state, "lost") << Logs();
  // Reported, not asserted: how long the loss took is the VM's business.
  const double lost_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - cut).count();
  RecordProperty("partition_to_lost_s", std::to_string(lost_after));
  std::printf("partition to lost: %.3f s\n", lost_after);
  std::fflush(stdout);  // before a fork: a child would write the buffer again
  c = Cluster();
  for (const auto& w : c.joined_workers())
    if (w.id() == "h0") {
      EXPECT_NE(w.lost_reason().find("heartbeat"), std::string::npos) << *proto::ToJson(w);
    }

  ASSERT_TRUE(Drive(ids)) << Logs();
  int with_loss = 0;
  for (const std::string& id : ids) {
    v1::WorkflowStatus s = Status(id);
    EXPECT_EQ(s.state(), v1::WORKFLOW_COMPLETED) << id;
    with_loss += s.worker_losses_size() > 0;
  }
  EXPECT_GT(with_loss, 0) << "no workflow recorded h0's loss";

  // The partitioned worker stops on its own: serve went silent (exit 1).
  int st = testing::Reap(workers_[0], 30);
  workers_.erase(0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << st << ": " << Slurp(WorkerLog(0));
  // Heal, restart: it rejoins under its index, and new work runs.
  ASSERT_EQ(Shell("ip -n " + ns_.Hub() + " link set " + ns_.HubIf(0) + " up"), 0);
  ASSERT_TRUE(ns_.WaitForCarrier());
  StartWorker(0, 1);
  const bool back = WaitUntil([&] {
    const v1::ClusterState now = Cluster();
    for (const auto& w : now.joined_workers())
      if (w.id() == "h0" && w.state() == "alive" && w.joins() == 2 && w.worker_index() == index)
        return true;
    return false;
  });
  ASSERT_TRUE(back) << Logs();
  std::vector<std::string> after;
  for (int i = 0; i < kWorkers; ++i) {
    after.push_back("na-" + std::to_string(i));
    Submit(after.back());
  }
  ASSERT_TRUE(Drive(after)) << Logs();
}

}  // namespace
}  // namespace switchyard::workers
