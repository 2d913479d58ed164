// ControlConn: one worker control connection (proto/switchyard/v1/worker_control.proto).
//
// Framing: plain TCP (POSIX sockets, TCP_NODELAY); every message is a 4-byte big-endian
// length N (1 <= N <= kMaxFrameBytes) followed by N bytes of one serialized
// v1::WorkerControl. A longer or empty frame, or bytes that do not parse, end the
// connection (DataLoss).
//
// Two phases. Handshake: ReadOne / Send on the caller's thread. Started: Send only queues
// the frame and a writer thread writes it (in order; a stalled peer never blocks the
// sender — the scheduler's loop —, and more than kMaxQueuedBytes unsent loses the peer);
// a reader thread delivers every message to `on_message` (heartbeats included), and a heartbeat
// thread sends a WorkerHeartbeat every `heartbeat` and declares the peer lost when nothing was
// heard for `misses` intervals. A lost peer (closed connection, read or write error, missed
// heartbeats) is reported once to `on_lost`, from one of the connection's threads, unless
// Close() came first. Close() ends its threads and the socket; the destructor closes.
//
// Traffic class: the control class (docs/design.md "Traffic classes", invariant 6) is
// marked on the wire — every control socket carries DSCP CS6 (IP_TOS / IPV6_TCLASS 0xc0,
// network control) and SO_PRIORITY 6, so that a host's queueing discipline (pfifo_fast's
// first band) and DSCP-honouring switches send heartbeats and step calls ahead of bulk KV,
// whose own bytes net_budget keeps out of the control reserve. Bytes each way are counted.
//
// Thread-safety: Send, Close, last_heard_ms and lost are thread-safe; ReadOne and Start are
// called once each, before any concurrent use.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/status.h"
#include "base/time.h"
#include "proto/switchyard/v1/worker_control.pb.h"

namespace switchyard::workers {

inline constexpr uint32_t kMaxFrameBytes = 64u << 20;
// DSCP of the control class (CS6, network control) and the socket priority it runs at.
inline constexpr int kControlDscp = 48;
inline constexpr int kControlSocketPriority = 6;
// Bytes a started connection may hold queued unsent before the peer counts as lost.
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
  // Takes an accepted socket; `peer` names it in messages.
  ControlConn(int fd, std::string peer);
  ~ControlConn();
  ControlConn(const ControlConn&) = delete;
  ControlConn& operator=(const ControlConn&) = delete;

  // Handshake phase: the next message within `timeout` (DeadlineExceeded, or the error).
  Result<v1::WorkerControl> ReadOne(Duration timeout);
  void Start(OnMessage on_message, OnLost on_lost, Duration heartbeat, int misses);
  // Before Start.
  void SetHeartbeatFill(HeartbeatFill fill) { fill_ = std::move(fill); }
  // The numeric address of this end of the connection ("" if unknown): where the peer
  // reached this host, so also where it can reach a listener bound to it.
  std::string LocalHost() const;
  // Sends one message (Unavailable once the connection is lost or closed).
  Status Send(const v1::WorkerControl& m);
  void Close();
  // Sends `last` (a bye), then waits up to `wait` for the peer to close before Close(), so
  // that `last` arrives (no reset for unread data).
  void Finish(const v1::WorkerControl& last, Duration wait);

  const std::string& peer() const { return peer_; }
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

  int fd_;
  std::string peer_;
  // Started: frames wait here for the writer thread (a stalled peer never blocks Send).
  std::mutex q_mu_;
  std::condition_variable q_cv_, drained_cv_;
  std::deque<std::string> queue_;
  size_t queued_bytes_ = 0;
  bool writer_done_ = false;
  std::atomic<bool> started_{false};
  OnMessage on_message_;
  OnLost on_lost_;
  HeartbeatFill fill_;
  std::atomic<bool> lost_{false}, closed_{false}, finishing_{false};
  std::atomic<int64_t> last_heard_ms_{0};
  std::atomic<uint64_t> bytes_sent_{0}, bytes_received_{0};
  std::mutex mu_;  // guards the wait of the heartbeat thread
  std::condition_variable cv_;
  std::thread reader_, heartbeat_, writer_;
};

// Unix time in milliseconds (the heartbeat clock).
int64_t UnixMillis();

}  // namespace switchyard::workers
