// ControlConn: one worker control connection (proto/switchyard/v1/worker_control.proto).
//
// Framing: plain TCP (POSIX sockets, TCP_NODELAY); every message is a 4-byte big-endian
// length N (1 <= N <= kMaxFrameBytes) followed by N bytes of one serialized
// v1::WorkerControl. A longer or empty frame, or bytes that do not parse, end the
// connection (DataLoss). Send refuses a message over the limit itself (InvalidArgument
// naming both sizes; nothing sent, the connection kept).
//
// Two phases. Handshake: ReadOne / Send on the caller's thread; ReadOne's timeout bounds
// the whole frame (an other side that sends part of one and stalls fails it with DeadlineExceeded).
// Started: Send only queues
// the frame and a writer thread writes it (in order; a stalled other side never blocks the
// sender — the scheduler's loop —, and more than kMaxQueuedBytes unsent loses the connection);
// a reader thread delivers every message to `on_message` (heartbeats included), and a heartbeat
// thread sends a WorkerHeartbeat every `heartbeat` and declares the worker lost when nothing was
// heard for `misses` intervals (measured on the steady clock: a wall clock step neither loses
// nor keeps a connection; last_heard_ms reports Unix time). A lost connection (closed connection,
// read or write error, missed heartbeats) is reported once to `on_lost`, from one of the
// connection's threads, unless Close() came first.
//
// Close() ends its threads and, once they are joined, closes the socket (a retired
// connection holds no descriptor); the socket of a connection never started is closed by
// the destructor (its handshake thread may still be reading it). Close is idempotent and
// may race with itself: a second caller waits until the first one's threads are joined,
// unless it is one of them (then it returns at once; a connection's own thread is never
// joined by itself). The destructor closes.
//
// Traffic class: the control class (docs/design.md "Traffic classes", invariant 6) is
// marked on the wire — every control socket carries DSCP CS6 (IP_TOS / IPV6_TCLASS 0xc0,
// network control) and SO_PRIORITY 6, so that a host's queueing discipline (pfifo_fast's
// first band) and DSCP-honouring switches send heartbeats and step calls ahead of bulk KV,
// whose own bytes net_budget keeps out of the control reserve. Bytes each way are counted.
//
// Thread-safety: Send, Close, Finish, last_heard_ms, dscp, LocalHost and lost are
// thread-safe; ReadOne and Start are called on one thread, before any concurrent use other
// than Close (which wakes a ReadOne in progress: it fails Unavailable).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "base/result.h"
#include "base/status.h"
#include "base/time.h"
#include "proto/switchyard/v1/worker_control.pb.h"

namespace switchyard::workers {

inline constexpr uint32_t kMaxFrameBytes = 64u << 20;
// DSCP of the control class (CS6, network control) and the socket priority it runs at.
inline constexpr int kControlDscp = 48;
inline constexpr int kControlSocketPriority = 6;
// Bytes a started connection may hold queued unsent before the other side counts as lost.
inline constexpr size_t kMaxQueuedBytes = 256u << 20;

// Splits "HOST:PORT" (PORT 0..65535); InvalidArgument naming the text otherwise.
Status SplitHostPort(const std::string& host_port, std::string* host, uint16_t* port);

class ControlConn {
 public:
  using OnMessage = std::function<void(const v1::WorkerControl&)>;
  using OnLost = std::function<void(const Status&)>;
  // Adds to each heartbeat this side sends (e.g. a worker's KV figures); called on the
  // heartbeat thread.
  using HeartbeatFill = std::function<void(v1::WorkerHeartbeat*)>;

  // Connects to HOST:PORT (numeric or a name resolved with getaddrinfo) within `timeout`.
  static Result<std::unique_ptr<ControlConn>> Connect(const std::string& host_port,
                                                      Duration timeout);
  // Takes an accepted socket; `remote` (its address) names it in messages.
  ControlConn(int fd, std::string remote);
  ~ControlConn();
  ControlConn(const ControlConn&) = delete;
  ControlConn& operator=(const ControlConn&) = delete;

  // Handshake phase: the next message, all of its frame within `timeout`
  // (DeadlineExceeded, or the error).
  Result<v1::WorkerControl> ReadOne(Duration timeout);
  void Start(OnMessage on_message, OnLost on_lost, Duration heartbeat, int misses);
  // Before Start.
  void SetHeartbeatFill(HeartbeatFill fill) { fill_ = std::move(fill); }
  // The numeric address of this end of the connection ("" if unknown): where the other side
  // reached this host, so also where it can reach a listener bound to it.
  std::string LocalHost() const;
  // Sends one message (Unavailable once the connection is lost or closed). A message over
  // kMaxFrameBytes is refused (InvalidArgument naming its size and the limit); the
  // connection stays up.
  Status Send(const v1::WorkerControl& m);
  // Idempotent and thread-safe; see the header comment.
  void Close();
  // Sends `last` (a bye), then waits up to `wait` for the other side to close before Close(), so
  // that `last` arrives (no reset for unread data).
  void Finish(const v1::WorkerControl& last, Duration wait);

  const std::string& remote() const { return remote_; }
  // Unix time of the last message heard (for listings; liveness uses the steady clock).
  int64_t last_heard_ms() const { return last_heard_ms_.load(); }
  // The DSCP the socket sends with (-1: unknown), and the frame bytes each way so far.
  int dscp() const;
  uint64_t bytes_sent() const { return bytes_sent_.load(); }
  uint64_t bytes_received() const { return bytes_received_.load(); }
  bool lost() const { return lost_.load(); }

 private:
  void ReadLoop();
  void WriteLoop();
  void HeartbeatLoop(Duration heartbeat, int misses);
  void Lose(const Status& why);
  void Heard();  // a message came: both clocks
  // The socket under fd_mu_ (a no-op once Close closed it).
  void ShutdownFd(int how);
  void CloseFd();
  // Joins `t`, or detaches it when it is the calling thread (true then: it still runs).
  static bool JoinOrDetach(std::thread& t);

  // Guards fd_ against CloseFd's close for the calls that may race with it (dscp,
  // LocalHost, shutdown). The I/O threads and the handshake read fd_ without it: CloseFd
  // runs only once they were joined (Close) or ended (the destructor).
  mutable Mutex fd_mu_;
  int fd_;
  std::string remote_;
  // Started: frames wait here for the writer thread (a stalled other side never blocks Send).
  Mutex q_mu_;
  CondVar q_cv_, drained_cv_;
  std::deque<std::string> queue_ GUARDED_BY(q_mu_);
  size_t queued_bytes_ GUARDED_BY(q_mu_) = 0;
  bool writer_done_ GUARDED_BY(q_mu_) = false;
  std::atomic<bool> started_{false};
  OnMessage on_message_;
  OnLost on_lost_;
  HeartbeatFill fill_;
  std::atomic<bool> lost_{false}, closed_{false}, finishing_{false};
  std::atomic<int64_t> last_heard_ms_{0};         // Unix time (reported)
  std::atomic<int64_t> last_heard_steady_ms_{0};  // steady clock (liveness)
  std::atomic<uint64_t> bytes_sent_{0}, bytes_received_{0};
  Mutex mu_;  // guards the wait of the heartbeat thread
  CondVar cv_;
  std::thread reader_, heartbeat_, writer_;
  // Close: the first caller joins the threads; later ones wait for it (kClosing).
  enum class CloseState { kOpen, kClosing, kClosed };
  Mutex close_mu_;
  CondVar close_cv_;
  CloseState close_state_ GUARDED_BY(close_mu_) = CloseState::kOpen;
  std::thread::id reader_id_, heartbeat_id_, writer_id_;  // set by Start
};

// Unix time in milliseconds (what heartbeats and listings report).
int64_t UnixMillis();
// Steady clock milliseconds (liveness: immune to wall clock steps).
int64_t SteadyMillis();

}  // namespace switchyard::workers
