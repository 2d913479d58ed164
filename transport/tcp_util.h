// Small TCP helpers for out-of-band connection setup (the UCX transport's handshake) and
// "HOST:PORT" parsing. Blocking sockets with timeouts; IPv4 only.
//
// Thread-safety: free functions on caller-owned file descriptors.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/time.h"

namespace switchyard::transport {

struct HostPort {
  std::string host;
  uint16_t port = 0;
};
// "127.0.0.1:5000" or ":5000" (all interfaces). InvalidArgument naming the text if bad.
Result<HostPort> ParseHostPort(const std::string& text);

// `hp` as an IPv4 socket address (empty host: all interfaces; "localhost" is 127.0.0.1);
// *ok false when the host is not an IPv4 address.
sockaddr_in ToSockaddr(const HostPort& hp, bool* ok);

// A listening socket bound to `hp` (SO_REUSEADDR); returns the fd and the bound port.
Result<std::pair<int, uint16_t>> TcpListen(const HostPort& hp);
// Waits up to `timeout` for a connection on `listen_fd`; NotFound on timeout.
Result<int> TcpAccept(int listen_fd, Duration timeout);
Result<int> TcpConnect(const HostPort& hp, Duration timeout);
// TCP keep-alive on `fd`: probes after `idle_s` without traffic, every `interval_s`, and
// the connection fails after `count` unanswered ones (a peer host that vanished).
void TcpKeepAlive(int fd, int idle_s, int interval_s, int count);
// Whether the other end of `fd` closed it or the connection failed (a non-blocking check;
// data the peer sent is read and dropped).
bool TcpPeerGone(int fd);
// Length-prefixed frames (u32 little-endian length).
Status TcpSendFrame(int fd, const std::vector<uint8_t>& data);
Result<std::vector<uint8_t>> TcpRecvFrame(int fd, Duration timeout, uint32_t max_len);

}  // namespace switchyard::transport
