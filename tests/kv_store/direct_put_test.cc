// DirectPutter: a worker puts committed blocks of its own store straight into another
// worker's store. KvStoreServers in this process over TCP loopback (UCX_TLS=tcp): the source
// store is filled as serve fills it (a KvStoreClient put), the putter reads it in process and
// puts into the destination, whose own checks (credit, length, checksum, owner, epochs,
// generation) and commit decide; the bytes are read back from the destination with a
// validated get. Only committed blocks matching serve's view leave; a restarted or
// unreachable destination gets nothing; several putters against one slow receiver never
// take it past its credit, and every refused put is re-sent until it commits.
#include "kv_store/direct_put.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "tests/kv_store/stores.h"

namespace switchyard::kv_store {
namespace {

using testing::kKiB;
using testing::kMiB;
using testing::Pattern;
using testing::Store;
using testing::TcpClient;

constexpr uint64_t kBlock = 256 * kKiB;

// Serve's side of a store: fills it and reads it back.
struct Serve {
  explicit Serve(const Store& s)
      : client(KvStoreClient::Connect(s.worker->address(), TcpClient())) {
    EXPECT_TRUE(client.ok()) << client.status();
  }
  Status Put(const std::string& context, uint64_t id, uint64_t generation,
             const std::vector<uint8_t>& bytes) {
    PutRequest r{"t", context, 0, generation, {{id, bytes.data(), bytes.size(), std::nullopt}}};
    SY_ASSIGN_OR_RETURN(TransferEvents ev, (*client)->Put(r));
    return ev.committed ? Status::OK() : Status::Internal("not committed: " + ev.message);
  }
  Result<std::vector<uint8_t>> Get(const std::string& context, uint64_t id, uint64_t generation,
                                   uint64_t bytes) {
    std::vector<uint8_t> out(bytes);
    GetSpec g{"t", context, 0, generation, {id}, {{out.data(), bytes}}};
    SY_ASSIGN_OR_RETURN(TransferEvents ev, (*client)->Get(g));
    if (!ev.validated) return Status::NotFound(std::string(RejectReasonName(ev.reason)));
    return out;
  }
  Result<std::unique_ptr<KvStoreClient>> client;
};

DirectPutOrder Order(const Store& src, const Store& dst, uint64_t id,
                     std::vector<DirectBlock> blocks) {
  DirectPutOrder o;
  o.order_id = id;
  o.transfer_id = 1000 + id;
  o.source = src.Ref("hbm-a");
  o.destination = dst.Ref("hbm-b");
  o.generation = 1;
  o.traffic_class = v1::BACKGROUND;
  o.timeout = std::chrono::seconds(30);
  o.blocks = std::move(blocks);
  return o;
}

DirectPutOutcome Carry(DirectPutter& p, DirectPutOrder o) {
  auto done = std::make_shared<std::promise<DirectPutOutcome>>();
  auto f = done->get_future();
  p.Submit(std::move(o), [done](DirectPutOutcome out) { done->set_value(std::move(out)); });
  return f.get();
}

TEST(DirectPut, CommittedBlocksGoStraightIntoTheDestinationAndReadBackIntact) {
  Store a, b;
  Serve at_a(a), at_b(b);
  auto x = Pattern(kBlock, 1), y = Pattern(kBlock, 2);
  ASSERT_TRUE(at_a.Put("hbm-a", 7, 3, x).ok());
  ASSERT_TRUE(at_a.Put("hbm-a", 8, 1, y).ok());
  const uint64_t received_before = b.worker->stats().puts_committed;
  DirectPutter p(a.worker.get());
  const uint64_t sx = ChecksumOf(x.data(), x.size()), sy = ChecksumOf(y.data(), y.size());
  DirectPutOutcome out =
      Carry(p, Order(a, b, 1, {{7, 3, 40, kBlock, sx, {}}, {8, 1, 41, kBlock, sy, {}}}));
  ASSERT_TRUE(out.status.ok()) << out.status;
  EXPECT_FALSE(out.unreachable);
  // The destination's three events, each recorded.
  EXPECT_TRUE(out.events.posted && out.events.transport_complete);
  EXPECT_TRUE(out.events.receiver_transport_complete && out.events.validated);
  EXPECT_TRUE(out.events.committed && !out.events.rejected);
  ASSERT_EQ(out.blocks.size(), 2u);
  EXPECT_EQ(out.blocks[0].block_id, 40u);
  EXPECT_EQ(out.blocks[0].checksum, sx);
  EXPECT_EQ(out.blocks[1].checksum, sy);
  EXPECT_EQ(out.bytes, 2 * kBlock);
  // One put committed at the destination; the bytes read back under its owner.
  EXPECT_EQ(b.worker->stats().puts_committed, received_before + 1);
  EXPECT_EQ(at_b.Get("hbm-b", 40, 1, kBlock).value(), x);
  EXPECT_EQ(at_b.Get("hbm-b", 41, 1, kBlock).value(), y);
  // The source keeps its copies (a move frees them only after serve's commit).
  EXPECT_EQ(at_a.Get("hbm-a", 7, 3, kBlock).value(), x);
  DirectPutStats st = p.stats();
  EXPECT_EQ(st.orders, 1u);
  EXPECT_EQ(st.puts_committed, 1u);
  EXPECT_EQ(st.bytes_committed, 2 * kBlock);
}

// Invariant 1 at the source: a block is sent only when it is committed with the owner,
// epochs, generation and checksum serve names; otherwise the order fails naming it, and
// nothing reaches the destination.
TEST(DirectPut, OnlyCommittedBlocksMatchingServesViewLeaveTheSource) {
  Store a, b;
  Serve at_a(a);
  auto x = Pattern(kBlock, 3);
  const uint64_t sx = ChecksumOf(x.data(), x.size());
  ASSERT_TRUE(at_a.Put("hbm-a", 7, 2, x).ok());
  DirectPutter p(a.worker.get());
  struct Case {
    const char* what;
    DirectPutOrder order;
    StatusCode code;
    const char* says;
  };
  std::vector<Case> cases;
  cases.push_back({"missing", Order(a, b, 1, {{9, 2, 40, kBlock, sx, {}}}), StatusCode::kDataLoss,
                   "not committed"});
  cases.push_back({"stale generation", Order(a, b, 2, {{7, 1, 40, kBlock, sx, {}}}),
                   StatusCode::kFailedPrecondition, "stale_generation"});
  cases.push_back({"checksum", Order(a, b, 3, {{7, 2, 40, kBlock, sx ^ 1, {}}}),
                   StatusCode::kDataLoss, "checksum"});
  cases.push_back({"length", Order(a, b, 4, {{7, 2, 40, kBlock / 2, sx, {}}}),
                   StatusCode::kInvalidArgument, "holds"});
  DirectPutOrder owner = Order(a, b, 5, {{7, 2, 40, kBlock, sx, {}}});
  owner.source.context_id = "hbm-other";
  cases.push_back({"owner", owner, StatusCode::kFailedPrecondition, "wrong_owner"});
  DirectPutOrder epoch = Order(a, b, 6, {{7, 2, 40, kBlock, sx, {}}});
  epoch.source.communicator_epoch ^= 1;
  cases.push_back({"source incarnation", epoch, StatusCode::kUnavailable, "restarted"});
  for (Case& c : cases) {
    DirectPutOutcome out = Carry(p, c.order);
    EXPECT_EQ(out.status.code(), c.code) << c.what << ": " << out.status;
    EXPECT_NE(out.status.message().find(c.says), std::string::npos) << c.what << ": " << out.status;
    EXPECT_FALSE(out.events.posted) << c.what;
  }
  KvStoreServerStats sb = b.worker->stats();
  EXPECT_EQ(sb.puts_committed + sb.puts_rejected, 0u) << "something reached the destination";
}

// The destination restarted (serve's tier names an older incarnation) or cannot be
// reached: nothing is sent; the second is reported unreachable (serve may relay instead).
TEST(DirectPut, ARestartedOrUnreachableDestinationGetsNothing) {
  Store a, b;
  Serve at_a(a);
  auto x = Pattern(kBlock, 4);
  ASSERT_TRUE(at_a.Put("hbm-a", 7, 1, x).ok());
  DirectPutter p(a.worker.get());
  DirectPutOrder stale = Order(a, b, 1, {{7, 1, 40, kBlock, std::nullopt, {}}});
  stale.destination.communicator_epoch ^= 1;
  DirectPutOutcome out = Carry(p, stale);
  EXPECT_TRUE(out.status.IsUnavailable()) << out.status;
  EXPECT_NE(out.status.message().find("restarted"), std::string::npos) << out.status;
  EXPECT_FALSE(out.unreachable);
  EXPECT_FALSE(out.events.posted);
  EXPECT_EQ(b.worker->stats().puts_committed + b.worker->stats().puts_rejected, 0u);

  DirectPutOrder nowhere = Order(a, b, 2, {{7, 1, 40, kBlock, std::nullopt, {}}});
  nowhere.destination.address = "127.0.0.1:1";  // nothing listens on a privileged port
  nowhere.timeout = std::chrono::seconds(5);
  out = Carry(p, nowhere);
  EXPECT_TRUE(out.status.IsUnavailable()) << out.status;
  EXPECT_TRUE(out.unreachable) << out.status;
  EXPECT_NE(out.status.message().find("cannot reach"), std::string::npos) << out.status;
}

// Incast (invariant 7): three workers put into one slow receiver whose total credit holds
// two blocks. Its ledger never goes past its advertised limits; each put it refused for
// credit is re-sent by its putter, and every block commits intact.
TEST(DirectPut, SeveralPuttersNeverTakeTheReceiverPastItsCredit) {
  KvStoreServerOptions slow;
  slow.max_inflight_bytes = 2 * kBlock;
  slow.total_inflight_bytes = 2 * kBlock;
  slow.verify_offload_bytes = 64 * kKiB;  // the loop keeps taking headers while it verifies
  slow.finish_delay = std::chrono::milliseconds(2);
  Store b(slow);
  constexpr int kSenders = 3, kOrders = 6;
  std::vector<std::unique_ptr<Store>> sources;
  std::vector<std::unique_ptr<DirectPutter>> putters;
  std::vector<std::vector<uint8_t>> data;
  for (int s = 0; s < kSenders; ++s) {
    sources.push_back(std::make_unique<Store>());
    Serve fill(*sources.back());
    for (int i = 0; i < kOrders; ++i) {
      data.push_back(Pattern(kBlock, 10 + s * kOrders + i));
      ASSERT_TRUE(fill.Put("hbm-a", 1 + i, 1, data.back()).ok());
    }
    putters.push_back(std::make_unique<DirectPutter>(sources.back()->worker.get()));
  }
  Mutex mu;
  CondVar cv;
  std::vector<DirectPutOutcome> outcomes;
  for (int i = 0; i < kOrders; ++i) {
    for (int s = 0; s < kSenders; ++s) {
      uint64_t dst_id = 100 + s * kOrders + i;
      DirectPutOrder o = Order(*sources[s], b, dst_id, {{1ull + i, 1, dst_id, kBlock, {}, {}}});
      putters[s]->Submit(std::move(o), [&](DirectPutOutcome out) {
        MutexLock l(&mu);
        outcomes.push_back(std::move(out));
        cv.SignalAll();
      });
    }
  }
  {
    MutexLock l(&mu);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (outcomes.size() != kSenders * kOrders && cv.WaitUntil(&mu, end)) {
    }
    ASSERT_EQ(outcomes.size(), kSenders * kOrders);
  }
  uint64_t retries = 0;
  for (const DirectPutOutcome& o : outcomes) {
    EXPECT_TRUE(o.status.ok()) << "order " << o.order_id << ": " << o.status;
    retries += o.credit_retries;
  }
  KvStoreServerStats st = b.worker->stats();
  EXPECT_EQ(st.puts_committed, static_cast<uint64_t>(kSenders * kOrders));
  EXPECT_LE(st.max_credit_in_use_bytes, 2 * kBlock);
  EXPECT_LE(st.max_sender_credit_in_use_bytes, 2 * kBlock);
  EXPECT_EQ(st.credit_in_use_bytes, 0u);
  // Every refusal was answered by a re-send (none given up: the deadline is far).
  EXPECT_EQ(retries, st.puts_refused_credit);
  RecordProperty("puts_refused_credit", static_cast<int>(st.puts_refused_credit));
  uint64_t put_retries = 0;
  for (auto& p : putters) put_retries += p->stats().credit_retries;
  EXPECT_EQ(put_retries, retries);
  Serve at_b(b);
  for (int s = 0; s < kSenders; ++s)
    for (int i = 0; i < kOrders; ++i)
      EXPECT_EQ(at_b.Get("hbm-b", 100 + s * kOrders + i, 1, kBlock).value(), data[s * kOrders + i])
          << "sender " << s << " block " << i;
}

}  // namespace
}  // namespace switchyard::kv_store
