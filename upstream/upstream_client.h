// UpstreamClient: the HTTP/1.1 client of the OpenAI front's proxy mode.
//
// In proxy mode (`switchyard serve --upstream URL[,URL...]`) the front orders and admits
// OpenAI requests, then forwards each to an upstream OpenAI-compatible server (vLLM,
// SGLang, another Switchyard) through this client and passes the upstream's answer back
// unchanged, streaming included.
//
// Upstreams. Each is "http://host[:port][/]" (port 80 when absent; IPv6 as [addr]); a
// request keeps its own target (path and query), so no path prefix is supported, nor TLS
// (https:// is refused by Create). Pick() chooses one: a non-empty affinity key (e.g. a
// hash of tenant and session) maps to the same upstream for as long as the list is the
// same (rendezvous hashing, so keys spread over the upstreams and adding one moves only the
// keys it wins); "" takes them round-robin.
//
// Forwarding. Forward() copies the request's method, target, body and headers, except the
// hop-by-hop ones (Connection and those it names, Keep-Alive, Proxy-*, TE, Trailer,
// Transfer-Encoding, Upgrade), Content-Length (recomputed), Expect (the body is sent at
// once) and Host (rewritten to the upstream's); Authorization becomes `auth` when non-empty and is
// dropped otherwise. The answer comes back through `done`, called exactly once, on a client I/O
// thread:
//  - a streamed answer (Transfer-Encoding: chunked, or Content-Type: text/event-stream) as
//    soon as its head arrived: HttpResponse::stream is set, the body's bytes are written to
//    it as they arrive (unchanged, or as Hooks::transform makes them), and it is Close()d
//    after the upstream's last chunk. If the upstream breaks or times out mid-stream, an
//    event-stream gets one last `data: {"error":{...}}` event before Close() (other bodies
//    just end early). Hooks::on_end may hold the Close() back. If the
//    stream is cancelled (the downstream client went away), the upstream connection is
//    closed at once, which is how OpenAI servers learn to stop generating. While the
//    stream holds more than 1 MiB not yet sent, reading from the upstream pauses.
//  - any other answer whole (at most 256 MiB, else 502): status, content type, body, and
//    the upstream's headers except hop-by-hop ones, Content-Length, Content-Type and
//    Server (a header repeated by the upstream keeps its last value);
//  - an upstream that cannot be reached or breaks before its answer is complete: 502, one
//    that does not connect within connect_timeout_ms or answers (the head, then each read of
//    the body) slower than response_timeout_ms: 504; both with an OpenAI-shaped error body
//    {"error":{"message":..,"type":"upstream_error","param":null,"code":..}} naming the
//    upstream, code "upstream_unreachable", "upstream_timeout" or "upstream_broken".
//    Answers of the upstream itself (4xx, 5xx) pass back unchanged.
//
// Connections. Each upstream has a pool of idle keep-alive connections (at most
// max_idle_connections_per_upstream; more are closed when their answer ends). A request
// takes the most recently used idle one, after checking it was not closed by the upstream
// meanwhile, or opens a new one. A pooled connection whose request write fails is retried
// once on a fresh connection: nothing of the request reached the upstream then. Once the
// request is written, nothing is retried (a generation is not idempotent): a failure then
// is a 502/504.
//
// Threads. `threads` I/O threads run one io_context with asynchronous Boost.Beast I/O, so
// any number of requests and streams may be in flight (none of them holds a thread).
//
// Ownership: Create() returns the client; destroying it stops its threads, closes every
// connection, and answers the requests still in flight with 502 (their streams end);
// streams handed out may outlive it. `done` must stay callable until it ran.
// Thread-safety: every method may be called from any thread, concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "http/http.h"

namespace switchyard::upstream {

struct UpstreamOptions {
  std::vector<std::string> urls;  // "http://host:port"; requests keep their own path
  int connect_timeout_ms = 2000;
  int response_timeout_ms = 600000;  // to the answer's head, then between reads of its body
  size_t max_idle_connections_per_upstream = 32;  // keep-alive pool
  int threads = 2;                                // I/O threads
};

class UpstreamClient {
 public:
  // Counters for /v1/cluster and the bench.
  struct Stats {
    uint64_t requests = 0;     // Forward() calls to this upstream
    uint64_t failures = 0;     // answered 502/504 by this client, or a stream that broke
    uint64_t bytes_in = 0;     // body bytes received from the upstream
    uint64_t connections = 0;  // connections opened (keep-alive keeps this low)
  };

  // InvalidArgument naming a bad URL (or option); https:// is refused (no TLS).
  static Result<std::unique_ptr<UpstreamClient>> Create(UpstreamOptions options);
  ~UpstreamClient();
  UpstreamClient(const UpstreamClient&) = delete;
  UpstreamClient& operator=(const UpstreamClient&) = delete;

  size_t size() const;
  // The upstream for `affinity_key`: stable per key; "" = round-robin.
  size_t Pick(const std::string& affinity_key);
  // The upstream's URL as given (without a trailing '/'); i < size().
  const std::string& url(size_t i) const;
  // Keeps a streamed answer open: it is closed when the last copy is destroyed.
  using CloseHold = std::shared_ptr<void>;
  // Observers of a streamed answer (HttpResponse::stream set), for the caller's own
  // accounting; both run on a client thread and must be quick. Not called for a whole
  // answer (its body is in the HttpResponse).
  struct Hooks {
    // Each piece of the body as it arrives, before it is written to the stream.
    std::function<void(std::string_view bytes)> on_bytes;
    // When set, the stream gets what it returns for each piece (after on_bytes) instead of
    // the piece, "" writing nothing: a caller that translates the answer into another
    // protocol. The error event an event-stream gets when the upstream breaks goes through
    // it too. The stream's backpressure and cancellation are unchanged, and its Close()
    // still waits for on_end's hold, so the caller may write its own last bytes to the
    // stream before it lets go. Runs on a client thread, one piece at a time.
    std::function<std::string(std::string_view bytes)> transform;
    // Once, after `done`, when the stream ended: true when the upstream's body was
    // complete; false when it broke or timed out, the stream was cancelled, or the client
    // stopped. The stream is closed when the last copy of `hold` is gone, so a hook that
    // keeps it holds the stream's end back (the front does, until the session is free for
    // its next turn); the hook must not wait on anything while it holds it.
    std::function<void(bool complete, CloseHold hold)> on_end;
  };

  // Forwards `req` to upstream `i` and calls `done` exactly once (see the header comment).
  // An `i` out of range is answered 500, also from a client thread.
  void Forward(const http::HttpRequest& req, size_t i, const std::string& auth,
               std::function<void(http::HttpResponse)> done, Hooks hooks = {});
  Stats stats(size_t i) const;

  struct Impl;  // in upstream_client.cc

 private:
  explicit UpstreamClient(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace switchyard::upstream
