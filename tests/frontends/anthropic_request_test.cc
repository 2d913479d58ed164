// The Anthropic protocol's requests: every field parsed, what is ignored and named, what is
// refused and the parameter path each refusal names, the mapping of content blocks onto
// Conversation turns, and the cache_control breakpoints.
#include <gtest/gtest.h>

#include "frontends/anthropic/anthropic_protocol.h"

namespace switchyard::frontends::anthropic {
namespace {

// A minimal valid body with `extra` members spliced in ("\"top_k\":5").
std::string Body(const std::string& extra = "") {
  std::string body = R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]})";
  if (!extra.empty()) body.insert(body.size() - 1, "," + extra);
  return body;
}

// A body whose messages are `messages` (a JSON array's text).
std::string WithMessages(const std::string& messages, const std::string& extra = "") {
  std::string body = R"({"model":"m","max_tokens":16,"messages":)" + messages + "}";
  if (!extra.empty()) body.insert(body.size() - 1, "," + extra);
  return body;
}

// The parameter the refusal of `body` names (fails the test when it parses).
std::string Refused(const std::string& body, bool count_tokens = false) {
  auto r = count_tokens ? ParseCountTokens(body) : ParseMessages(body);
  EXPECT_FALSE(r.ok()) << body;
  if (r.ok()) return "<accepted>";
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
  return ParamOf(r.status());
}

MessagesRequest Parsed(const std::string& body) {
  auto r = ParseMessages(body);
  EXPECT_TRUE(r.ok()) << r.status() << " for " << body;
  return r.ok() ? *r : MessagesRequest{};
}

TEST(AnthropicRequestTest, ParsesEveryHonouredField) {
  MessagesRequest r = Parsed(R"({
    "model": "claude-x", "max_tokens": 100, "temperature": 0.25, "top_p": 0.9,
    "stop_sequences": ["\n\nHuman:", "END"], "stream": true,
    "metadata": {"user_id": "u-1"},
    "system": "be brief",
    "messages": [{"role": "user", "content": "hello"}],
    "tools": [{"name": "get", "description": "fetch a key",
               "input_schema": {"type": "object", "properties": {"k": {"type": "string"}}}}],
    "tool_choice": {"type": "tool", "name": "get", "disable_parallel_tool_use": true}})");
  const Conversation& c = r.conversation;
  EXPECT_FALSE(r.count_tokens);
  EXPECT_EQ(c.model, "claude-x");
  EXPECT_EQ(c.sampling.max_tokens, 100);
  EXPECT_DOUBLE_EQ(c.sampling.temperature, 0.25);
  EXPECT_DOUBLE_EQ(c.sampling.top_p, 0.9);
  EXPECT_EQ(c.sampling.stop, (std::vector<std::string>{"\n\nHuman:", "END"}));
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.metadata_user_id, "u-1");
  EXPECT_EQ(r.metadata_session_id, "");
  ASSERT_EQ(c.messages.size(), 2u);
  EXPECT_EQ(c.messages[0].role, "system");
  EXPECT_EQ(c.messages[0].content, "be brief");
  EXPECT_EQ(c.messages[1].role, "user");
  EXPECT_EQ(c.messages[1].content, "hello");
  ASSERT_EQ(c.tools.size(), 1u);
  EXPECT_EQ(c.tools[0].name, "get");
  EXPECT_EQ(c.tools[0].description, "fetch a key");
  EXPECT_EQ(c.tools[0].parameters_json,
            R"({"type":"object","properties":{"k":{"type":"string"}}})");
  EXPECT_EQ(c.tool_choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(c.tool_choice.function, "get");
  EXPECT_FALSE(c.parallel_tool_calls);
  EXPECT_TRUE(r.ignored.empty());
  EXPECT_FALSE(r.assistant_prefill);
  EXPECT_TRUE(r.cache_breakpoints.empty());
}

TEST(AnthropicRequestTest, DefaultsWhenOmittedAndNullMeansAbsent) {
  for (const std::string& body :
       {Body(), Body(R"("temperature":null,"top_p":null,"top_k":null,"stop_sequences":null,)"
                     R"("stream":null,"metadata":null,"system":null,"tools":null,)"
                     R"("tool_choice":null,"thinking":null,"service_tier":null)")}) {
    MessagesRequest r = Parsed(body);
    EXPECT_DOUBLE_EQ(r.conversation.sampling.temperature, 1.0);
    EXPECT_DOUBLE_EQ(r.conversation.sampling.top_p, 1.0);
    EXPECT_FALSE(r.top_k.has_value());
    EXPECT_FALSE(r.stream);
    EXPECT_EQ(r.thinking.type, Thinking::Type::kAbsent);
    EXPECT_EQ(r.conversation.tool_choice.kind, ToolChoice::Kind::kAuto);
    EXPECT_TRUE(r.conversation.parallel_tool_calls);
    ASSERT_EQ(r.conversation.messages.size(), 1u);
    EXPECT_TRUE(r.ignored.empty()) << r.ignored[0];
  }
}

TEST(AnthropicRequestTest, AcceptsAndNamesWhatItDoesNotHonour) {
  MessagesRequest r = Parsed(Body(
      R"("top_k":40,"thinking":{"type":"enabled","budget_tokens":2048},)"
      R"("context_management":{"edits":[]},"output_config":{"effort":"high"},)"
      R"("service_tier":"auto","container":"c-1","mcp_servers":[{"type":"url"}],)"
      R"("brand_new":{"x":1},"tools":[{"type":"web_search_20250305","name":"web_search"},)"
      R"({"name":"f","input_schema":{"type":"object"}},{"type":"bash_20250124","name":"bash"},)"
      R"({"type":"text_editor_20250728","name":"str_replace_based_edit_tool"},)"
      R"({"type":"computer_20250124","name":"computer","display_width_px":1024}])"));
  EXPECT_EQ(r.top_k, 40);
  EXPECT_EQ(r.thinking.type, Thinking::Type::kEnabled);
  EXPECT_EQ(r.thinking.budget_tokens, 2048);
  EXPECT_EQ(r.ignored, (std::vector<std::string>{
                           "top_k", "thinking", "context_management", "output_config",
                           "service_tier", "container", "mcp_servers", "brand_new",
                           "tools[0]:web_search_20250305", "tools[2]:bash_20250124",
                           "tools[3]:text_editor_20250728", "tools[4]:computer_20250124"}));
  ASSERT_EQ(r.conversation.tools.size(), 1u) << "hosted tools stay out of the prompt";
  EXPECT_EQ(r.conversation.tools[0].name, "f");
}

TEST(AnthropicRequestTest, ThinkingTypes) {
  EXPECT_EQ(Parsed(Body(R"("thinking":{"type":"disabled"})")).thinking.type,
            Thinking::Type::kDisabled);
  EXPECT_EQ(Parsed(Body(R"("thinking":{"type":"adaptive"})")).thinking.type,
            Thinking::Type::kAdaptive);
  EXPECT_EQ(Refused(Body(R"("thinking":{"type":"enabled"})")), "thinking.budget_tokens");
  EXPECT_EQ(Refused(Body(R"("thinking":{"type":"enabled","budget_tokens":1023})")),
            "thinking.budget_tokens");
  EXPECT_EQ(Refused(Body(R"("thinking":{"type":"on"})")), "thinking.type");
  EXPECT_EQ(Refused(Body(R"("thinking":{})")), "thinking.type");
  EXPECT_EQ(Refused(Body(R"("thinking":true)")), "thinking");
}

TEST(AnthropicRequestTest, MetadataUserIdAndTheSessionInIt) {
  MessagesRequest json = Parsed(Body(
      R"("metadata":{"user_id":"{\"device_id\":\"d1\",\"account_uuid\":\"\",\"session_id\":\"5e55-10n\"}"})"));
  EXPECT_EQ(json.metadata_session_id, "5e55-10n");
  MessagesRequest legacy =
      Parsed(Body(R"("metadata":{"user_id":"user_ab12_account_0000-1111_session_2222-3333"})"));
  EXPECT_EQ(legacy.metadata_session_id, "2222-3333");
  EXPECT_EQ(Parsed(Body(R"("metadata":{"user_id":"{not json"})")).metadata_session_id, "");
  EXPECT_EQ(Parsed(Body(R"("metadata":{"user_id":"{\"session_id\":7}"})")).metadata_session_id, "");
  EXPECT_EQ(Parsed(Body(R"("metadata":{"user_id":"alice_session_x"})")).metadata_session_id, "");
  EXPECT_EQ(Refused(Body(R"("metadata":{"user_id":5})")), "metadata.user_id");
  EXPECT_EQ(Refused(Body(R"("metadata":"u")")), "metadata");
}

TEST(AnthropicRequestTest, RefusesTopLevelParametersByName) {
  EXPECT_EQ(Refused(R"({"max_tokens":1,"messages":[{"role":"user","content":"x"}]})"), "model");
  EXPECT_EQ(Refused(R"({"model":"","max_tokens":1,"messages":[]})"), "model");
  EXPECT_EQ(Refused(R"({"model":"m","messages":[{"role":"user","content":"x"}]})"), "max_tokens");
  EXPECT_EQ(Refused(R"({"model":"m","max_tokens":0,"messages":[]})"), "max_tokens");
  EXPECT_EQ(Refused(R"({"model":"m","max_tokens":1.5,"messages":[]})"), "max_tokens");
  EXPECT_EQ(Refused(R"({"model":"m","max_tokens":1})"), "messages");
  EXPECT_EQ(Refused(R"({"model":"m","max_tokens":1,"messages":[]})"), "messages");
  EXPECT_EQ(Refused(R"({"model":"m","max_tokens":1,"messages":{}})"), "messages");
  EXPECT_EQ(Refused(Body(R"("temperature":1.5)")), "temperature");
  EXPECT_EQ(Refused(Body(R"("temperature":"hot")")), "temperature");
  EXPECT_EQ(Refused(Body(R"("top_p":0)")), "top_p");
  EXPECT_EQ(Refused(Body(R"("top_k":-1)")), "top_k");
  EXPECT_EQ(Refused(Body(R"("top_k":0.5)")), "top_k");
  EXPECT_EQ(Refused(Body(R"("stop_sequences":"END")")), "stop_sequences");
  EXPECT_EQ(Refused(Body(R"("stop_sequences":["a",""])")), "stop_sequences[1]");
  EXPECT_EQ(Refused(Body(R"("stop_sequences":["a",3])")), "stop_sequences[1]");
  EXPECT_EQ(Refused(Body(R"("stream":"yes")")), "stream");
  EXPECT_EQ(Refused(Body(R"("system":5)")), "system");
  EXPECT_EQ(Refused(Body(R"("system":[{"type":"image"}])")), "system[0].type");
  EXPECT_EQ(Refused(Body(R"("system":[{"type":"text"}])")), "system[0].text");
  EXPECT_EQ(Refused(Body(R"("system":["text"])")), "system[0]");
}

TEST(AnthropicRequestTest, BodyErrorsNameNoParameter) {
  for (const std::string& body :
       std::vector<std::string>{"", "[]", "{\"model\":", "null", std::string(100, '[')}) {
    auto r = ParseMessages(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_EQ(ParamOf(r.status()), "") << r.status();
  }
  auto r = ParseMessages("{\"model\": x}");
  EXPECT_NE(r.status().message().find("at byte"), std::string::npos) << r.status();
  EXPECT_EQ(ParamOf(Status::NotFound("model: gone")), "");
}

TEST(AnthropicRequestTest, ToolsAndToolChoice) {
  const std::string tools = R"("tools":[{"name":"a","input_schema":{"type":"object"}},)"
                            R"({"type":"custom","name":"b-2","input_schema":{"type":"object"}}])";
  EXPECT_EQ(Parsed(Body(tools + R"(,"tool_choice":{"type":"any"})")).conversation.tool_choice.kind,
            ToolChoice::Kind::kRequired);
  EXPECT_EQ(Parsed(Body(tools + R"(,"tool_choice":{"type":"none"})")).conversation.tool_choice.kind,
            ToolChoice::Kind::kNone);
  MessagesRequest a = Parsed(Body(tools + R"(,"tool_choice":{"type":"auto"})"));
  EXPECT_EQ(a.conversation.tool_choice.kind, ToolChoice::Kind::kAuto);
  EXPECT_TRUE(a.conversation.parallel_tool_calls);
  EXPECT_EQ(a.conversation.tools[1].name, "b-2");

  EXPECT_EQ(Refused(Body(R"("tools":{})")), "tools");
  EXPECT_EQ(Refused(Body(R"("tools":[1])")), "tools[0]");
  EXPECT_EQ(Refused(Body(R"("tools":[{"input_schema":{}}])")), "tools[0].name");
  EXPECT_EQ(Refused(Body(R"("tools":[{"name":"a b","input_schema":{}}])")), "tools[0].name");
  EXPECT_EQ(
      Refused(Body(R"("tools":[{"name":")" + std::string(129, 'x') + R"(","input_schema":{}}])")),
      "tools[0].name");
  EXPECT_EQ(Refused(Body(R"("tools":[{"name":"a"}])")), "tools[0].input_schema");
  EXPECT_EQ(Refused(Body(R"("tools":[{"name":"a","input_schema":"{}"}])")),
            "tools[0].input_schema");
  EXPECT_EQ(Refused(Body(R"("tools":[{"name":"a","description":1,"input_schema":{}}])")),
            "tools[0].description");
  EXPECT_EQ(Refused(Body(R"("tools":[{"name":"a","input_schema":{}},)"
                         R"({"name":"a","input_schema":{}}])")),
            "tools[1].name");
  EXPECT_EQ(Refused(Body(R"("tools":[{"type":"function","name":"a","input_schema":{}}])")),
            "tools[0].type");
  EXPECT_EQ(Refused(Body(R"("tools":[{"type":"web_search_2025","name":"w"}])")), "tools[0].type");
  EXPECT_EQ(Refused(Body(R"("tool_choice":{"type":"any"})")), "tool_choice.type");
  EXPECT_EQ(Refused(Body(R"("tool_choice":"auto")")), "tool_choice");
  EXPECT_EQ(Refused(Body(R"("tool_choice":{})")), "tool_choice.type");
  EXPECT_EQ(Refused(Body(R"("tool_choice":{"type":"required"})")), "tool_choice.type");
  EXPECT_EQ(Refused(Body(tools + R"(,"tool_choice":{"type":"tool"})")), "tool_choice.name");
  EXPECT_EQ(Refused(Body(tools + R"(,"tool_choice":{"type":"tool","name":"zz"})")),
            "tool_choice.name");
  EXPECT_EQ(Refused(Body(R"("tools":[{"type":"bash_20250124","name":"bash"}],)"
                         R"("tool_choice":{"type":"tool","name":"bash"})")),
            "tool_choice.name");
  EXPECT_EQ(
      Refused(Body(tools + R"(,"tool_choice":{"type":"auto","disable_parallel_tool_use":1})")),
      "tool_choice.disable_parallel_tool_use");
}

TEST(AnthropicRequestTest, UserBlocksToolResultsThenText) {
  MessagesRequest r = Parsed(WithMessages(R"([
    {"role":"user","content":"list files"},
    {"role":"assistant","content":[
      {"type":"thinking","thinking":"two calls","signature":"sig"},
      {"type":"redacted_thinking","data":"opaque"},
      {"type":"text","text":"Looking."},
      {"type":"tool_use","id":"toolu_1","name":"ls","input":{"path":"/", "all": true}},
      {"type":"tool_use","id":"toolu_2","name":"pwd","input":{}}]},
    {"role":"user","content":[
      {"type":"text","text":"before"},
      {"type":"tool_result","tool_use_id":"toolu_1","content":"a\nb","is_error":false},
      {"type":"tool_result","tool_use_id":"toolu_2","is_error":true,
       "content":[{"type":"text","text":"no"},{"type":"text","text":"cwd"}]},
      {"type":"text","text":"after"}]}])"));
  const std::vector<Message>& m = r.conversation.messages;
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[1].role, "assistant");
  EXPECT_EQ(m[1].reasoning, "two calls") << "thinking is kept, redacted_thinking dropped";
  EXPECT_EQ(m[1].content, "Looking.");
  ASSERT_EQ(m[1].tool_calls.size(), 2u);
  EXPECT_EQ(m[1].tool_calls[0].id, "toolu_1");
  EXPECT_EQ(m[1].tool_calls[0].name, "ls");
  EXPECT_EQ(m[1].tool_calls[0].arguments, R"({"path":"/","all":true})");
  EXPECT_EQ(m[1].tool_calls[1].arguments, "{}");
  EXPECT_EQ(m[2].role, "tool");
  EXPECT_EQ(m[2].tool_call_id, "toolu_1");
  EXPECT_EQ(m[2].content, "a\nb");
  EXPECT_FALSE(m[2].is_error);
  EXPECT_EQ(m[3].tool_call_id, "toolu_2");
  EXPECT_EQ(m[3].content, "no\ncwd");
  EXPECT_TRUE(m[3].is_error);
  EXPECT_EQ(m[4].role, "user");
  EXPECT_EQ(m[4].content, "before\nafter");
}

TEST(AnthropicRequestTest, OnlyToolResultsMakeNoUserTurnAndSystemTurnsStayInPlace) {
  MessagesRequest r = Parsed(WithMessages(R"([
    {"role":"user","content":[{"type":"text","text":"go"}]},
    {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t"}]},
    {"role":"system","content":[{"type":"text","text":"reminder"},{"type":"text","text":"two"}]},
    {"role":"system","content":"plain"},
    {"role":"user","content":[]},
    {"role":"assistant","content":"The answer is"}])"));
  const std::vector<Message>& m = r.conversation.messages;
  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(m[2].role, "tool");
  EXPECT_EQ(m[2].content, "");
  EXPECT_EQ(m[3].role, "system");
  EXPECT_EQ(m[3].content, "reminder\ntwo");
  EXPECT_EQ(m[4].role, "system");
  EXPECT_EQ(m[4].content, "plain");
  EXPECT_EQ(m[5].role, "user");
  EXPECT_EQ(m[5].content, "");
  EXPECT_EQ(m[6].role, "assistant");
  EXPECT_TRUE(r.assistant_prefill);
}

TEST(AnthropicRequestTest, RefusesContentByPath) {
  auto refused = [](const std::string& messages) { return Refused(WithMessages(messages)); };
  EXPECT_EQ(refused(R"([1])"), "messages[0]");
  EXPECT_EQ(refused(R"([{"content":"x"}])"), "messages[0].role");
  EXPECT_EQ(refused(R"([{"role":"tool","content":"x"}])"), "messages[0].role");
  EXPECT_EQ(refused(R"([{"role":"user"}])"), "messages[0].content");
  EXPECT_EQ(refused(R"([{"role":"user","content":5}])"), "messages[0].content");
  EXPECT_EQ(refused(R"([{"role":"user","content":[{"text":"x"}]}])"),
            "messages[0].content[0].type");
  EXPECT_EQ(refused(R"([{"role":"user","content":[{"type":"text"}]}])"),
            "messages[0].content[0].text");
  EXPECT_EQ(
      refused(
          R"([{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"x"},{"type":"image","source":{}}]}])"),
      "messages[1].content[1]");
  EXPECT_EQ(refused(R"([{"role":"user","content":[{"type":"document","source":{}}]}])"),
            "messages[0].content[0]");
  EXPECT_EQ(refused(R"([{"role":"user","content":[{"type":"server_tool_use"}]}])"),
            "messages[0].content[0].type");
  EXPECT_EQ(
      refused(
          R"([{"role":"user","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}])"),
      "messages[0].content[0]");
  EXPECT_EQ(refused(R"([{"role":"user","content":[{"type":"thinking","thinking":"x"}]}])"),
            "messages[0].content[0]");
  EXPECT_EQ(
      refused(R"([{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t"}]}])"),
      "messages[0].content[0]");
  EXPECT_EQ(refused(R"([{"role":"system","content":[{"type":"tool_result","tool_use_id":"t"}]}])"),
            "messages[0].content[0].type");
  // tool_result.
  const std::string tr =
      R"([{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"x"},)";
  EXPECT_EQ(refused(tr + R"({"type":"tool_result"}]}])"), "messages[2].content[1].tool_use_id");
  EXPECT_EQ(refused(tr + R"({"type":"tool_result","tool_use_id":""}]}])"),
            "messages[2].content[1].tool_use_id");
  EXPECT_EQ(refused(tr + R"({"type":"tool_result","tool_use_id":"t","is_error":"yes"}]}])"),
            "messages[2].content[1].is_error");
  EXPECT_EQ(refused(tr + R"({"type":"tool_result","tool_use_id":"t","content":{}}]}])"),
            "messages[2].content[1].content");
  EXPECT_EQ(
      refused(tr + R"({"type":"tool_result","tool_use_id":"t","content":[{"type":"image"}]}]}])"),
      "messages[2].content[1].content[0]");
  EXPECT_EQ(
      refused(
          tr +
          R"({"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":1}]}]}])"),
      "messages[2].content[1].content[0].text");
  // tool_use.
  const std::string tu = R"([{"role":"user","content":"a"},{"role":"assistant","content":[)";
  EXPECT_EQ(refused(tu + R"({"type":"tool_use","name":"f","input":{}}]}])"),
            "messages[1].content[0].id");
  EXPECT_EQ(refused(tu + R"({"type":"tool_use","id":"t","input":{}}]}])"),
            "messages[1].content[0].name");
  EXPECT_EQ(refused(tu + R"({"type":"tool_use","id":"t","name":"f"}]}])"),
            "messages[1].content[0].input");
  EXPECT_EQ(refused(tu + R"({"type":"tool_use","id":"t","name":"f","input":"{}"}]}])"),
            "messages[1].content[0].input");
  EXPECT_EQ(refused(tu + R"({"type":"thinking"}]}])"), "messages[1].content[0].thinking");
  EXPECT_EQ(refused(tu + R"({"type":"image"}]}])"), "messages[1].content[0]");
}

TEST(AnthropicRequestTest, CacheBreakpointsOnToolsSystemAndMessages) {
  MessagesRequest r = Parsed(R"({"model":"m","max_tokens":8,
    "tools":[{"name":"a","input_schema":{}},
             {"type":"web_search_20250305","name":"w","cache_control":{"type":"ephemeral"}},
             {"name":"b","input_schema":{},"cache_control":{"type":"ephemeral","ttl":"1h"}}],
    "system":[{"type":"text","text":"s0"},
              {"type":"text","text":"s1","cache_control":{"type":"ephemeral"}}],
    "messages":[
      {"role":"user","content":[{"type":"text","text":"q","cache_control":{"type":"ephemeral"}}]},
      {"role":"assistant","content":[{"type":"text","text":"a"},
        {"type":"tool_use","id":"t1","name":"a","input":{},"cache_control":{"type":"ephemeral"}},
        {"type":"tool_use","id":"t2","name":"b","input":{}}]},
      {"role":"user","content":[
        {"type":"text","text":"note","cache_control":{"type":"ephemeral","ttl":"5m"}},
        {"type":"tool_result","tool_use_id":"t1","content":"1"},
        {"type":"tool_result","tool_use_id":"t2","content":"2",
         "cache_control":{"type":"ephemeral"}}]}]})");
  using On = CacheBreakpoint::On;
  struct Want {
    On on;
    size_t index, block;
    int64_t tool, message;
    std::string ttl;
  };
  const std::vector<Want> want = {
      {On::kTool, 1, 0, 0, -1, "5m"},     // on a hosted tool: after custom tool 0
      {On::kTool, 2, 0, 1, -1, "1h"},     //
      {On::kSystem, 1, 0, -1, 0, "5m"},   // system[1]: the system turn
      {On::kMessage, 0, 0, -1, 1, "5m"},  // messages[0]: turn 1
      {On::kMessage, 1, 1, -1, 2, "5m"},  // the assistant turn
      {On::kMessage, 2, 0, -1, 5, "5m"},  // text of messages[2]: the user turn after the results
      {On::kMessage, 2, 2, -1, 4, "5m"},  // the second tool result
  };
  ASSERT_EQ(r.cache_breakpoints.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const CacheBreakpoint& b = r.cache_breakpoints[i];
    EXPECT_EQ(b.on, want[i].on) << i;
    EXPECT_EQ(b.index, want[i].index) << i;
    EXPECT_EQ(b.block, want[i].block) << i;
    EXPECT_EQ(b.tool, want[i].tool) << i;
    EXPECT_EQ(b.message, want[i].message) << i;
    EXPECT_EQ(b.ttl, want[i].ttl) << i;
  }
  ASSERT_EQ(r.conversation.messages.size(), 6u);
  EXPECT_EQ(r.conversation.messages[5].content, "note");
}

TEST(AnthropicRequestTest, RefusesMalformedCacheControl) {
  EXPECT_EQ(Refused(Body(R"("system":[{"type":"text","text":"s","cache_control":"on"}])")),
            "system[0].cache_control");
  EXPECT_EQ(Refused(Body(R"("system":[{"type":"text","text":"s","cache_control":{}}])")),
            "system[0].cache_control.type");
  EXPECT_EQ(Refused(Body(
                R"("system":[{"type":"text","text":"s","cache_control":{"type":"persistent"}}])")),
            "system[0].cache_control.type");
  EXPECT_EQ(
      Refused(Body(
          R"("tools":[{"name":"a","input_schema":{},"cache_control":{"type":"ephemeral","ttl":"2h"}}])")),
      "tools[0].cache_control.ttl");
  EXPECT_EQ(
      Refused(WithMessages(
          R"([{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":5}}]}])")),
      "messages[0].content[0].cache_control.ttl");
}

TEST(AnthropicRequestTest, CountTokensTakesTheConversationAndNamesTheRest) {
  auto r =
      ParseCountTokens(R"({"model":"m","system":"s","messages":[{"role":"user","content":"hi"}],
      "tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},
      "thinking":{"type":"enabled","budget_tokens":1024},"max_tokens":"not validated",
      "stream":true,"temperature":9})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->count_tokens);
  EXPECT_EQ(r->conversation.messages.size(), 2u);
  EXPECT_EQ(r->conversation.tools.size(), 1u);
  EXPECT_EQ(r->conversation.tool_choice.kind, ToolChoice::Kind::kRequired);
  EXPECT_EQ(r->conversation.sampling.max_tokens, 0);
  EXPECT_FALSE(r->stream);
  EXPECT_EQ(r->ignored,
            (std::vector<std::string>{"thinking", "max_tokens", "stream", "temperature"}));
  EXPECT_EQ(Refused(R"({"model":"m"})", true), "messages");
  EXPECT_EQ(Refused(R"({"messages":[{"role":"user","content":"x"}]})", true), "model");
  EXPECT_EQ(
      Refused(R"({"model":"m","messages":[{"role":"user","content":[{"type":"image"}]}]})", true),
      "messages[0].content[0]");
}

}  // namespace
}  // namespace switchyard::frontends::anthropic
