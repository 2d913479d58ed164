// Contract tests of the vLLM adapter: what reaches a recording vLLM for each decision.
#include <gtest/gtest.h>

#include "tests/upstream/steering_fixture.h"

namespace switchyard::upstream::testing {
namespace {

class VllmAdapterTest : public SteeringFixture {
 protected:
  void SetUp() override {
    AddUpstreams(1);
    up().Answer("GET /version", 200, R"({"version":"0.11.0"})");
  }
};

TEST_F(VllmAdapterTest, ProbeReadsCacheConfigInfo) {
  up().Answer("GET /metrics", 200, VllmMetrics(true, "16.0"));
  Steer(UpstreamKind::kVllm);
  Capabilities caps = Probe();
  EXPECT_TRUE(caps.prefix_caching.on);
  EXPECT_EQ(caps.prefix_caching.source,
            "GET /metrics vllm:cache_config_info enable_prefix_caching=True (vLLM 0.11.0)");
  EXPECT_TRUE(caps.kv_transfer_params.on);
  EXPECT_EQ(caps.kv_transfer_params.source,
            "GET /metrics vllm:cache_config_info kv_offloading_size=16.0 (vLLM 0.11.0)");
  // Not shown by any GET: off until declared.
  EXPECT_FALSE(caps.session_id.on);
  EXPECT_FALSE(caps.priority.on);
  EXPECT_EQ(up().requests("GET ").size(), 2u);
}

TEST_F(VllmAdapterTest, KvTransferParamsFollowTheWaitsDecision) {
  up().Answer("GET /metrics", 200, VllmMetrics(true, "16.0"));
  Steer(UpstreamKind::kVllm);
  Probe();
  SessionRef s = steering_->Session("s1", 0);

  ASSERT_EQ(Turn(s, ChatBody("first")), 200);
  EXPECT_FALSE(Last("POST /v1/chat").contains("kv_transfer_params"));  // keep: no cap

  steering_->OnWait(s, KvAction::kDemote);
  ASSERT_EQ(Turn(s, ChatBody("after demote")), 200);
  EXPECT_EQ(Last("POST /v1/chat")["kv_transfer_params"],
            json::parse(R"({"kv_load_tiers":[{"medium":"CPU"}]})"));

  steering_->OnWait(s, KvAction::kDiscard);
  ASSERT_EQ(Turn(s, ChatBody("after discard")), 200);
  EXPECT_EQ(Last("POST /v1/chat")["kv_transfer_params"],
            json::parse(R"({"max_load_tokens":0,"max_offload_tokens":0,"kv_load_tiers":[]})"));

  steering_->OnWait(s, KvAction::kKeep);
  ASSERT_EQ(Turn(s, ChatBody("after keep")), 200);
  EXPECT_FALSE(Last("POST /v1/chat").contains("kv_transfer_params"));

  // vLLM has no per-session endpoint: the waits sent nothing of their own.
  EXPECT_EQ(Routes().size(), 4u);
}

TEST_F(VllmAdapterTest, ClientKvTransferKeysAreKept) {
  up().Answer("GET /metrics", 200, VllmMetrics(false, "8"));
  Steer(UpstreamKind::kVllm);
  Probe();
  SessionRef s = steering_->Session("s1", 0);
  steering_->OnWait(s, KvAction::kDemote);
  json body = ChatBody("hi");
  body["kv_transfer_params"] = {{"do_remote_prefill", true}, {"max_offload_tokens", 0}};
  ASSERT_EQ(Turn(s, body), 200);
  EXPECT_EQ(Last("POST /v1/chat")["kv_transfer_params"],
            json::parse(R"({"do_remote_prefill":true,"kv_load_tiers":[{"medium":"CPU"}]})"));
}

TEST_F(VllmAdapterTest, DeclaredSessionIdAndPriority) {
  up().Answer("GET /metrics", 200, VllmMetrics(true, "None"));
  Capabilities declared;
  declared.session_id = Declared();
  declared.priority = Declared();
  Steer(UpstreamKind::kVllm, declared);
  Probe();
  SessionRef s = steering_->Session("tenant-a/s1", 0);
  ASSERT_EQ(Turn(s, ChatBody("hi"), /*priority=*/2), 200);
  auto seen = up().requests("POST /v1/chat");
  ASSERT_EQ(seen.size(), 1u);
  json body = seen[0].json();
  EXPECT_EQ(body["session_id"], "tenant-a/s1");
  EXPECT_EQ(seen[0].headers["x-session-id"], "tenant-a/s1");
  EXPECT_EQ(body["priority"], -2);                    // vLLM serves lower values first
  EXPECT_FALSE(body.contains("kv_transfer_params"));  // kv_offloading_size=None
}

TEST_F(VllmAdapterTest, PrefetchWarmsTheSessionsPrefixFromTheHostTier) {
  up().Answer("GET /metrics", 200, VllmMetrics(true, "16"));
  Capabilities declared;
  declared.priority = Declared();
  Steer(UpstreamKind::kVllm, declared);
  Probe();
  SessionRef s = steering_->Session("s1", 0);
  json request = ChatBody("question");
  ASSERT_EQ(Turn(s, request), 200);

  steering_->OnWait(s, KvAction::kKeep);
  ASSERT_TRUE(steering_->OnPrefetch(s, {"/v1/chat/completions", request, "answer"}).ok());
  steering_->OnWait(s, KvAction::kDemote);
  ASSERT_TRUE(steering_->OnPrefetch(s, {"/v1/chat/completions", request, "answer"}).ok());
  ASSERT_TRUE(up().WaitFor("POST /v1/chat", 2));  // the turn, then one warm-up (not after keep)

  json warm = Last("POST /v1/chat");
  EXPECT_EQ(warm["messages"].back(), json({{"role", "assistant"}, {"content", "answer"}}));
  EXPECT_EQ(warm["max_tokens"], 1);
  EXPECT_EQ(warm["stream"], false);
  EXPECT_EQ(warm["priority"], 1);  // below every turn
  EXPECT_EQ(warm["kv_transfer_params"], json::parse(R"({"kv_load_tiers":[{"medium":"CPU"}]})"));
  EXPECT_TRUE(
      switchyard::testing::WaitUntil([&] { return steering_->counters(0).warmups_done == 1; }));
  EXPECT_EQ(steering_->counters(0).warmups_sent, 1u);
}

TEST_F(VllmAdapterTest, NothingUnadvertisedReachesTheWire) {
  for (const char* metrics : {"", "off"}) {
    SCOPED_TRACE(metrics);
    upstreams_.clear();
    AddUpstreams(1);
    if (std::string(metrics) == "off") up().Answer("GET /metrics", 200, VllmMetrics(false, "None"));
    Steer(UpstreamKind::kVllm);
    Probe();
    SessionRef s = steering_->Session("s1", 0);
    const json request = ChatBody("hi");
    for (KvAction a : {KvAction::kKeep, KvAction::kDemote, KvAction::kDiscard}) {
      ASSERT_EQ(Turn(s, request, 3), 200);
      steering_->OnWait(s, a);
      ASSERT_TRUE(steering_->OnPrefetch(s, {"/v1/chat/completions", request, "x"}).ok());
    }
    ASSERT_EQ(Turn(s, request, 3), 200);
    steering_->OnRelease(s);
    steering_.reset();
    client_.reset();
    for (const auto& r : up().requests("POST ")) {
      EXPECT_EQ(r.json(), request) << r.route();  // no field added
      EXPECT_EQ(r.headers.count("x-session-id"), 0u);
    }
    EXPECT_EQ(Routes().size(), 4u);  // the turns: no warm-up, nothing else
  }
}

}  // namespace
}  // namespace switchyard::upstream::testing
