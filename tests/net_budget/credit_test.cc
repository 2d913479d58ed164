#include "net_budget/credit.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/virtual_event_loop.h"

namespace switchyard::net_budget {
namespace {

class CreditTest : public ::testing::Test {
 protected:
  CreditTest() : credit_(&loop_) { EXPECT_TRUE(credit_.SetLimits("peer1", {1000, 4, 2}).ok()); }
  VirtualEventLoop loop_;
  CreditManager credit_;
};

TEST_F(CreditTest, ExhaustionAppliesBackpressureAndRecovers) {
  auto a = credit_.AcquireCredit("peer1", 600, "s1");
  ASSERT_TRUE(a.ok());
  auto b = credit_.AcquireCredit("peer1", 500, "s1");
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.status().IsResourceExhausted());
  EXPECT_TRUE(b.status().IsRetryable());
  EXPECT_EQ(b.status().message(),
            "destination 'peer1': credit exhausted (600 of 1000 bytes in flight, asked 500)");
  auto st = credit_.State("peer1");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->inflight_bytes, 600u);
  EXPECT_EQ(st->senders, 1u);
  a->Release();  // the receiver committed the data
  EXPECT_FALSE(a->valid());
  auto c = credit_.AcquireCredit("peer1", 500, "s1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->bytes(), 500u);
  EXPECT_EQ(c->destination(), "peer1");
}

TEST_F(CreditTest, SlotsLimitConcurrentTransfers) {
  std::vector<CreditLease> leases;
  for (int i = 0; i < 4; ++i)
    leases.push_back(std::move(credit_.AcquireCredit("peer1", 1, "s1")).value());
  auto r = credit_.AcquireCredit("peer1", 1, "s1");
  EXPECT_EQ(r.status().message(), "destination 'peer1': all 4 transfer slots in use");
  leases.pop_back();  // destructor returns the credit
  EXPECT_TRUE(credit_.AcquireCredit("peer1", 1, "s1").ok());
}

TEST_F(CreditTest, IncastLimitCapsConcurrentSenders) {
  auto a = credit_.AcquireCredit("peer1", 10, "s1");
  auto b = credit_.AcquireCredit("peer1", 10, "s2");
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = credit_.AcquireCredit("peer1", 10, "s3");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "destination 'peer1': incast limit of 2 concurrent senders reached (sender 's3')");
  EXPECT_TRUE(credit_.AcquireCredit("peer1", 10, "s1").ok());  // a sender already in
  b->Release();
  EXPECT_TRUE(credit_.AcquireCredit("peer1", 10, "s3").ok());
}

TEST_F(CreditTest, WaitersAreServedFifoWhenCreditReturns) {
  auto a = std::move(credit_.AcquireCredit("peer1", 900, "s1")).value();
  std::vector<std::string> order;
  std::vector<CreditLease> held;
  auto cb = [&](std::string name) {
    return [&, name](Result<CreditLease> l) {
      ASSERT_TRUE(l.ok()) << l.status();
      order.push_back(name);
      held.push_back(std::move(l).value());
    };
  };
  credit_.AcquireCreditAsync("peer1", 800, "s1", cb("big"));
  credit_.AcquireCreditAsync("peer1", 50, "s1", cb("small"));  // fits, but must not overtake
  loop_.Run();
  EXPECT_TRUE(order.empty());
  EXPECT_EQ(credit_.AcquireCredit("peer1", 10, "s1").status().message(),
            "destination 'peer1': 2 earlier requests are waiting for credit");
  EXPECT_EQ(credit_.State("peer1")->waiters, 2u);
  a.Release();
  loop_.Run();
  EXPECT_EQ(order, (std::vector<std::string>{"big", "small"}));
  EXPECT_EQ(credit_.State("peer1")->inflight_bytes, 850u);
}

TEST_F(CreditTest, CancelAndBadRequests) {
  auto a = std::move(credit_.AcquireCredit("peer1", 1000, "s1")).value();
  Status got;
  CreditWaitId id = credit_.AcquireCreditAsync("peer1", 10, "s1",
                                               [&](Result<CreditLease> l) { got = l.status(); });
  EXPECT_TRUE(credit_.Cancel(id));
  EXPECT_FALSE(credit_.Cancel(id));
  loop_.Run();
  EXPECT_TRUE(got.IsCancelled());
  EXPECT_EQ(credit_.AcquireCredit("peer1", 2000).status().message(),
            "destination 'peer1': request of 2000 bytes exceeds its credit limit of 1000 bytes");
  auto none = credit_.AcquireCredit("peer9", 1);
  EXPECT_TRUE(none.status().IsFailedPrecondition());
  EXPECT_EQ(none.status().message(), "destination 'peer9' has granted no credit (no limits set)");
  EXPECT_TRUE(credit_.State("peer9").status().IsNotFound());
  EXPECT_TRUE(credit_.SetLimits("peer2", {0, 1, 1}).IsInvalidArgument());
}

TEST_F(CreditTest, RaisingLimitsServesWaiters) {
  auto a = std::move(credit_.AcquireCredit("peer1", 1000, "s1")).value();
  bool served = false;
  credit_.AcquireCreditAsync("peer1", 500, "s1", [&](Result<CreditLease> l) { served = l.ok(); });
  ASSERT_TRUE(credit_.SetLimits("peer1", {2000, 4, 2}).ok());
  loop_.Run();
  EXPECT_TRUE(served);
}

TEST(CreditDefaultsTest, DefaultLimitsApplyToUnknownDestinationsAndLeasesOutliveManager) {
  VirtualEventLoop loop;
  Result<CreditLease> lease = Status::Internal("unset");
  {
    CreditManager credit(&loop, CreditLimits{100, 1, 1});
    lease = credit.AcquireCredit("anyone", 100);
    ASSERT_TRUE(lease.ok());
    EXPECT_TRUE(credit.AcquireCredit("anyone", 1).status().IsResourceExhausted());
  }
  lease->Release();
  EXPECT_FALSE(lease->valid());
}

}  // namespace
}  // namespace switchyard::net_budget
