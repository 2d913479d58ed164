// HttpServer against a raw socket client on loopback: streamed (chunked) responses and
// Server-Sent Events (head first, chunks in order, keep-alive after a stream, cancellation on
// disconnect, Stop() and the queue cap, HTTP/1.0) and the plain path unchanged.
#include "http/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "tests/common/wait_until.h"
#include "tests/http/http_stream_client.h"
#include "tests/http/http_test_client.h"

namespace switchyard::http {
namespace {

using namespace std::chrono_literals;
using testing::ClientResponse;
using testing::StreamClient;
using testing::WaitUntil;

// A live server whose handler each test sets; producer threads started with Spawn() are
// joined after the server stopped (which cancels their streams).
class HttpServerStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.threads = 2;
    server_ = std::make_unique<HttpServer>(
        options, HttpServer::AsyncHandler([this](const HttpRequest& req, HttpServer::Respond r) {
          handler_(req, std::move(r));
        }));
    auto port = server_->Start();
    ASSERT_TRUE(port.ok());
    port_ = *port;
  }

  void TearDown() override {
    if (server_) server_->Stop();
    for (auto& t : producers_) t.join();
    server_.reset();
  }

  void Spawn(std::function<void()> fn) {
    MutexLock lock(&mu_);
    producers_.emplace_back(std::move(fn));
  }

  // A streamed response of `content_type` over `stream`.
  static HttpResponse StreamResponse(std::shared_ptr<ResponseStream> stream,
                                     std::string content_type = "text/event-stream") {
    HttpResponse r;
    r.content_type = std::move(content_type);
    r.stream = std::move(stream);
    return r;
  }

  // Hands out the stream of the next streamed response, to the test body.
  std::shared_ptr<ResponseStream> WaitStream() {
    auto f = stream_promise_.get_future();
    if (f.wait_for(std::chrono::duration<double>(testing::kWaitSeconds)) !=
        std::future_status::ready)
      return nullptr;
    return f.get();
  }

  std::function<void(const HttpRequest&, HttpServer::Respond)> handler_;
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
  std::promise<std::shared_ptr<ResponseStream>> stream_promise_;
  Mutex mu_;
  std::vector<std::thread> producers_;
};

// Waits until `flag` is set or `stream` was cancelled (the server stopped: the test ended
// early); whether the flag is set.
bool WaitFor(const std::atomic<bool>& flag, const ResponseStream& stream) {
  WaitUntil([&] { return flag.load() || stream.cancelled(); });
  return flag.load();
}
// Waits until `count` reached `n` or `stream` was cancelled; whether it reached it.
bool WaitFor(const std::atomic<size_t>& count, size_t n, const ResponseStream& stream) {
  WaitUntil([&] { return count.load() >= n || stream.cancelled(); });
  return count.load() >= n;
}

TEST_F(HttpServerStreamTest, HeadersArriveBeforeTheProducerWritesAnything) {
  std::atomic<bool> head_seen{false};
  std::atomic<bool> head_before_first_write{false};
  handler_ = [&](const HttpRequest&, HttpServer::Respond respond) {
    auto stream = std::make_shared<ResponseStream>();
    HttpResponse r = StreamResponse(stream);
    r.headers["x-request-id"] = "abc";
    respond(std::move(r));
    Spawn([stream, &head_seen, &head_before_first_write] {
      // Nothing is written until the client has the head (or never: the test fails).
      head_before_first_write = WaitFor(head_seen, *stream);
      for (int i = 0; i < 3; ++i) stream->Write("data: " + std::to_string(i) + "\n\n");
      stream->Close();
    });
  };
  StreamClient client(port_);
  ASSERT_TRUE(client.SendRequest("GET", "/v1/stream"));
  ClientResponse head;
  ASSERT_TRUE(client.ReadHead(&head));
  head_seen = true;
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.headers["content-type"], "text/event-stream");
  EXPECT_EQ(head.headers["transfer-encoding"], "chunked");
  EXPECT_EQ(head.headers["cache-control"], "no-cache");
  EXPECT_EQ(head.headers["x-request-id"], "abc");
  EXPECT_EQ(head.headers.count("content-length"), 0u);
  std::string body;
  ASSERT_TRUE(client.ReadChunkedBody(&body));
  EXPECT_EQ(body, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
  EXPECT_TRUE(head_before_first_write.load());
}

TEST_F(HttpServerStreamTest, ChunksArriveInOrderAndDecode) {
  std::vector<std::string> sent = {"a", std::string(100000, 'b'), "ccc\r\n0\r\n\r\n", "d",
                                   std::string(5000, 'e')};
  // The producer writes chunk i once the client has read every chunk before it: the
  // writes cannot be gathered into one answer, however the threads are scheduled.
  std::atomic<size_t> next{0};  // written chunks the client has read
  handler_ = [&](const HttpRequest&, HttpServer::Respond respond) {
    auto stream = std::make_shared<ResponseStream>();
    respond(StreamResponse(stream, "application/octet-stream"));
    Spawn([stream, sent, &next] {
      for (size_t i = 0; i < sent.size(); ++i) {
        if (!WaitFor(next, i, *stream)) return;
        EXPECT_TRUE(stream->Write(sent[i]));
      }
      stream->Close();
    });
  };
  StreamClient client(port_);
  ASSERT_TRUE(client.SendRequest("GET", "/bytes"));
  ClientResponse head;
  ASSERT_TRUE(client.ReadHead(&head));
  EXPECT_EQ(head.headers["transfer-encoding"], "chunked");
  EXPECT_EQ(head.headers.count("cache-control"), 0u);  // not an event stream
  // Each HTTP chunk is one or more written chunks, whole and in order.
  int chunks = 0;
  std::string data;
  StreamClient::Chunk c;
  while ((c = client.ReadChunk(&data)) == StreamClient::Chunk::kData) {
    ++chunks;
    ASSERT_FALSE(data.empty());
    while (!data.empty()) {
      ASSERT_LT(next.load(), sent.size());
      ASSERT_EQ(data.compare(0, sent[next].size(), sent[next]), 0) << "chunk " << next.load();
      data.erase(0, sent[next].size());
      ++next;
    }
  }
  EXPECT_EQ(c, StreamClient::Chunk::kLast);
  EXPECT_EQ(next.load(), sent.size());
  // Each written only after the one before it was read: streamed, one HTTP chunk each.
  EXPECT_EQ(chunks, static_cast<int>(sent.size()));
}

TEST_F(HttpServerStreamTest, SseHundredEventsRoundTripByteForByte) {
  std::string expected;
  for (int i = 0; i < 100; ++i) {
    expected +=
        "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok" +
        std::to_string(i) + "\"}}]}\n\n";
  }
  expected += "data: [DONE]\n\n";
  handler_ = [&](const HttpRequest&, HttpServer::Respond respond) {
    auto stream = std::make_shared<ResponseStream>();
    respond(StreamResponse(stream));
    Spawn([stream] {
      for (int i = 0; i < 100; ++i) {
        std::string event =
            "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{"
            "\"content\":\"tok" +
            std::to_string(i) + "\"}}]}\n\n";
        ASSERT_TRUE(stream->Write(std::move(event)));
        // Some events go out alone, some gathered; checked byte for byte whatever the split.
        if (i % 10 == 0) std::this_thread::sleep_for(1ms);  // pacing, not a synchronisation
      }
      stream->Write("data: [DONE]\n\n");
      stream->Close();
    });
  };
  StreamClient client(port_);
  ASSERT_TRUE(client.SendRequest("POST", "/v1/chat/completions", false, "{\"stream\":true}"));
  ClientResponse head;
  ASSERT_TRUE(client.ReadHead(&head));
  EXPECT_EQ(head.headers["cache-control"], "no-cache");
  std::string body;
  ASSERT_TRUE(client.ReadChunkedBody(&body));
  EXPECT_EQ(body, expected);
}

TEST_F(HttpServerStreamTest, ChunksWrittenBeforeRespondAreSentAfterTheHead) {
  std::atomic<bool> head_seen{false};
  handler_ = [&](const HttpRequest&, HttpServer::Respond respond) {
    auto stream = std::make_shared<ResponseStream>();
    EXPECT_TRUE(stream->Write("early1,"));
    EXPECT_TRUE(stream->Write("early2,"));
    respond(StreamResponse(stream));
    Spawn([stream, &head_seen] {
      if (!WaitFor(head_seen, *stream)) return;  // "late": written after the head went out
      stream->Write("late");
      stream->Close();
    });
  };
  StreamClient client(port_);
  ASSERT_TRUE(client.SendRequest("GET", "/"));
  ClientResponse head;
  ASSERT_TRUE(client.ReadHead(&head));
  head_seen = true;
  std::string body;
  ASSERT_TRUE(client.ReadChunkedBody(&body));
  EXPECT_EQ(body, "early1,early2,late");
}

TEST_F(HttpServerStreamTest, StreamClosedBeforeRespondIsOneCompleteAnswer) {
  handler_ = [&](const HttpRequest&, HttpServer::Respond respond) {
    auto stream = std::make_shared<ResponseStream>();
    stream->Write("all at once");
    stream->Close();
    respond(StreamResponse(stream));
  };
  StreamClient client(port_);
  ASSERT_TRUE(client.SendRequest("GET", "/"));
  ClientResponse head;
  ASSERT_TRUE(client.ReadHead(&head));
  std::string body;
  ASSERT_TRUE(client.ReadChunkedBody(&body));
  EXPECT_EQ(body, "all at once");
}

TEST_F(HttpServerStreamTest, KeepAliveConnectionServesTheNextRequestAfterAStream) {
  handler_ = [&](const HttpRequest& req, HttpServer::Respond respond) {
    if (req.path() == "/plain") {
      HttpResponse r;
      r.body = "{\"ok\":true}";
      return respond(std::move(r));
    }
    auto stream = std::make_shared<ResponseStream>();
    respond(StreamResponse(stream));
    std::string tag = *req.Query("n");
    Spawn([stream, tag] {
      for (int i = 0; i < 3; ++i) stream->Write("data: " + tag + "-" + std::to_string(i) + "\n\n");
      stream->Close();
    });
  };
  StreamClient client(port_);
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(client.SendRequest("GET", "/stream?n=" + std::to_string(round)));
    ClientResponse head;
    ASSERT_TRUE(client.ReadHead(&head));
    EXPECT_EQ(head.headers.count("connection"), 0u);
    std::string body, r = std::to_string(round);
    ASSERT_TRUE(client.ReadChunkedBody(&body));
    EXPECT_EQ(body, "data: " + r + "-0\n\ndata: " + r + "-1\n\ndata: " + r + "-2\n\n");

    ASSERT_TRUE(client.SendRequest("GET", "/plain"));
    ASSERT_TRUE(client.ReadHead(&head));
    EXPECT_EQ(head.status, 200);
    ASSERT_EQ(head.headers["content-length"], "11");
    std::string plain;
    ASSERT_TRUE(client.ReadExactly(11, &plain));
    EXPECT_EQ(plain, "{\"ok\":true}");
  }
}

TEST_F(HttpServerStreamTest, PipelinedRequestDuringAStreamIsServedAfterIt) {
  std::atomic<bool> next_sent{false};
  handler_ = [&](const HttpRequest& req, HttpServer::Respond respond) {
    if (req.path() == "/plain") {
      HttpResponse r;
      r.body = "next";
      return respond(std::move(r));
    }
    auto stream = std::make_shared<ResponseStream>();
    respond(StreamResponse(stream));
    Spawn([stream, &next_sent] {
      if (!WaitFor(next_sent, *stream)) return;  // the next request is on the wire
      stream->Write("x");
      stream->Close();
    });
  };
  StreamClient client(port_);
  ASSERT_TRUE(client.SendRequest("GET", "/stream"));
  ClientResponse head;
  ASSERT_TRUE(client.ReadHead(&head));
  ASSERT_TRUE(client.SendRequest("GET", "/plain"));
  next_sent = true;
  std::string body;
  ASSERT_TRUE(client.ReadChunkedBody(&body));
  EXPECT_EQ(body, "x");
  ASSERT_TRUE(client.ReadHead(&head));
  ASSERT_TRUE(client.ReadExactly(4, &body));
  EXPECT_EQ(body, "next");
}

TEST_F(HttpServerStreamTest, ConnectionCloseRequestIsClosedAfterTheStream) {
  handler_ = [&](const HttpRequest&, HttpServer::Respond respond) {
    auto stream = std::make_shared<ResponseStream>();
    respond(StreamResponse(stream));
    Spawn([stream] {
      stream->Write("bye");
      stream->Close();
    });
  };
  StreamClient client(port_);
  ASSERT_TRUE(client.SendRequest("GET", "/", /*close=*/true));
  ClientResponse head;
  ASSERT_TRUE(client.ReadHead(&head));
  EXPECT_EQ(head.headers["connection"], "close");
  std::string body, rest;
  ASSERT_TRUE(client.ReadChunkedBody(&body));
  EXPECT_EQ(body, "bye");
  EXPECT_TRUE(client.ReadToEof(&rest));
  EXPECT_EQ(rest, "");
}

// The producer stays silent after its first event: only the server noticing the
// disconnect on its own can cancel the stream.
TEST_F(HttpServerStreamTest, ClientDisconnectCancelsTheStream) {
  std::atomic<int> on_cancel_runs{0};
  std::promise<void> saw_cancel;
  handler_ = [&](const HttpRequest& req, HttpServer::Respond respond) {
    if (req.path() == "/plain") return respond(HttpResponse{});
    auto stream = std::make_shared<ResponseStream>();
    stream->SetOnCancel([&on_cancel_runs] { on_cancel_runs.fetch_add(1); });
    respond(StreamResponse(stream));
    stream_promise_.set_value(stream);
    Spawn([stream, &saw_cancel] {
      stream->Write("data: first\n\n");
      // Then silent (a slow model): only the server noticing the disconnect can cancel.
      if (WaitUntil([&] { return stream->cancelled(); })) saw_cancel.set_value();
    });
  };
  StreamClient client(port_);
  ASSERT_TRUE(client.SendRequest("GET", "/"));
  ClientResponse head;
  ASSERT_TRUE(client.ReadHead(&head));
  std::string data;
  ASSERT_EQ(client.ReadChunk(&data), StreamClient::Chunk::kData);
  auto stream = WaitStream();
  ASSERT_NE(stream, nullptr);
  EXPECT_FALSE(stream->cancelled());
  EXPECT_EQ(on_cancel_runs.load(), 0);
  client.Close();
  ASSERT_EQ(saw_cancel.get_future().wait_for(std::chrono::duration<double>(testing::kWaitSeconds)),
            std::future_status::ready)
      << "the server never noticed the disconnect";
  EXPECT_EQ(on_cancel_runs.load(), 1);
  EXPECT_FALSE(stream->Write("data: late\n\n"));  // the connection is gone: just false
  stream->Close();                                // harmless
  EXPECT_EQ(on_cancel_runs.load(), 1);
  // The server is fine.
  EXPECT_EQ(testing::Request(port_, "GET", "/plain").status, 200);
}

TEST_F(HttpServerStreamTest, StopCancelsAnOpenStreamAndReturns) {
  std::atomic<int> on_cancel_runs{0};
  handler_ = [&](const HttpRequest&, HttpServer::Respond respond) {
    auto stream = std::make_shared<ResponseStream>();
    stream->SetOnCancel([&on_cancel_runs] { on_cancel_runs.fetch_add(1); });
    stream->Write("data: first\n\n");
    respond(StreamResponse(stream));
    stream_promise_.set_value(stream);  // never closed by the producer
  };
  StreamClient client(port_);
  ASSERT_TRUE(client.SendRequest("GET", "/"));
  ClientResponse head;
  ASSERT_TRUE(client.ReadHead(&head));
  std::string data;
  ASSERT_EQ(client.ReadChunk(&data), StreamClient::Chunk::kData);
  auto stream = WaitStream();
  ASSERT_NE(stream, nullptr);
  server_->Stop();  // returns: the open stream did not hold it
  EXPECT_TRUE(stream->cancelled());
  EXPECT_EQ(on_cancel_runs.load(), 1);
  EXPECT_FALSE(stream->Write("data: after stop\n\n"));
  server_.reset();  // the stream outlives the server
  EXPECT_FALSE(stream->Write("data: after the server\n\n"));
  stream->Close();
  EXPECT_NE(client.ReadChunk(&data), StreamClient::Chunk::kLast);  // cut off
  EXPECT_EQ(on_cancel_runs.load(), 1);
}

TEST_F(HttpServerStreamTest, SlowClientHitsTheQueueCapInsteadOfGrowingTheServer) {
  static constexpr size_t kCap = 1 << 20;
  std::promise<size_t> accepted_bytes;
  handler_ = [&](const HttpRequest&, HttpServer::Respond respond) {
    auto stream = std::make_shared<ResponseStream>(kCap);
    respond(StreamResponse(stream, "application/octet-stream"));
    stream_promise_.set_value(stream);
    Spawn([stream, &accepted_bytes] {
      const std::string chunk(64 * 1024, 'z');
      size_t total = 0;
      for (int i = 0; i < 4096 && stream->Write(chunk); ++i) {  // up to 256 MiB
        total += chunk.size();
        EXPECT_LE(stream->queued_bytes(), kCap);
      }
      accepted_bytes.set_value(total);
    });
  };
  StreamClient client(port_);  // never reads the body
  ASSERT_TRUE(client.SendRequest("GET", "/"));
  auto stream = WaitStream();
  ASSERT_NE(stream, nullptr);
  auto accepted = accepted_bytes.get_future();
  ASSERT_EQ(accepted.wait_for(std::chrono::duration<double>(testing::kWaitSeconds)),
            std::future_status::ready);
  size_t total = accepted.get();
  EXPECT_LT(total, size_t{128} << 20);  // the cap plus what the kernel buffers hold
  EXPECT_TRUE(stream->cancelled());
  EXPECT_EQ(stream->queued_bytes(), 0u);
  // The connection is dropped: the client sees the end of the data, not a last chunk.
  std::string rest;
  client.ReadToEof(&rest);
  EXPECT_EQ(rest.find("\r\n0\r\n\r\n"), std::string::npos);
}

TEST_F(HttpServerStreamTest, Http10ClientGetsTheRawBodyThenTheConnectionCloses) {
  std::atomic<bool> head_seen{false};
  handler_ = [&](const HttpRequest&, HttpServer::Respond respond) {
    auto stream = std::make_shared<ResponseStream>();
    respond(StreamResponse(stream));
    Spawn([stream, &head_seen] {
      stream->Write("data: a\n\n");
      if (!WaitFor(head_seen, *stream)) return;  // "b" goes out on its own, after the head
      stream->Write("data: b\n\n");
      stream->Close();
    });
  };
  StreamClient client(port_);
  ASSERT_TRUE(client.Send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  ClientResponse head;
  ASSERT_TRUE(client.ReadHead(&head));
  head_seen = true;
  EXPECT_EQ(head.headers.count("transfer-encoding"), 0u);
  EXPECT_EQ(head.headers.count("content-length"), 0u);
  EXPECT_EQ(head.headers.count("connection"), 0u);  // HTTP/1.0 default: close
  std::string body;
  ASSERT_TRUE(client.ReadToEof(&body));
  EXPECT_EQ(body, "data: a\n\ndata: b\n\n");
}

TEST_F(HttpServerStreamTest, ManyConcurrentStreamsEachRoundTrip) {
  constexpr int kStreams = 12, kEvents = 200;
  handler_ = [&](const HttpRequest& req, HttpServer::Respond respond) {
    auto stream = std::make_shared<ResponseStream>();
    std::string tag = *req.Query("s");
    // Some chunks before Respond, the rest racing the head from another thread.
    stream->Write("data: " + tag + " start\n\n");
    Spawn([stream, tag] {
      for (int i = 0; i < kEvents; ++i) {
        stream->Write("data: " + tag + " " + std::to_string(i) + "\n\n");
      }
      stream->Close();
    });
    respond(StreamResponse(stream));
  };
  std::vector<std::unique_ptr<StreamClient>> clients;
  for (int s = 0; s < kStreams; ++s) {
    clients.push_back(std::make_unique<StreamClient>(port_));
    ASSERT_TRUE(clients.back()->SendRequest("GET", "/?s=" + std::to_string(s)));
  }
  for (int s = 0; s < kStreams; ++s) {
    std::string expected = "data: " + std::to_string(s) + " start\n\n";
    for (int i = 0; i < kEvents; ++i) {
      expected += "data: " + std::to_string(s) + " " + std::to_string(i) + "\n\n";
    }
    ClientResponse head;
    ASSERT_TRUE(clients[s]->ReadHead(&head));
    std::string body;
    ASSERT_TRUE(clients[s]->ReadChunkedBody(&body));
    EXPECT_EQ(body, expected) << "stream " << s;
  }
}

TEST(HttpServerResponseStreamTest, WriteCloseAndCancelWithoutAServer) {
  auto stream = std::make_shared<ResponseStream>(10);
  int runs = 0;
  stream->SetOnCancel([&runs] { ++runs; });
  EXPECT_TRUE(stream->Write("12345"));
  EXPECT_TRUE(stream->Write(""));
  EXPECT_EQ(stream->queued_bytes(), 5u);
  EXPECT_FALSE(stream->Write("123456"));  // past the cap of 10: cancels
  EXPECT_TRUE(stream->cancelled());
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(stream->queued_bytes(), 0u);
  EXPECT_FALSE(stream->Write("1"));
  int late_runs = 0;
  stream->SetOnCancel([&late_runs] { ++late_runs; });  // already cancelled: runs at once
  EXPECT_EQ(late_runs, 1);
  EXPECT_EQ(runs, 1);

  ResponseStream closed;
  EXPECT_TRUE(closed.Write("a"));
  closed.Close();
  EXPECT_FALSE(closed.Write("b"));
  EXPECT_FALSE(closed.cancelled());
}

// The non-streaming path: Content-Length, the handler's headers, keep-alive.
TEST(HttpServerTest, PlainResponsesAreUnchanged) {
  HttpServerOptions options;
  options.port = 0;
  HttpServer server(options, HttpServer::Handler([](const HttpRequest& req) {
                      HttpResponse r;
                      r.status = req.path() == "/missing" ? 404 : 200;
                      r.headers["retry-after"] = "1";
                      r.body = "{\"path\":\"" + std::string(req.path()) + "\"}";
                      return r;
                    }));
  auto port = server.Start();
  ASSERT_TRUE(port.ok());
  ClientResponse r = testing::Request(*port, "GET", "/a");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "application/json");
  EXPECT_EQ(r.headers["content-length"], std::to_string(r.body.size()));
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_EQ(r.headers["connection"], "close");
  EXPECT_EQ(r.headers.count("transfer-encoding"), 0u);
  EXPECT_EQ(r.headers.count("cache-control"), 0u);
  EXPECT_EQ(r.body, "{\"path\":\"/a\"}");

  StreamClient client(*port);
  for (const char* path : {"/x", "/missing", "/y"}) {
    ASSERT_TRUE(client.SendRequest("GET", path));
    ClientResponse head;
    ASSERT_TRUE(client.ReadHead(&head));
    EXPECT_EQ(head.status, std::string(path) == "/missing" ? 404 : 200);
    EXPECT_EQ(head.headers.count("connection"), 0u);
    std::string body;
    ASSERT_TRUE(client.ReadExactly(std::stoul(head.headers["content-length"]), &body));
    EXPECT_EQ(body, std::string("{\"path\":\"") + path + "\"}");
  }
  server.Stop();
}

}  // namespace
}  // namespace switchyard::http
