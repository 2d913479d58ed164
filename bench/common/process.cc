#include "bench/common/process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace switchyard::bench {

std::string SwitchyardBeside() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("switchyard") : (self.parent_path() / "switchyard").string();
}

std::string SwitchyardBinary() {
  if (const char* env = std::getenv("SWITCHYARD_BIN")) return env;
  return SwitchyardBeside();
}

int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool Healthy(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (::send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) > 0) {
      char buf[64] = {};
      ok = ::recv(fd, buf, sizeof(buf) - 1, 0) > 12 &&
           std::string(buf).find(" 200 ") != std::string::npos;
    }
  }
  ::close(fd);
  return ok;
}

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log, bool with_stderr) {
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (f && with_stderr) ::dup2(::fileno(stdout), STDERR_FILENO);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  return pid;
}

bool Exited(pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) != 0; }

void Terminate(pid_t pid) {
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
}

void Reap(pid_t pid, double seconds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (::waitpid(pid, nullptr, WNOHANG) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::atof(f.c_str());
    if (i == 15) stime = std::atof(f.c_str());
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

bool PinProcess(pid_t pid, int first, int last) {
  if (first < 0 || last < first) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu = first; cpu <= last; ++cpu) CPU_SET(cpu, &set);
  const std::string tasks =
      "/proc/" + (pid == 0 ? std::string("self") : std::to_string(pid)) + "/task";
  std::error_code ec;
  bool any = false;
  for (const auto& e : std::filesystem::directory_iterator(tasks, ec)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(e.path().filename().c_str()));
    if (tid <= 0 || ::sched_setaffinity(tid, sizeof(set), &set) != 0) return false;
    any = true;
  }
  return any && !ec;
}

std::string ReadText(const std::string& path) {
  std::string text;
  if (std::ifstream in(path); in) text.assign(std::istreambuf_iterator<char>(in), {});
  return text;
}

}  // namespace switchyard::bench
