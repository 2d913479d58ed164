// The Messages and Responses front doors under a KV squeeze, as the chat front's test
// (openai_front_test.cc) shows it for Chat Completions: several sessions at once on a
// small KV pool of the CPU engine (a tiny model with random weights), so that contexts are
// demoted, discarded, preempted and recomputed; every greedy answer of a session equals the
// answer to a fresh request with the same conversation. Sessions are named the way the
// agents name them: Claude Code's x-claude-code-session-id header, Codex's
// prompt_cache_key.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <thread>
#include <vector>

#include "serve/http_api.h"
#include "tests/frontends/fronts_test_util.h"
#include "tests/http/http_test_client.h"
#include "tests/serve/loopback_api.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;

constexpr char kSqueezeToken[] = "squeeze-tenant-token-0123456789ab";
using testing::kModel;
constexpr int kSessions = 5, kTurns = 3, kMaxTokens = 10;

class SqueezeFrontsTest : public testing::LoopbackApiTest {
 protected:
  void SetUp() override {
    service::ServiceOptions so;
    so.scheduler.engine = "cpu";
    so.scheduler.model_path = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json";
    so.scheduler.kv_pool_bytes = 256ULL << 10;  // 512 tokens of this model's KV
    so.scheduler.host_bytes = 64ULL << 20;
    so.scheduler.disk_bytes = 64ULL << 20;
    http::HttpServerOptions ho;
    ho.threads = 8;
    Serve(so, OneTenant(kSqueezeToken, "squeeze-admin-token-0123456789ab"), {}, ho);
  }
  json Post(const std::string& path, const json& body, std::map<std::string, std::string> h) {
    h["content-type"] = "application/json";
    auto r = testing::Request(port_, "POST", path, body.dump(), h);
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  }
  // One Messages turn: the answer's text ("" on failure).
  std::string Message(const json& msgs, const std::string& session) {
    std::map<std::string, std::string> h = {{"x-api-key", kSqueezeToken},
                                            {"anthropic-version", "2023-06-01"}};
    if (!session.empty()) h["x-claude-code-session-id"] = session;
    json m = Post(
        "/v1/messages",
        {{"model", kModel}, {"messages", msgs}, {"max_tokens", kMaxTokens}, {"temperature", 0}}, h);
    if (!m.contains("content") || m["content"].empty()) return "";
    return m["content"][0].value("text", "");
  }
  // One Responses turn (stateless, as Codex sends them): the answer's text.
  std::string Response(const json& input, const std::string& session) {
    json body = {{"model", kModel},
                 {"input", input},
                 {"max_output_tokens", kMaxTokens},
                 {"temperature", 0},
                 {"store", false}};
    if (!session.empty()) body["prompt_cache_key"] = session;
    json r =
        Post("/v1/responses", body, {{"Authorization", std::string("Bearer ") + kSqueezeToken}});
    std::string text;
    for (const json& item : r.value("output", json::array()))
      if (item.value("type", "") == "message")
        for (const json& part : item["content"]) text += part.value("text", "");
    return text;
  }
  json Cluster() {
    auto r = testing::Request(port_, "GET", "/v1/cluster", "",
                              {{"Authorization", std::string("Bearer ") + kSqueezeToken}});
    return json::parse(r.body, nullptr, false);
  }
  int64_t ContextsThatLeftThePool() {
    json kinds = Cluster()["decisionsByKind"];
    int64_t left = 0;
    for (const char* k : {"discard", "demote", "preempt"})
      if (kinds.contains(k)) left += std::stoll(kinds[k].get<std::string>());
    return left;
  }

  // Runs kSessions sessions of kTurns turns at once through `turn` (messages so far,
  // session id -> answer), then each turn again as a fresh request with no session.
  template <typename Turn>
  void ExpectSessionsEqualFreshRequests(const std::string& prefix, Turn turn) {
    std::vector<std::vector<std::string>> answers(kSessions);
    std::vector<json> convs(kSessions);
    std::vector<std::thread> threads;
    for (int s = 0; s < kSessions; ++s) {
      threads.emplace_back([&, s]() {
        json msgs = {{{"role", "user"}, {"content", prefix + " session " + std::to_string(s)}}};
        for (int t = 0; t < kTurns; ++t) {
          std::string a = turn(msgs, prefix + "-" + std::to_string(s));
          answers[s].push_back(a);
          msgs.push_back({{"role", "assistant"}, {"content", a}});
          msgs.push_back({{"role", "user"}, {"content", "and then " + std::to_string(t)}});
        }
        convs[s] = msgs;
      });
    }
    for (auto& t : threads) t.join();
    for (int s = 0; s < kSessions; ++s) {
      ASSERT_EQ(answers[s].size(), static_cast<size_t>(kTurns));
      for (int t = 0; t < kTurns; ++t) {
        json upto(convs[s].begin(), convs[s].begin() + 1 + 2 * t);
        EXPECT_EQ(turn(upto, ""), answers[s][t]) << prefix << " session " << s << " turn " << t;
        EXPECT_FALSE(answers[s][t].empty()) << "an answer of " << kMaxTokens << " tokens";
      }
    }
    EXPECT_GT(ContextsThatLeftThePool(), 0) << Cluster()["decisionsByKind"].dump();
  }
};

TEST_F(SqueezeFrontsTest, MessagesAnswersUnderAKvSqueezeEqualFreshRequests) {
  ExpectSessionsEqualFreshRequests(
      "messages", [this](const json& msgs, const std::string& s) { return Message(msgs, s); });
}

TEST_F(SqueezeFrontsTest, ResponsesAnswersUnderAKvSqueezeEqualFreshRequests) {
  ExpectSessionsEqualFreshRequests(
      "responses", [this](const json& msgs, const std::string& s) { return Response(msgs, s); });
}

}  // namespace
}  // namespace switchyard::frontends
