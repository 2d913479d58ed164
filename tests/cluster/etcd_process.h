// EtcdProcess: a real single-member etcd on loopback for the cluster tests: a temporary
// data dir, free client and peer ports, started as a child process and waited for until
// /v3/kv/range answers; killed (SIGKILL) and its directory removed by Kill() or the
// destructor. EtcdUnavailableReason() says why the tests cannot run (no binary); the
// tests skip then, unless SY_REQUIRE_ETCD is set, when they fail.
//
// Thread-safety: one owner thread.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cluster/etcd_client.h"
#include "tests/common/child_process.h"
#include "tests/common/wait_until.h"

namespace switchyard::cluster::testing {

// $SY_ETCD_BIN, else `etcd` on PATH; "" when none.
inline std::string FindEtcdBinary() {
  if (const char* env = std::getenv("SY_ETCD_BIN"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    size_t colon = dirs.find(':', pos);
    if (colon == std::string::npos) colon = dirs.size();
    std::string candidate = dirs.substr(pos, colon - pos) + "/etcd";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    pos = colon + 1;
  }
  return "";
}

inline bool EtcdRequired() {
  const char* v = std::getenv("SY_REQUIRE_ETCD");
  return v && *v && std::string(v) != "0";
}

class EtcdProcess {
 public:
  EtcdProcess() = default;
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;
  ~EtcdProcess() {
    Kill();
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

  // Starts etcd (up to three tries, fresh ports each: another process may take a port
  // between FreePort and etcd's bind). Returns "" on success, else what went wrong.
  std::string Start() {
    std::string binary = FindEtcdBinary();
    if (binary.empty()) return "no etcd binary on PATH (Debian: apt-get install etcd-server)";
    std::string tmpl = (std::filesystem::temp_directory_path() / "sy-etcd-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return "mkdtemp failed";
    dir_ = tmpl;
    std::string last;
    for (int attempt = 0; attempt < 3; ++attempt) {
      last = TryStart(binary, attempt);
      if (last.empty()) return "";
      Kill();
    }
    return last;
  }

  // SIGKILL and reap; the data dir stays until destruction.
  void Kill() {
    ::switchyard::testing::Kill(pid_);
    pid_ = -1;
  }

  const std::string& url() const { return url_; }
  std::string log_path() const { return (std::filesystem::path(dir_) / "etcd.log").string(); }

 private:
  std::string TryStart(const std::string& binary, int attempt) {
    int client = ::switchyard::testing::FreePort(), peer = ::switchyard::testing::FreePort();
    if (client == 0 || peer == 0 || client == peer) return "no free loopback port";
    url_ = "http://127.0.0.1:" + std::to_string(client);
    std::string peer_url = "http://127.0.0.1:" + std::to_string(peer);
    std::string data = (std::filesystem::path(dir_) / ("data" + std::to_string(attempt))).string();
    std::vector<std::string> args = {binary,
                                     "--name=sy-test",
                                     "--data-dir=" + data,
                                     "--listen-client-urls=" + url_,
                                     "--advertise-client-urls=" + url_,
                                     "--listen-peer-urls=" + peer_url,
                                     "--initial-advertise-peer-urls=" + peer_url,
                                     "--initial-cluster=sy-test=" + peer_url,
                                     "--initial-cluster-state=new"};
    pid_ = ::switchyard::testing::Spawn(args, log_path(), /*append=*/true);
    if (pid_ < 0) return "fork failed for " + binary;
    auto etcd = EtcdClient::Create(url_, EtcdOptions{std::chrono::milliseconds(1000)});
    if (!etcd.ok()) return etcd.status().ToString();
    bool exited = false;
    const bool up = ::switchyard::testing::WaitUntil(
        [&] {
          int status = 0;
          exited = ::waitpid(pid_, &status, WNOHANG) == pid_;
          return exited || (*etcd)->Range("/sy-test-probe").ok();
        },
        ::switchyard::testing::kWaitSeconds, std::chrono::milliseconds(100));
    if (exited) {
      pid_ = -1;
      return "etcd exited during startup (see " + log_path() + ")";
    }
    if (up) return "";
    return "etcd did not answer within " +
           std::to_string(static_cast<int>(::switchyard::testing::kWaitSeconds)) + " s (see " +
           log_path() + ")";
  }

  std::string dir_;
  std::string url_;
  pid_t pid_ = -1;
};

}  // namespace switchyard::cluster::testing

// In a test's SetUp: skips (or fails under SY_REQUIRE_ETCD) when `why` is non-empty.
#define SY_REQUIRE_ETCD_OR_SKIP(why)                                                      \
  do {                                                                                    \
    if (!(why).empty()) {                                                                 \
      if (::switchyard::cluster::testing::EtcdRequired()) {                               \
        FAIL() << "SY_REQUIRE_ETCD is set but etcd cannot run: " << (why);                \
      }                                                                                   \
      GTEST_SKIP() << "etcd cannot run: " << (why) << " (set SY_REQUIRE_ETCD=1 to fail)"; \
    }                                                                                     \
  } while (0)
