// Tests of the Steering executor: warm-up budget, cancellation, hits, the generic adapter,
// and what happens to waiting turns at destruction. Per-engine wire contracts are in the
// *_adapter_test.cc files.
#include "upstream/steering.h"

#include <atomic>

#include <gtest/gtest.h>

#include "tests/upstream/steering_fixture.h"

namespace switchyard::upstream::testing {
namespace {

using ::switchyard::testing::WaitUntil;

class SteeringTest : public SteeringFixture {
 protected:
  // A generic upstream the operator says caches prefixes.
  void StartGeneric(SteeringOptions options = {}) {
    AddUpstreams(1);
    Capabilities declared;
    declared.prefix_caching = Declared();
    Steer(UpstreamKind::kGeneric, declared, options);
  }
  // The session after one turn and a demote: its prefetch warms up.
  SessionRef Waiting(const std::string& key) {
    SessionRef s = steering_->Session(key, 0);
    EXPECT_EQ(Turn(s, ChatBody(key)), 200);
    steering_->OnWait(s, KvAction::kDemote);
    return s;
  }
  Status Prefetch(const SessionRef& s) {
    return steering_->OnPrefetch(s, {"/v1/chat/completions", ChatBody(s.key), "answer"});
  }
};

TEST_F(SteeringTest, CreateNeedsOneSettingPerUpstream) {
  AddUpstreams(2);
  UpstreamOptions opts;
  for (auto& u : upstreams_) opts.urls.push_back(u->url());
  auto client = UpstreamClient::Create(opts);
  ASSERT_TRUE(client.ok());
  auto steering = Steering::Create(client->get(), {SteeringUpstream{}});
  ASSERT_FALSE(steering.ok());
  EXPECT_TRUE(steering.status().IsInvalidArgument());
  EXPECT_NE(steering.status().message().find("1 upstream settings for 2 upstreams"),
            std::string::npos)
      << steering.status().ToString();
}

TEST_F(SteeringTest, GenericAddsNothingAndWarmsUpWhenDeclared) {
  StartGeneric();
  Capabilities caps = Probe();  // nothing to probe: the declared capabilities
  EXPECT_TRUE(caps.prefix_caching.on);
  EXPECT_EQ(caps.prefix_caching.source, "configured");
  SessionRef s = Waiting("s1");
  EXPECT_EQ(Last("POST /v1/chat"), ChatBody("s1"));  // nothing added
  ASSERT_TRUE(Prefetch(s).ok());
  ASSERT_TRUE(up().WaitFor("POST /v1/chat", 2));
  json warm = Last("POST /v1/chat");
  EXPECT_EQ(warm["messages"].size(), 2u);
  EXPECT_EQ(warm["max_tokens"], 1);
  EXPECT_TRUE(up().requests("GET ").empty());
}

TEST_F(SteeringTest, WarmupsOverTheBudgetAreDropped) {
  SteeringOptions options;
  options.max_warmups_in_flight = 1;
  StartGeneric(options);
  SessionRef a = Waiting("a");
  SessionRef b = Waiting("b");
  up().Hold("POST /v1/chat/completions");
  ASSERT_TRUE(Prefetch(a).ok());
  ASSERT_TRUE(up().WaitFor("POST /v1/chat", 3));  // two turns, a's warm-up (held)
  ASSERT_TRUE(Prefetch(b).ok());                  // one in flight already: dropped
  SteeringCounters c = steering_->counters(0);
  EXPECT_EQ(c.warmups_sent, 1u);
  EXPECT_EQ(c.warmups_dropped, 1u);
  up().ReleaseHeld();
  ASSERT_TRUE(WaitUntil([&] { return steering_->counters(0).warmups_done == 1; }));
  ASSERT_TRUE(Prefetch(b).ok());  // room again
  ASSERT_TRUE(up().WaitFor("POST /v1/chat", 4));
}

TEST_F(SteeringTest, TheTurnCancelsItsWarmup) {
  StartGeneric();
  SessionRef s = Waiting("s");
  up().Hold("POST /v1/chat/completions");
  ASSERT_TRUE(Prefetch(s).ok());
  ASSERT_TRUE(up().WaitFor("POST /v1/chat", 2));
  auto went = std::make_shared<std::atomic<bool>>(false);
  steering_->BeforeTurn(s, [went] { *went = true; });
  EXPECT_TRUE(went->load());                             // a warm-up never holds a turn back
  EXPECT_EQ(steering_->counters(0).warmups_wasted, 1u);  // in flight when the turn came
  up().ReleaseHeld();
}

// One queued behind a foreground call in flight is never sent.
TEST_F(SteeringTest, AQueuedWarmupIsNotSentOnceTheTurnCame) {
  AddUpstreams(1);
  up().Answer("GET /props", 200, LlamaProps(1));
  up().Answer("POST /slots/0?action=erase", 200, "{}");
  Capabilities declared;
  declared.slots = Declared();
  declared.slot_files = Declared();
  Steer(UpstreamKind::kLlamaCpp, declared);
  Probe();
  SessionRef s = steering_->Session("s", 0);
  ASSERT_EQ(Turn(s, ChatBody("s")), 200);
  up().Hold("POST /slots/0?action=erase");
  steering_->OnWait(s, KvAction::kDiscard);  // erase in flight, held
  ASSERT_TRUE(Prefetch(s).ok());             // the warm-up waits behind it
  ASSERT_TRUE(up().WaitFor("POST /slots/0?action=erase", 1));
  auto went = std::make_shared<std::atomic<bool>>(false);
  steering_->BeforeTurn(s, [went] { *went = true; });
  EXPECT_FALSE(went->load());
  up().ReleaseHeld();
  ASSERT_TRUE(WaitUntil([&] { return went->load(); }));
  ASSERT_EQ(Forward(s, ChatBody("next")), 200);
  EXPECT_EQ(Routes(),
            (std::vector<std::string>{"POST /v1/chat/completions", "POST /slots/0?action=erase",
                                      "POST /v1/chat/completions"}));
  SteeringCounters c = steering_->counters(0);
  EXPECT_EQ(c.warmups_cancelled, 1u);
  EXPECT_EQ(c.warmups_sent, 0u);
}

TEST_F(SteeringTest, AWarmupHitsWhenTheTurnsCachedTokensCoverIt) {
  StartGeneric();  // warm-ups are answered with usage prompt_tokens=100
  SessionRef s = Waiting("s");
  for (int64_t cached : {96, 10}) {
    const uint64_t done = steering_->counters(0).warmups_done + 1;
    ASSERT_TRUE(Prefetch(s).ok());
    ASSERT_TRUE(WaitUntil([&] { return steering_->counters(0).warmups_done == done; }));
    ASSERT_EQ(Turn(s, ChatBody("next")), 200);
    steering_->ReportCachedTokens(s, cached);
  }
  steering_->ReportCachedTokens(s, 100);  // nothing warmed since: not counted
  SteeringCounters c = steering_->counters(0);
  EXPECT_EQ(c.warmups_hit, 1u);     // 96 + slack covers 100
  EXPECT_EQ(c.warmups_wasted, 1u);  // 10 does not
}

TEST_F(SteeringTest, DestroyingRunsTheWaitingTurns) {
  AddUpstreams(1);
  up().Answer("GET /get_server_info", 200, SglangServerInfo(true, false, false, true));
  Steer(UpstreamKind::kSglang);
  Probe();
  SessionRef s = steering_->Session("s", 0);
  up().Hold("POST /close_session");
  steering_->OnWait(s, KvAction::kDiscard);
  ASSERT_TRUE(up().WaitFor("POST /close_session", 1));
  auto went = std::make_shared<std::atomic<bool>>(false);
  steering_->BeforeTurn(s, [went] { *went = true; });
  EXPECT_FALSE(went->load());
  steering_.reset();
  EXPECT_TRUE(went->load());
}

}  // namespace
}  // namespace switchyard::upstream::testing
