// Proxy mode learns from the cached tokens an upstream reports how much new KV it writes
// before a waiting session's prefix is gone, for upstreams that publish no KV events. Two
// upstreams; while the first is idle and the second loaded, eight sessions run two turns
// each on the first, whose answers say it kept the prefixes of the sessions that came back
// soon and dropped those of the ones that came back after more of the others' KV (each
// answer's usage: 1,000 prompt tokens, or 1,100 with 1,024 cached, and 24 output). Then a
// session with a long context has a turn there, the loads flip, and its next turn comes:
// at once, its context is still there and the turn stays despite the load (recomputing
// ~25,000 tokens elsewhere costs more); after ten new sessions' turns, the model says its
// prefix is gone, the scheduler hears the context was evicted and places the turn as a
// recompute on the idle upstream.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "tests/common/wait_until.h"
#include "tests/frontends/proxy_server.h"
#include "tests/http/http_test_client.h"
#include "tests/upstream/recording_upstream.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;
using testing::kModel;
using testing::kToken;
using upstream::testing::RecordingUpstream;
using upstream::testing::VllmGauges;

// A chat answer whose usage says `prompt` tokens, `cached` of them cached, 24 written.
std::string UsageAnswer(int prompt, int cached) {
  return json{{"id", "c"},
              {"object", "chat.completion"},
              {"choices",
               {{{"index", 0},
                 {"message", {{"role", "assistant"}, {"content", "done"}}},
                 {"finish_reason", "stop"}}}},
              {"usage",
               {{"prompt_tokens", prompt},
                {"completion_tokens", 24},
                {"prompt_tokens_details", {{"cached_tokens", cached}}}}}}
      .dump();
}

struct RetentionRun {
  size_t first = 0, second = 0;  // the long session's second turn: calls each upstream got
  json cluster;
  std::string metrics, url;
};

RetentionRun LongSessionAfter(int other_sessions, const std::string& tag) {
  RecordingUpstream a, b;
  a.Answer("GET /metrics", 200, VllmGauges(0, 0, 0));
  b.Answer("GET /metrics", 200, VllmGauges(12, 6, 0.95));
  testing::ProxyTestServer proxy;
  testing::ProxyTestOptions o;
  o.load_interval_ms = 20;
  o.hbm_bytes = 16ULL << 30;
  proxy.Start(::testing::TempDir() + "/sy_retention_" + tag + std::to_string(::getpid()), kToken,
              a.url() + "," + b.url(), o);
  const std::string admin = std::string("Bearer ") + kToken + "-admin";
  auto cluster = [&] {
    auto r = testing::Request(proxy.port, "GET", "/v1/cluster", "", {{"Authorization", admin}});
    return json::parse(r.body, nullptr, false);
  };
  auto until = [&](auto pred) {
    EXPECT_TRUE(switchyard::testing::WaitUntil([&] { return pred(cluster()); }))
        << cluster().dump();
  };
  until([](const json& c) { return c["upstreams"][1]["load"].value("running", 0.0) == 12; });
  std::map<std::string, json> conversations;
  // One turn of session `s`, answered by whichever upstream gets it with `answer`.
  auto turn = [&](const std::string& s, const std::string& answer) {
    for (RecordingUpstream* u : {&a, &b}) u->Answer("POST /v1/chat/completions", 200, answer);
    json& messages = conversations[s];
    if (messages.empty())
      messages = {{{"role", "user"}, {"content", s == "long" ? std::string(100'000, 'x') : s}}};
    json body = {{"model", kModel}, {"messages", messages}, {"max_tokens", 16}};
    auto r = testing::Request(proxy.port, "POST", "/v1/chat/completions", body.dump(),
                              {{"Authorization", std::string("Bearer ") + kToken},
                               {"Content-Type", "application/json"},
                               {"x-session-id", tag + "-" + s}});
    EXPECT_EQ(r.status, 200) << r.body;
    messages.push_back({{"role", "assistant"}, {"content", "done"}});
    messages.push_back({{"role", "user"}, {"content", "go on"}});
    EXPECT_TRUE(switchyard::testing::WaitUntil([&] {
      auto m = testing::Request(proxy.port, "GET", "/metrics", "", {});
      return m.body.find("\nswitchyard_scheduler_running_nodes 0\n") != std::string::npos;
    }));
  };
  // Training: first turns of t0..t7, then their second turns from t7 back to t0; the
  // upstream kept the prefixes of t7..t3 (4,496 tokens written since at most) and lost
  // t2..t0's (5,620 and more): 8 observations, the threshold between.
  for (int s = 0; s < 8; ++s) turn("t" + std::to_string(s), UsageAnswer(1000, 0));
  for (int s = 7; s >= 0; --s) turn("t" + std::to_string(s), UsageAnswer(1100, s >= 3 ? 1024 : 0));
  until([](const json& c) { return c["upstreams"][0]["retention"].value("hasCapacity", false); });
  turn("long", UsageAnswer(1000, 0));
  for (int s = 0; s < other_sessions; ++s) turn("n" + std::to_string(s), UsageAnswer(1000, 0));
  a.Answer("GET /metrics", 200, VllmGauges(12, 6, 0.95));
  b.Answer("GET /metrics", 200, VllmGauges(0, 0, 0));
  until([](const json& c) {
    return c["upstreams"][0]["load"].value("running", 0.0) == 12 &&
           c["upstreams"][1]["load"].value("running", 0.0) == 0;
  });
  const size_t a_before = a.requests("POST /v1/chat/completions").size();
  const size_t b_before = b.requests("POST /v1/chat/completions").size();
  turn("long", UsageAnswer(1100, 1024));
  RetentionRun out;
  out.first = a.requests("POST /v1/chat/completions").size() - a_before;
  out.second = b.requests("POST /v1/chat/completions").size() - b_before;
  out.cluster = cluster();
  out.metrics = testing::Request(proxy.port, "GET", "/metrics", "", {}).body;
  out.url = a.url();
  return out;
}

TEST(ProxyRetention, ASessionWhosePrefixTheUpstreamProbablyDroppedIsPlacedAsARecompute) {
  RetentionRun kept = LongSessionAfter(0, "kept");
  EXPECT_EQ(kept.first, 1u) << "nothing written since: the turn stays despite the load";
  EXPECT_EQ(kept.second, 0u) << kept.cluster["upstreams"].dump();
  const json& r = kept.cluster["upstreams"][0]["retention"];
  EXPECT_EQ(r.value("observations", "0"), "9") << r.dump();  // its own turn too
  EXPECT_EQ(r.value("held", "0"), "6");
  EXPECT_EQ(r.value("capacityTokens", "0"), "5058");
  EXPECT_FALSE(r.contains("evictionsPredicted"));

  RetentionRun evicted = LongSessionAfter(10, "evicted");
  EXPECT_EQ(evicted.first, 0u);
  EXPECT_EQ(evicted.second, 1u) << "its prefix gone: recomputed where the load is least";
  const json& e = evicted.cluster["upstreams"][0]["retention"];
  EXPECT_EQ(e.value("evictionsPredicted", "0"), "1") << e.dump();
  const std::string up = "upstream=\"" + evicted.url + "\"";
  EXPECT_NE(evicted.metrics.find("switchyard_upstream_evictions_predicted_total{" + up + "} 1\n"),
            std::string::npos)
      << evicted.metrics;
  EXPECT_NE(evicted.metrics.find("switchyard_upstream_retention_capacity_tokens{" + up + "} "),
            std::string::npos);
}

}  // namespace
}  // namespace switchyard::frontends
