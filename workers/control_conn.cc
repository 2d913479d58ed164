// ControlConn (control_conn.h): framed protobuf messages over a POSIX TCP socket.
#include "workers/control_conn.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/mutex.h"

namespace switchyard::workers {
namespace {

Status Errno(const std::string& what) {
  return Status::Unavailable(what + ": " + std::strerror(errno), ErrorScope::kRemote);
}

using SteadyTime = std::chrono::steady_clock::time_point;
constexpr SteadyTime kNoDeadline = SteadyTime::max();

// Waits until `fd` can be read, at most until `deadline` (kNoDeadline: returns at once,
// the recv blocks): DeadlineExceeded past it.
Status AwaitReadable(int fd, SteadyTime deadline) {
  if (deadline == kNoDeadline) return Status::OK();
  while (true) {
    const int64_t left = std::max<int64_t>(
        0, std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
               .count());
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (rc > 0) return Status::OK();
    if (rc == 0 && left == 0) return Status::DeadlineExceeded("deadline passed");
    if (rc < 0 && errno != EINTR) return Errno("poll");
  }
}

// Reads exactly `n` bytes by `deadline`; Unavailable on EOF or error, DeadlineExceeded
// (naming what came of `what`) past the deadline.
Status ReadFull(int fd, char* buf, size_t n, SteadyTime deadline, const char* what) {
  size_t got = 0;
  while (got < n) {
    if (Status st = AwaitReadable(fd, deadline); !st.ok()) {
      if (st.code() != StatusCode::kDeadlineExceeded) return st;
      return Status::DeadlineExceeded(std::string(what) + ": " + std::to_string(got) + " of " +
                                      std::to_string(n) + " bytes came");
    }
    ssize_t r = ::recv(fd, buf + got, n - got, 0);
    if (r == 0)
      return Status::Unavailable("connection closed by the other side", ErrorScope::kRemote);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Errno("read");
    }
    got += static_cast<size_t>(r);
  }
  return Status::OK();
}

Status WriteFull(int fd, const char* buf, size_t n) {
  size_t put = 0;
  while (put < n) {
    ssize_t w = ::send(fd, buf + put, n - put, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Errno("write");
    }
    put += static_cast<size_t>(w);
  }
  return Status::OK();
}

// One frame, all of it by `deadline`.
Result<v1::WorkerControl> ReadFrame(int fd, SteadyTime deadline) {
  unsigned char hdr[4];
  SY_RETURN_IF_ERROR(ReadFull(fd, reinterpret_cast<char*>(hdr), 4, deadline, "frame length"));
  uint32_t n = (uint32_t{hdr[0]} << 24) | (uint32_t{hdr[1]} << 16) | (uint32_t{hdr[2]} << 8) |
               uint32_t{hdr[3]};
  if (n == 0 || n > kMaxFrameBytes)
    return Status::DataLoss("control frame of " + std::to_string(n) + " bytes (1.." +
                                std::to_string(kMaxFrameBytes) + " allowed)",
                            ErrorScope::kRemote);
  std::string body(n, '\0');
  SY_RETURN_IF_ERROR(ReadFull(fd, body.data(), n, deadline, "frame body"));
  v1::WorkerControl m;
  if (!m.ParseFromString(body))
    return Status::DataLoss("control frame does not parse as WorkerControl", ErrorScope::kRemote);
  return m;
}

}  // namespace

int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t SteadyMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status SplitHostPort(const std::string& host_port, std::string* host, uint16_t* port) {
  size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == host_port.size())
    return Status::InvalidArgument("'" + host_port + "': want HOST:PORT");
  const std::string p = host_port.substr(colon + 1);
  char* end = nullptr;
  long v = std::strtol(p.c_str(), &end, 10);
  if (*end != '\0' || v < 0 || v > 65535)
    return Status::InvalidArgument("'" + host_port + "': port '" + p + "' is not 0..65535");
  *host = host_port.substr(0, colon);
  *port = static_cast<uint16_t>(v);
  return Status::OK();
}

Result<std::unique_ptr<ControlConn>> ControlConn::Connect(const std::string& host_port,
                                                          Duration timeout) {
  std::string host;
  uint16_t port = 0;
  SY_RETURN_IF_ERROR(SplitHostPort(host_port, &host, &port));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0)
    return Status::Unavailable("resolve " + host_port + ": " + ::gai_strerror(rc),
                               ErrorScope::kRemote);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  Status last = Status::Unavailable("connect " + host_port + ": no address", ErrorScope::kRemote);
  // Retries until the deadline: serve may still be starting its listener.
  while (true) {
    for (addrinfo* a = res; a; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        ::freeaddrinfo(res);
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return std::make_unique<ControlConn>(fd, host_port);
      }
      last = Errno("connect " + host_port);
      ::close(fd);
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::freeaddrinfo(res);
  return last;
}

ControlConn::ControlConn(int fd, std::string remote) : fd_(fd), remote_(std::move(remote)) {
  Heard();
  // The control class on the wire (see the header); best effort: a socket that refuses
  // (an unprivileged priority above 6, an exotic family) keeps working unmarked.
  int one = 1, prio = kControlSocketPriority, tos = kControlDscp << 2;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ::setsockopt(fd_, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio));
  ::setsockopt(fd_, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
  ::setsockopt(fd_, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos));
}

int ControlConn::dscp() const {
  MutexLock l(&fd_mu_);
  if (fd_ < 0) return -1;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return -1;
  int v = 0;
  socklen_t n = sizeof(v);
  int rc = ss.ss_family == AF_INET6 ? ::getsockopt(fd_, IPPROTO_IPV6, IPV6_TCLASS, &v, &n)
                                    : ::getsockopt(fd_, IPPROTO_IP, IP_TOS, &v, &n);
  return rc == 0 ? v >> 2 : -1;
}

ControlConn::~ControlConn() {
  Close();
  CloseFd();
}

void ControlConn::Heard() {
  last_heard_ms_ = UnixMillis();
  last_heard_steady_ms_ = SteadyMillis();
}

void ControlConn::ShutdownFd(int how) {
  MutexLock l(&fd_mu_);
  if (fd_ >= 0) ::shutdown(fd_, how);
}

void ControlConn::CloseFd() {
  MutexLock l(&fd_mu_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<v1::WorkerControl> ControlConn::ReadOne(Duration timeout) {
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
  auto m = ReadFrame(fd_, std::chrono::steady_clock::now() + std::chrono::milliseconds(ms));
  if (!m.ok() && m.status().code() == StatusCode::kDeadlineExceeded)
    return Status::DeadlineExceeded("no whole control message from " + remote_ + " within " +
                                    std::to_string(ms) + " ms (" + m.status().message() + ")");
  if (m.ok()) Heard();
  if (m.ok()) bytes_received_ += 4 + m->ByteSizeLong();
  return m;
}

void ControlConn::Start(OnMessage on_message, OnLost on_lost, Duration heartbeat, int misses) {
  on_message_ = std::move(on_message);
  on_lost_ = std::move(on_lost);
  Heard();
  started_ = true;
  MutexLock l(&close_mu_);  // a Close now waits for the ids
  writer_ = std::thread([this] { WriteLoop(); });
  reader_ = std::thread([this] { ReadLoop(); });
  heartbeat_ = std::thread([this, heartbeat, misses] { HeartbeatLoop(heartbeat, misses); });
  writer_id_ = writer_.get_id();
  reader_id_ = reader_.get_id();
  heartbeat_id_ = heartbeat_.get_id();
}

Status ControlConn::Send(const v1::WorkerControl& m) {
  if (lost_ || closed_) return Status::Unavailable("control connection to " + remote_ + " is down");
  // The other side would refuse a longer frame and end the connection: this message fails alone.
  if (const size_t size = m.ByteSizeLong(); size > kMaxFrameBytes)
    return Status::InvalidArgument("control message to " + remote_ + " of " + std::to_string(size) +
                                   " bytes: over the frame limit of " +
                                   std::to_string(kMaxFrameBytes) + " bytes (not sent)");
  std::string body = m.SerializeAsString();
  std::string frame(4, '\0');
  uint32_t n = static_cast<uint32_t>(body.size());
  frame[0] = static_cast<char>(n >> 24);
  frame[1] = static_cast<char>(n >> 16);
  frame[2] = static_cast<char>(n >> 8);
  frame[3] = static_cast<char>(n);
  frame += body;
  if (!started_) {  // the handshake: on the caller's thread
    Status st = WriteFull(fd_, frame.data(), frame.size());
    if (!st.ok()) Lose(st);
    if (st.ok()) bytes_sent_ += frame.size();
    return st;
  }
  bool over = false;
  {
    MutexLock l(&q_mu_);
    if (queued_bytes_ + frame.size() > kMaxQueuedBytes) {
      over = true;
    } else {
      queued_bytes_ += frame.size();
      queue_.push_back(std::move(frame));
    }
  }
  if (over) {
    Status st = Status::Unavailable("control connection to " + remote_ + ": over " +
                                        std::to_string(kMaxQueuedBytes) + " bytes queued unsent",
                                    ErrorScope::kRemote);
    Lose(st);
    return st;
  }
  q_cv_.Signal();
  return Status::OK();
}

void ControlConn::WriteLoop() {
  MutexLock l(&q_mu_);
  while (true) {
    while (queue_.empty() && !lost_ && !closed_) q_cv_.Wait(&q_mu_);
    if (lost_ || queue_.empty()) break;
    std::string frame = std::move(queue_.front());
    queue_.pop_front();
    l.Unlock();
    Status st = WriteFull(fd_, frame.data(), frame.size());
    if (st.ok()) bytes_sent_ += frame.size();
    l.Lock();
    queued_bytes_ -= frame.size();
    if (!st.ok()) {
      l.Unlock();
      Lose(st);
      l.Lock();
      break;
    }
    if (queued_bytes_ == 0) drained_cv_.SignalAll();
  }
  writer_done_ = true;
  drained_cv_.SignalAll();
}

void ControlConn::ReadLoop() {
  // Reads until the connection ends, also after Close began (Finish drains what the other side
  // still sends: closing with unread data would reset the connection and lose the bye).
  while (!lost_) {
    auto m = ReadFrame(fd_, kNoDeadline);
    if (!m.ok()) {
      Lose(m.status());
      return;
    }
    Heard();
    bytes_received_ += 4 + m->ByteSizeLong();
    if (on_message_ && !closed_) on_message_(*m);
  }
}

void ControlConn::Finish(const v1::WorkerControl& last, Duration wait) {
  finishing_ = true;  // no on_lost from here on
  (void)Send(last);
  auto end = std::chrono::steady_clock::now() + wait;
  {
    MutexLock l(&q_mu_);
    // Until the last frame is written, not only taken off the queue: the writer pops a
    // frame before it writes it, and a shutdown in between would lose the bye.
    while (queued_bytes_ != 0 && !writer_done_ && started_ && drained_cv_.WaitUntil(&q_mu_, end)) {
    }
  }
  closed_ = true;
  ShutdownFd(SHUT_WR);
  while (!lost_ && started_ && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  Close();
}

std::string ControlConn::LocalHost() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  {
    MutexLock l(&fd_mu_);
    if (fd_ < 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  }
  char buf[INET6_ADDRSTRLEN] = {0};
  const void* addr =
      ss.ss_family == AF_INET6
          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr)
          : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&ss)->sin_addr);
  if (!::inet_ntop(ss.ss_family, addr, buf, sizeof(buf))) return "";
  return buf;
}

void ControlConn::HeartbeatLoop(Duration heartbeat, int misses) {
  const int64_t interval_ms = std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::milliseconds>(heartbeat).count());
  MutexLock l(&mu_);
  while (!lost_ && !closed_) {
    (void)cv_.WaitFor(&mu_, std::chrono::milliseconds(interval_ms));
    if (lost_ || closed_) return;
    int64_t silent = SteadyMillis() - last_heard_steady_ms_.load();
    if (silent > interval_ms * misses) {
      l.Unlock();
      Lose(Status::Unavailable("missed heartbeats from " + remote_ + ": nothing heard for " +
                                   std::to_string(silent) + " ms (" + std::to_string(misses) +
                                   " x " + std::to_string(interval_ms) + " ms)",
                               ErrorScope::kRemote));
      return;
    }
    v1::WorkerControl hb;
    hb.mutable_heartbeat()->set_sent_unix_ms(UnixMillis());
    l.Unlock();
    if (fill_) fill_(hb.mutable_heartbeat());
    (void)Send(hb);
    l.Lock();
  }
}

void ControlConn::Lose(const Status& why) {
  if (lost_.exchange(true)) return;
  ShutdownFd(SHUT_RDWR);  // wakes the reader
  cv_.SignalAll();
  {
    MutexLock l(&q_mu_);  // (under the lock: the writer cannot miss it)
  }
  q_cv_.SignalAll();
  if (!closed_ && !finishing_ && on_lost_) on_lost_(why);
}

bool ControlConn::JoinOrDetach(std::thread& t) {
  if (!t.joinable()) return false;
  if (t.get_id() != std::this_thread::get_id()) {
    t.join();
    return false;
  }
  t.detach();
  return true;
}

void ControlConn::Close() {
  closed_ = true;
  ShutdownFd(SHUT_RDWR);  // wakes the reader and a ReadOne in progress
  {
    MutexLock l(&mu_);
    cv_.SignalAll();
  }
  {
    MutexLock l(&q_mu_);
    q_cv_.SignalAll();
  }
  MutexLock l(&close_mu_);
  const auto self = std::this_thread::get_id();
  const bool own = self == reader_id_ || self == writer_id_ || self == heartbeat_id_;
  if (close_state_ != CloseState::kOpen) {  // another caller joins (never wait on oneself)
    if (own) return;
    while (close_state_ != CloseState::kClosed) close_cv_.Wait(&close_mu_);
    return;
  }
  close_state_ = CloseState::kClosing;
  std::thread writer = std::move(writer_), reader = std::move(reader_),
              heartbeat = std::move(heartbeat_);
  l.Unlock();
  bool running = JoinOrDetach(writer);
  running = JoinOrDetach(reader) || running;
  running = JoinOrDetach(heartbeat) || running;
  // Started, every user of the socket was one of the threads: with all of them joined it
  // closes now. Else the handshake's thread or a still running own thread may hold it:
  // the destructor closes it.
  if (started_ && !running) CloseFd();
  l.Lock();
  close_state_ = CloseState::kClosed;
  close_cv_.SignalAll();
}

}  // namespace switchyard::workers
