// Steering end to end: a Switchyard proxy in front of a Switchyard upstream that behaves as
// vLLM does — the CPU engine with automatic prefix caching, policy vllm-fcfs (a finished
// request's KV stays only as its prefix cache's LRU keeps it), and a pool too small for
// every idle session. Eight agent sessions run turns separated by tool waits (the agent's
// own time: the workload, not synchronisation). With steering on, the proxy's scheduler
// models the upstream's pool, and when it predicts a waiting session's return it warms the
// session's prefix back into the upstream's cache (generic adapter); with steering off its
// decisions are advisory. The resumed turns' cached prompt share, as the upstream's usage
// reports it, must be higher with steering on. Their latency (max_tokens 1: the time to the
// first token) is printed, not asserted: the benchmark (scripts/bench.sh proxy) measures it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/wait_until.h"
#include "tests/frontends/proxy_server.h"
#include "tests/http/http_test_client.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;
using testing::kToken;
using testing::kUpToken;

constexpr int kAgents = 8;
constexpr int kTurns = 4;
constexpr auto kToolWait = std::chrono::milliseconds(400);
// The upstream's pool: 2,048 tokens of tiny-llama-2l (512 bytes each), below what the
// eight sessions' contexts need (~600-1,000 tokens each).
constexpr uint64_t kUpstreamPool = 1ULL << 20;
// The proxy models it: its prompts are estimated at 4 bytes a token, priced as
// Llama-3.1-8B (128 KiB a token): 2,048 / 4 tokens.
constexpr uint64_t kProxyHbm = (2048 / 4) * (128ULL << 10);

struct Figures {
  int64_t resumed_prompt = 0, resumed_cached = 0;
  std::vector<double> resumed_ms;
  double cached_share() const {
    return resumed_prompt == 0 ? 0 : double(resumed_cached) / double(resumed_prompt);
  }
  double p50_ms() {
    if (resumed_ms.empty()) return 0;
    std::sort(resumed_ms.begin(), resumed_ms.end());
    return resumed_ms[resumed_ms.size() / 2];
  }
};

// One agent: a long system prompt of its own, then turns whose tool results extend it.
void RunSession(uint16_t port, int id, std::mutex* mu, Figures* out) {
  std::string system = "You are agent " + std::to_string(id) + ". ";
  while (system.size() < 560) system += "Rule " + std::to_string(system.size()) + ": be exact. ";
  json messages = {{{"role", "system"}, {"content", system}},
                   {{"role", "user"},
                    {"content", "Fix the failing test in module " + std::to_string(id) + "."}}};
  const std::map<std::string, std::string> headers{
      {"Authorization", std::string("Bearer ") + kToken},
      {"Content-Type", "application/json"},
      {"x-session-id", "agent-" + std::to_string(id)}};
  for (int turn = 0; turn < kTurns; ++turn) {
    json body = {
        {"model", testing::kModel}, {"messages", messages}, {"max_tokens", 1}, {"temperature", 0}};
    const auto start = std::chrono::steady_clock::now();
    auto r = testing::Request(port, "POST", "/v1/chat/completions", body.dump(), headers);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_EQ(r.status, 200) << r.body;
    json a = json::parse(r.body);
    if (turn > 0) {
      std::lock_guard<std::mutex> lock(*mu);
      out->resumed_prompt += a["usage"]["prompt_tokens"].get<int64_t>();
      out->resumed_cached += a["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
      out->resumed_ms.push_back(ms);
    }
    messages.push_back(a["choices"][0]["message"]);
    std::this_thread::sleep_for(kToolWait);  // the agent runs its tool
    messages.push_back({{"role", "user"},
                        {"content", "Tool output " + std::to_string(turn) + ": " +
                                        std::string(120, char('a' + (id + turn) % 26))}});
  }
}

Figures RunAgents(bool steering, const std::string& name) {
  const std::string base =
      ::testing::TempDir() + "/sy_steer_" + name + "_" + std::to_string(::getpid());
  testing::ProxyTestServer up, proxy;
  testing::ProxyTestOptions uo;
  uo.policy = "vllm-fcfs";
  uo.kv_pool_bytes = kUpstreamPool;
  up.Start(base + "_up", kUpToken, "", uo);
  testing::ProxyTestOptions po;
  po.steering = steering;
  po.hbm_bytes = kProxyHbm;
  proxy.Start(base + "_front", kToken, "http://127.0.0.1:" + std::to_string(up.port), po);
  Figures f;
  std::mutex mu;
  std::vector<std::thread> agents;
  for (int i = 0; i < kAgents; ++i)
    agents.emplace_back([&, i] { RunSession(proxy.port, i, &mu, &f); });
  for (auto& t : agents) t.join();
  auto cluster = testing::Request(proxy.port, "GET", "/v1/cluster", "",
                                  {{"Authorization", std::string("Bearer ") + kToken}});
  std::printf("steering %s: cluster upstreams %s\n", steering ? "on" : "off",
              json::parse(cluster.body)["upstreams"].dump().c_str());
  return f;
}

TEST(ProxySteeringE2eTest, WarmUpsRaiseTheResumedTurnsCachedShare) {
  Figures off = RunAgents(false, "off");
  Figures on = RunAgents(true, "on");
  ASSERT_FALSE(HasFailure());
  std::printf(
      "resumed turns: cached share %.3f (steering off) vs %.3f (on); latency P50 %.1f ms "
      "vs %.1f ms\n",
      off.cached_share(), on.cached_share(), off.p50_ms(), on.p50_ms());
  EXPECT_GT(on.cached_share(), off.cached_share());
}

}  // namespace
}  // namespace switchyard::frontends
