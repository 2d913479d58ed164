// Proxy mode's steering (upstream/proxy_steering.h): what it reads from upstream answers,
// and the scheduler's decisions turned into the adapters' calls against a recording
// upstream. End to end, against a real upstream: tests/frontends/proxy_steering_e2e_test.cc.
#include "upstream/proxy_steering.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/wait_until.h"
#include "tests/upstream/recording_upstream.h"
#include "upstream/internal/steering_tap.h"

namespace switchyard::upstream {
namespace {

using nlohmann::json;
using KvDecision = executors::Generation::KvDecision;

TEST(ProxySteeringReadTest, UsageOfEachApi) {
  int64_t cached = -1, prompt = -1;
  ASSERT_TRUE(UsageOf(json::parse(R"({"usage":{"prompt_tokens":90,
      "prompt_tokens_details":{"cached_tokens":64}}})"),
                      &cached, &prompt));
  EXPECT_EQ(cached, 64);
  EXPECT_EQ(prompt, 90);
  ASSERT_TRUE(UsageOf(json::parse(R"({"type":"response.completed","response":{"usage":{
      "input_tokens":50,"input_tokens_details":{"cached_tokens":32}}}})"),
                      &cached, &prompt));
  EXPECT_EQ(cached, 32);
  EXPECT_EQ(prompt, 50);
  // Messages: input_tokens excludes what was read from the cache.
  ASSERT_TRUE(UsageOf(json::parse(R"({"type":"message_start","message":{"usage":{
      "input_tokens":10,"cache_read_input_tokens":40}}})"),
                      &cached, &prompt));
  EXPECT_EQ(cached, 40);
  EXPECT_EQ(prompt, 50);
  EXPECT_FALSE(UsageOf(json::parse(R"({"choices":[]})"), &cached, &prompt));
  EXPECT_FALSE(UsageOf(json::parse(R"({"usage":"none"})"), &cached, &prompt));
}

TEST(ProxySteeringReadTest, AnswerOfEachApi) {
  const json chat = json::parse(R"({"choices":[{"message":{"role":"assistant","content":"hi"}}]})");
  EXPECT_EQ(AnswerOf("/v1/chat/completions", chat)["content"], "hi");
  EXPECT_EQ(AnswerOf("/v1/messages", json::parse(R"({"content":[{"type":"text","text":"a"}]})")),
            json::parse(R"([{"type":"text","text":"a"}])"));
  EXPECT_EQ(AnswerOf("/v1/responses", json::parse(R"({"output":[]})")), json::array());
  EXPECT_EQ(AnswerOf("/v1/completions", json::parse(R"({"choices":[{"text":"t"}]})")), "t");
  EXPECT_TRUE(AnswerOf("/v1/chat/completions", json::parse(R"({"choices":[]})")).is_null());
  EXPECT_TRUE(AnswerOf("/v1/unknown", chat).is_null());
}

TEST(ProxySteeringReadTest, StreamsAreReadAcrossSplitLines) {
  internal::StreamAnswerReader chat("/v1/chat/completions");
  const std::string events =
      "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\r\n\r\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,"
      "\"prompt_tokens_details\":{\"cached_tokens\":16}}}\n\n"
      "data: [DONE]\n\n";
  for (size_t i = 0; i < events.size(); i += 7) chat.Read(std::string_view(events).substr(i, 7));
  internal::AnswerReading r = chat.Reading();
  EXPECT_EQ(r.answer, "Hello");
  EXPECT_TRUE(r.usage);
  EXPECT_EQ(r.cached, 16);
  EXPECT_EQ(r.prompt, 20);

  internal::StreamAnswerReader messages("/v1/messages");
  messages.Read(
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\ndata: not json\n\n");
  EXPECT_EQ(messages.Reading().answer, "ok");
  EXPECT_FALSE(messages.Reading().usage);
}

// A generic upstream: the scheduler's prefetch for a waiting session sends a warm-up of the
// session's last request with the answer appended; a decision for another workflow, or
// before an answer is known, sends nothing.
TEST(ProxySteeringTest, PrefetchWarmsTheSessionsPrefix) {
  upstream::testing::RecordingUpstream up;
  up.Answer("POST /v1/chat/completions", 200,
            R"({"choices":[{"message":{"role":"assistant","content":"x"}}],
                "usage":{"prompt_tokens":30,"prompt_tokens_details":{"cached_tokens":28}}})");
  upstream::UpstreamOptions uo;
  uo.urls = {up.url()};
  auto client = upstream::UpstreamClient::Create(uo);
  ASSERT_TRUE(client.ok()) << client.status();
  upstream::SteeringUpstream generic;
  generic.declared.prefix_caching = {true, "configured"};
  auto s = ProxySteering::Create(RealClock::Default(), client->get(), {generic});
  ASSERT_TRUE(s.ok()) << s.status();
  ProxySteering& steering = **s;

  bool ready = false;
  steering.BeforeTurn("t/s1", "wf-1", 0, [&] { ready = true; });
  EXPECT_TRUE(ready) << "nothing goes before a generic upstream's turn";
  http::HttpRequest req{"POST", "/v1/chat/completions", {}, R"({"model":"m","stream":true,
      "messages":[{"role":"user","content":"run the tests"}]})"};
  steering.Decorate("t/s1", 0, &req);

  KvDecision prefetch{KvDecision::Kind::kPrefetch, "wf-1", "wf-1/main", 0, 0};
  steering.OnKv(prefetch);  // no answer yet: nothing to warm
  auto tap = steering.Tap("t/s1");
  tap->Read("data: {\"choices\":[{\"delta\":{\"content\":\"calling a tool\"}}]}\n\n");
  tap->End();
  steering.OnKv(KvDecision{KvDecision::Kind::kPrefetch, "wf-other", "wf-other/main", 0, 0});
  steering.OnKv(KvDecision{KvDecision::Kind::kDemote, "wf-1", "wf-1/main", 0, 0});
  steering.OnKv(prefetch);
  ASSERT_TRUE(up.WaitFor("POST /v1/chat/completions", 1));
  const json warm = up.requests("POST /v1/chat/completions")[0].json();
  EXPECT_EQ(warm["max_tokens"], 1);
  EXPECT_EQ(warm["stream"], false);
  ASSERT_EQ(warm["messages"].size(), 2u);
  EXPECT_EQ(warm["messages"][1]["role"], "assistant");
  EXPECT_EQ(warm["messages"][1]["content"], "calling a tool");

  // The next turn's answer reports the warmed prompt as cached: a hit.
  ASSERT_TRUE(::switchyard::testing::WaitUntil(
      [&] { return steering.figures()[0].counters.warmups_done == 1; }));
  steering.BeforeTurn("t/s1", "wf-1", 0, [] {});
  steering.Decorate("t/s1", 0, &req);
  steering.Answered("t/s1", R"({"choices":[{"message":{"content":"y"}}],
      "usage":{"prompt_tokens":40,"prompt_tokens_details":{"cached_tokens":30}}})");
  ProxySteering::Figures f = steering.figures()[0];
  EXPECT_EQ(f.kind, "generic");
  EXPECT_EQ(f.counters.warmups_sent, 1u);
  EXPECT_EQ(f.counters.warmups_hit, 1u);
  EXPECT_EQ(f.decisions["prefetch"], 2u);
  EXPECT_EQ(f.decisions["demote"], 1u);
  EXPECT_EQ(f.sessions, 1u);
  EXPECT_EQ(f.prompt_tokens, 40u);
  EXPECT_EQ(f.cached_tokens, 30u);
  steering.Ended("t/s1");
  EXPECT_EQ(steering.figures()[0].sessions, 0u);
}

}  // namespace
}  // namespace switchyard::upstream
