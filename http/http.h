// Plain HTTP request/response values shared by the server, the router and the handlers,
// and ResponseStream, the body of a streamed (chunked) response.
//
// Only http_server.cc includes Boost.Beast (heavy to compile); everything else in api/
// works on these small structs. Header names are stored lower-case.
//
// Thread-safety: HttpRequest and HttpResponse are values; ResponseStream is thread-safe
// (see its comment).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/result.h"

namespace switchyard::http {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // path and query, e.g. "/v1/workflows?state=RUNNING"
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string peer;  // remote address, for logs and rate limits

  std::string_view path() const;  // target without the query
  // The value of query parameter `key` (its first occurrence), decoded as
  // application/x-www-form-urlencoded (%XX escapes, '+' for a space); "" when absent.
  // InvalidArgument naming `key` for a malformed escape, or a decoded value that is not
  // UTF-8 text without control characters (TextProblem): such a value is never handed on
  // (a proto3 string field that is not UTF-8 is written but does not parse back).
  Result<std::string> Query(std::string_view key) const;
  std::string Header(std::string_view lower_name) const;
};

// Decodes a percent-encoded URL component (RFC 3986): "%XX" (hex, either case) is the byte
// XX; nullopt when a '%' is not followed by two hex digits. '+' stays '+' (a path).
std::optional<std::string> PercentDecode(std::string_view encoded);
// The same for an application/x-www-form-urlencoded value (a query's): '+' is a space.
std::optional<std::string> FormDecode(std::string_view encoded);

// ResponseStream: the body of a streamed HTTP response (e.g. Server-Sent Events), produced
// over time by any thread while HttpServer sends it.
//
// A handler creates one with std::make_shared<ResponseStream>(), puts it in
// HttpResponse::stream and calls Respond; the server then sends the status line and headers
// at once and, on the connection's I/O thread, every chunk queued with Write() (in order;
// chunks queued together may go out as one HTTP chunk), then the end of the body after
// Close(). Chunks written before the response was handed to the server are kept and sent
// after the headers.
//
// Backpressure: the bytes accepted by Write() and not yet written to the socket are capped
// (max_queued_bytes, 8 MiB by default); a Write() that would pass the cap is refused and
// cancels the stream. A producer that must not lose data checks queued_bytes() and slows
// down before the cap.
//
// Cancellation: the stream becomes cancelled() when the client disconnects, a write to it
// fails or times out, the server stops, the cap is passed, or the connection could not take
// it; from then on Write() returns false and the producer should stop. The on-cancel
// callback runs once, at that moment, on the thread that cancels (an I/O thread, the
// producer's thread for the cap, or the thread calling HttpServer::Stop()); it must be
// quick and must not block on the producer. A stream that was closed and completely sent is
// not cancelled.
//
// Ownership: shared between the producer and the server (std::shared_ptr); the stream may
// outlive its connection and the server: Write() and Close() on it are then harmless
// (Write returns false). Use one stream for one response.
// Thread-safety: every method may be called from any thread, concurrently.
class ResponseStream {
 public:
  static constexpr size_t kDefaultMaxQueuedBytes = size_t{8} << 20;

  explicit ResponseStream(size_t max_queued_bytes = kDefaultMaxQueuedBytes);
  ResponseStream(const ResponseStream&) = delete;
  ResponseStream& operator=(const ResponseStream&) = delete;

  // Queues `chunk` to be sent. Returns false (and queues nothing) once the stream is
  // cancelled or closed, or when the chunk would pass the cap (which cancels the stream).
  // An empty chunk queues nothing and returns whether the stream is still open.
  bool Write(std::string chunk);
  // Ends the response after what was queued. Idempotent; no-op once cancelled.
  void Close();
  // True once the client went away, the server stopped or the connection failed.
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // Runs `on_cancel` once when the stream becomes cancelled; at once (on this thread) when
  // it already is. Replaces an earlier callback that has not run.
  void SetOnCancel(std::function<void()> on_cancel);
  // Bytes accepted and not yet written to the socket.
  size_t queued_bytes() const;

 private:
  friend class StreamDriver;  // the server's side, in http/http_server.cc

  // What the connection sends next: the queued bytes, and whether the body ends after them.
  struct Batch {
    std::string bytes;
    bool end = false;
  };

  // The server's side (through StreamDriver, on the connection's I/O thread unless said).
  // Connects the stream to a connection; `wake` is called (under the stream's lock, so it
  // must only post) when bytes, the end or a cancellation become pending while the
  // connection is idle. Returns false when the stream is cancelled or already attached.
  bool Attach(std::function<void()> wake);
  // Takes everything queued; the bytes handed out before count as written.
  Batch Take();
  // The body was completely sent: drops the connection's wake.
  void Finish();
  // Cancels (any thread); `wake` says whether to wake the connection one last time.
  void Cancel(bool wake);
  void WakeLocked() REQUIRES(mu_);  // calls wake_ unless the connection will come back by itself

  const size_t max_queued_bytes_;
  mutable Mutex mu_;
  std::string pending_ GUARDED_BY(mu_);        // accepted, not yet taken by the connection
  size_t in_flight_ GUARDED_BY(mu_) = 0;       // taken by the connection, being written
  bool closed_ GUARDED_BY(mu_) = false;        // Close() was called (or the stream finished)
  bool attached_ GUARDED_BY(mu_) = false;      // handed to a connection once
  bool finished_ GUARDED_BY(mu_) = false;      // completely sent: can no longer be cancelled
  bool wake_pending_ GUARDED_BY(mu_) = false;  // the connection will Take() again without a wake
  std::function<void()> wake_ GUARDED_BY(mu_);
  std::function<void()> on_cancel_ GUARDED_BY(mu_);
  std::atomic<bool> cancelled_{false};
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;  // extra headers (e.g. retry-after)
  std::string body;
  // When set, the body is streamed from here with Transfer-Encoding: chunked (HTTP/1.0:
  // raw bytes, then the connection closes); `body` must then be empty (a non-empty body is
  // sent ahead of the stream's chunks). See ResponseStream and HttpServer.
  std::shared_ptr<ResponseStream> stream;
};

// `body` (JSON text) as an application/json response with the given HTTP status.
inline HttpResponse JsonResponse(int status, std::string body) {
  return HttpResponse{status, "application/json", {}, std::move(body)};
}

// {"code":..,"message":..,"details":..} with the given HTTP status.
HttpResponse JsonError(int status, std::string_view code, std::string_view message,
                       std::string_view details_json = "{}");

}  // namespace switchyard::http
