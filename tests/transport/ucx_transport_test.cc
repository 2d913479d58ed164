#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>
#include <tuple>

#include "kv_store/kv_store_protocol.h"
#include "transport/transport.h"

namespace switchyard::transport {
namespace {

TransportConfig Tcp() {
  TransportConfig c;
  c.params["TLS"] = "tcp";
  return c;
}

struct Pair {
  std::unique_ptr<Transport> server, client;
  EndpointId to_server = 0;
  std::string address;
};

Pair MakePair(const TransportConfig& config) {
  Pair p;
  auto s = TransportRegistry::Global().Create("ucx", config);
  EXPECT_TRUE(s.ok()) << s.status();
  auto c = TransportRegistry::Global().Create("ucx", config);
  EXPECT_TRUE(c.ok()) << c.status();
  p.server = std::move(*s);
  p.client = std::move(*c);
  auto addr = p.server->Listen("127.0.0.1:0");
  EXPECT_TRUE(addr.ok()) << addr.status();
  p.address = *addr;
  auto peer = p.client->Connect(p.address);
  EXPECT_TRUE(peer.ok()) << peer.status();
  p.to_server = *peer;
  return p;
}

TEST(UcxTransportTest, CapabilitiesAndRegistry) {
  ASSERT_TRUE(TransportRegistry::Global().Has("ucx"));
  auto t = TransportRegistry::Global().Create("ucx", Tcp());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->name(), "ucx");
  EXPECT_TRUE((*t)->supportsRemote());
  EXPECT_EQ((*t)->supportedMemoryKinds(), std::vector<MemoryKind>{MemoryKind::kHost});
  // Optional ops default to NotSupported.
  EXPECT_TRUE((*t)->RegisterMemory({}).IsNotSupported());
}

TEST(UcxTransportTest, BadConfigKeyIsRejectedByName) {
  TransportConfig c;
  c.params["RNDV_THRESH"] = "not-a-size";
  auto t = TransportRegistry::Global().Create("ucx", c);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("RNDV_THRESH"), std::string::npos);
}

TEST(UcxTransportTest, ConnectToNobodyFails) {
  auto t = TransportRegistry::Global().Create("ucx", Tcp());
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE((*t)->Connect("127.0.0.1:1").ok());
  EXPECT_TRUE((*t)->Connect("not-an-address").status().IsInvalidArgument());
}

// UCX aborts a process that receives a TCP segment larger than its own receive segment:
// peers whose segment sizes differ are refused at the handshake, by name, on both sides.
TEST(UcxTransportTest, PeersWithDifferentTcpSegmentsAreRefused) {
  TransportConfig small = Tcp();
  small.params["TX_SEG_SIZE"] = "8k";
  small.params["RX_SEG_SIZE"] = "64k";
  auto server = TransportRegistry::Global().Create("ucx", Tcp());  // our defaults (4 MiB)
  auto client = TransportRegistry::Global().Create("ucx", small);
  ASSERT_TRUE(server.ok() && client.ok());
  auto addr = (*server)->Listen("127.0.0.1:0");
  ASSERT_TRUE(addr.ok()) << addr.status();
  auto peer = (*client)->Connect(*addr);
  ASSERT_TRUE(peer.status().IsFailedPrecondition()) << peer.status();
  EXPECT_NE(peer.status().message().find("segment sizes differ"), std::string::npos);
  EXPECT_NE(peer.status().message().find("UCX_TCP_RX_SEG_SIZE"), std::string::npos);
  // The same non-default sizes on both sides connect and carry a large message.
  auto other = TransportRegistry::Global().Create("ucx", small);
  ASSERT_TRUE(other.ok());
  auto addr2 = (*other)->Listen("127.0.0.1:0");
  ASSERT_TRUE(addr2.ok());
  auto to_other = (*client)->Connect(*addr2);
  ASSERT_TRUE(to_other.ok()) << to_other.status();
  std::vector<uint8_t> src(3 << 20, 7), dst(3 << 20, 0);
  DescriptorList d = {{dst.data(), dst.size()}}, sd = {{src.data(), src.size()}};
  auto recv = (*other)->PostRecv(d, kv_store::MakeTag(kv_store::MsgType::kPutData, 0, 1),
                                 kv_store::kFullMask, {});
  ASSERT_TRUE(recv.ok()) << recv.status();
  auto send =
      (*client)->PostSend(*to_other, sd, kv_store::MakeTag(kv_store::MsgType::kPutData, 0, 1), {});
  ASSERT_TRUE(send.ok()) << send.status();
  ASSERT_TRUE(send->wait().ok());
  ASSERT_TRUE(recv->wait().ok());
  EXPECT_EQ(dst, src);
}

void RoundTrip(const TransportConfig& config, uint64_t bytes, bool split) {
  Pair p = MakePair(config);
  std::vector<uint8_t> src(bytes), dst(bytes, 0);
  for (uint64_t i = 0; i < bytes; ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  DescriptorList d = {{dst.data(), bytes}};
  DescriptorList s = {{src.data(), bytes}};
  if (split) {  // scatter/gather: three pieces each side
    uint64_t a = bytes / 3, b = bytes / 2;
    s = {{src.data(), a}, {src.data() + a, b - a}, {src.data() + b, bytes - b}};
    d = {{dst.data(), b}, {dst.data() + b, bytes - b}};
  }
  auto recv = p.server->PostRecv(d, kv_store::MakeTag(kv_store::MsgType::kPutData, 0, 42),
                                 kv_store::kFullMask, {});
  ASSERT_TRUE(recv.ok()) << recv.status();
  auto send =
      p.client->PostSend(p.to_server, s, kv_store::MakeTag(kv_store::MsgType::kPutData, 0, 42), {});
  ASSERT_TRUE(send.ok()) << send.status();
  ASSERT_TRUE(send->wait().ok());
  ASSERT_TRUE(recv->wait().ok());
  EXPECT_EQ(recv->bytes(), bytes);
  EXPECT_EQ(recv->sender_tag(), kv_store::MakeTag(kv_store::MsgType::kPutData, 0, 42));
  EXPECT_EQ(kv_store::ChecksumOf(dst.data(), bytes), kv_store::ChecksumOf(src.data(), bytes));
}

TransportConfig Flow(const std::string& tls, const std::string& connect) {
  TransportConfig c;
  c.params["TLS"] = tls;
  if (!connect.empty()) c.params["connect"] = connect;
  return c;
}

// One message each way between `a` (connected to `b` as `to_b`) and `b`.
void BothWays(Transport& a, Transport& b, EndpointId to_b, uint32_t transfer) {
  auto b_to_a = a.IdAtPeer(to_b);  // the peer id `b` gave `a`
  ASSERT_TRUE(b_to_a.ok()) << b_to_a.status();
  std::vector<uint8_t> src(64 << 10, static_cast<uint8_t>(transfer)), dst(src.size(), 0);
  const Tag tag = kv_store::MakeTag(kv_store::MsgType::kPutData, 0, transfer);
  for (auto [from, to, peer] :
       {std::tuple{&a, &b, to_b}, std::tuple{&b, &a, EndpointId{*b_to_a}}}) {
    std::fill(dst.begin(), dst.end(), 0);
    auto recv = to->PostRecv({{dst.data(), dst.size()}}, tag, kv_store::kFullMask, {});
    ASSERT_TRUE(recv.ok()) << recv.status();
    auto send = from->PostSend(peer, {{src.data(), src.size()}}, tag, {});
    ASSERT_TRUE(send.ok()) << send.status();
    ASSERT_TRUE(send->wait().ok()) << send->wait();
    ASSERT_TRUE(recv->wait().ok()) << recv->wait();
    EXPECT_EQ(dst, src);
  }
}

TEST(UcxTransportTest, TcpAloneConnectsThroughTheListenersUcpListener) {
  for (const char* tls : {"tcp", "tcp,self"}) {
    Pair p = MakePair(Flow(tls, ""));
    EXPECT_EQ(p.client->ConnectionFlow(p.to_server).value_or("?"), "client-server") << tls;
    auto at_server = p.client->IdAtPeer(p.to_server);
    ASSERT_TRUE(at_server.ok());
    EXPECT_EQ(p.server->ConnectionFlow(*at_server).value_or("?"), "client-server") << tls;
    BothWays(*p.client, *p.server, p.to_server, 1);
  }
  // Other transports, or no UCX_TLS at all, keep the worker-address flow by default.
  Pair p = MakePair(Flow("sm,self,tcp", ""));
  EXPECT_EQ(p.client->ConnectionFlow(p.to_server).value_or("?"), "address");
}

TEST(UcxTransportTest, EachSideMayAskForEitherFlow) {
  for (const char* server_flow : {"client-server", "address"}) {
    for (const char* client_flow : {"client-server", "address"}) {
      SCOPED_TRACE(std::string("server ") + server_flow + ", client " + client_flow);
      auto server = TransportRegistry::Global().Create("ucx", Flow("tcp", server_flow));
      auto client = TransportRegistry::Global().Create("ucx", Flow("tcp", client_flow));
      ASSERT_TRUE(server.ok() && client.ok());
      auto addr = (*server)->Listen("127.0.0.1:0");
      ASSERT_TRUE(addr.ok()) << addr.status();
      // Two sessions from one client: each gets its own endpoint on the server (the
      // client-server requests carry the same client id and are matched oldest first).
      auto first = (*client)->Connect(*addr);
      auto second = (*client)->Connect(*addr);
      ASSERT_TRUE(first.ok() && second.ok());
      EXPECT_EQ((*client)->ConnectionFlow(*first).value_or("?"), client_flow);
      BothWays(**client, **server, *second, 2);
      BothWays(**client, **server, *first, 3);
      // The server is told the session ended; the other one still works.
      ASSERT_TRUE((*client)->Disconnect(*first).ok());
      BothWays(**client, **server, *second, 4);
    }
  }
}

TEST(UcxTransportTest, TheUcpListenerTakesTheConfiguredPortAndATakenOneFailsListen) {
  // Find a free port: a listener on any port, whose port is then closed again.
  int port = 0;
  {
    auto probe = TransportRegistry::Global().Create("ucx", Flow("tcp", ""));
    ASSERT_TRUE(probe.ok());
    auto addr = (*probe)->Listen("127.0.0.1:0");
    ASSERT_TRUE(addr.ok());
    port = std::stoi(addr->substr(addr->rfind(':') + 1));  // free once the probe is gone
  }
  TransportConfig c = Flow("tcp", "");
  c.params["listener_port"] = std::to_string(port);
  auto server = TransportRegistry::Global().Create("ucx", c);
  ASSERT_TRUE(server.ok()) << server.status();
  auto addr = (*server)->Listen("127.0.0.1:0");
  ASSERT_TRUE(addr.ok()) << addr.status();
  auto client = TransportRegistry::Global().Create("ucx", Flow("tcp", ""));
  ASSERT_TRUE(client.ok());
  auto peer = (*client)->Connect(*addr);
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_EQ((*client)->ConnectionFlow(*peer).value_or("?"), "client-server");
  BothWays(**client, **server, *peer, 5);
  // A second listener asking for the same port: Listen fails naming it.
  auto other = TransportRegistry::Global().Create("ucx", c);
  ASSERT_TRUE(other.ok());
  auto taken = (*other)->Listen("127.0.0.1:0");
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.status().message().find("port " + std::to_string(port)), std::string::npos)
      << taken.status();
  c.params["listener_port"] = "80000";
  auto bad = TransportRegistry::Global().Create("ucx", c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("listener_port=80000"), std::string::npos) << bad.status();
}

TEST(UcxTransportTest, BadConnectFlowIsRejectedByName) {
  auto t = TransportRegistry::Global().Create("ucx", Flow("tcp", "sideways"));
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(t.status().IsInvalidArgument()) << t.status();
  EXPECT_NE(t.status().message().find("connect=sideways"), std::string::npos) << t.status();
}

TEST(UcxTransportTest, SilentCompletionsLeaveTheCompletionCountAlone) {
  Pair p = MakePair(Tcp());
  std::vector<uint8_t> src(4096, 5), dst(4096, 0);
  auto send_one = [&](Tag tag, bool silent) {
    auto recv = p.server->PostRecv({{dst.data(), dst.size()}}, tag, kv_store::kFullMask, {});
    ASSERT_TRUE(recv.ok()) << recv.status();
    TransferOptions o;
    o.silent_completion = silent;
    auto send = p.client->PostSend(p.to_server, {{src.data(), src.size()}}, tag, o);
    ASSERT_TRUE(send.ok()) << send.status();
    ASSERT_TRUE(send->wait().ok());  // the handle completes either way
    ASSERT_TRUE(recv->wait().ok());
  };
  // A handle may complete just before its completion is counted: wait for the count.
  auto count_at_least = [&](uint64_t n) {
    for (uint64_t c = p.client->CompletionCount(); c < n; c = p.client->CompletionCount()) {
      p.client->WaitForCompletion(c, std::chrono::seconds(1));
    }
    return p.client->CompletionCount();
  };
  uint64_t before = p.client->CompletionCount();
  send_one(kv_store::MakeTag(kv_store::MsgType::kPutData, 0, 7), false);
  EXPECT_EQ(count_at_least(before + 1), before + 1);
  send_one(kv_store::MakeTag(kv_store::MsgType::kPutData, 0, 8), true);
  send_one(kv_store::MakeTag(kv_store::MsgType::kPutData, 0, 9), false);
  // The silent send completed before the last one was posted: counted, it would show.
  EXPECT_EQ(count_at_least(before + 2), before + 2);
}

TEST(UcxTransportTest, TagMessagesArriveWholeOverTcp) {
  RoundTrip(Tcp(), 8192, false);
  RoundTrip(Tcp(), 4 << 20, true);
}

TEST(UcxTransportTest, LargeMessageOverTcp) { RoundTrip(Tcp(), 64 << 20, false); }

TEST(UcxTransportTest, SharedMemoryBetweenTransports) {
  TransportConfig c;
  c.params["TLS"] = "sm,self,tcp";
  RoundTrip(c, 1 << 20, false);
}

TEST(UcxTransportTest, TruncationIsAnErrorNotSilentLoss) {
  Pair p = MakePair(Tcp());
  std::vector<uint8_t> src(1000, 1), dst(100);
  auto recv = p.server->PostRecv({{dst.data(), dst.size()}}, 7, kv_store::kFullMask, {});
  auto send = p.client->PostSend(p.to_server, {{src.data(), src.size()}}, 7, {});
  ASSERT_TRUE(recv.ok() && send.ok());
  (void)send->wait();
  EXPECT_TRUE(recv->wait().IsInvalidArgument());
}

TEST(UcxTransportTest, DroppingAHandleCancelsTheReceive) {
  Pair p = MakePair(Tcp());
  std::vector<uint8_t> dst(100);
  {
    auto recv = p.server->PostRecv({{dst.data(), dst.size()}}, 9, kv_store::kFullMask, {});
    ASSERT_TRUE(recv.ok());
    EXPECT_FALSE(recv->poll());
    EXPECT_EQ(recv->wait_for(std::chrono::milliseconds(5)).code(), StatusCode::kDeadlineExceeded);
  }  // destructor cancels and waits
  TransferOptions o;
  o.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  auto recv = p.server->PostRecv({{dst.data(), dst.size()}}, 9, kv_store::kFullMask, o);
  ASSERT_TRUE(recv.ok());
  EXPECT_EQ(recv->wait().code(), StatusCode::kDeadlineExceeded);
}

// Waiting threads drive the worker themselves, one at a time; the others block on their
// handles and are completed by whichever thread drives (or by the progress thread). Four
// threads exchanging messages through one pair at once, both directions, every message
// whole; then a handle waited on from a thread other than the poster, and a completion
// count waited on while another thread drives.
TEST(UcxTransportTest, ConcurrentWaitersShareTheWorker) {
  for (const char* tls : {"tcp", "sm,self,tcp"}) {
    TransportConfig c;
    c.params["TLS"] = tls;
    Pair p = MakePair(c);
    const EndpointId to_client = 1;  // the server registered the client as its first peer
    constexpr int kThreads = 4, kRounds = 40;
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        const uint64_t bytes = t % 2 == 0 ? 8192 : (1 << 20);
        std::vector<uint8_t> src(bytes), dst(bytes), back(bytes);
        for (int r = 0; r < kRounds; ++r) {
          for (uint64_t i = 0; i < bytes; i += 4096) src[i] = static_cast<uint8_t>(t * 31 + r + i);
          Tag ping = kv_store::MakeTag(kv_store::MsgType::kPutData, 0, t * 1000 + 2 * r),
              pong = ping + 1;
          auto rs = p.server->PostRecv({{dst.data(), bytes}}, ping, kv_store::kFullMask, {});
          auto rc = p.client->PostRecv({{back.data(), bytes}}, pong, kv_store::kFullMask, {});
          auto s1 = p.client->PostSend(p.to_server, {{src.data(), bytes}}, ping, {});
          if (!rs.ok() || !rc.ok() || !s1.ok() || !rs->wait().ok()) {
            ++failures;
            return;
          }
          auto s2 = p.server->PostSend(to_client, {{dst.data(), bytes}}, pong, {});
          if (!s2.ok() || !rc->wait().ok() || !s1->wait().ok() || !s2->wait().ok() || back != src) {
            ++failures;
            return;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0) << tls;

    // A receive posted here, waited on by another thread; a completion count waited on
    // here meanwhile.
    std::vector<uint8_t> src(4096, 9), dst(4096, 0);
    auto recv = p.server->PostRecv({{dst.data(), dst.size()}}, 77, kv_store::kFullMask, {});
    ASSERT_TRUE(recv.ok());
    uint64_t seen = p.server->CompletionCount();
    std::thread waiter([&] { EXPECT_TRUE(recv->wait().ok()); });
    auto send = p.client->PostSend(p.to_server, {{src.data(), src.size()}}, 77, {});
    ASSERT_TRUE(send.ok());
    for (int i = 0; i < 100 && p.server->CompletionCount() == seen; ++i) {
      p.server->WaitForCompletion(seen, std::chrono::milliseconds(50));
    }
    EXPECT_NE(p.server->CompletionCount(), seen);
    waiter.join();
    EXPECT_TRUE(send->wait().ok());
    EXPECT_EQ(dst, src);
  }
}

TEST(UcxTransportTest, HostMemoryOnly) {
  Pair p = MakePair(Tcp());
  uint8_t b[8];
  DescriptorList d = {{b, 8, MemoryKind::kCuda, 0}};
  EXPECT_TRUE(p.client->PostSend(p.to_server, d, 1, {}).status().IsNotSupported());
}

}  // namespace
}  // namespace switchyard::transport
