#include "net_budget/budget.h"

#include <gtest/gtest.h>

#include <memory>

#include "base/virtual_event_loop.h"
#include "proto/json.h"

namespace switchyard::net_budget {
namespace {

constexpr double kCap = 1e9;  // 1 GB/s per direction
constexpr uint64_t kMiB = 1 << 20;

// a -- l1 -- b -- l2 -- c, both 1 GB/s duplex; "u" has unknown bandwidth.
Topology Line() {
  v1::Topology p;
  Status st = proto::ParseJson(R"({
    "devices": [{"id": "a", "kind": "DEVICE_GPU"}, {"id": "b", "kind": "DEVICE_SWITCH"},
                {"id": "c", "kind": "DEVICE_GPU"}, {"id": "d", "kind": "DEVICE_NIC"}],
    "links": [
      {"id": "l1", "src": "a", "dst": "b", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1e9, "latencyUs": 1, "duplex": true},
      {"id": "l2", "src": "b", "dst": "c", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1e9, "latencyUs": 1, "duplex": true},
      {"id": "u", "src": "c", "dst": "d", "kind": "LINK_VETH", "unknownBandwidth": true, "latencyUs": 1}]})",
                               &p);
  EXPECT_TRUE(st.ok()) << st;
  return std::move(Topology::FromProto(p)).value();
}

// Keeps `depth` requests of `bytes` queued in one class on one path; counts bytes granted
// inside [window_start, window_end). Grants are released at once (the token debt, not the
// hold time, is what paces a class).
struct Saturator {
  LinkBudgets* budgets;
  EventLoop* loop;
  Path path;
  TrafficClass cls;
  uint64_t bytes;
  Time window_start, window_end;
  uint64_t counted = 0;
  bool stopped = false;

  void Submit() {
    budgets->Acquire(path, cls, bytes, [this](Result<Grant> g) {
      ASSERT_TRUE(g.ok()) << g.status();
      EXPECT_EQ(g->traffic_class(), cls);
      if (g->granted_at() >= window_start && g->granted_at() < window_end) counted += g->bytes();
      g->Release();
      if (!stopped) Submit();
    });
  }
  void Start(int depth) {
    for (int i = 0; i < depth; ++i) Submit();
  }
};

class BudgetTest : public ::testing::Test {
 protected:
  BudgetTest() : topo_(Line()) {
    ab_ = std::move(topo_.FindPath("a", "b")).value();
    ac_ = std::move(topo_.FindPath("a", "c")).value();
  }
  std::unique_ptr<Saturator> Saturate(LinkBudgets* b, TrafficClass cls, int depth, Time start,
                                      Time end, uint64_t bytes = kMiB) {
    auto s = std::make_unique<Saturator>(Saturator{b, &loop_, ab_, cls, bytes, start, end});
    s->Start(depth);
    return s;
  }

  VirtualEventLoop loop_;
  Topology topo_;
  Path ab_, ac_;
};

BudgetPolicy NoYield() {
  BudgetPolicy p;
  p.latency_yield_backlog_bytes = 1e18;  // background never yields in this test
  return p;
}

TEST_F(BudgetTest, SharesUnderContentionMatchWeightsWithinFivePercent) {
  LinkBudgets b(topo_, &loop_, NoYield());
  const Time t0 = Time::FromSeconds(1), t1 = Time::FromSeconds(11);
  std::vector<std::unique_ptr<Saturator>> s;
  for (TrafficClass c : kAllClasses) s.push_back(Saturate(&b, c, 4, t0, t1));
  loop_.RunUntil(t1);
  // weights 4:3:1:1, control 1/9 > its 5% reserve.
  const double expect[] = {4.0 / 9, 3.0 / 9, 1.0 / 9, 1.0 / 9};
  const double total = kCap * 10;
  for (size_t k = 0; k < kNumClasses; ++k) {
    double share = s[k]->counted / total;
    EXPECT_NEAR(share, expect[k], expect[k] * 0.05) << ClassName(kAllClasses[k]);
    s[k]->stopped = true;
  }
}

TEST_F(BudgetTest, ControlReserveHoldsWhenItsWeightIsTiny) {
  BudgetPolicy p = NoYield();
  p.weights = {4, 3, 1, 0.01};
  LinkBudgets b(topo_, &loop_, p);
  const Time t0 = Time::FromSeconds(1), t1 = Time::FromSeconds(11);
  std::vector<std::unique_ptr<Saturator>> s;
  for (TrafficClass c : kAllClasses)
    s.push_back(Saturate(&b, c, 4, t0, t1, c == TrafficClass::kControl ? 64 * 1024 : kMiB));
  loop_.RunUntil(t1);
  const double total = kCap * 10;
  EXPECT_NEAR(s[3]->counted / total, 0.05, 0.05 * 0.05);                  // the reserve
  EXPECT_NEAR(s[0]->counted / total, 0.95 * 4 / 8, 0.95 * 4 / 8 * 0.05);  // pool by weight
  for (auto& x : s) x->stopped = true;
}

// The reserve of a link kind (the collectives' share where they cross those links) holds
// on that kind's links and nowhere else.
TEST_F(BudgetTest, AReserveByLinkKindHoldsOnThatKindOnly) {
  for (const char* kind : {"pcie", "veth"}) {  // l1 is PCIe: 0.6 there, then the default
    BudgetPolicy p = NoYield();
    p.weights = {4, 3, 1, 0.01};
    p.control_reserve_by_link_kind[kind] = 0.6;
    VirtualEventLoop loop;
    LinkBudgets b(topo_, &loop, p);
    const Time t0 = Time::FromSeconds(1), t1 = Time::FromSeconds(11);
    Saturator ctrl{&b, &loop, ab_, TrafficClass::kControl, 64 * 1024, t0, t1};
    Saturator lat{&b, &loop, ab_, TrafficClass::kLatency, kMiB, t0, t1};
    ctrl.Start(4);
    lat.Start(4);
    loop.RunUntil(t1);
    const double want = std::string(kind) == "pcie" ? 0.6 : 0.05;
    EXPECT_NEAR(ctrl.counted / (kCap * 10), want, want * 0.05) << kind;
    EXPECT_NEAR(lat.counted / (kCap * 10), 1 - want, (1 - want) * 0.05) << kind;
    ctrl.stopped = lat.stopped = true;
  }
}

TEST_F(BudgetTest, ControlIsNeverStarvedByHugeTransfers) {
  LinkBudgets b(topo_, &loop_);
  const Time t1 = Time::FromSeconds(20);
  std::vector<std::unique_ptr<Saturator>> s;
  for (TrafficClass c :
       {TrafficClass::kLatency, TrafficClass::kThroughput, TrafficClass::kBackground}) {
    s.push_back(Saturate(&b, c, 8, Time{0}, t1, 256 * kMiB));
  }
  // A small control message every 100 ms; each must be granted within 1 ms.
  int granted = 0;
  Duration worst{0};
  for (int i = 0; i < 100; ++i) {
    loop_.PostAt(Time::FromMillis(50 + 100 * i), [&] {
      Time asked = loop_.Now();
      b.Acquire(ab_, TrafficClass::kControl, 4096, [&, asked](Result<Grant> g) {
        ASSERT_TRUE(g.ok());
        worst = std::max(worst, loop_.Now() - asked);
        ++granted;
      });
    });
  }
  loop_.RunUntil(Time::FromSeconds(10.1));
  EXPECT_EQ(granted, 100);
  EXPECT_LE(worst, Millis(1));
  for (auto& x : s) x->stopped = true;
}

TEST_F(BudgetTest, BackgroundYieldsAsLatencyDemandRises) {
  LinkBudgets b(topo_, &loop_);  // yield backlog 64 MiB, floor 0.1
  auto thr = Saturate(&b, TrafficClass::kThroughput, 4, Time::FromSeconds(1), Time::FromSeconds(6));
  auto bg = Saturate(&b, TrafficClass::kBackground, 4, Time::FromSeconds(1), Time::FromSeconds(6));
  loop_.RunUntil(Time::FromSeconds(6));
  double bg_before = bg->counted / (kCap * 5);
  EXPECT_NEAR(bg_before, 0.25, 0.25 * 0.05);  // 1 / (3 + 1)
  // Latency demand arrives with a deep backlog (> 64 MiB queued): background drops to
  // its floor weight 0.1: share 0.1 / (4 + 3 + 0.1).
  bg->window_start = thr->window_start = Time::FromSeconds(8);
  bg->window_end = thr->window_end = Time::FromSeconds(18);
  bg->counted = thr->counted = 0;
  auto lat = Saturate(&b, TrafficClass::kLatency, 100, Time::FromSeconds(8), Time::FromSeconds(18));
  loop_.RunUntil(Time::FromSeconds(18));
  double bg_after = bg->counted / (kCap * 10);
  EXPECT_NEAR(bg_after, 0.1 / 7.1, 0.1 / 7.1 * 0.05);
  EXPECT_NEAR(lat->counted / (kCap * 10), 4 / 7.1, 4 / 7.1 * 0.05);
  EXPECT_LT(bg_after, bg_before / 10);
  // Background keeps its floor: it yields, it is not starved.
  ClassState st = b.State(ab_.hops[0].channel(), TrafficClass::kBackground);
  EXPECT_GT(st.rate_bytes_per_s, 0);
  thr->stopped = bg->stopped = lat->stopped = true;
}

TEST_F(BudgetTest, LoneClassGetsTheWholeLinkAndIdleSharesAreBorrowed) {
  LinkBudgets b(topo_, &loop_);
  auto thr =
      Saturate(&b, TrafficClass::kThroughput, 2, Time::FromSeconds(1), Time::FromSeconds(11));
  loop_.RunUntil(Time::FromSeconds(11));
  EXPECT_NEAR(thr->counted / (kCap * 10), 1.0, 0.05);
  // Background joins for a while, then stops: throughput gets it all back.
  auto bg =
      Saturate(&b, TrafficClass::kBackground, 2, Time::FromSeconds(11), Time::FromSeconds(16));
  loop_.RunUntil(Time::FromSeconds(16));
  bg->stopped = true;
  thr->counted = 0;
  thr->window_start = Time::FromSeconds(18);
  thr->window_end = Time::FromSeconds(28);
  loop_.RunUntil(Time::FromSeconds(28));
  EXPECT_NEAR(thr->counted / (kCap * 10), 1.0, 0.05);
  EXPECT_EQ(b.State(ab_.hops[0].channel(), TrafficClass::kBackground).rate_bytes_per_s, 0);
  thr->stopped = true;
}

TEST_F(BudgetTest, MultiLinkGrantIsAllOrNothingInOneClass) {
  LinkBudgets b(topo_, &loop_);
  auto bc = std::move(topo_.FindPath("b", "c")).value();
  // Throughput owes 100 MB on l2 only.
  auto big = b.TryAcquire(bc, TrafficClass::kThroughput, 100'000'000);
  ASSERT_TRUE(big.ok());
  ChannelIndex c1 = ac_.hops[0].channel(), c2 = ac_.hops[1].channel();
  auto refused = b.TryAcquire(ac_, TrafficClass::kThroughput, kMiB);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().IsResourceExhausted());
  EXPECT_TRUE(refused.status().IsRetryable());
  EXPECT_EQ(refused.status().message(),
            "class throughput is over its budget on link 'l2' (0 queued, 100000000 bytes owed)");
  EXPECT_EQ(b.State(c1, TrafficClass::kThroughput).granted_bytes, 0u);  // nothing on l1
  // Another class is not held back by throughput's debt.
  auto lat = b.TryAcquire(ac_, TrafficClass::kLatency, kMiB);
  ASSERT_TRUE(lat.ok());
  EXPECT_EQ(lat->channels(), (std::vector<ChannelIndex>{c1, c2}));
  EXPECT_EQ(lat->traffic_class(), TrafficClass::kLatency);
  for (ChannelIndex c : {c1, c2}) {
    EXPECT_EQ(b.State(c, TrafficClass::kLatency).granted_bytes, kMiB);
    EXPECT_EQ(b.State(c, TrafficClass::kLatency).inflight_bytes, kMiB);
    EXPECT_EQ(b.State(c, TrafficClass::kThroughput).inflight_bytes, c == c2 ? 100'000'000u : 0u);
  }
  // The async form waits until l2 is paid off, then takes both links at once.
  Time granted_at = Time::Max();
  b.Acquire(ac_, TrafficClass::kThroughput, kMiB, [&](Result<Grant> g) {
    ASSERT_TRUE(g.ok());
    granted_at = loop_.Now();
    EXPECT_EQ(g->channels().size(), 2u);
  });
  EXPECT_EQ(b.State(c1, TrafficClass::kThroughput).queued, 1u);
  loop_.Run();
  // Throughput shares l2 with latency's 1 MiB debt for a moment, then has it alone:
  // 100 MB at about 1 GB/s.
  EXPECT_GT(granted_at, Time::FromSeconds(0.09));
  EXPECT_LT(granted_at, Time::FromSeconds(0.11));
  EXPECT_EQ(b.State(c1, TrafficClass::kThroughput).granted_bytes, kMiB);
  lat->Release();
  EXPECT_FALSE(lat->valid());
  EXPECT_EQ(b.State(c1, TrafficClass::kLatency).inflight_bytes, 0u);
  { Grant moved = std::move(big).value(); }  // destructor releases
  EXPECT_EQ(b.State(c2, TrafficClass::kThroughput).inflight_bytes, 0u);
}

TEST_F(BudgetTest, RejectsUnbudgetableRequests) {
  LinkBudgets b(topo_, &loop_);
  auto cd = std::move(topo_.FindPath("c", "d")).value();
  auto r = b.TryAcquire(cd, TrafficClass::kLatency, 10);
  EXPECT_TRUE(r.status().IsFailedPrecondition());
  EXPECT_EQ(r.status().message(),
            "link 'u': bandwidth unknown (not discovered, configured or calibrated); it cannot be "
            "budgeted");
  EXPECT_TRUE(b.TryAcquire(ab_, TrafficClass::kLatency, 0).status().IsInvalidArgument());
  Status async;
  b.Acquire(cd, TrafficClass::kLatency, 10, [&](Result<Grant> g) { async = g.status(); });
  loop_.Run();
  EXPECT_TRUE(async.IsFailedPrecondition());
}

TEST_F(BudgetTest, CancelWithdrawsAQueuedRequest) {
  LinkBudgets b(topo_, &loop_);
  auto first = b.TryAcquire(ab_, TrafficClass::kBackground, 500'000'000);
  ASSERT_TRUE(first.ok());
  Status got;
  RequestId id =
      b.Acquire(ab_, TrafficClass::kBackground, 10, [&](Result<Grant> g) { got = g.status(); });
  EXPECT_TRUE(b.Cancel(id));
  EXPECT_FALSE(b.Cancel(id));
  loop_.Run();
  EXPECT_TRUE(got.IsCancelled());
  EXPECT_EQ(b.State(ab_.hops[0].channel(), TrafficClass::kBackground).queued, 0u);
}

TEST_F(BudgetTest, GrantsOutliveTheBudgets) {
  Result<Grant> g = Status::Internal("unset");
  {
    LinkBudgets b(topo_, &loop_);
    g = b.TryAcquire(ab_, TrafficClass::kLatency, 10);
    ASSERT_TRUE(g.ok());
  }
  g->Release();  // no crash, nothing to release into
  EXPECT_FALSE(g->valid());
}

TEST(BudgetPolicyTest, ReadsConfigAndRejectsBadValues) {
  v1::BudgetPolicyConfig cfg;
  cfg.mutable_weights()->set_latency(8);
  cfg.set_control_reserve(0.1);
  auto p = BudgetPolicy::FromProto(cfg);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->weights[0], 8);
  EXPECT_EQ(p->weights[1], 3);  // default kept
  EXPECT_EQ(p->control_reserve, 0.1);
  cfg.set_control_reserve(1.5);
  EXPECT_EQ(BudgetPolicy::FromProto(cfg).status().message(),
            "budget.control_reserve must be in [0, 1), got 1.500000");
  cfg.set_control_reserve(0.1);
  cfg.mutable_weights()->set_background(-1);
  EXPECT_EQ(BudgetPolicy::FromProto(cfg).status().message(),
            "budget.weights.background must be > 0, got -1.000000");
  cfg.mutable_weights()->set_background(1);
  (*cfg.mutable_control_reserve_by_link_kind())["nvlink"] = 0.9;
  p = BudgetPolicy::FromProto(cfg);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->control_reserve_by_link_kind.at("nvlink"), 0.9);
  (*cfg.mutable_control_reserve_by_link_kind())["nvlnk"] = 0.9;
  EXPECT_NE(BudgetPolicy::FromProto(cfg).status().message().find("'nvlnk' is not a link kind"),
            std::string::npos);
  cfg.mutable_control_reserve_by_link_kind()->erase("nvlnk");
  (*cfg.mutable_control_reserve_by_link_kind())["nic_port"] = 1.0;
  EXPECT_EQ(BudgetPolicy::FromProto(cfg).status().message(),
            "budget.controlReserveByLinkKind.nic_port must be in [0, 1), got 1.000000");
}

}  // namespace
}  // namespace switchyard::net_budget
