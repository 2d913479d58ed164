// Steering end to end, against a real upstream: a Switchyard server that behaves as vLLM
// does — the CPU engine with automatic prefix caching, policy vllm-fcfs (a finished
// request's KV stays only as its prefix cache's LRU keeps it), and a pool of 2,048 tokens.
//
//   - WarmUpRestoresAnEvictedPrefix drives ProxySteering by hand in a fixed order: a
//     session's turn, other traffic that evicts its prefix, the scheduler's demote and
//     prefetch decisions, the next turn. The warm-up must bring the prefix back (the next
//     turn's usage reports it cached); the same order without the decisions must not.
//   - UpstreamEvictsTheLessImportantPrefixFirst: the upstream honours vLLM's request
//     `priority` in that LRU's order.
//   - ServeForwardsThroughSteering runs sessions through a proxy server in front of it:
//     every turn is decorated, the scheduler's decisions reach the steering, and the
//     upstream's answers are read (their prompt tokens are counted).
// Both wait on conditions only. How much warm-ups timed by the tool's learned duration gain
// under concurrent agents is a timing figure: scripts/bench.sh api (proxy_steering) measures
// it, steering on and off side by side.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "tests/common/wait_until.h"
#include "tests/frontends/proxy_server.h"
#include "tests/http/http_test_client.h"
#include "upstream/proxy_steering.h"

namespace switchyard::frontends {
namespace {

using executors::Generation;
using nlohmann::json;
using testing::kToken;
using testing::kUpToken;
using upstream::ProxySteering;

// 2,048 tokens of tiny-llama-2l (512 bytes each).
constexpr uint64_t kUpstreamPool = 1ULL << 20;

std::string SystemPrompt(int id) {
  std::string s = "You are agent " + std::to_string(id) + ". ";
  while (s.size() < 560) s += "Rule " + std::to_string(s.size()) + ": be exact. ";
  return s;
}

json FirstMessages(int id) {
  return {{{"role", "system"}, {"content", SystemPrompt(id)}},
          {{"role", "user"}, {"content", "Fix the failing test in module " + std::to_string(id)}}};
}

struct Usage {
  int64_t prompt = 0, cached = 0;
};

Usage UsageOfAnswer(const std::string& body) {
  json a = json::parse(body);
  return {a["usage"]["prompt_tokens"].get<int64_t>(),
          a["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>()};
}

// A session driven through ProxySteering by hand, its turns sent straight to the upstream.
class HandSession {
 public:
  HandSession(ProxySteering* steering, uint16_t port, int id)
      : steering_(steering),
        port_(port),
        key_("t/agent-" + std::to_string(id)),
        workflow_("wf-" + std::to_string(id)),
        messages_(FirstMessages(id)) {}

  // One turn: decorated and recorded by the steering, answered by the upstream.
  Usage Turn() {
    steering_->BeforeTurn(key_, workflow_, 0, [] {});
    json body = {
        {"model", testing::kModel}, {"messages", messages_}, {"max_tokens", 1}, {"temperature", 0}};
    http::HttpRequest req{"POST",
                          "/v1/chat/completions",
                          {{"Authorization", std::string("Bearer ") + kUpToken},
                           {"Content-Type", "application/json"}},
                          body.dump()};
    steering_->Decorate(key_, 0, &req);
    auto r = testing::Request(port_, "POST", req.target, req.body, req.headers);
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return {};
    steering_->Answered(key_, r.body);
    messages_.push_back(json::parse(r.body)["choices"][0]["message"]);
    messages_.push_back({{"role", "user"}, {"content", "Tool output: " + std::string(120, 'a')}});
    return UsageOfAnswer(r.body);
  }
  void Decide(Generation::KvDecision::Kind kind) {
    steering_->OnKv(Generation::KvDecision{kind, workflow_, workflow_ + "/main", 0, 0});
  }

 private:
  ProxySteering* steering_;
  uint16_t port_;
  std::string key_, workflow_;
  json messages_;
};

// Another client's long prompt, sent straight to the upstream: its blocks push the older
// sessions' prefixes out of the 2,048-token pool.
void Evict(uint16_t port) {
  std::string text;
  while (text.size() < 1850) text += "unrelated filler " + std::to_string(text.size()) + " ";
  json body = {{"model", testing::kModel},
               {"messages", {{{"role", "user"}, {"content", text}}}},
               {"max_tokens", 1}};
  auto r = testing::Request(
      port, "POST", "/v1/chat/completions", body.dump(),
      {{"Authorization", std::string("Bearer ") + kUpToken}, {"Content-Type", "application/json"}});
  ASSERT_EQ(r.status, 200) << r.body;
}

TEST(ProxySteeringE2eTest, WarmUpRestoresAnEvictedPrefix) {
  const std::string base = ::testing::TempDir() + "/sy_steer_hand_" + std::to_string(::getpid());
  testing::ProxyTestServer up;
  testing::ProxyTestOptions uo;
  uo.policy = "vllm-fcfs";
  uo.kv_pool_bytes = kUpstreamPool;
  up.Start(base, kUpToken, "", uo);
  upstream::UpstreamOptions co;
  co.urls = {"http://127.0.0.1:" + std::to_string(up.port)};
  auto client = upstream::UpstreamClient::Create(co);
  ASSERT_TRUE(client.ok()) << client.status();
  upstream::SteeringUpstream generic;
  generic.declared.prefix_caching = {true, "configured"};
  generic.auth = std::string("Bearer ") + kUpToken;
  auto s = ProxySteering::Create(RealClock::Default(), client->get(), {generic});
  ASSERT_TRUE(s.ok()) << s.status();
  ProxySteering& steering = **s;

  // Without the scheduler's decisions: the next turn finds its prefix evicted.
  HandSession cold(&steering, up.port, 1);
  cold.Turn();
  Evict(up.port);
  const Usage cold_next = cold.Turn();

  // With them: the demote then the prefetch warm the prefix back before the next turn.
  HandSession warm(&steering, up.port, 2);
  warm.Turn();
  Evict(up.port);
  warm.Decide(Generation::KvDecision::Kind::kDemote);
  warm.Decide(Generation::KvDecision::Kind::kPrefetch);
  ASSERT_TRUE(testing::WaitUntil([&] { return steering.figures()[0].counters.warmups_done == 1; }))
      << "the prefetch sent no warm-up, or it was never answered";
  const Usage warm_next = warm.Turn();
  ASSERT_FALSE(HasFailure());

  std::printf("next turn after eviction: cached %lld of %lld (no warm-up) vs %lld of %lld\n",
              (long long)cold_next.cached, (long long)cold_next.prompt, (long long)warm_next.cached,
              (long long)warm_next.prompt);
  EXPECT_LT(cold_next.cached * 2, cold_next.prompt) << "the filler did not evict the prefix";
  EXPECT_GT(warm_next.cached * 4, warm_next.prompt * 3) << "the warm-up did not restore it";
  const ProxySteering::Figures f = steering.figures()[0];
  EXPECT_EQ(f.counters.warmups_sent, 1u);
  EXPECT_EQ(f.counters.warmups_hit, 1u);
}

// The upstream honours vLLM's request `priority` in its prefix cache's eviction order: of
// two finished sessions, the less important one's blocks are reused first, whichever is
// older. With equal priorities the cache is an LRU (the older one goes first): the control.
TEST(ProxySteeringE2eTest, UpstreamEvictsTheLessImportantPrefixFirst) {
  const std::string base = ::testing::TempDir() + "/sy_steer_prio_" + std::to_string(::getpid());
  auto ask = [](uint16_t port, const json& messages, int priority) {
    json body = {{"model", testing::kModel},
                 {"messages", messages},
                 {"max_tokens", 1},
                 {"priority", priority}};
    auto r = testing::Request(port, "POST", "/v1/chat/completions", body.dump(),
                              {{"Authorization", std::string("Bearer ") + kUpToken},
                               {"Content-Type", "application/json"}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? UsageOfAnswer(r.body) : Usage{};
  };
  // Returns the cached share of the older and the newer session's next turn.
  auto run = [&](const std::string& name, int older_priority, int newer_priority) {
    testing::ProxyTestServer up;
    testing::ProxyTestOptions uo;
    uo.policy = "vllm-fcfs";
    uo.kv_pool_bytes = kUpstreamPool;
    up.Start(base + name, kUpToken, "", uo);
    const json older = FirstMessages(1), newer = FirstMessages(2);
    ask(up.port, older, older_priority);
    ask(up.port, newer, newer_priority);
    // Room for one of the two prefixes beside it, not for both.
    std::string text;
    while (text.size() < 1250) text += "unrelated filler " + std::to_string(text.size()) + " ";
    ask(up.port, json::array({{{"role", "user"}, {"content", text}}}), 0);
    // The newer one first: under an LRU, recomputing the older one would push it out.
    const Usage n = ask(up.port, newer, newer_priority), o = ask(up.port, older, older_priority);
    std::printf("%s: older cached %lld of %lld, newer %lld of %lld\n", name.c_str(),
                (long long)o.cached, (long long)o.prompt, (long long)n.cached, (long long)n.prompt);
    return std::pair<double, double>{double(o.cached) / std::max<int64_t>(1, o.prompt),
                                     double(n.cached) / std::max<int64_t>(1, n.prompt)};
  };
  const auto [lru_older, lru_newer] = run("lru", 0, 0);
  const auto [prio_older, prio_newer] = run("prio", -1, 1);
  ASSERT_FALSE(HasFailure());
  EXPECT_LT(lru_older, 0.5) << "equal priorities: the older prefix goes first";
  EXPECT_GT(lru_newer, 0.9);
  EXPECT_GT(prio_older, 0.9) << "the more important prefix is kept, although older";
  EXPECT_LT(prio_newer, 0.5);
}

// Sessions through a proxy server in front of the same kind of upstream, turn after turn.
TEST(ProxySteeringE2eTest, ServeForwardsThroughSteering) {
  constexpr int kSessions = 2, kTurns = 3;
  const std::string base = ::testing::TempDir() + "/sy_steer_serve_" + std::to_string(::getpid());
  testing::ProxyTestServer up, proxy;
  testing::ProxyTestOptions uo;
  uo.policy = "vllm-fcfs";
  uo.kv_pool_bytes = kUpstreamPool;
  up.Start(base + "_up", kUpToken, "", uo);
  proxy.Start(base + "_front", kToken, "http://127.0.0.1:" + std::to_string(up.port));
  const std::map<std::string, std::string> auth{{"Authorization", std::string("Bearer ") + kToken}};
  for (int id = 0; id < kSessions; ++id) {
    json messages = FirstMessages(id);
    std::map<std::string, std::string> headers = auth;
    headers["Content-Type"] = "application/json";
    headers["x-session-id"] = "agent-" + std::to_string(id);
    for (int turn = 0; turn < kTurns; ++turn) {
      json body = {{"model", testing::kModel}, {"messages", messages}, {"max_tokens", 1}};
      auto r = testing::Request(proxy.port, "POST", "/v1/chat/completions", body.dump(), headers);
      ASSERT_EQ(r.status, 200) << r.body;
      messages.push_back(json::parse(r.body)["choices"][0]["message"]);
      messages.push_back({{"role", "user"}, {"content", "Tool output " + std::to_string(turn)}});
    }
  }
  json upstream;
  auto decided = [&] {
    auto c = testing::Request(proxy.port, "GET", "/v1/cluster", "", auth);
    upstream = json::parse(c.body)["upstreams"][0];
    uint64_t n = 0;
    for (const char* k : {"keep", "demote", "discard"})
      n += std::stoull(upstream["decisions"].value(k, std::string("0")));
    return n > 0;
  };
  ASSERT_TRUE(testing::WaitUntil(decided)) << upstream.dump();
  EXPECT_EQ(upstream["steering"], true);
  EXPECT_EQ(upstream["actions"]["decorated"], std::to_string(kSessions * kTurns));
  EXPECT_GE(std::stoll(upstream["requests"].get<std::string>()), kSessions * kTurns);
  EXPECT_GT(std::stoll(upstream["promptTokens"].get<std::string>()), 0);
  EXPECT_EQ(upstream["actions"]["failed"], "0");
}

}  // namespace
}  // namespace switchyard::frontends
