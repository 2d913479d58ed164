// Contract tests run against both EventLoop implementations, plus virtual-time specifics.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "base/asio_event_loop.h"
#include "base/virtual_event_loop.h"

namespace switchyard {
namespace {

enum class Kind { kVirtual, kAsio };

class EventLoopContract : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::kVirtual) {
      loop_ = std::make_unique<VirtualEventLoop>();
    } else {
      loop_ = std::make_unique<AsioEventLoop>();
    }
  }
  std::unique_ptr<EventLoop> loop_;
};

TEST_P(EventLoopContract, TimersRunInDueOrderThenFifo) {
  std::vector<int> order;
  Time t0 = loop_->Now();
  loop_->PostAt(t0 + Millis(30), [&] { order.push_back(3); });
  loop_->PostAt(t0 + Millis(10), [&] { order.push_back(1); });
  loop_->PostAt(t0 + Millis(20), [&] { order.push_back(2); });
  loop_->Post([&] { order.push_back(0); });
  loop_->RunUntil(t0 + Millis(60));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_GE(loop_->Now(), t0 + Millis(30));
}

TEST_P(EventLoopContract, CancelledTimerDoesNotRun) {
  bool ran = false;
  TimerId id = loop_->PostAfter(Millis(5), [&] { ran = true; });
  EXPECT_TRUE(loop_->Cancel(id));
  EXPECT_FALSE(loop_->Cancel(id));
  loop_->RunFor(Millis(20));
  EXPECT_FALSE(ran);
}

TEST_P(EventLoopContract, StopEndsRun) {
  int runs = 0;
  loop_->Post([&] {
    ++runs;
    loop_->Stop();
  });
  loop_->Run();
  EXPECT_EQ(runs, 1);
}

TEST_P(EventLoopContract, PostFromOtherThreadIsDelivered) {
  std::atomic<bool> got{false};
  std::thread t([&] { loop_->Post([&] { got = true; }); });
  t.join();
  loop_->RunFor(Millis(20));
  EXPECT_TRUE(got.load());
}

INSTANTIATE_TEST_SUITE_P(Loops, EventLoopContract, ::testing::Values(Kind::kVirtual, Kind::kAsio),
                         [](const auto& info) {
                           return info.param == Kind::kVirtual ? std::string("Virtual")
                                                               : std::string("Asio");
                         });

TEST(VirtualEventLoopTest, TimeJumpsToNextEventWithoutSleeping) {
  VirtualEventLoop loop;
  Time seen;
  loop.PostAfter(Seconds(3600), [&] { seen = loop.Now(); });
  uint64_t n = loop.Run();
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(seen, Time::FromSeconds(3600));
  EXPECT_EQ(loop.pending(), 0u);
}

TEST(VirtualEventLoopTest, PastTimersRunNowAndTimeNeverGoesBack) {
  VirtualEventLoop loop(Time::FromSeconds(10));
  std::vector<Time> times;
  loop.PostAt(Time::FromSeconds(1), [&] { times.push_back(loop.Now()); });
  loop.PostAt(Time::FromSeconds(12), [&] {
    times.push_back(loop.Now());
    loop.PostAt(Time::FromSeconds(11), [&] { times.push_back(loop.Now()); });
  });
  loop.Run();
  ASSERT_EQ(times.size(), 3u);
  EXPECT_EQ(times[0], Time::FromSeconds(10));
  EXPECT_EQ(times[1], Time::FromSeconds(12));
  EXPECT_EQ(times[2], Time::FromSeconds(12));
}

TEST(VirtualEventLoopTest, RunUntilAdvancesToDeadlineAndLeavesLaterWork) {
  VirtualEventLoop loop;
  int runs = 0;
  loop.PostAt(Time::FromSeconds(1), [&] { ++runs; });
  loop.PostAt(Time::FromSeconds(5), [&] { ++runs; });
  EXPECT_EQ(loop.RunUntil(Time::FromSeconds(2)), 1u);
  EXPECT_EQ(loop.Now(), Time::FromSeconds(2));
  EXPECT_EQ(loop.pending(), 1u);
  EXPECT_EQ(loop.NextDue(), Time::FromSeconds(5));
  EXPECT_TRUE(loop.RunOne());
  EXPECT_EQ(runs, 2);
  EXPECT_FALSE(loop.RunOne());
}

TEST(VirtualEventLoopTest, SameSequenceGivesSameOrder) {
  auto run = [] {
    VirtualEventLoop loop;
    std::vector<int> out;
    for (int i = 0; i < 100; ++i) {
      loop.PostAt(Time::FromMillis((i * 37) % 11), [&out, i] { out.push_back(i); });
    }
    loop.Run();
    return out;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace switchyard
