// Two "hosts" on one machine: network namespaces joined by a veth pair that this test
// creates and removes. The worker (`switchyard worker`) runs in namespace b; the client
// is this test binary re-run inside namespace a (`ip netns exec`, role test
// NetnsTest.ClientRole), so every byte crosses the veth link over UCX's tcp transport.
// Blocks move both ways (a put committed by the worker, a get validated by the client)
// and are freed. Runs by default; skipped with the reason where namespaces are not
// permitted (not root, no `ip`, `ip netns add` fails, e.g. unshare refused in a
// container). Cleanup: the namespaces are removed by a destructor (so also when an
// assertion fails), namespaces left by a killed earlier run are removed first, and every
// wait is bounded (carrier 10 s, worker start 20 s, client 60 s).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>

#include "kv_store/kv_store_client.h"
#include "tests/common/wait_until.h"
#include "tests/kv_store/worker_process.h"

namespace switchyard::kv_store {
namespace {

constexpr char kPeerEnv[] = "SY_NETNS_TEST_PEER";  // set only for the client role

// Runs a shell command; returns its exit status and puts stdout+stderr into *out.
int Shell(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) text += buf;
  int rc = ::pclose(p);
  if (out != nullptr) *out = text;
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// Removes namespaces named sy-<pid>-{a,b} whose creating process is gone (a test killed
// before its destructor ran).
void RemoveStaleNamespaces() {
  std::string list;
  if (Shell("ip netns list", &list) != 0) return;
  std::istringstream in(list);
  std::string line;
  while (std::getline(in, line)) {
    std::string name = line.substr(0, line.find(' '));
    if (name.rfind("sy-", 0) != 0) continue;
    pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + 3));
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) Shell("ip netns del " + name);
  }
}

// Owns the namespaces; removing a namespace also removes its end of the veth pair.
class NetnsPair {
 public:
  NetnsPair() {
    std::string id = std::to_string(getpid());
    a_ = "sy-" + id + "-a";
    b_ = "sy-" + id + "-b";
    va_ = "sya" + std::to_string(getpid() % 100000);
    vb_ = "syb" + std::to_string(getpid() % 100000);
    subnet_ = std::to_string(getpid() % 250 + 1);
  }
  ~NetnsPair() {
    if (created_a_) Shell("ip netns del " + a_);
    if (created_b_) Shell("ip netns del " + b_);
  }
  // Empty when namespaces can be made here, else why not (the skip reason).
  static std::string Unsupported() {
    if (geteuid() != 0) return "not root (creating network namespaces needs CAP_SYS_ADMIN)";
    if (Shell("command -v ip") != 0) return "no `ip` command (iproute2)";
    return "";
  }
  // Empty on success; else the failing step and its output. `fatal` says whether the
  // failure means "not permitted" (skip) or a broken setup (fail).
  std::string Create(bool* not_permitted) {
    std::string out;
    *not_permitted = true;
    if (Shell("ip netns add " + a_, &out) != 0) return "ip netns add: " + out;
    created_a_ = true;
    if (Shell("ip netns add " + b_, &out) != 0) return "ip netns add: " + out;
    created_b_ = true;
    *not_permitted = false;
    const std::string steps[] = {
        "ip link add " + va_ + " netns " + a_ + " type veth peer name " + vb_ + " netns " + b_,
        "ip -n " + a_ + " addr add " + AddrA() + "/30 dev " + va_,
        "ip -n " + b_ + " addr add " + AddrB() + "/30 dev " + vb_,
        "ip -n " + a_ + " link set lo up",
        "ip -n " + b_ + " link set lo up",
        "ip -n " + a_ + " link set " + va_ + " up",
        "ip -n " + b_ + " link set " + vb_ + " up",
    };
    for (const auto& s : steps) {
      if (Shell(s, &out) != 0) {
        // A veth the kernel refuses is a missing feature, not a failure of ours.
        *not_permitted = s.find("type veth") != std::string::npos;
        return s + ": " + out;
      }
    }
    return "";
  }
  // A veth end reports no carrier for a moment after both ends are up, and UCX's tcp
  // transport lists only running interfaces: wait until both are up before starting UCX.
  bool WaitForCarrier() {
    return ::switchyard::testing::WaitUntil(
        [&] {
          std::string sa, sb;
          Shell("ip netns exec " + a_ + " cat /sys/class/net/" + va_ + "/operstate", &sa);
          Shell("ip netns exec " + b_ + " cat /sys/class/net/" + vb_ + "/operstate", &sb);
          return sa.rfind("up", 0) == 0 && sb.rfind("up", 0) == 0;
        },
        ::switchyard::testing::kWaitSeconds, std::chrono::milliseconds(50));
  }
  std::string AddrA() const { return "10.250." + subnet_ + ".1"; }
  std::string AddrB() const { return "10.250." + subnet_ + ".2"; }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }
  const std::string& va() const { return va_; }
  const std::string& vb() const { return vb_; }

 private:
  std::string a_, b_, va_, vb_, subnet_;
  bool created_a_ = false, created_b_ = false;
};

std::string SelfExe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : std::string();
}

TEST(NetnsTest, BlocksCrossAVethPairBetweenNamespaces) {
  if (!testing::HaveSwitchyardBinary()) {
    GTEST_SKIP() << "needs the switchyard binary at " << testing::SwitchyardBinary();
  }
  std::string why = NetnsPair::Unsupported();
  if (!why.empty()) GTEST_SKIP() << "network namespaces not permitted here: " << why;
  RemoveStaleNamespaces();
  NetnsPair ns;
  bool not_permitted = false;
  why = ns.Create(&not_permitted);
  if (!why.empty() && not_permitted) {
    GTEST_SKIP() << "network namespaces not permitted here: " << why;
  }
  ASSERT_TRUE(why.empty()) << why;
  ASSERT_TRUE(ns.WaitForCarrier()) << "veth carrier did not come up";

  // The worker in namespace b, its UCX limited to the veth end (the child inherits the
  // environment).
  testing::WorkerProcess worker;
  ::setenv("UCX_NET_DEVICES", ns.vb().c_str(), 1);
  bool started = worker.Start(ns.AddrB() + ":0", "tcp", ns.b());
  ::unsetenv("UCX_NET_DEVICES");
  ASSERT_TRUE(started) << "worker in " << ns.b();
  std::string address = ns.AddrB() + ":" + worker.port();

  // The client: this binary, role test only, in namespace a.
  std::string exe = SelfExe();
  ASSERT_FALSE(exe.empty());
  std::string cmd = "timeout 60 ip netns exec " + ns.a() +
                    " env UCX_TLS=tcp UCX_NET_DEVICES=" + ns.va() + " UCX_LOG_LEVEL=fatal " +
                    kPeerEnv + "=" + address + " " + exe + " --gtest_filter=NetnsTest.ClientRole";
  std::string out;
  int rc = Shell(cmd, &out);
  EXPECT_EQ(rc, 0) << cmd << "\n" << out;
  EXPECT_NE(out.find("[  PASSED  ] 1 test"), std::string::npos) << out;
}

// The client side of the test above; runs only inside namespace a, started by it.
TEST(NetnsTest, ClientRole) {
  const char* peer = std::getenv(kPeerEnv);
  if (peer == nullptr) {
    GTEST_SKIP() << "the client role of BlocksCrossAVethPairBetweenNamespaces; that test runs "
                    "it inside a network namespace";
  }
  KvStoreClientOptions o;
  o.transport_config.params["TLS"] = "tcp";
  o.ack_timeout = std::chrono::seconds(20);
  auto client = KvStoreClient::Connect(peer, o);
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<std::vector<uint8_t>> blocks;
  for (size_t n : {size_t{4096}, size_t{256} << 10, size_t{4} << 20}) {
    std::vector<uint8_t> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 13 + n);
    blocks.push_back(std::move(b));
  }
  PutRequest put;
  put.workflow_id = "wf_netns";
  put.context_id = "ctx";
  put.model_epoch = (*client)->model_epoch();
  put.generation = 1;
  for (size_t i = 0; i < blocks.size(); ++i) {
    put.blocks.push_back({10 + i, blocks[i].data(), blocks[i].size()});
  }
  auto sent = (*client)->Put(put);
  ASSERT_TRUE(sent.ok()) << sent.status();
  ASSERT_TRUE(sent->committed) << RejectReasonName(sent->reason) << " " << sent->message;
  EXPECT_TRUE(sent->validated);

  std::vector<std::vector<uint8_t>> back;
  GetSpec g{"wf_netns", "ctx", put.model_epoch, 1, {10, 11, 12}, {}};
  for (const auto& b : blocks) back.emplace_back(b.size());
  for (auto& b : back) g.dst.push_back({b.data(), b.size()});
  auto got = (*client)->Get(g);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->validated) << RejectReasonName(got->reason);
  EXPECT_EQ(back, blocks);
  EXPECT_TRUE((*client)->Free("wf_netns", "ctx", {10, 11, 12}).ok());
}

}  // namespace
}  // namespace switchyard::kv_store
