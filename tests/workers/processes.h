// Child processes for the tests that run the `switchyard` binary (serve, joined workers):
// spawn with output to a log file, read a log, reap with a bound, kill on early return,
// a free TCP port, and the tests' bounded wait for a condition (tests/common/wait_until.h).
// Header-only: each test file is its own binary's part.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/wait_until.h"

namespace switchyard::workers::testing {

using ::switchyard::testing::WaitUntil;

inline std::string Binary() { return std::string(SY_BINARY_DIR) + "/bin/switchyard"; }

// A port free now on every address (the caller binds it soon after).
inline uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Runs args[0] (looked up on PATH when it has no slash) with stdout and stderr to `log`.
inline pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    (void)f;
    ::dup2(STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

inline std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Waits for `pid` up to `seconds`; SIGKILL after. Its waitpid status.
inline int Reap(pid_t pid, double seconds) {
  int status = 0;
  if (WaitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, seconds)) return status;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return status;
}

// Kills what is still running when the test returns early (a failed ASSERT).
struct KillOnExit {
  std::vector<pid_t> pids;
  ~KillOnExit() {
    for (pid_t p : pids) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
  }
};

}  // namespace switchyard::workers::testing
