// Receiver-granted credit (docs/design.md invariant 7) end to end: a KvStoreServer in this
// process (its credit ledger is readable through stats()) advertises its per-sender and
// total limits in the hello ack and enforces them on every put header; KvStoreClients take
// their credit from the hello, and several of them putting at once never take the
// receiver past its limits. Over TCP loopback (UCX_TLS=tcp).
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <thread>

#include "kv_store/kv_store_client.h"
#include "kv_store/kv_store_server.h"
#include "tests/common/wait_until.h"
#include "tests/kv_store/stores.h"
#include "tests/kv_store/worker_process.h"

namespace switchyard::kv_store {
namespace {

using ::switchyard::testing::WaitUntil;
using testing::kKiB;
using testing::kMiB;
using testing::Pattern;
using testing::TcpClient;

class KvStoreCreditTest : public ::testing::Test {
 protected:
  void StartWorker(uint64_t per_sender, uint64_t total, uint32_t transfers = 64,
                   std::chrono::microseconds finish_delay = {}) {
    KvStoreServerOptions wo;
    wo.finish_delay = finish_delay;
    // Puts are finished on the verifier thread: the loop keeps accepting headers while a
    // slow receiver (finish_delay) is still finishing earlier puts.
    wo.verify_offload_bytes = 64 * kKiB;
    wo.transport_config.params["TLS"] = "tcp";
    wo.capacity_bytes = 256 * kMiB;
    wo.max_inflight_bytes = per_sender;
    wo.total_inflight_bytes = total;
    wo.max_inflight_transfers = transfers;
    auto w = KvStoreServer::Start(wo);
    ASSERT_TRUE(w.ok()) << w.status();
    worker_ = std::move(*w);
    serve_ = std::thread([this] { worker_->Run(); });
  }
  void TearDown() override {
    if (worker_) worker_->Stop();
    if (serve_.joinable()) serve_.join();
  }
  std::unique_ptr<KvStoreServer> worker_;
  std::thread serve_;
};

// A sender that writes the protocol by hand, so a test can hold a put's data back (its
// header charged, its bytes not yet sent) or claim more than its credit.
class RawSender {
 public:
  explicit RawSender(const std::string& address) {
    transport::TransportConfig c;
    c.params["TLS"] = "tcp";
    t_ = std::move(transport::TransportRegistry::Global().Create("ucx", c)).value();
    peer_ = t_->Connect(address).value();
    me_ = t_->IdAtPeer(peer_).value();
  }
  // Posts the ack receive and the header of a put of `data` (one block, id `id`).
  void SendHeader(uint64_t xfer, uint64_t epoch, uint64_t id, const std::vector<uint8_t>& data) {
    BlockHeader h;
    h.transfer_id = xfer;
    h.communicator_epoch = epoch;
    h.generation = 1;
    h.workflow_id = "wf_raw";
    h.context_id = "c";
    h.blocks = {{id, data.size(), ChecksumOf(data.data(), data.size())}};
    h.length = data.size();
    header_ = Encode(h);
    ack_buf_.assign(4096, 0);
    ack_ = std::move(t_->PostRecv({{ack_buf_.data(), ack_buf_.size()}},
                                  MakeTag(MsgType::kAck, 0, xfer), kFullMask, {}))
               .value();
    auto s = t_->PostSend(peer_, {{header_.data(), header_.size()}},
                          MakeTag(MsgType::kPutHeader, me_, xfer), {});
    ASSERT_TRUE(s.ok() && s->wait().ok());
  }
  void SendData(uint64_t xfer, const std::vector<uint8_t>& data) {
    data_ = std::move(t_->PostSend(peer_, {{const_cast<uint8_t*>(data.data()), data.size()}},
                                   MakeTag(MsgType::kPutData, me_, xfer), {}))
                .value();
  }
  Result<Ack> WaitAck() {
    SY_RETURN_IF_ERROR(ack_.wait_for(std::chrono::seconds(30)));
    if (data_.valid()) (void)data_.wait_for(std::chrono::seconds(30));
    return DecodeAck(std::span<const uint8_t>(ack_buf_.data(), ack_.bytes()));
  }
  // Sends a hello announcing `version`; the worker's answer.
  Result<HelloAck> Hello(uint32_t version) {
    std::vector<uint8_t> reply(4096);
    auto r = t_->PostRecv({{reply.data(), reply.size()}}, MakeTag(MsgType::kHelloAck, 0, 1),
                          kFullMask, {});
    SY_RETURN_IF_ERROR(r.status());
    std::vector<uint8_t> msg = Encode(kv_store::Hello{version, 1});
    auto s = t_->PostSend(peer_, {{msg.data(), msg.size()}}, MakeTag(MsgType::kHello, me_, 1), {});
    SY_RETURN_IF_ERROR(s.status());
    SY_RETURN_IF_ERROR(s->wait());
    SY_RETURN_IF_ERROR(r->wait_for(std::chrono::seconds(30)));
    std::span<const uint8_t> in(reply.data(), r->bytes());
    // A refusal is encoded in the worker's own version: decode it as such.
    return DecodeHelloAck(in);
  }

 private:
  std::unique_ptr<transport::Transport> t_;
  transport::EndpointId peer_ = 0;
  uint64_t me_ = 0;
  std::vector<uint8_t> header_, ack_buf_;
  transport::TransferHandle ack_, data_;
};

TEST_F(KvStoreCreditTest, HelloAdvertisesTheLimitsAndTheClientLedgerTakesThem) {
  StartWorker(2 * kMiB, 3 * kMiB, 16);
  auto c = KvStoreClient::Connect(worker_->address(), TcpClient());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->hello().protocol_version, kProtocolVersion);
  EXPECT_EQ((*c)->hello().max_inflight_bytes, 2 * kMiB);
  EXPECT_EQ((*c)->hello().total_inflight_bytes, 3 * kMiB);
  EXPECT_EQ((*c)->hello().max_inflight_transfers, 16u);
  auto ledger = (*c)->credits()->State(worker_->address());
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  EXPECT_EQ(ledger->limits.max_inflight_bytes, 2 * kMiB);
  EXPECT_EQ(ledger->limits.max_inflight_transfers, 16u);
  // A put larger than the grant could never be served: refused before anything is posted.
  std::vector<uint8_t> big = Pattern(2 * kMiB + 1, 1);
  PutRequest r{"wf", "ctx", 0, 1, {{1, big.data(), big.size()}}};
  auto p = (*c)->PostPut(r);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(p.status().IsInvalidArgument()) << p.status();
  EXPECT_EQ(worker_->stats().puts_refused_credit, 0u);  // nothing reached the worker
}

TEST_F(KvStoreCreditTest, PerSenderCreditIsAlwaysBelowTheTotal) {
  StartWorker(8 * kMiB, 3 * kMiB);
  EXPECT_EQ(worker_->credit_limits().per_sender_bytes, 3 * kMiB);
  auto c = KvStoreClient::Connect(worker_->address(), TcpClient());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->hello().max_inflight_bytes, 3 * kMiB);
}

TEST_F(KvStoreCreditTest, ZeroLimitsAreRefusedAtStart) {
  KvStoreServerOptions wo;
  wo.transport_config.params["TLS"] = "tcp";
  wo.total_inflight_bytes = 0;
  auto w = KvStoreServer::Start(wo);
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(w.status().IsInvalidArgument()) << w.status();
}

// A put over the sender's credit, and one over the total while another sender's put is
// accepted and not yet committed, are refused with the limit named, their data
// discarded; the held put commits once its data arrives and its ack returns the credit,
// after which the refused one goes through.
TEST_F(KvStoreCreditTest, PutsBeyondCreditAreRefusedWithTheReason) {
  StartWorker(2 * kMiB, 3 * kMiB);
  const uint64_t epoch = worker_->communicator_epoch();
  std::vector<uint8_t> over = Pattern(2 * kMiB + 4 * kKiB, 1);
  std::vector<uint8_t> a_data = Pattern(2 * kMiB, 2), b_data = Pattern(2 * kMiB, 3);

  RawSender a(worker_->address()), b(worker_->address());
  a.SendHeader(10, epoch, 100, over);
  a.SendData(10, over);
  auto refused = a.WaitAck();
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_FALSE(refused->committed);
  EXPECT_EQ(refused->reason, RejectReason::kCredit);
  EXPECT_NE(refused->message.find("per-sender limit of 2097152 B"), std::string::npos)
      << refused->message;
  EXPECT_EQ(refused->credit_bytes_returned, 0u);  // nothing was charged

  a.SendHeader(11, epoch, 101, a_data);  // accepted: 2 MiB charged, data held back
  ASSERT_TRUE(WaitUntil([&] { return worker_->stats().credit_in_use_bytes == 2 * kMiB; }));
  b.SendHeader(20, epoch, 200, b_data);  // 2 + 2 MiB > 3 MiB in total
  b.SendData(20, b_data);
  auto incast = b.WaitAck();
  ASSERT_TRUE(incast.ok()) << incast.status();
  EXPECT_EQ(incast->reason, RejectReason::kCredit);
  EXPECT_NE(incast->message.find("total (incast) limit of 3145728 B"), std::string::npos)
      << incast->message;
  EXPECT_NE(incast->message.find("2097152 B in use"), std::string::npos) << incast->message;
  EXPECT_EQ(worker_->stats().credit_in_use_bytes, 2 * kMiB);  // a refusal charges nothing

  a.SendData(11, a_data);
  auto committed = a.WaitAck();
  ASSERT_TRUE(committed.ok()) << committed.status();
  EXPECT_TRUE(committed->committed) << RejectReasonName(committed->reason);
  EXPECT_EQ(committed->credit_bytes_returned, 2 * kMiB);
  EXPECT_EQ(worker_->stats().credit_in_use_bytes, 0u);  // returned before the ack left

  b.SendHeader(21, epoch, 200, b_data);  // the retry fits now
  b.SendData(21, b_data);
  auto retried = b.WaitAck();
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_TRUE(retried->committed) << RejectReasonName(retried->reason) << retried->message;

  KvStoreServerStats st = worker_->stats();
  EXPECT_EQ(st.puts_refused_credit, 2u);
  EXPECT_EQ(st.puts_committed, 2u);
  EXPECT_EQ(st.max_credit_in_use_bytes, 2 * kMiB);
  // The refused puts left nothing behind; the committed ones read back intact.
  auto c = KvStoreClient::Connect(worker_->address(), TcpClient());
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<uint8_t> dst(over.size());
  auto none = (*c)->Get({"wf_raw", "c", 0, 1, {100}, {{dst.data(), dst.size()}}});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->reason, RejectReason::kNotFound);
  for (auto [id, want] :
       {std::pair<uint64_t, const std::vector<uint8_t>*>{101, &a_data}, {200, &b_data}}) {
    std::vector<uint8_t> back(want->size());
    auto got = (*c)->Get({"wf_raw", "c", 0, 1, {id}, {{back.data(), back.size()}}});
    ASSERT_TRUE(got.ok() && got->validated) << id;
    EXPECT_EQ(back, *want) << id;
  }
}

// Four senders put at once against a slow worker whose total is a third of what they
// could hold together: the receiver's own ledger never exceeds the total or any sender's limit, and
// every block ends committed with its bytes (refused puts are retried by the sender).
TEST_F(KvStoreCreditTest, ConcurrentSendersNeverExceedTheReceiverLimits) {
  constexpr uint64_t kPerSender = 1536 * kKiB, kTotal = 2 * kMiB, kBlock = 256 * kKiB;
  constexpr int kSenders = 4, kPuts = 24;
  // The receiver finishes each put 1 ms late: accepted-not-committed bytes pile up, so
  // the senders' credit (4 x 1.5 MiB) really does exceed the total at times.
  StartWorker(kPerSender, kTotal, 64, std::chrono::milliseconds(1));
  std::vector<std::unique_ptr<KvStoreClient>> clients;
  for (int i = 0; i < kSenders; ++i) {
    auto c = KvStoreClient::Connect(worker_->address(), TcpClient());
    ASSERT_TRUE(c.ok()) << c.status();
    clients.push_back(std::move(*c));
  }
  std::vector<std::vector<std::vector<uint8_t>>> data(kSenders);
  for (int s = 0; s < kSenders; ++s) {
    for (int i = 0; i < kPuts; ++i) data[s].push_back(Pattern(kBlock, s * 1000 + i));
  }
  // Block ids are the worker's keys, one owner each: every sender has its own range.
  auto BlockId = [](int s, int i) { return static_cast<uint64_t>(s * 1000 + i); };
  std::vector<int> retries(kSenders, 0);
  std::vector<std::string> errors(kSenders);
  auto send_all = [&](int s) {
    KvStoreClient& c = *clients[s];
    std::deque<int> todo;
    for (int i = 0; i < kPuts; ++i) todo.push_back(i);
    std::deque<std::pair<int, PendingPut>> pending;
    auto finish_oldest = [&]() -> bool {
      auto [i, p] = std::move(pending.front());
      pending.pop_front();
      auto r = p.Wait();
      if (!r.ok()) {
        errors[s] = r.status().ToString();
        return false;
      }
      if (r->committed) return true;
      if (r->reason != RejectReason::kCredit) {
        errors[s] = std::string(RejectReasonName(r->reason));
        return false;
      }
      ++retries[s];
      todo.push_back(i);  // refused by the receiver: retry once credit has returned
      // A retry is right whenever it comes (refused again, it comes back here).
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // load back-off, not sync
      return true;
    };
    while (!todo.empty() || !pending.empty()) {
      if (todo.empty()) {
        if (!finish_oldest()) return;
        continue;
      }
      int i = todo.front();
      PutRequest r{"wf_" + std::to_string(s), "ctx", 0, 1, {}};
      r.blocks.push_back({BlockId(s, i), data[s][i].data(), kBlock});
      auto p = c.PostPut(r);
      if (p.ok()) {
        todo.pop_front();
        pending.emplace_back(i, std::move(*p));
      } else if (!p.status().IsResourceExhausted() || pending.empty()) {
        errors[s] = p.status().ToString();
        return;
      } else if (!finish_oldest()) {  // no credit left: wait for an ack to free some
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int s = 0; s < kSenders; ++s) threads.emplace_back(send_all, s);
  for (auto& t : threads) t.join();
  for (int s = 0; s < kSenders; ++s) ASSERT_EQ(errors[s], "") << "sender " << s;

  KvStoreServerStats st = worker_->stats();
  EXPECT_EQ(st.puts_committed, uint64_t{kSenders * kPuts});
  EXPECT_GT(st.max_credit_in_use_bytes, 0u);
  EXPECT_LE(st.max_credit_in_use_bytes, kTotal);
  EXPECT_LE(st.max_sender_credit_in_use_bytes, kPerSender);
  EXPECT_EQ(st.credit_in_use_bytes, 0u);
  int total_retries = 0;
  for (int n : retries) total_retries += n;
  EXPECT_EQ(st.puts_refused_credit, static_cast<uint64_t>(total_retries));
  RecordProperty("refused_for_credit", total_retries);
  RecordProperty("max_credit_in_use_bytes", static_cast<int64_t>(st.max_credit_in_use_bytes));
  for (int s = 0; s < kSenders; ++s) {
    for (int i = 0; i < kPuts; ++i) {
      std::vector<uint8_t> back(kBlock);
      GetSpec g{"wf_" + std::to_string(s), "ctx", 0, 1, {BlockId(s, i)}, {}};
      g.dst.push_back({back.data(), back.size()});
      auto got = clients[s]->Get(g);
      ASSERT_TRUE(got.ok() && got->validated) << s << "/" << i;
      ASSERT_EQ(back, data[s][i]) << s << "/" << i;
    }
  }
}

TEST_F(KvStoreCreditTest, ProtocolVersionMismatchIsRefusedNamingBothVersions) {
  StartWorker(2 * kMiB, 4 * kMiB);
  KvStoreClientOptions o = TcpClient();
  o.protocol_version = kProtocolVersion + 1;
  auto c = KvStoreClient::Connect(worker_->address(), o);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().IsFailedPrecondition()) << c.status();
  const std::string want = "the sender speaks v" + std::to_string(kProtocolVersion + 1) +
                           ", the worker speaks v" + std::to_string(kProtocolVersion);
  EXPECT_NE(c.status().message().find(want), std::string::npos) << c.status();
  // The unversioned hello of version 1 is refused the same way.
  RawSender raw(worker_->address());
  auto old = raw.Hello(1);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_NE(old->refused.find("the sender speaks v1"), std::string::npos) << old->refused;
  EXPECT_EQ(old->max_inflight_bytes, 0u);  // no credit granted to a refused session
  // A worker of this version still serves this version.
  auto ok = KvStoreClient::Connect(worker_->address(), TcpClient());
  EXPECT_TRUE(ok.ok()) << ok.status();
}

// `switchyard worker --credit-per-sender --credit-total` advertises what it was given.
TEST(KvStoreCreditCliTest, WorkerFlagsAreAdvertised) {
  if (!testing::HaveSwitchyardBinary()) {
    GTEST_SKIP() << "needs the switchyard binary at " << testing::SwitchyardBinary();
  }
  testing::WorkerProcess w;
  ASSERT_TRUE(w.Start("127.0.0.1:0", "tcp", "", "64M",
                      {"--credit-per-sender", "3M", "--credit-total", "5M"}));
  auto c = KvStoreClient::Connect(w.address(), TcpClient());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->hello().max_inflight_bytes, 3 * kMiB);
  EXPECT_EQ((*c)->hello().total_inflight_bytes, 5 * kMiB);
}

}  // namespace
}  // namespace switchyard::kv_store
