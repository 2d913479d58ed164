// The Anthropic Messages front over real HTTP on loopback, answers computed by the CPU
// engine (a tiny model with random weights): messages whole and streamed, count_tokens,
// x-api-key, errors in Anthropic's shape, a Claude Code session as one workflow with tool
// waits named after its tools and the context reused, ignored fields named.
#include "frontends/anthropic/anthropic_front.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "serve/http_api.h"
#include "tests/frontends/fronts_test_util.h"
#include "tests/frontends/sse_events.h"
#include "tests/http/http_test_client.h"
#include "tests/serve/loopback_api.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;

constexpr char kAnthropicToken[] = "anthropic-tenant-token-0123456789";
using testing::kModel;

class AnthropicFrontTest : public testing::LoopbackApiTest {
 protected:
  void SetUp() override {
    service::ServiceOptions so;
    so.scheduler.engine = "cpu";
    so.scheduler.model_path = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json";
    so.scheduler.kv_pool_bytes = 4ULL << 20;
    so.scheduler.host_bytes = 64ULL << 20;
    so.scheduler.disk_bytes = 64ULL << 20;
    http::HttpServerOptions ho;
    ho.threads = 4;
    Serve(so, OneTenant(kAnthropicToken, "anthropic-admin-token-0123456789"), {}, ho);
  }
  testing::ClientResponse Post(const std::string& path, const json& body,
                               std::map<std::string, std::string> h = {}) {
    h.emplace("x-api-key", kAnthropicToken);
    h["anthropic-version"] = "2023-06-01";
    h["content-type"] = "application/json";
    return testing::Request(port_, "POST", path, body.dump(), h);
  }
  json Get(const std::string& path) {
    auto r = testing::Request(port_, "GET", path, "",
                              {{"Authorization", std::string("Bearer ") + kAnthropicToken}});
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  }
  static json Body(const json& messages, int max_tokens = 8) {
    return json{
        {"model", kModel}, {"messages", messages}, {"max_tokens", max_tokens}, {"temperature", 0}};
  }
  // The (event, data) pairs of a chunked SSE body.
  static std::vector<std::pair<std::string, json>> Events(const std::string& chunked) {
    return testing::NamedEvents(chunked);
  }
};

TEST_F(AnthropicFrontTest, AMessageAndItsTokenCountWithXApiKey) {
  json msgs = {{{"role", "user"}, {"content", "hello there"}}};
  auto r = Post("/v1/messages?beta=true", Body(msgs));
  ASSERT_EQ(r.status, 200) << r.body;
  json m = json::parse(r.body);
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["model"], kModel);
  EXPECT_EQ(m["id"].get<std::string>().substr(0, 4), "msg_");
  ASSERT_EQ(m["content"].size(), 1u) << r.body;
  EXPECT_EQ(m["content"][0]["type"], "text");
  EXPECT_TRUE(m["stop_reason"] == "max_tokens" || m["stop_reason"] == "end_turn") << r.body;
  EXPECT_EQ(m["usage"]["output_tokens"], 8);
  EXPECT_EQ(m["usage"]["cache_read_input_tokens"], 0);
  auto c = Post("/v1/messages/count_tokens", {{"model", kModel}, {"messages", msgs}});
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(json::parse(c.body)["input_tokens"], m["usage"]["input_tokens"]) << c.body;
}

TEST_F(AnthropicFrontTest, ErrorsHaveAnthropicsShape) {
  auto unauth = testing::Request(port_, "POST", "/v1/messages", "{}", {});
  EXPECT_EQ(unauth.status, 401);
  json u = json::parse(unauth.body, nullptr, false);
  EXPECT_EQ(u["type"], "error") << unauth.body;
  EXPECT_EQ(u["error"]["type"], "authentication_error") << unauth.body;
  auto no_max = Post("/v1/messages", {{"model", kModel}, {"messages", json::array()}});
  EXPECT_EQ(no_max.status, 400);
  json e = json::parse(no_max.body, nullptr, false);
  EXPECT_EQ(e["error"]["type"], "invalid_request_error") << no_max.body;
  EXPECT_NE(e["error"]["message"].get<std::string>().find("max_tokens"), std::string::npos)
      << no_max.body;
  json other = Body({{{"role", "user"}, {"content", "x"}}});
  other["model"] = "claude-opus-4";
  auto nf = Post("/v1/messages", other);
  EXPECT_EQ(nf.status, 404) << nf.body;
  EXPECT_EQ(json::parse(nf.body, nullptr, false)["error"]["type"], "not_found_error");
}

TEST_F(AnthropicFrontTest, AClaudeCodeSessionIsOneWorkflowWithToolWaitsNamedAfterItsTools) {
  json tools = json::array({{{"name", "Bash"},
                             {"description", "Run a command"},
                             {"input_schema",
                              {{"type", "object"},
                               {"properties", {{"command", {{"type", "string"}}}}},
                               {"required", {"command"}}}}}});
  json msgs = {{{"role", "user"}, {"content", "list the files"}}};
  std::map<std::string, std::string> h{{"x-claude-code-session-id", "cc-session-1"}};
  std::string wf;
  for (int turn = 0; turn < 2; ++turn) {
    json body = Body(msgs, 6);
    body["system"] = json::array({{{"type", "text"},
                                   {"text", "You are Claude Code."},
                                   {"cache_control", {{"type", "ephemeral"}}}}});
    body["tools"] = tools;
    body["tool_choice"] = {{"type", "tool"}, {"name", "Bash"}};
    auto r = Post("/v1/messages", body, h);
    ASSERT_EQ(r.status, 200) << r.body;
    json m = json::parse(r.body);
    EXPECT_EQ(m["stop_reason"], "tool_use") << r.body;
    json use = m["content"].back();
    ASSERT_EQ(use["type"], "tool_use") << r.body;
    EXPECT_EQ(use["name"], "Bash");
    EXPECT_TRUE(use["input"]["command"].is_string()) << r.body;
    if (turn > 0) {
      EXPECT_EQ(r.headers["x-switchyard-workflow-id"], wf) << "one workflow per session";
      EXPECT_GT(m["usage"]["cache_read_input_tokens"].get<int64_t>(), 0) << r.body;
    }
    wf = r.headers["x-switchyard-workflow-id"];
    msgs.push_back({{"role", "assistant"}, {"content", m["content"]}});
    msgs.push_back(
        {{"role", "user"},
         {"content", {{{"type", "tool_result"}, {"tool_use_id", use["id"]}, {"content", "a b"}}}}});
  }
  json st = Get("/v1/workflows/" + wf);
  int bash = 0;
  for (const json& n : st["nodes"]) {
    if (n.value("toolName", "") != "Bash") continue;
    ++bash;
    // The system block's cache_control (ttl 5m by default) retains the context in the wait.
    EXPECT_EQ(n.value("retainMs", ""), "300000") << n.dump();
  }
  EXPECT_EQ(bash, 2) << "a wait after each answer, named after its tool: " << st.dump();
  // A sub-agent of that session (Claude Code's agent id) is a session of its own.
  h["x-claude-code-agent-id"] = "agent-7";
  json sub = Body({{{"role", "user"}, {"content", "search the code"}}}, 4);
  sub["system"] = json::array({{{"type", "text"},
                                {"text", "You are a sub-agent."},
                                {"cache_control", {{"type", "ephemeral"}, {"ttl", "1h"}}}}});
  auto r = Post("/v1/messages", sub, h);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string sub_wf = r.headers["x-switchyard-workflow-id"];
  EXPECT_NE(sub_wf, wf) << "the sub-agent's session is not its parent's";
  json sub_st = Get("/v1/workflows/" + sub_wf);
  bool retained_1h = false;
  for (const json& n : sub_st["nodes"]) retained_1h |= n.value("retainMs", "") == "3600000";
  EXPECT_TRUE(retained_1h) << "ttl 1h: " << sub_st.dump();
}

TEST_F(AnthropicFrontTest, AStreamIsTheMessagesEventSequenceAndCarriesTheWholeAnswer) {
  json msgs = {{{"role", "user"}, {"content", "tell me a story"}}};
  auto whole = Post("/v1/messages", Body(msgs, 10));
  ASSERT_EQ(whole.status, 200) << whole.body;
  json body = Body(msgs, 10);
  body["stream"] = true;
  auto r = Post("/v1/messages", body);
  ASSERT_EQ(r.status, 200) << r.body;
  auto events = Events(r.body);
  ASSERT_GE(events.size(), 5u) << r.body;
  EXPECT_EQ(events.front().first, "message_start");
  EXPECT_EQ(events.back().first, "message_stop");
  EXPECT_EQ(events[events.size() - 2].first, "message_delta");
  std::string text;
  for (const auto& [type, data] : events)
    if (type == "content_block_delta") text += data["delta"]["text"].get<std::string>();
  json m = json::parse(whole.body);
  EXPECT_EQ(text, m["content"].empty() ? "" : m["content"][0]["text"].get<std::string>())
      << "greedy: the stream carries the whole answer's text";
  EXPECT_EQ(events[events.size() - 2].second["usage"]["output_tokens"], 10);
}

TEST_F(AnthropicFrontTest, FieldsItCannotHonourAreNamedInAHeader) {
  json body = Body({{{"role", "user"}, {"content", "x"}}});
  body["thinking"] = {{"type", "adaptive"}};
  body["context_management"] = json::object();
  auto r = Post("/v1/messages", body, {{"anthropic-beta", "interleaved-thinking-2025-05-14"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string ignored = r.headers["x-switchyard-ignored"];
  EXPECT_NE(ignored.find("thinking"), std::string::npos) << ignored;
  EXPECT_NE(ignored.find("context_management"), std::string::npos) << ignored;
  EXPECT_NE(ignored.find("interleaved-thinking"), std::string::npos) << ignored;
}

}  // namespace
}  // namespace switchyard::frontends
