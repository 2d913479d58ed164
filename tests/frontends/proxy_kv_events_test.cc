// Proxy mode knows from a vLLM upstream's KV events whether a waiting session's KV is still
// there. Two upstreams answer at once; the session's first turn goes to the first, which
// returns the turn's token ids (`return_token_ids`, declared #vllm+token_ids) and publishes
// the blocks it stored. Then the first upstream reports itself loaded. The session's next
// turn stays where its context is (recomputing 25,000 tokens elsewhere costs more than the
// load) — unless the upstream's events said its blocks were removed meanwhile: then the
// scheduler hears the context was evicted and places the turn as a recompute on the idle
// upstream.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <numeric>
#include <string>

#include "tests/common/wait_until.h"
#include "tests/frontends/proxy_server.h"
#include "tests/http/http_test_client.h"
#include "tests/upstream/kv_event_publisher.h"
#include "tests/upstream/recording_upstream.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;
using testing::kModel;
using testing::kToken;
using upstream::testing::Digest;
using upstream::testing::MapBatch;
using upstream::testing::Publisher;
using upstream::testing::RecordingUpstream;
using upstream::testing::RemovedBatch;
using upstream::testing::VllmGauges;

std::vector<int32_t> Ids(int first, int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// A chat answer with vLLM's token ids: a 48-token prompt (ids 0..47) and 16 output tokens.
std::string AnswerWithIds() {
  return json{{"id", "c1"},
              {"object", "chat.completion"},
              {"prompt_token_ids", Ids(0, 48)},
              {"choices",
               {{{"index", 0},
                 {"message", {{"role", "assistant"}, {"content", "done"}}},
                 {"token_ids", Ids(48, 16)},
                 {"finish_reason", "stop"}}}},
              {"usage", {{"prompt_tokens", 48}, {"completion_tokens", 16}}}}
      .dump();
}

struct TwoTurnRun {
  size_t first = 0, second = 0;  // chat calls each upstream got
  json cluster;
  std::string metrics;                            // the proxy's /metrics at the end
  std::string url;                                // the first upstream's
  std::vector<RecordingUpstream::Request> calls;  // the first upstream's chat calls
};

TwoTurnRun TwoTurns(bool evict, const std::string& tag) {
  RecordingUpstream a, b;
  for (RecordingUpstream* u : {&a, &b}) {
    u->Answer("POST /v1/chat/completions", 200, AnswerWithIds());
    u->Answer("GET /metrics", 200, VllmGauges(0, 0, 0));
  }
  Publisher pub;
  testing::ProxyTestServer proxy;
  testing::ProxyTestOptions o;
  o.load_interval_ms = 20;
  o.kv_events = {pub.endpoint(), ""};
  o.hbm_bytes = 16ULL << 30;  // the upstreams' KV capacity as the scheduler prices it
  proxy.Start(::testing::TempDir() + "/sy_kv_events_" + tag + std::to_string(::getpid()), kToken,
              a.url() + "#vllm+token_ids," + b.url() + "#vllm+token_ids", o);
  pub.WaitForSubscriber();
  auto cluster = [&] {
    auto r = testing::Request(proxy.port, "GET", "/v1/cluster", "",
                              {{"Authorization", std::string("Bearer ") + kToken + "-admin"}});
    return json::parse(r.body, nullptr, false);
  };
  auto until = [&](auto pred) {
    EXPECT_TRUE(switchyard::testing::WaitUntil([&] { return pred(cluster()); }))
        << cluster().dump();
  };
  // A long conversation: ~25,000 tokens as the scheduler prices it.
  json messages = {{{"role", "user"}, {"content", std::string(100'000, 'x')}}};
  auto turn = [&] {
    json body = {{"model", kModel}, {"messages", messages}, {"max_tokens", 16}};
    auto r = testing::Request(proxy.port, "POST", "/v1/chat/completions", body.dump(),
                              {{"Authorization", std::string("Bearer ") + kToken},
                               {"Content-Type", "application/json"},
                               {"x-session-id", "s-" + tag}});
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(switchyard::testing::WaitUntil([&] {
      auto m = testing::Request(proxy.port, "GET", "/metrics", "", {});
      return m.body.find("\nswitchyard_scheduler_running_nodes 0\n") != std::string::npos;
    }));
  };
  turn();  // both idle: the first upstream
  // It stored the turn's four blocks (the 48 prompt tokens and the 16 it wrote).
  const std::vector<int32_t> ids = Ids(0, 64);
  const std::vector<std::string> blocks = {Digest('1'), Digest('2'), Digest('3'), Digest('4')};
  pub.Send(0, MapBatch(blocks, nullptr, ids));
  until([](const json& c) { return c["upstreams"][0]["kvEvents"].value("gpuBlocks", "0") == "4"; });
  // Other clients load it.
  a.Answer("GET /metrics", 200, VllmGauges(12, 6, 0.95));
  until([](const json& c) { return c["upstreams"][0]["load"].value("running", 0.0) == 12; });
  if (evict) {  // its LRU took three of the four blocks
    pub.Send(1, RemovedBatch({blocks[3], blocks[2], blocks[1]}));
    until(
        [](const json& c) { return c["upstreams"][0]["kvEvents"].value("gpuBlocks", "0") == "1"; });
  }
  messages.push_back({{"role", "assistant"}, {"content", "done"}});
  messages.push_back({{"role", "user"}, {"content", "go on"}});
  turn();
  TwoTurnRun out;
  out.calls = a.requests("POST /v1/chat/completions");
  out.first = out.calls.size();
  out.second = b.requests("POST /v1/chat/completions").size();
  out.cluster = cluster();
  out.metrics = testing::Request(proxy.port, "GET", "/metrics", "", {}).body;
  out.url = a.url();
  return out;
}

TEST(ProxyKvEvents, ASessionWhoseBlocksTheUpstreamDroppedIsPlacedAsARecompute) {
  TwoTurnRun kept = TwoTurns(false, "kept");
  EXPECT_EQ(kept.first, 2u) << "the context is there: the turn stays despite the load";
  EXPECT_EQ(kept.second, 0u) << kept.cluster["decisionsByKind"].dump() << " "
                             << kept.cluster["upstreams"][0]["decisions"].dump();
  // Every forwarded turn asked for the token ids the check needs.
  for (const auto& r : kept.calls) EXPECT_EQ(r.json().value("return_token_ids", false), true);
  const json& events = kept.cluster["upstreams"][0]["kvEvents"];
  EXPECT_EQ(events["batches"], "1") << kept.cluster.dump();
  EXPECT_FALSE(events.contains("evictionsReported"));
  EXPECT_FALSE(kept.cluster["upstreams"][1].contains("kvEvents")) << "it publishes none";

  TwoTurnRun evicted = TwoTurns(true, "evicted");
  EXPECT_EQ(evicted.first, 1u);
  EXPECT_EQ(evicted.second, 1u) << "evicted: recomputed where the load is least";
  EXPECT_EQ(evicted.cluster["upstreams"][0]["kvEvents"]["evictionsReported"], "1")
      << evicted.cluster.dump();
  // The same in /metrics, beside the load it read.
  const std::string up = "upstream=\"" + evicted.url + "\"";
  for (const std::string& line : {"switchyard_upstream_kv_blocks{" + up + ",medium=\"GPU\"} 1\n",
                                  "switchyard_upstream_evictions_reported_total{" + up + "} 1\n",
                                  "switchyard_upstream_requests{" + up + ",state=\"running\"} 12\n",
                                  "switchyard_upstream_kv_usage_ratio{" + up + "} 0.95\n"})
    EXPECT_NE(evicted.metrics.find(line), std::string::npos) << line << " not in\n"
                                                             << evicted.metrics;
}

}  // namespace
}  // namespace switchyard::frontends
