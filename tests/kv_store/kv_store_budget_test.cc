// Budgets on transport posts (docs/design.md invariant 6): a put's data runs under a
// net_budget grant on every link of its path in its class, the client paces by the token
// buckets, and a transport refuses a post whose grant does not match it. The worker runs
// in this process (its own UCX worker and thread) over TCP loopback.
#include <gtest/gtest.h>

#include <thread>

#include "base/virtual_event_loop.h"
#include "kv_store/kv_store_client.h"
#include "kv_store/kv_store_server.h"
#include "net_budget/budget.h"
#include "proto/json.h"

namespace switchyard::kv_store {
namespace {

constexpr uint64_t kBlock1MiB = 1 << 20;
constexpr double kLinkBytesPerS = 1e8;  // 100 MB/s: 1 MiB of debt is paid back in ~10.5 ms

net_budget::Topology TwoHosts() {
  v1::Topology p;
  Status st = proto::ParseJson(R"({
    "devices": [{"id": "h0", "kind": "DEVICE_HOST"}, {"id": "h1", "kind": "DEVICE_HOST"}],
    "links": [{"id": "lo", "src": "h0", "dst": "h1", "kind": "LINK_LOOPBACK",
               "bandwidthBytesPerS": 1e8, "latencyUs": 10, "duplex": true}]})",
                               &p);
  EXPECT_TRUE(st.ok()) << st;
  return std::move(net_budget::Topology::FromProto(p)).value();
}

class KvStoreBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KvStoreServerOptions wo;
    wo.transport_config.params["TLS"] = "tcp";
    wo.capacity_bytes = 64 * kBlock1MiB;
    auto w = KvStoreServer::Start(wo);
    ASSERT_TRUE(w.ok()) << w.status();
    worker_ = std::move(*w);
    serve_ = std::thread([this] { worker_->Run(); });
    budgets_ = std::make_unique<net_budget::LinkBudgets>(topo_, &loop_);
    path_ = topo_.FindPath("h0", "h1").value();
    KvStoreClientOptions co;
    co.transport_config.params["TLS"] = "tcp";
    co.budgets = budgets_.get();
    co.budget_path = path_;
    auto c = KvStoreClient::Connect(worker_->address(), co);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }
  void TearDown() override {
    client_.reset();
    if (worker_) worker_->Stop();
    if (serve_.joinable()) serve_.join();
  }
  PutRequest Request(uint64_t id) {
    PutRequest r;
    r.workflow_id = "wf";
    r.context_id = "ctx";
    r.model_epoch = client_->model_epoch();
    r.generation = 1;
    r.blocks.push_back({id, block_.data(), block_.size()});
    return r;
  }
  net_budget::ClassState Throughput() const {
    return budgets_->State(path_.hops.front().channel(), net_budget::TrafficClass::kThroughput);
  }

  net_budget::Topology topo_ = TwoHosts();
  VirtualEventLoop loop_;
  std::unique_ptr<net_budget::LinkBudgets> budgets_;
  net_budget::Path path_;
  std::unique_ptr<KvStoreServer> worker_;
  std::thread serve_;
  std::unique_ptr<KvStoreClient> client_;
  std::vector<char> block_ = std::vector<char>(kBlock1MiB, 3);
};

TEST_F(KvStoreBudgetTest, PutRunsUnderAGrantThatIsReleasedWhenTheDataHasLeft) {
  transport::TransferOptions o;
  o.traffic_class = v1::THROUGHPUT;
  auto ev = client_->Put(Request(1), o);
  ASSERT_TRUE(ev.ok()) << ev.status();
  EXPECT_TRUE(ev->committed);
  EXPECT_EQ(Throughput().granted_bytes, kBlock1MiB);
  EXPECT_EQ(Throughput().inflight_bytes, 0u);
}

TEST_F(KvStoreBudgetTest, TokenBucketPacesPutsAtTheLinkRate) {
  transport::TransferOptions o;
  o.traffic_class = v1::THROUGHPUT;
  ASSERT_TRUE(client_->Put(Request(1), o).ok());
  // The class now owes ~1 MiB on the link: the next put is refused and nothing is posted
  // (no credit taken, nothing committed at the worker).
  auto refused = client_->Put(Request(2), o);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().IsResourceExhausted()) << refused.status();
  EXPECT_NE(refused.status().ToString().find("nothing posted"), std::string::npos);
  EXPECT_EQ(worker_->stats().puts_committed, 1u);
  // Half the pay-back time later the class is still behind; after all of it, it may go.
  const double payback_s = kBlock1MiB / kLinkBytesPerS;
  loop_.RunUntil(loop_.Now() + Duration(static_cast<int64_t>(payback_s * 0.5e9)));
  EXPECT_TRUE(client_->Put(Request(2), o).status().IsResourceExhausted());
  loop_.RunUntil(loop_.Now() + Duration(static_cast<int64_t>(payback_s * 0.6e9)));
  auto ev = client_->Put(Request(2), o);
  ASSERT_TRUE(ev.ok()) << ev.status();
  EXPECT_TRUE(ev->committed);
  EXPECT_EQ(worker_->stats().puts_committed, 2u);
  EXPECT_EQ(Throughput().granted_bytes, 2 * kBlock1MiB);
}

TEST_F(KvStoreBudgetTest, CallersGrantMustMatchClassAndCoverTheBytes) {
  auto small = budgets_->TryAcquire(path_, net_budget::TrafficClass::kLatency, kBlock1MiB / 2);
  ASSERT_TRUE(small.ok()) << small.status();
  transport::TransferOptions o;
  o.traffic_class = v1::LATENCY;
  o.grant = &*small;
  auto st = client_->Put(Request(1), o).status();
  EXPECT_TRUE(st.IsInvalidArgument()) << st;
  EXPECT_NE(st.ToString().find("exceeds its grant"), std::string::npos) << st;

  auto bg = budgets_->TryAcquire(path_, net_budget::TrafficClass::kBackground, kBlock1MiB);
  ASSERT_TRUE(bg.ok()) << bg.status();
  o.grant = &*bg;  // class background, post says latency
  st = client_->Put(Request(1), o).status();
  EXPECT_TRUE(st.IsInvalidArgument()) << st;
  EXPECT_NE(st.ToString().find("runs in the class it was granted"), std::string::npos) << st;

  o.traffic_class = v1::BACKGROUND;  // matching class and bytes: accepted
  auto ev = client_->Put(Request(1), o);
  ASSERT_TRUE(ev.ok()) << ev.status();
  EXPECT_TRUE(ev->committed);
  EXPECT_TRUE(bg->valid());  // the caller's grant is the caller's to release
  bg->Release();
  EXPECT_EQ(worker_->stats().puts_committed, 1u);
}

TEST_F(KvStoreBudgetTest, TransportRefusesAPostUnderAReleasedGrant) {
  auto g = budgets_->TryAcquire(path_, net_budget::TrafficClass::kThroughput, 4096);
  ASSERT_TRUE(g.ok()) << g.status();
  g->Release();
  std::vector<char> buf(4096);
  transport::TransferOptions o;
  o.traffic_class = v1::THROUGHPUT;
  o.grant = &*g;
  auto h = client_->transport()->PostRecv({{buf.data(), buf.size()}}, 77, ~transport::Tag{0}, o);
  ASSERT_FALSE(h.ok());
  EXPECT_TRUE(h.status().IsFailedPrecondition()) << h.status();
}

}  // namespace
}  // namespace switchyard::kv_store
