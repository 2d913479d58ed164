// Child processes for the tests that run a program of their own (the `switchyard` binary,
// etcd, llama-server): a free TCP port, spawn with output to a log file, read a log, reap
// with a bound, kill on early return. Waits go through tests/common/wait_until.h.
// Header-only: each test binary includes it where it needs it.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/wait_until.h"

namespace switchyard::testing {

// A TCP port free now on every address, loopback included (the caller binds it soon
// after; a caller that may lose it to another process retries with a fresh one); 0 when
// none could be had.
inline uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(a);
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

// Runs args[0] (looked up on PATH when it has no slash) with stdin from /dev/null and
// stdout and stderr to `log` (truncated, or appended to: a restarted server's log keeps
// what the one before it wrote); its pid (the child exits 127 when args[0] cannot run).
inline pid_t Spawn(const std::vector<std::string>& args, const std::string& log,
                   bool append = false) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (std::freopen(log.c_str(), append ? "a" : "w", stdout) == nullptr) ::_exit(126);
    ::dup2(STDOUT_FILENO, STDERR_FILENO);
    if (std::freopen("/dev/null", "r", stdin) == nullptr) ::_exit(126);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// A file's whole text ("" when it cannot be read).
inline std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The last `n` characters of a file (a log's tail for a failure message).
inline std::string Tail(const std::string& path, size_t n = 2000) {
  std::string text = Slurp(path);
  return text.size() > n ? text.substr(text.size() - n) : text;
}

// SIGKILL and reap (nothing for pid <= 0).
inline void Kill(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// Waits for `pid` to exit, up to `seconds`; SIGKILL after. Its waitpid status.
inline int Reap(pid_t pid, double seconds) {
  int status = 0;
  if (WaitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, seconds,
                std::chrono::milliseconds(20))) {
    return status;
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return status;
}

// Kills what is still running when the test returns early (a failed ASSERT).
struct KillOnExit {
  std::vector<pid_t> pids;
  ~KillOnExit() {
    for (pid_t p : pids) Kill(p);
  }
};

}  // namespace switchyard::testing
