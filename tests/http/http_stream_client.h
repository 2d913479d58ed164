// StreamClient: a blocking HTTP/1.1 client on one POSIX socket, for tests of streamed
// (chunked) responses against a live server on loopback: it keeps the connection open across
// requests, reads the head and the body separately, and decodes the chunked encoding one
// chunk at a time. Every read has a deadline, so a test fails instead of hanging.
//
// Ownership: owns its socket (closed by Close() or the destructor).
// Thread-safety: one thread at a time.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "tests/common/wait_until.h"
#include "tests/http/http_test_client.h"

namespace switchyard::testing {

class StreamClient {
 public:
  // A read's deadline: the hang guard of testing::WaitUntil (a test fails instead of
  // hanging; a slow machine only waits longer).
  static constexpr int kReadTimeoutMs = static_cast<int>(kWaitSeconds * 1000);
  enum class Chunk { kData, kLast, kError };

  explicit StreamClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Close();
  }
  ~StreamClient() { Close(); }
  StreamClient(const StreamClient&) = delete;
  StreamClient& operator=(const StreamClient&) = delete;

  bool connected() const { return fd_ >= 0; }

  // Sends raw bytes; false when the connection is gone.
  bool Send(const std::string& raw) {
    size_t sent = 0;
    while (fd_ >= 0 && sent < raw.size()) {
      ssize_t n = ::send(fd_, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return fd_ >= 0;
  }

  // Sends a request (keep-alive unless `close`).
  bool SendRequest(const std::string& method, const std::string& target, bool close = false,
                   const std::string& body = "") {
    std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    if (close) req += "Connection: close\r\n";
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    return Send(req);
  }

  // Reads the status line and headers into `head` (status, lower-case header names).
  bool ReadHead(ClientResponse* head, int timeout_ms = kReadTimeoutMs) {
    Deadline deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    std::string line;
    if (!ReadLine(&line, deadline) || line.size() < 12 || line.compare(0, 5, "HTTP/") != 0) {
      return false;
    }
    *head = ClientResponse{};
    head->status = std::atoi(line.substr(9, 3).c_str());
    while (true) {
      if (!ReadLine(&line, deadline)) return false;
      if (line.empty()) return true;
      size_t colon = line.find(':');
      if (colon == std::string::npos) return false;
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t vstart = line.find_first_not_of(' ', colon + 1);
      head->headers[name] = vstart == std::string::npos ? "" : line.substr(vstart);
    }
  }

  // Reads one chunk of a chunked body: kData with its bytes, kLast for the last chunk (and
  // its trailer), kError on a timeout, EOF or bad framing.
  Chunk ReadChunk(std::string* data, int timeout_ms = kReadTimeoutMs) {
    Deadline deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    std::string line;
    if (!ReadLine(&line, deadline) || line.empty()) return Chunk::kError;
    char* end = nullptr;
    unsigned long long size = std::strtoull(line.c_str(), &end, 16);
    if (end == line.c_str() || (*end != '\0' && *end != ';')) return Chunk::kError;
    if (size == 0) {
      while (true) {  // trailer fields, then the blank line
        if (!ReadLine(&line, deadline)) return Chunk::kError;
        if (line.empty()) return Chunk::kLast;
      }
    }
    if (!ReadBytes(size, data, deadline)) return Chunk::kError;
    std::string crlf;
    if (!ReadBytes(2, &crlf, deadline) || crlf != "\r\n") return Chunk::kError;
    return Chunk::kData;
  }

  // Reads a whole chunked body (every chunk concatenated); false unless it ended cleanly.
  bool ReadChunkedBody(std::string* body, int timeout_ms = kReadTimeoutMs) {
    body->clear();
    std::string data;
    while (true) {
      Chunk c = ReadChunk(&data, timeout_ms);
      if (c == Chunk::kLast) return true;
      if (c == Chunk::kError) return false;
      *body += data;
    }
  }

  // Reads exactly `n` body bytes (a Content-Length body).
  bool ReadExactly(size_t n, std::string* out, int timeout_ms = kReadTimeoutMs) {
    return ReadBytes(n, out, Clock::now() + std::chrono::milliseconds(timeout_ms));
  }

  // Reads until the server closes the connection; false on a timeout.
  bool ReadToEof(std::string* out, int timeout_ms = kReadTimeoutMs) {
    Deadline deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (Fill(deadline)) {
    }
    out->swap(buf_);
    buf_.clear();
    return eof_;
  }

  // Disconnects.
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  using Clock = std::chrono::steady_clock;
  using Deadline = Clock::time_point;

  // Receives more into buf_; false on EOF, error or the deadline.
  bool Fill(Deadline deadline) {
    if (fd_ < 0 || eof_) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buf_.append(buf, static_cast<size_t>(n));
    return true;
  }

  bool ReadLine(std::string* line, Deadline deadline) {
    size_t eol;
    while ((eol = buf_.find("\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return false;
    }
    *line = buf_.substr(0, eol);
    buf_.erase(0, eol + 2);
    return true;
  }

  bool ReadBytes(size_t n, std::string* out, Deadline deadline) {
    while (buf_.size() < n) {
      if (!Fill(deadline)) return false;
    }
    *out = buf_.substr(0, n);
    buf_.erase(0, n);
    return true;
  }

  int fd_ = -1;
  std::string buf_;  // received, not yet consumed
  bool eof_ = false;
};

}  // namespace switchyard::testing
