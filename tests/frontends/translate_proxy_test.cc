// Proxy mode's translation end to end on loopback: a Switchyard server with the CPU engine
// is an upstream taken to speak only Chat Completions (UpstreamApi::kChat); a second
// Switchyard server (no engine) orders and admits Anthropic Messages and OpenAI Responses
// calls, translates each to Chat Completions and the answer back, whole and streamed. The
// answers are the ones the upstream's own Messages and Responses fronts give (greedy
// decoding), forced tool calls come back in the front's shape with the session's waits
// named after them, and a streamed session's next turn finds the session free.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/frontends/proxy_server.h"
#include "tests/frontends/sse_events.h"
#include "tests/http/http_test_client.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;

using testing::kModel;
using testing::kToken;
using testing::kUpToken;
using testing::NamedEvents;
using Server = testing::ProxyTestServer;

// The text of a streamed answer: Messages' text_delta or Responses' output_text.delta.
std::string StreamedText(const std::vector<std::pair<std::string, json>>& events) {
  std::string text;
  for (const auto& [type, data] : events) {
    if (type == "content_block_delta" && data["delta"]["type"] == "text_delta")
      text += data["delta"]["text"].get<std::string>();
    if (type == "response.output_text.delta") text += data["delta"].get<std::string>();
  }
  return text;
}

// Responses' output text.
std::string OutputText(const json& response) {
  std::string text;
  for (const json& item : response["output"]) {
    if (item["type"] != "message") continue;
    for (const json& part : item["content"]) text += part.value("text", "");
  }
  return text;
}

const json kWeather = {
    {"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}};

class TranslateProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string base = ::testing::TempDir() + "/sy_translate_" + std::to_string(::getpid());
    up_.Start(base + "_up", kUpToken);
    proxy_.Start(base + "_front", kToken, "http://127.0.0.1:" + std::to_string(up_.port) + "#chat");
  }
  // POSTs `body` to `path` of the proxy, or of the upstream directly.
  testing::ClientResponse Post(bool direct, const std::string& path, const json& body,
                               std::map<std::string, std::string> h = {}) {
    h["x-api-key"] = direct ? kUpToken : kToken;
    h["anthropic-version"] = "2023-06-01";
    h["content-type"] = "application/json";
    return testing::Request(direct ? up_.port : proxy_.port, "POST", path, body.dump(), h);
  }
  json Get(const std::string& path) {
    auto r = testing::Request(proxy_.port, "GET", path, "",
                              {{"Authorization", std::string("Bearer ") + kToken}});
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    return json::parse(r.body, nullptr, false);
  }
  // The proxy's workflow's nodes: id -> (state, toolName).
  std::map<std::string, std::pair<std::string, std::string>> Nodes(const std::string& wf) {
    std::map<std::string, std::pair<std::string, std::string>> out;
    const json st = Get("/v1/workflows/" + wf);
    for (const json& n : st["nodes"]) out[n["id"]] = {n["state"], n.value("toolName", "")};
    return out;
  }
  Server up_, proxy_;
};

TEST_F(TranslateProxyTest, MessagesWholeAndStreamedAnswerAsTheUpstreamsOwnMessagesFront) {
  json body = {{"model", kModel},
               {"system", "Answer briefly."},
               {"messages", {{{"role", "user"}, {"content", "hello through the proxy"}}}},
               {"max_tokens", 8},
               {"temperature", 0}};
  auto direct = Post(true, "/v1/messages", body);
  ASSERT_EQ(direct.status, 200) << direct.body;
  auto via = Post(false, "/v1/messages", body);
  ASSERT_EQ(via.status, 200) << via.body;
  json a = json::parse(via.body), b = json::parse(direct.body);
  EXPECT_EQ(a["type"], "message");
  EXPECT_EQ(a["model"], kModel);
  EXPECT_EQ(a["content"], b["content"]) << "the upstream's own Messages front: " << direct.body;
  EXPECT_EQ(a["stop_reason"], b["stop_reason"]);
  EXPECT_EQ(a["usage"]["output_tokens"], b["usage"]["output_tokens"]);
  EXPECT_FALSE(via.headers["x-switchyard-workflow-id"].empty());

  body["stream"] = true;
  auto streamed = Post(false, "/v1/messages", body);
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(streamed.headers["content-type"], "text/event-stream");
  auto events = NamedEvents(streamed.body);
  ASSERT_GE(events.size(), 4u) << streamed.body;
  EXPECT_EQ(events.front().first, "message_start");
  EXPECT_EQ(events.back().first, "message_stop");
  EXPECT_EQ(StreamedText(events), b["content"][0]["text"].get<std::string>()) << streamed.body;
  EXPECT_EQ(events[events.size() - 2].second["delta"]["stop_reason"], b["stop_reason"]);

  // count_tokens, which a Chat Completions upstream lacks, is this server's estimate.
  auto count =
      Post(false, "/v1/messages/count_tokens", {{"model", kModel}, {"messages", body["messages"]}});
  ASSERT_EQ(count.status, 200) << count.body;
  EXPECT_GT(json::parse(count.body)["input_tokens"].get<int64_t>(), 0);
}

TEST_F(TranslateProxyTest, ResponsesWholeAndStreamedAnswerAsTheUpstreamsOwnResponsesFront) {
  json body = {{"model", kModel},
               {"instructions", "Answer briefly."},
               {"input", "hello through the proxy"},
               {"max_output_tokens", 8},
               {"temperature", 0}};
  auto direct = Post(true, "/v1/responses", body);
  ASSERT_EQ(direct.status, 200) << direct.body;
  auto via = Post(false, "/v1/responses", body);
  ASSERT_EQ(via.status, 200) << via.body;
  json a = json::parse(via.body), b = json::parse(direct.body);
  EXPECT_EQ(a["object"], "response");
  EXPECT_EQ(a["status"], b["status"]);
  EXPECT_EQ(OutputText(a), OutputText(b)) << "the upstream's own Responses front: " << direct.body;
  EXPECT_EQ(a["usage"]["output_tokens"], b["usage"]["output_tokens"]);
  // Stored here (the upstream has no Responses store to give it), and chained on.
  const std::string id = a["id"];
  EXPECT_EQ(Get("/v1/responses/" + id)["id"], id);
  json next = body;
  next["previous_response_id"] = id;
  next["input"] = "and again";
  auto chained = Post(false, "/v1/responses", next);
  EXPECT_EQ(chained.status, 200) << chained.body;

  body["stream"] = true;
  auto streamed = Post(false, "/v1/responses", body);
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  auto events = NamedEvents(streamed.body);
  ASSERT_GE(events.size(), 3u) << streamed.body;
  EXPECT_EQ(events.front().first, "response.created");
  EXPECT_EQ(events.back().second["response"]["status"], b["status"]) << streamed.body;
  EXPECT_EQ(StreamedText(events), OutputText(b)) << streamed.body;
  EXPECT_EQ(OutputText(events.back().second["response"]), OutputText(b));
}

TEST_F(TranslateProxyTest, AStreamedForcedToolUseNamesTheWaitAndTheNextTurnFollowsAtOnce) {
  const std::map<std::string, std::string> session{{"x-claude-code-session-id", "cc-translate"}};
  json msgs = {{{"role", "user"}, {"content", "weather in Paris?"}}};
  json body = {{"model", kModel},
               {"messages", msgs},
               {"max_tokens", 24},
               {"temperature", 0},
               {"stream", true},
               {"tools", {{{"name", "get_weather"}, {"input_schema", kWeather}}}},
               {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}}}};
  auto first = Post(false, "/v1/messages", body, session);
  ASSERT_EQ(first.status, 200) << first.body;
  const std::string wf = first.headers["x-switchyard-workflow-id"];
  json use, input_json;
  std::string partial;
  for (const auto& [type, data] : NamedEvents(first.body)) {
    if (type == "content_block_start" && data["content_block"]["type"] == "tool_use")
      use = data["content_block"];
    if (type == "content_block_delta" && data["delta"]["type"] == "input_json_delta")
      partial += data["delta"]["partial_json"].get<std::string>();
  }
  ASSERT_EQ(use["name"], "get_weather") << first.body;
  input_json = json::parse(partial, nullptr, false);
  EXPECT_TRUE(input_json["city"].is_string()) << partial;
  auto nodes = Nodes(wf);
  EXPECT_EQ(nodes["llm-0"].first, "NODE_SUCCEEDED");
  bool waits = false;
  for (const auto& [id, node] : nodes) waits |= node.second == "get_weather";
  EXPECT_TRUE(waits) << "the wait is named after the tool the translated answer called";

  // The next turn, sent as soon as the stream ended, finds the session free.
  msgs.push_back({{"role", "assistant"},
                  {"content",
                   {{{"type", "tool_use"},
                     {"id", use["id"]},
                     {"name", "get_weather"},
                     {"input", input_json}}}}});
  msgs.push_back(
      {{"role", "user"},
       {"content", {{{"type", "tool_result"}, {"tool_use_id", use["id"]}, {"content", "sunny"}}}}});
  body["messages"] = msgs;
  body["tool_choice"] = {{"type", "auto"}};
  body["max_tokens"] = 6;
  auto second = Post(false, "/v1/messages", body, session);
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(second.headers["x-switchyard-workflow-id"], wf) << "one session, one workflow";
  EXPECT_EQ(NamedEvents(second.body).back().first, "message_stop") << second.body;
}

TEST_F(TranslateProxyTest, AForcedFunctionCallComesBackAsAFunctionCallItem) {
  json body = {
      {"model", kModel},
      {"input", "weather in Paris?"},
      {"max_output_tokens", 24},
      {"temperature", 0},
      {"prompt_cache_key", "responses-translate"},
      {"tools", {{{"type", "function"}, {"name", "get_weather"}, {"parameters", kWeather}}}},
      {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}}};
  auto r = Post(false, "/v1/responses", body);
  ASSERT_EQ(r.status, 200) << r.body;
  json call, response = json::parse(r.body);
  for (const json& item : response["output"])
    if (item["type"] == "function_call") call = item;
  ASSERT_EQ(call["name"], "get_weather") << r.body;
  EXPECT_TRUE(json::parse(call["arguments"].get<std::string>())["city"].is_string()) << r.body;
  auto nodes = Nodes(r.headers["x-switchyard-workflow-id"]);
  bool waits = false;
  for (const auto& [id, node] : nodes) waits |= node.second == "get_weather";
  EXPECT_TRUE(waits) << "the wait is named after the function the answer called";
}

TEST_F(TranslateProxyTest, UpstreamErrorsComeBackInTheFrontsShape) {
  json messages = {{"model", "claude-nope"},
                   {"messages", {{{"role", "user"}, {"content", "x"}}}},
                   {"max_tokens", 4}};
  auto m = Post(false, "/v1/messages", messages);
  EXPECT_EQ(m.status, 404) << m.body;
  json e = json::parse(m.body, nullptr, false);
  EXPECT_EQ(e["type"], "error") << m.body;
  EXPECT_EQ(e["error"]["type"], "not_found_error") << m.body;
  EXPECT_NE(e["error"]["message"].get<std::string>().find("claude-nope"), std::string::npos);

  json responses = {{"model", "gpt-nope"}, {"input", "x"}, {"stream", true}};
  auto r = Post(false, "/v1/responses", responses);
  EXPECT_EQ(r.status, 404) << r.body;
  json re = json::parse(r.body, nullptr, false);
  EXPECT_NE(re["error"]["message"].get<std::string>().find("gpt-nope"), std::string::npos)
      << r.body;
}

}  // namespace
}  // namespace switchyard::frontends
