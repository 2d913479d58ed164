// Contract tests of the SGLang adapter: what reaches a recording SGLang for each decision.
#include <gtest/gtest.h>

#include "tests/upstream/steering_fixture.h"

namespace switchyard::upstream::testing {
namespace {

class SglangAdapterTest : public SteeringFixture {
 protected:
  void SetUp() override {
    AddUpstreams(1);
    up().Answer("POST /open_session", 200, R"("s1")");
    up().Answer("POST /close_session", 200, "");
  }
  SessionRef ProbedSession(bool radix, bool priority, bool low_first, bool sessions,
                           Capabilities declared = {}) {
    up().Answer("GET /get_server_info", 200,
                SglangServerInfo(radix, priority, low_first, sessions));
    Steer(UpstreamKind::kSglang, declared);
    Probe();
    return steering_->Session("s1", 0);
  }
};

// The scheduler kept the session through its wait: its next turn goes one step more
// urgent, so an engine evicting its radix cache by priority keeps that session's blocks
// over those of a session the scheduler demoted (the control) or has not decided on.
TEST_F(SglangAdapterTest, AKeptSessionsNextTurnGoesMoreUrgent) {
  SessionRef kept = ProbedSession(true, true, /*low_first=*/false, true);
  SessionRef demoted = steering_->Session("s2", 0), fresh = steering_->Session("s3", 0);
  ASSERT_EQ(Turn(kept, ChatBody("one")), 200);
  ASSERT_EQ(Turn(demoted, ChatBody("two")), 200);
  steering_->OnWait(kept, KvAction::kKeep);
  steering_->OnWait(demoted, KvAction::kDemote);
  ASSERT_EQ(Turn(kept, ChatBody("one, again")), 200);
  EXPECT_EQ(Last("POST /v1/chat")["priority"], Steering::kKeptUrgency);
  ASSERT_EQ(Turn(demoted, ChatBody("two, again")), 200);
  EXPECT_EQ(Last("POST /v1/chat")["priority"], 0);
  ASSERT_EQ(Turn(fresh, ChatBody("three")), 200);
  EXPECT_EQ(Last("POST /v1/chat")["priority"], 0);
  ASSERT_EQ(Turn(kept, ChatBody("one, urgent"), /*priority=*/2), 200);
  EXPECT_EQ(Last("POST /v1/chat")["priority"], 2 + Steering::kKeptUrgency);
  EXPECT_EQ(steering_->counters(0).kept_urgent, 2u);
}

TEST_F(SglangAdapterTest, ProbeReadsServerArgs) {
  up().Answer("GET /get_server_info", 200, SglangServerInfo(true, true, true, true));
  Steer(UpstreamKind::kSglang);
  Capabilities caps = Probe();
  EXPECT_TRUE(caps.prefix_caching.on);
  EXPECT_EQ(caps.prefix_caching.source, "GET /get_server_info disable_radix_cache=false");
  EXPECT_TRUE(caps.priority.on);
  EXPECT_TRUE(caps.priority_low_first);
  EXPECT_TRUE(caps.session_id.on);
  EXPECT_EQ(caps.close_session.source, "GET /get_server_info enable_session_radix_cache=true");
  EXPECT_FALSE(caps.open_session.on);  // declared only
}

TEST_F(SglangAdapterTest, SessionIdAndPriorityInTheEnginesOrder) {
  SessionRef s = ProbedSession(true, true, /*low_first=*/false, true);
  ASSERT_EQ(Turn(s, ChatBody("hi"), /*priority=*/2), 200);
  json body = Last("POST /v1/chat");
  EXPECT_EQ(body["session_id"], "s1");
  EXPECT_EQ(body["priority"], 2);  // higher values first
  EXPECT_FALSE(body.contains("session_params"));

  steering_.reset();
  client_.reset();
  upstreams_.clear();
  SetUp();
  s = ProbedSession(true, true, /*low_first=*/true, true);
  ASSERT_EQ(Turn(s, ChatBody("hi"), 2), 200);
  EXPECT_EQ(Last("POST /v1/chat")["priority"], -2);
}

TEST_F(SglangAdapterTest, DiscardAndReleaseCloseARadixSession) {
  SessionRef s = ProbedSession(true, false, false, /*sessions=*/true);
  ASSERT_EQ(Turn(s, ChatBody("one")), 200);
  steering_->OnWait(s, KvAction::kKeep);
  ASSERT_EQ(Turn(s, ChatBody("two")), 200);
  steering_->OnWait(s, KvAction::kDemote);  // no per-session control: nothing sent
  ASSERT_EQ(Turn(s, ChatBody("three")), 200);
  steering_->OnWait(s, KvAction::kDiscard);
  ASSERT_EQ(Turn(s, ChatBody("four")), 200);  // waits for the close
  steering_->OnRelease(s);
  ASSERT_TRUE(up().WaitFor("POST /close_session", 2));
  EXPECT_EQ(Routes(),
            (std::vector<std::string>{"POST /v1/chat/completions", "POST /v1/chat/completions",
                                      "POST /v1/chat/completions", "POST /close_session",
                                      "POST /v1/chat/completions", "POST /close_session"}));
  EXPECT_EQ(Last("POST /close_session"), json({{"session_id", "s1"}}));
  EXPECT_EQ(steering_->counters(0).closes, 2u);
  EXPECT_EQ(steering_->counters(0).opens, 0u);  // radix sessions begin implicitly
}

TEST_F(SglangAdapterTest, DeclaredOpenSessionOpensBeforeTheFirstTurn) {
  Capabilities declared;
  declared.open_session = Declared();
  SessionRef s = ProbedSession(true, false, false, false, declared);
  ASSERT_EQ(Turn(s, ChatBody("one")), 200);
  steering_->OnWait(s, KvAction::kDiscard);  // would end an opened session: not closed
  ASSERT_EQ(Turn(s, ChatBody("two")), 200);
  steering_->OnRelease(s);
  ASSERT_TRUE(up().WaitFor("POST /close_session", 1));
  EXPECT_EQ(Routes(),
            (std::vector<std::string>{"POST /open_session", "POST /v1/chat/completions",
                                      "POST /v1/chat/completions", "POST /close_session"}));
  EXPECT_EQ(up().requests("POST /open_session")[0].json(),
            json({{"capacity_of_str_len", 1 << 20}, {"session_id", "s1"}}));
}

TEST_F(SglangAdapterTest, PrefetchWarmsUpWithTheSessionId) {
  SessionRef s = ProbedSession(true, false, false, true);
  json request = ChatBody("q");
  ASSERT_EQ(Turn(s, request), 200);
  steering_->OnWait(s, KvAction::kDemote);
  ASSERT_TRUE(steering_->OnPrefetch(s, {"/v1/chat/completions", request, "a"}).ok());
  ASSERT_TRUE(up().WaitFor("POST /v1/chat", 2));
  json warm = Last("POST /v1/chat");
  EXPECT_EQ(warm["session_id"], "s1");
  EXPECT_EQ(warm["max_tokens"], 1);
  EXPECT_FALSE(warm.contains("priority"));  // not advertised
}

TEST_F(SglangAdapterTest, NothingUnadvertisedReachesTheWire) {
  for (bool answered : {false, true}) {
    SCOPED_TRACE(answered);
    upstreams_.clear();
    SetUp();
    if (answered)
      up().Answer("GET /get_server_info", 200, SglangServerInfo(false, false, true, false));
    Steer(UpstreamKind::kSglang);
    Probe();
    SessionRef s = steering_->Session("s1", 0);
    const json request = ChatBody("hi");
    for (KvAction a : {KvAction::kKeep, KvAction::kDemote, KvAction::kDiscard}) {
      ASSERT_EQ(Turn(s, request, 3), 200);
      steering_->OnWait(s, a);
      ASSERT_TRUE(steering_->OnPrefetch(s, {"/v1/chat/completions", request, "x"}).ok());
    }
    steering_->OnRelease(s);
    steering_.reset();
    client_.reset();
    EXPECT_EQ(Routes().size(), 3u);  // the turns only: no open, close or warm-up
    for (const auto& r : up().requests("POST ")) EXPECT_EQ(r.json(), request);
  }
}

}  // namespace
}  // namespace switchyard::upstream::testing
