// Test helper: runs `switchyard worker` (the binary built at ${SY_BINARY_DIR}/bin/switchyard)
// as a child process, optionally inside a network namespace, and reads its listening
// address. (A fork running the worker in-process is not used: UCX state initialised in
// the parent does not survive fork.)
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kv_store/kv_store_server.h"

namespace switchyard::kv_store::testing {

inline std::string SwitchyardBinary() { return std::string(SY_BINARY_DIR) + "/bin/switchyard"; }
inline bool HaveSwitchyardBinary() { return access(SwitchyardBinary().c_str(), X_OK) == 0; }

class WorkerProcess {
 public:
  // `netns`: run inside this network namespace (ip netns exec); `tls`: UCX_TLS; `extra`:
  // more worker options.
  bool Start(const std::string& listen, const std::string& tls = "tcp",
             const std::string& netns = "", const std::string& capacity = "256M",
             const std::vector<std::string>& extra = {}) {
    int fds[2];
    if (pipe(fds) != 0) return false;
    bool binary = access(SwitchyardBinary().c_str(), X_OK) == 0;
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      setenv("UCX_TLS", tls.c_str(), 1);
      setenv("UCX_LOG_LEVEL", "fatal", 1);
      if (binary) {
        std::vector<std::string> args;
        if (!netns.empty()) args = {"ip", "netns", "exec", netns};
        for (std::string a : {SwitchyardBinary(), std::string("worker"), std::string("--listen"),
                              listen, std::string("--capacity"), capacity}) {
          args.push_back(a);
        }
        args.insert(args.end(), extra.begin(), extra.end());
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        _exit(127);
      }
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];
    return ReadAddress();
  }

  // Sends `sig` without waiting (SIGSTOP/SIGCONT).
  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }
  void Kill(int sig = SIGKILL) {
    if (pid_ > 0) {
      kill(pid_, sig);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (out_ >= 0) close(out_);
    out_ = -1;
  }
  ~WorkerProcess() { Kill(); }

  const std::string& address() const { return address_; }
  // The port part of address() with another host.
  std::string port() const { return address_.substr(address_.rfind(':') + 1); }

 private:
  bool ReadAddress() {
    std::string line;
    char c;
    while (line.find('\n') == std::string::npos) {
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, 20000) <= 0 || read(out_, &c, 1) != 1) return false;
      line.push_back(c);
    }
    const std::string prefix = "listening on ";
    if (line.rfind(prefix, 0) != 0) return false;
    address_ = line.substr(prefix.size(), line.find(' ', prefix.size()) - prefix.size());
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  std::string address_;
};

}  // namespace switchyard::kv_store::testing
