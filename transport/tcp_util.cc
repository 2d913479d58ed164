#include "transport/tcp_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace switchyard::transport {
namespace {

Status Errno(const std::string& what) {
  return Status::Unavailable(what + ": " + std::strerror(errno), ErrorScope::kRemote);
}

Status WaitFd(int fd, short events, Duration timeout) {
  pollfd p{fd, events, 0};
  int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
  int r;
  do {
    r = ::poll(&p, 1, ms);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return Errno("poll");
  if (r == 0) return Status::DeadlineExceeded("socket timed out");
  return Status::OK();
}

Status SendAll(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Errno("send");
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Status RecvAll(int fd, uint8_t* p, size_t n, Duration timeout) {
  while (n > 0) {
    SY_RETURN_IF_ERROR(WaitFd(fd, POLLIN, timeout));
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return Status::Unavailable("peer closed the connection", ErrorScope::kRemote);
    if (r < 0) return Errno("recv");
    p += r;
    n -= static_cast<size_t>(r);
  }
  return Status::OK();
}

}  // namespace

sockaddr_in ToSockaddr(const HostPort& hp, bool* ok) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(hp.port);
  std::string host = hp.host.empty() ? "0.0.0.0" : hp.host;
  if (host == "localhost") host = "127.0.0.1";
  *ok = ::inet_pton(AF_INET, host.c_str(), &sa.sin_addr) == 1;
  return sa;
}

Result<HostPort> ParseHostPort(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("address '" + text + "' is not HOST:PORT");
  }
  HostPort hp;
  hp.host = text.substr(0, colon);
  std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoul(port) > 65535) {
    return Status::InvalidArgument("address '" + text + "': bad port '" + port + "'");
  }
  hp.port = static_cast<uint16_t>(std::stoul(port));
  bool ok = false;
  (void)ToSockaddr(hp, &ok);
  if (!ok) {
    return Status::InvalidArgument("address '" + text + "': host must be an IPv4 address");
  }
  return hp;
}

Result<std::pair<int, uint16_t>> TcpListen(const HostPort& hp) {
  bool ok = false;
  sockaddr_in sa = ToSockaddr(hp, &ok);
  if (!ok) return Status::InvalidArgument("bad listen host '" + hp.host + "'");
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || ::listen(fd, 64) != 0) {
    Status s = Errno("bind/listen on " + hp.host + ":" + std::to_string(hp.port));
    ::close(fd);
    return s;
  }
  socklen_t len = sizeof(sa);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return std::make_pair(fd, ntohs(sa.sin_port));
}

Result<int> TcpAccept(int listen_fd, Duration timeout) {
  Status s = WaitFd(listen_fd, POLLIN, timeout);
  if (!s.ok()) return Status::NotFound("no connection yet");
  int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return Errno("accept");
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

void TcpKeepAlive(int fd, int idle_s, int interval_s, int count) {
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof(interval_s));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

bool TcpPeerGone(int fd) {
  char buf[256];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) continue;  // nothing is expected after the handshake: dropped
    if (n == 0) return true;
    return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  }
}

Result<int> TcpConnect(const HostPort& hp, Duration timeout) {
  bool ok = false;
  sockaddr_in sa = ToSockaddr(hp, &ok);
  if (!ok) return Status::InvalidArgument("bad host '" + hp.host + "'");
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Errno("socket");
  int r = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  if (r != 0 && errno == EINPROGRESS) {
    Status s = WaitFd(fd, POLLOUT, timeout);
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (!s.ok() || err != 0) {
      errno = err ? err : ETIMEDOUT;
      r = -1;
    } else {
      r = 0;
    }
  }
  if (r != 0) {
    Status s = Errno("connect to " + hp.host + ":" + std::to_string(hp.port));
    ::close(fd);
    return s;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

Status TcpSendFrame(int fd, const std::vector<uint8_t>& data) {
  uint8_t len[4];
  uint32_t n = static_cast<uint32_t>(data.size());
  for (int i = 0; i < 4; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
  SY_RETURN_IF_ERROR(SendAll(fd, len, 4));
  return SendAll(fd, data.data(), data.size());
}

Result<std::vector<uint8_t>> TcpRecvFrame(int fd, Duration timeout, uint32_t max_len) {
  uint8_t len[4];
  SY_RETURN_IF_ERROR(RecvAll(fd, len, 4, timeout));
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(len[i]) << (8 * i);
  if (n > max_len) return Status::InvalidArgument("frame of " + std::to_string(n) + " bytes");
  std::vector<uint8_t> out(n);
  SY_RETURN_IF_ERROR(RecvAll(fd, out.data(), n, timeout));
  return out;
}

}  // namespace switchyard::transport
