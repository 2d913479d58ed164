#include "bench/common/machine_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <utility>

namespace switchyard::bench {
namespace {

constexpr size_t kMessage = 200;

bool Pin(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set) == 0;
}

double ThreadCpuUs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

bool NoDelay(int fd) {
  int one = 1;
  return ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0;
}

bool ReadFull(int fd, char* buf) {
  for (size_t got = 0; got < kMessage;) {
    ssize_t n = ::recv(fd, buf + got, kMessage - got, 0);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

bool WriteFull(int fd, const char* buf) {
  return ::send(fd, buf, kMessage, MSG_NOSIGNAL) == static_cast<ssize_t>(kMessage);
}

// A connected pair of loopback TCP sockets (client, server side), or {-1, -1}.
std::pair<int, int> ConnectedPair() {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int client = -1, server = -1;
  if (listener >= 0 && ::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::listen(listener, 1) == 0 &&
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    client = ::socket(AF_INET, SOCK_STREAM, 0);
    if (client >= 0 && ::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
      server = ::accept(listener, nullptr, nullptr);
    }
  }
  if (listener >= 0) ::close(listener);
  if (server < 0 || !NoDelay(client) || !NoDelay(server)) {
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
    return {-1, -1};
  }
  return {client, server};
}

// One side of the exchange, on its own thread pinned to `cpu` (the caller's affinity is
// left alone): `first` sends first. Returns the thread's CPU time in us, or -1 on failure.
double Side(int fd, int cpu, bool first, int round_trips) {
  char buf[kMessage] = {};
  bool ok = Pin(cpu);
  double c0 = ThreadCpuUs();
  for (int i = 0; ok && i < round_trips; ++i) {
    ok = first ? WriteFull(fd, buf) && ReadFull(fd, buf) : ReadFull(fd, buf) && WriteFull(fd, buf);
  }
  if (!ok) ::shutdown(fd, SHUT_RDWR);  // the other side's recv returns
  return ok ? ThreadCpuUs() - c0 : -1;
}

}  // namespace

bool LoopbackPingPong(int cpu_a, int cpu_b, int round_trips, PingPong* out) {
  if (round_trips <= 0) return false;
  auto [client, server] = ConnectedPair();
  if (client < 0) return false;
  double cpu_client = -1, cpu_server = -1;
  auto t0 = std::chrono::steady_clock::now();
  std::thread echo([&, fd = server] { cpu_server = Side(fd, cpu_b, false, round_trips); });
  std::thread send([&, fd = client] { cpu_client = Side(fd, cpu_a, true, round_trips); });
  send.join();
  auto t1 = std::chrono::steady_clock::now();
  echo.join();
  ::close(client);
  ::close(server);
  if (cpu_client < 0 || cpu_server < 0) return false;
  out->round_trip_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / round_trips;
  out->cpu_us = (cpu_client + cpu_server) / round_trips;
  return true;
}

}  // namespace switchyard::bench
