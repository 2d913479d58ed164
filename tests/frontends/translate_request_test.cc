// Proxy mode's translation of calls to Chat Completions (conversation/chat_request.h):
// a Messages request and a Responses request, as their fronts parse them, become the Chat
// Completions body an upstream that speaks only that gets — system turns, tool calls and
// their results, tools and tool_choice, namespace tools flattened, sampling and streaming —
// and how an upstream's API is written (upstream_api.h, `switchyard serve --upstream-api`).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "conversation/chat_request.h"
#include "conversation/upstream_api.h"
#include "frontends/anthropic/anthropic_request.h"
#include "frontends/responses/responses_request.h"
#include "serve/serve_config.h"

namespace switchyard::frontends {
namespace {

// The translation under test (conversation/), beside the fronts' parsers that feed it.
using namespace translate;  // NOLINT(build/namespaces)

using nlohmann::json;

json ChatOf(const Conversation& conv, int64_t max_tokens, bool stream) {
  return json::parse(ChatRequestBody(conv, max_tokens, stream));
}

TEST(TranslateRequestTest, AMessagesRequestWithToolUseAndToolResults) {
  auto r = anthropic::ParseMessages(R"({
    "model": "m", "max_tokens": 32, "temperature": 0.2, "top_p": 0.5, "stream": true,
    "stop_sequences": ["END"],
    "system": [{"type": "text", "text": "You are terse."}, {"type": "text", "text": "Be kind."}],
    "tools": [{"name": "Bash", "description": "Run a command",
               "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
    "tool_choice": {"type": "tool", "name": "Bash", "disable_parallel_tool_use": true},
    "messages": [
      {"role": "user", "content": "list files"},
      {"role": "assistant", "content": [
        {"type": "text", "text": "Running ls."},
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt b.txt"},
        {"type": "text", "text": "now count them"}]}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  json chat = ChatOf(r->conversation, r->conversation.sampling.max_tokens, r->stream);
  EXPECT_EQ(chat["model"], "m");
  json expected_messages = json::parse(R"([
    {"role": "system", "content": "You are terse.\nBe kind."},
    {"role": "user", "content": "list files"},
    {"role": "assistant", "content": "Running ls.", "tool_calls": [
      {"id": "toolu_1", "type": "function",
       "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}}]},
    {"role": "tool", "tool_call_id": "toolu_1", "content": "a.txt b.txt"},
    {"role": "user", "content": "now count them"}])");
  EXPECT_EQ(chat["messages"], expected_messages) << chat.dump(1);
  json tool = chat["tools"][0];
  EXPECT_EQ(tool["type"], "function");
  EXPECT_EQ(tool["function"]["name"], "Bash");
  EXPECT_EQ(tool["function"]["description"], "Run a command");
  EXPECT_EQ(tool["function"]["parameters"]["properties"]["command"]["type"], "string");
  EXPECT_EQ(chat["tool_choice"], json::parse(R"({"type":"function","function":{"name":"Bash"}})"));
  EXPECT_EQ(chat["parallel_tool_calls"], false);
  EXPECT_EQ(chat["max_tokens"], 32);
  EXPECT_DOUBLE_EQ(chat["temperature"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(chat["top_p"].get<double>(), 0.5);
  EXPECT_EQ(chat["stop"], json::array({"END"}));
  EXPECT_EQ(chat["stream"], true);
  EXPECT_EQ(chat["stream_options"]["include_usage"], true);
}

TEST(TranslateRequestTest, MessagesToolChoicesAndDefaults) {
  const std::string head = R"({"model":"m","max_tokens":4,"messages":[{"role":"user",
    "content":"x"}],"tools":[{"name":"t","input_schema":{"type":"object"}}],"tool_choice":)";
  for (const auto& [choice, expected] :
       std::vector<std::pair<std::string, json>>{{R"({"type":"auto"})", "auto"},
                                                 {R"({"type":"any"})", "required"},
                                                 {R"({"type":"none"})", "none"}}) {
    auto r = anthropic::ParseMessages(head + choice + "}");
    ASSERT_TRUE(r.ok()) << r.status();
    json chat = ChatOf(r->conversation, 4, false);
    EXPECT_EQ(chat["tool_choice"], expected) << choice;
    EXPECT_FALSE(chat.contains("parallel_tool_calls")) << "the default is left to the upstream";
    EXPECT_FALSE(chat.contains("stream"));
    EXPECT_FALSE(chat.contains("temperature")) << "not given: the upstream's default";
    EXPECT_FALSE(chat.contains("stop"));
  }
  auto bare = anthropic::ParseMessages(
      R"({"model":"m","max_tokens":4,"messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(bare.ok());
  json chat = ChatOf(bare->conversation, 4, false);
  EXPECT_FALSE(chat.contains("tools"));
  EXPECT_FALSE(chat.contains("tool_choice")) << "no tool_choice without tools";
}

TEST(TranslateRequestTest, AResponsesRequestWithItemsAndNamespaceTools) {
  auto r = responses::ParseCreate(R"({
    "model": "m", "instructions": "be brief", "max_output_tokens": 64, "temperature": 0,
    "parallel_tool_calls": false, "stream": false,
    "tools": [
      {"type": "function", "name": "search", "parameters": {"type": "object"}},
      {"type": "web_search"},
      {"type": "namespace", "name": "crm", "tools": [
        {"type": "function", "name": "search", "description": "find a customer"}]}],
    "tool_choice": {"type": "function", "name": "search", "namespace": "crm"},
    "input": [
      {"type": "message", "role": "developer", "content": "use tools"},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "find Ada"}]},
      {"type": "reasoning", "id": "rs_1", "summary": []},
      {"type": "function_call", "call_id": "c1", "name": "search", "namespace": "crm",
       "arguments": "{\"q\":\"Ada\"}"},
      {"type": "function_call_output", "call_id": "c1", "output": "Ada Lovelace"},
      {"type": "message", "role": "assistant",
       "content": [{"type": "output_text", "text": "Found her."}]},
      {"type": "message", "role": "user", "content": "thanks"}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  json chat = ChatOf(responses::ToConversation(*r), r->max_output_tokens, r->stream);
  json expected_messages = json::parse(R"([
    {"role": "system", "content": "be brief"},
    {"role": "system", "content": "use tools"},
    {"role": "user", "content": "find Ada"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "c1", "type": "function",
       "function": {"name": "crm__search", "arguments": "{\"q\":\"Ada\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "Ada Lovelace"},
    {"role": "assistant", "content": "Found her."},
    {"role": "user", "content": "thanks"}])");
  EXPECT_EQ(chat["messages"], expected_messages) << chat.dump(1);
  ASSERT_EQ(chat["tools"].size(), 2u) << "hosted tools are left out";
  EXPECT_EQ(chat["tools"][0]["function"]["name"], "search");
  EXPECT_EQ(chat["tools"][1]["function"]["name"], "crm__search") << "flattened as the front does";
  EXPECT_EQ(chat["tools"][1]["function"]["parameters"], json::parse(R"({"type":"object"})"));
  EXPECT_EQ(chat["tool_choice"]["function"]["name"], "crm__search");
  EXPECT_EQ(chat["parallel_tool_calls"], false);
  EXPECT_EQ(chat["max_tokens"], 64);
  EXPECT_EQ(chat["temperature"], 0);
  EXPECT_FALSE(chat.contains("stream"));
}

TEST(TranslateRequestTest, TheRequestGoesToChatCompletionsWithItsOwnHeadersOnly) {
  Conversation conv;
  conv.model = "m";
  conv.messages.push_back(Message{.role = "user", .content = "hi"});
  http::HttpRequest req = ChatRequest(conv, 0, /*stream=*/true);
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.target, "/v1/chat/completions");
  EXPECT_EQ(req.headers,
            (std::map<std::string, std::string>{{"accept", "text/event-stream"},
                                                {"content-type", "application/json"}}));
  json body = json::parse(req.body);
  EXPECT_FALSE(body.contains("max_tokens")) << "not given";
  EXPECT_EQ(body["stream"], true);
}

TEST(UpstreamApiTest, AnUpstreamSaysItsApiOrTakesTheDefault) {
  auto plain = ParseUpstreamSpec("http://h:8000", UpstreamApi::kChat);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->url, "http://h:8000");
  EXPECT_EQ(plain->api, UpstreamApi::kChat);
  auto own = ParseUpstreamSpec("http://h:8000#same", UpstreamApi::kChat);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->url, "http://h:8000");
  EXPECT_EQ(own->api, UpstreamApi::kSame);
  auto bad = ParseUpstreamSpec("http://h:8000#grpc", UpstreamApi::kSame);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("http://h:8000#grpc"), std::string::npos);
  EXPECT_NE(bad.status().message().find("'grpc'"), std::string::npos);
}

TEST(UpstreamApiTest, ServeTakesUpstreamApiAndPerUrlApis) {
  serve::ServeFlags flags;
  flags.upstreams = {"http://127.0.0.1:8001", "http://127.0.0.1:8002#same"};
  flags.upstream_api = "chat";
  auto setup = serve::MakeServeSetup(v1::ServiceConfig(), flags);
  ASSERT_TRUE(setup.ok()) << setup.status();
  EXPECT_EQ(setup->api.fronts.upstreams,
            (std::vector<std::string>{"http://127.0.0.1:8001", "http://127.0.0.1:8002"}));
  EXPECT_EQ(setup->api.fronts.upstream_apis,
            (std::vector<UpstreamApi>{UpstreamApi::kChat, UpstreamApi::kSame}));

  flags.upstream_api = "grpc";
  auto bad = serve::MakeServeSetup(v1::ServiceConfig(), flags);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--upstream-api"), std::string::npos) << bad.status();

  serve::ServeFlags alone;
  alone.upstream_api = "chat";
  auto none = serve::MakeServeSetup(v1::ServiceConfig(), alone);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no upstreams"), std::string::npos) << none.status();

  v1::ServiceConfig config;  // the config file's upstreams say their API the same way
  config.add_upstreams("http://127.0.0.1:8003#chat");
  auto from_config = serve::MakeServeSetup(config, serve::ServeFlags());
  ASSERT_TRUE(from_config.ok()) << from_config.status();
  EXPECT_EQ(from_config->api.fronts.upstreams, std::vector<std::string>{"http://127.0.0.1:8003"});
  EXPECT_EQ(from_config->api.fronts.upstream_apis, std::vector<UpstreamApi>{UpstreamApi::kChat});
}

}  // namespace
}  // namespace switchyard::frontends
