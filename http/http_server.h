// HttpServer: an asynchronous HTTP/1.1 server on Boost.Beast.
//
// Accepts connections on one address, reads requests with keep-alive, enforces a body
// size limit (413 without calling the handler) and a header/read timeout, and hands each
// complete request to a handler. A compressed body (Content-Encoding gzip, deflate or zstd,
// content_encoding.h) is decoded first and its header dropped, so handlers only see plain
// bodies; the limit applies to the decoded body too (413, decoding stops at the limit), an
// unknown coding is a 415 naming it and a corrupt body a 400, all without the handler. An
// AsyncHandler gets a Respond callback that it (or whoever it hands the request to) calls exactly
// once, from any thread: the answer is written on the connection's I/O thread, inline when called
// there, and grouped with the other answers to that thread when the caller has a CompletionBatch
// open (base/completion_batch.h). A plain Handler returns the response. There are `threads` I/O
// threads, each running its own io_context; a connection stays on one of them (assigned
// round-robin at accept), so handlers of different connections may run concurrently but
// those of one connection never do. A connection has at most one request in the server.
//
// Streamed responses (HttpResponse::stream, http/http.h): when Respond runs, the status line
// and headers go out at once (the response's content type and extra headers, then
// Transfer-Encoding: chunked and no Content-Length; Cache-Control: no-cache for
// text/event-stream unless the handler set one), then each batch of chunks queued in the
// stream as one HTTP chunk, in order, written on the connection's I/O thread only, and the
// last chunk after ResponseStream::Close(). The connection then stays open for the next
// request (keep-alive as usual; "Connection: close" requests are closed after the last
// chunk). HTTP/1.0 clients get the raw bytes and the connection closes at the end. While a
// stream is open the read timeout does not apply (it covers reading a request); each write
// of the stream must complete within read_timeout_ms or the connection is dropped. The
// server reads ahead meanwhile, so a client that disconnects cancels the stream at once; a
// client that sends more than 64 KiB ahead during a stream is disconnected. A cancelled
// stream (client gone, write failed or timed out, queue cap passed, server stopped) ends
// the connection: the response is incomplete. The stream's queue is bounded (see
// ResponseStream): a slow client cannot make the server buffer without bound.
//
// Ownership: the server owns its io_context and threads. Start() binds and returns the
// bound port (0 in the options picks a free one); Stop() closes the acceptor and every
// connection, joins the threads, then cancels every open stream (their on-cancel callbacks
// run on the calling thread); answers still owed after Stop() are dropped, but their
// callbacks must have run (or been destroyed) before the server is destroyed. A stream
// may outlive the server: writing to it then returns false.
// Lifetime: a Respond may run after Stop() (its answer is dropped), but it holds its
// connection, whose socket belongs to the server: the server must outlive every Respond it
// handed out. Stop the server, then destroy what may still answer (the API, its fronts'
// threads, the service), then the server.
//
// Thread-safety: Start/Stop from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "http/http.h"

namespace switchyard::http {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8470;
  int threads = 2;
  size_t body_limit_bytes = 1 << 20;  // larger bodies get 413
  int read_timeout_ms = 30000;        // a request must arrive within this once started
  size_t max_connections = 1024;      // more are refused (closed at accept)
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  using Respond = std::function<void(HttpResponse)>;
  using AsyncHandler = std::function<void(const HttpRequest&, Respond)>;

  HttpServer(HttpServerOptions options, Handler handler);
  HttpServer(HttpServerOptions options, AsyncHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the threads. Returns the bound port.
  Result<uint16_t> Start();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::http
