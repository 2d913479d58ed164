// Reading an upstream's load from its Prometheus /metrics: the text format, each engine's
// gauges (vLLM, SGLang, llama.cpp, Switchyard), and the periodic scrape against a
// recording upstream.
#include "upstream/upstream_load.h"

#include <gtest/gtest.h>

#include "base/mutex.h"
#include "tests/common/wait_until.h"
#include "tests/upstream/recording_upstream.h"

namespace switchyard::upstream {
namespace {

using testing::RecordingUpstream;

// What vLLM 0.10 exposes, two data-parallel engines (trimmed to the gauges read and one
// histogram around them).
constexpr char kVllm[] =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"} 3.0\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"Qwen/Qwen3-0.6B\"} 2.0\n"
    "# TYPE vllm:num_requests_waiting gauge\n"
    "vllm:num_requests_waiting{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"} 4.0\n"
    "vllm:num_requests_waiting{engine=\"1\",model_name=\"Qwen/Qwen3-0.6B\"} 0.0\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"} 0.9\n"
    "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"Qwen/Qwen3-0.6B\"} 0.5\n"
    "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 12.0\n"
    "vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} 1.5e+01 1733500000000\n";

TEST(PrometheusText, SamplesAreKeptPerLabelSetWithQuotedBracesAndTimestamps) {
  auto s = ParsePrometheusText(
      "# comment\n\nm_total{path=\"/a{b}\",q=\"say \\\"hi\\\"\"} 2\r\nm_total 3 17\nup NaN\n");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->at("m_total").size(), 2u);
  EXPECT_EQ(s->at("m_total")[0].first, "path=\"/a{b}\",q=\"say \\\"hi\\\"\"");
  EXPECT_EQ(s->at("m_total")[0].second, 2);
  EXPECT_EQ(s->at("m_total")[1].second, 3);
  EXPECT_TRUE(std::isnan(s->at("up")[0].second));
}

TEST(PrometheusText, ABadLineIsNamedWithWhatIsWrong) {
  auto s = ParsePrometheusText("ok 1\nbroken{a=\"1\" 2\n");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "metrics line 2: the label set has no closing '}'");
  s = ParsePrometheusText("ok 1\n# x\nlonely\n");
  EXPECT_EQ(s.status().message(), "metrics line 3: 'lonely' has no value");
  s = ParsePrometheusText("m{a=\"b\"} many\n");
  EXPECT_EQ(s.status().message(), "metrics line 1: 'many' is not a sample value");
}

TEST(UpstreamLoad, VllmCountsAreSummedOverEnginesAndTheKvShareAveraged) {
  auto s = ParsePrometheusText(kVllm);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto l = LoadOf(UpstreamKind::kVllm, *s);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->engine, "vllm");
  EXPECT_EQ(l->running, 5);
  EXPECT_EQ(l->waiting, 4);
  EXPECT_DOUBLE_EQ(l->kv_usage, 0.7);
  // A generic upstream is whichever engine answers.
  EXPECT_EQ(LoadOf(UpstreamKind::kGeneric, *s)->engine, "vllm");
}

TEST(UpstreamLoad, OlderVllmSglangLlamaCppAndSwitchyardGauges) {
  auto old = ParsePrometheusText(
      "vllm:num_requests_running{model_name=\"m\"} 1\n"
      "vllm:num_requests_waiting{model_name=\"m\"} 0\n"
      "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.25\n");
  EXPECT_DOUBLE_EQ(LoadOf(UpstreamKind::kVllm, *old)->kv_usage, 0.25);
  auto sglang = ParsePrometheusText(
      "sglang:num_running_reqs{model_name=\"m\"} 7\nsglang:num_queue_reqs{model_name=\"m\"} 2\n"
      "sglang:token_usage{model_name=\"m\"} 0.4\n");
  auto l = LoadOf(UpstreamKind::kSglang, *sglang);
  EXPECT_EQ(l->engine, "sglang");
  EXPECT_EQ(l->running, 7);
  EXPECT_EQ(l->waiting, 2);
  EXPECT_DOUBLE_EQ(l->kv_usage, 0.4);
  // llama-server --metrics.
  auto llama = ParsePrometheusText(
      "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 1\n"
      "llamacpp:requests_deferred 3\nllamacpp:kv_cache_usage_ratio 0.125\n");
  l = LoadOf(UpstreamKind::kLlamaCpp, *llama);
  EXPECT_EQ(l->engine, "llamacpp");
  EXPECT_EQ(l->waiting, 3);
  EXPECT_DOUBLE_EQ(l->kv_usage, 0.125);
  // Another Switchyard: its nodes; its HBM tiers hold idle contexts too, so they give no
  // KV share.
  auto sy = ParsePrometheusText(
      "switchyard_scheduler_running_nodes 2\nswitchyard_scheduler_queued_nodes 1\n"
      "switchyard_tier_used_bytes{tier=\"hbm\",worker=\"0\"} 30\n"
      "switchyard_tier_used_bytes{tier=\"hbm\",worker=\"1\"} 10\n"
      "switchyard_tier_used_bytes{tier=\"host\",worker=\"0\"} 500\n"
      "switchyard_tier_capacity_bytes{tier=\"hbm\",worker=\"0\"} 100\n"
      "switchyard_tier_capacity_bytes{tier=\"hbm\",worker=\"1\"} 100\n");
  l = LoadOf(UpstreamKind::kGeneric, *sy);
  EXPECT_EQ(l->engine, "switchyard");
  EXPECT_EQ(l->running, 2);
  EXPECT_EQ(l->kv_usage, -1);
  // An engine without a KV gauge still reports its requests; nothing known: no load.
  auto bare = ParsePrometheusText("sglang:num_running_reqs 1\n");
  EXPECT_EQ(LoadOf(UpstreamKind::kSglang, *bare)->kv_usage, -1);
  auto none = ParsePrometheusText("process_cpu_seconds_total 3\n");
  EXPECT_FALSE(LoadOf(UpstreamKind::kGeneric, *none).has_value());
}

TEST(LoadMonitor, ScrapesEachUpstreamAndSaysWhyOneGaveNoLoad) {
  RecordingUpstream vllm, bare;
  vllm.Answer("GET /metrics", 200, kVllm);  // `bare` has no /metrics: 404
  auto client = UpstreamClient::Create({.urls = {vllm.url(), bare.url()}});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Mutex mu;
  std::vector<std::pair<size_t, UpstreamLoad>> seen;
  LoadMonitor::Options o;
  o.interval_ms = 20;
  o.auth = "Bearer k";
  o.kinds = {UpstreamKind::kVllm};
  {
    LoadMonitor monitor(client->get(), o, [&](size_t i, const UpstreamLoad& l) {
      MutexLock lock(&mu);
      seen.emplace_back(i, l);
    });
    // Read on a period: several scrapes of each.
    ASSERT_TRUE(vllm.WaitFor("GET /metrics", 3));
    ASSERT_TRUE(bare.WaitFor("GET /metrics", 3));
    ASSERT_TRUE(switchyard::testing::WaitUntil([&] {
      auto st = monitor.status();
      return st[0].scrapes >= 2 && st[1].failures >= 2;
    }));
    auto st = monitor.status();
    ASSERT_TRUE(st[0].last.has_value());
    EXPECT_EQ(st[0].last->waiting, 4);
    EXPECT_EQ(st[0].error, "");
    EXPECT_FALSE(st[1].last.has_value());
    EXPECT_EQ(st[1].error, "GET /metrics answered 404");
  }
  EXPECT_EQ(vllm.requests("GET /metrics")[0].headers["authorization"], "Bearer k");
  MutexLock lock(&mu);
  ASSERT_FALSE(seen.empty());
  for (const auto& [i, l] : seen) {
    EXPECT_EQ(i, 0u);  // only what gave a load is handed on
    EXPECT_EQ(l.running, 5);
  }
}

}  // namespace
}  // namespace switchyard::upstream
