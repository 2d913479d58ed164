// RetentionModel learns, from resumed turns' cached tokens, how much KV an upstream writes
// before a waiting session's prefix is gone; ProxySteering feeds it from the usage of the
// answers it reads and asks it for a session's next turn.
#include "upstream/retention.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "base/clock.h"
#include "tests/upstream/recording_upstream.h"
#include "upstream/proxy_steering.h"

namespace switchyard::upstream {
namespace {

TEST(RetentionModel, SaysNothingUntilItHasSeenEnoughTurnsAndOneLost) {
  RetentionModel m;
  for (int i = 0; i < 7; ++i) m.Observe(1000 * (i + 1), 500, i < 4 ? 500 : 0);
  EXPECT_EQ(m.Held(100'000), std::nullopt) << "7 observations: too few";
  RetentionModel all_held;
  for (int i = 0; i < 20; ++i) all_held.Observe(1000 * i, 500, 480);
  EXPECT_EQ(all_held.Held(1'000'000), std::nullopt) << "never seen to drop a prefix";
  EXPECT_EQ(all_held.figures().held, 20u);
  m.Observe(1, 0, 0);  // a turn with no prefix is no observation
  EXPECT_EQ(m.figures().observations, 7u);
}

TEST(RetentionModel, LearnsTheChurnAtWhichPrefixesAreLost) {
  RetentionModel m;
  // An LRU of ~6,000 tokens: prefixes come back after less churn, not after more.
  for (uint64_t churn : {500, 1500, 2500, 4000, 5500}) m.Observe(churn, 1000, 1000);
  for (uint64_t churn : {6500, 8000, 9000, 12000}) m.Observe(churn, 1000, 16);
  ASSERT_TRUE(m.figures().capacity.has_value());
  EXPECT_EQ(*m.figures().capacity, 6000u) << "the middle of the gap between 5,500 and 6,500";
  EXPECT_EQ(m.Held(0), true);
  EXPECT_EQ(m.Held(5900), true);
  EXPECT_EQ(m.Held(7000), false);
  // Half the prefix cached counts as held; less does not.
  RetentionModel half;
  for (int i = 0; i < 8; ++i) half.Observe(100 * (i + 1), 1000, i < 4 ? 500 : 499);
  EXPECT_EQ(half.figures().held, 4u);
  EXPECT_EQ(half.Held(440), true);
  EXPECT_EQ(half.Held(460), false);
}

TEST(RetentionModel, ToleratesNoiseAndFollowsAnUpstreamThatShrinks) {
  RetentionModel m;
  // One early loss (another client's burst) among held prefixes, then a clear boundary.
  m.Observe(300, 1000, 0);
  for (uint64_t churn : {200, 900, 1800, 2600, 3100}) m.Observe(churn, 1000, 1000);
  for (uint64_t churn : {4200, 5000, 7000}) m.Observe(churn, 1000, 0);
  EXPECT_EQ(m.Held(3500), true) << "one loss at 300 does not move the threshold below it";
  EXPECT_EQ(m.Held(4000), false);
  // The upstream now keeps less (more clients): the last 64 turns say 1,000 tokens.
  for (int i = 0; i < 64; ++i) m.Observe(i % 2 ? 600 : 1400, 1000, i % 2 ? 1000 : 0);
  EXPECT_EQ(m.figures().observations, 64u);
  EXPECT_EQ(m.Held(700), true);
  EXPECT_EQ(m.Held(3000), false) << "the old observations are forgotten";
}

TEST(RetentionModel, CountsTheKvItsAnswersWrite) {
  RetentionModel m;
  m.AddWritten(1200);
  m.AddWritten(-5);
  m.AddWritten(16);
  EXPECT_EQ(m.churn(), 1216u);
}

// ProxySteering reads the usage of each answer: session s's prefix is its last turn's
// prompt and output; the KV written between its turns is the other answers' uncached
// prompt and output tokens.
TEST(ProxySteeringRetention, PredictsASessionsPrefixGoneAfterMoreChurnThanTheUpstreamKept) {
  testing::RecordingUpstream up;
  UpstreamOptions uo;
  uo.urls = {up.url()};
  auto client = UpstreamClient::Create(uo);
  ASSERT_TRUE(client.ok());
  SteeringUpstream generic;
  auto created = ProxySteering::Create(RealClock::Default(), client->get(), {generic});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ProxySteering& steering = **created;
  auto turn = [&](const std::string& key, int prompt, int cached) {
    steering.BeforeTurn(key, key + "-wf", 0, [] {});
    http::HttpRequest req{"POST", "/v1/chat/completions", {}, R"({"model":"m","messages":[]})"};
    steering.Decorate(key, 2, &req);
    const nlohmann::json answer = {
        {"choices", {{{"message", {{"role", "assistant"}, {"content", "ok"}}}}}},
        {"usage",
         {{"prompt_tokens", prompt},
          {"completion_tokens", 24},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}}}};
    steering.Answered(key, answer.dump());
  };
  // Ten sessions' first turns (1,000 tokens each: 10,240 written), then their second turns
  // in reverse order: session 9 comes back after the least churn, session 0 after the
  // most. The upstream held the prefixes of 9..5 and had dropped 4..0.
  for (int s = 0; s < 10; ++s) turn("s" + std::to_string(s), 1000, 0);
  EXPECT_EQ(steering.PredictHeld("s0"), std::nullopt) << "nothing learned yet";
  for (int s = 9; s >= 0; --s) turn("s" + std::to_string(s), 1100, s >= 5 ? 1024 : 0);
  const RetentionModel::Figures f = steering.figures()[0].retention;
  EXPECT_EQ(f.observations, 10u);
  EXPECT_EQ(f.held, 5u);
  ASSERT_TRUE(f.capacity.has_value());
  // Each first turn wrote 1,024 tokens (prompt and output, none cached), a held second
  // turn 100 (its 76 new prompt tokens and 24 output). Session 5 came back after 4,496
  // tokens written since its answer, session 4 after 5,620: the threshold is between.
  EXPECT_EQ(*f.capacity, 4496u + (5620u - 4496u) / 2);
  EXPECT_EQ(steering.PredictHeld("s0"), true) << "nothing written since its last answer";
  EXPECT_EQ(steering.PredictHeld("s9"), false) << "6,020 tokens written since";
  // Ten new sessions' first turns: 10,240 tokens written since session 0's answer.
  for (int s = 10; s < 20; ++s) turn("s" + std::to_string(s), 1000, 0);
  EXPECT_EQ(steering.PredictHeld("s0"), false);
  EXPECT_EQ(steering.PredictHeld("s19"), true);
  EXPECT_EQ(steering.PredictHeld("unknown"), std::nullopt);
}

}  // namespace
}  // namespace switchyard::upstream
