#include "kv_tiers/fault_injection.h"

#include <gtest/gtest.h>

#include "kv_tiers/local_mover.h"
#include "test_util.h"

namespace switchyard::kv_tiers {
namespace {

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.loop = &loop_;
    inner_ = std::make_shared<LocalMover>(env_);
    src_ = testing::MakeTier("host", testing::Opts(4));
    dst_ = testing::MakeTier("emulated-hbm", testing::Opts(4));
    s_ = src_->Allocate("t", 4096).value();
    d_ = dst_->Allocate("t", 4096).value();
    auto data = testing::Pattern(4096, 1);
    std::memcpy(src_->Data(s_), data.data(), 4096);
  }
  MoveRequest Req() {
    MoveRequest r;
    r.src = src_.get();
    r.dst = dst_.get();
    r.segments.push_back({s_, d_, 4096});
    return r;
  }
  // Outcomes (true = ok) of `n` moves through `m`.
  std::vector<bool> Outcomes(FaultyMover& m, int n) {
    std::vector<bool> out;
    for (int i = 0; i < n; ++i) out.push_back(m.Submit(Req(), nullptr).value().wait().ok());
    return out;
  }
  VirtualEventLoop loop_;
  MoverEnv env_;
  std::shared_ptr<Mover> inner_;
  std::unique_ptr<Tier> src_, dst_;
  Extent s_, d_;
};

TEST_F(FaultTest, FailAfterNPassesNThenFailsEverything) {
  FaultSpec spec;
  spec.fail_after = 3;
  FaultyMover m(inner_, spec, &loop_);
  EXPECT_EQ(Outcomes(m, 6), (std::vector<bool>{true, true, true, false, false, false}));
  EXPECT_EQ(m.injected_failures(), 3u);
  EXPECT_EQ(m.submitted(), 6u);
}

TEST_F(FaultTest, FailRateIsSeededAndDeterministic) {
  FaultSpec spec;
  spec.fail_rate = 0.5;
  spec.seed = 42;
  FaultyMover a(inner_, spec, &loop_), b(inner_, spec, &loop_);
  auto oa = Outcomes(a, 40), ob = Outcomes(b, 40);
  EXPECT_EQ(oa, ob);
  EXPECT_GT(a.injected_failures(), 5u);
  EXPECT_LT(a.injected_failures(), 35u);
}

TEST_F(FaultTest, PartialFailureLeavesHalfTheBytes) {
  FaultSpec spec;
  spec.fail_after = 0;
  FaultyMover m(inner_, spec, &loop_);
  std::memset(dst_->Data(d_), 0, 4096);
  EXPECT_TRUE(m.Submit(Req(), nullptr).value().wait().IsUnavailable());
  auto* src = static_cast<char*>(src_->Data(s_));
  auto* dst = static_cast<char*>(dst_->Data(d_));
  EXPECT_EQ(std::memcmp(src, dst, 2048), 0);
  EXPECT_NE(std::memcmp(src + 2048, dst + 2048, 2048), 0);
}

TEST_F(FaultTest, CorruptionFlipsABytesButReportsSuccess) {
  FaultSpec spec;
  spec.corrupt_rate = 1.0;
  FaultyMover m(inner_, spec, &loop_);
  EXPECT_TRUE(m.Submit(Req(), nullptr).value().wait().ok());
  EXPECT_NE(std::memcmp(src_->Data(s_), dst_->Data(d_), 4096), 0);
  EXPECT_EQ(m.injected_corruptions(), 1u);
}

TEST_F(FaultTest, DelayPostsTheCompletionLaterInVirtualTime) {
  FaultSpec spec;
  spec.delay = Millis(250);
  FaultyMover m(inner_, spec, &loop_);
  Time done_at = Time::Max();
  auto h = m.Submit(Req(), [&](const Status&) { done_at = loop_.Now(); });
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(h->wait().ok());
  ASSERT_TRUE(testing::DrainUntil(loop_, [&] { return done_at != Time::Max(); }));
  EXPECT_EQ(done_at, Time{0} + Millis(250));
}

}  // namespace
}  // namespace switchyard::kv_tiers
