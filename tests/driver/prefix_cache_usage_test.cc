// Automatic prefix caching as a client of serve sees it (CPU engine, OpenAI front, over
// real HTTP on loopback): a second session whose prompt starts with the first session's
// system prompt reports the tokens its engine found in usage.prompt_tokens_details.
// cached_tokens (the engine's figure through executors::Generation::cached_tokens, not the
// session layer's, which knows nothing of the other session), and /metrics counts them
// (switchyard_prefix_cache_queries_total / _hits_total).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "tests/http/http_test_client.h"
#include "tests/serve/loopback_api.h"

namespace switchyard::driver {
namespace {

using nlohmann::json;

constexpr char kPrefixTenantToken[] = "prefix-tenant-token-0123456789";

class PrefixCacheUsageTest : public testing::LoopbackApiTest {
 protected:
  void SetUp() override {
    LoopbackApiTest::SetUp();
    service::ServiceOptions so;
    so.scheduler.host_bytes = 64ULL << 20;
    so.scheduler.disk_bytes = 64ULL << 20;
    so.scheduler.engine = "cpu";
    so.scheduler.model_path = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json";
    so.scheduler.kv_pool_bytes = 2ULL << 20;
    http::HttpServerOptions ho;
    ho.threads = 2;
    Serve(so, OneTenant(kPrefixTenantToken, "prefix-admin-token-0123456789"), {}, ho);
  }
  json Chat(const std::string& session, const std::string& system, const std::string& user) {
    json body{{"model", "tiny-llama-2l"},
              {"messages", json::array({{{"role", "system"}, {"content", system}},
                                        {{"role", "user"}, {"content", user}}})},
              {"max_tokens", 3},
              {"temperature", 0}};
    auto r = testing::Request(port_, "POST", "/v1/chat/completions", body.dump(),
                              {{"Authorization", std::string("Bearer ") + kPrefixTenantToken},
                               {"Content-Type", "application/json"},
                               {"x-session-id", session}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? json::parse(r.body) : json();
  }
  // The value of a /metrics sample (-1: absent).
  double Metric(const std::string& sample) {
    std::istringstream in(testing::Request(port_, "GET", "/metrics").body);
    for (std::string line; std::getline(in, line);)
      if (line.rfind(sample + " ", 0) == 0) return std::stod(line.substr(sample.size() + 1));
    return -1;
  }
};

TEST_F(PrefixCacheUsageTest, ASecondSessionReportsTheSystemPromptItsEngineFound) {
  std::string system;
  while (system.size() < 640) system += "You are a careful assistant for agentic coding. ";
  json first = Chat("s-1", system, "List the files.");
  ASSERT_TRUE(first.contains("usage")) << first.dump();
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0) << first.dump();
  json second = Chat("s-2", system, "Show the diff.");
  ASSERT_TRUE(second.contains("usage")) << second.dump();
  const int64_t prompt = second["usage"]["prompt_tokens"].get<int64_t>();
  const int64_t cached = second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  EXPECT_GE(cached, 640 - 16) << "the system prompt's whole blocks: " << second.dump();
  EXPECT_LT(cached, prompt) << second.dump();
  EXPECT_EQ(cached % 16, 0) << "whole blocks of 16 tokens";
  EXPECT_GE(Metric("switchyard_prefix_cache_hits_total{worker=\"0\"}"), double(cached));
  EXPECT_GE(Metric("switchyard_prefix_cache_queries_total{worker=\"0\"}"),
            double(first["usage"]["prompt_tokens"].get<int64_t>() + prompt));
}

}  // namespace
}  // namespace switchyard::driver
