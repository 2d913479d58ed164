// The Responses API request parser: every field honoured, listed or refused (the refusal
// naming its parameter path), input items, tools with namespaces flattened, tool_choice,
// and the Conversation a request (or a previous_response_id chain) becomes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "frontends/responses/responses_protocol.h"

namespace switchyard::frontends::responses {
namespace {

// A minimal valid body with `extra` members spliced in ("\"store\":false").
std::string Body(const std::string& extra = "") {
  std::string body = R"({"model":"m","input":"hi"})";
  if (!extra.empty()) body.insert(body.size() - 1, "," + extra);
  return body;
}

// The parameter the refusal of `body` names (and that it is a refusal).
std::string RefusedParam(const std::string& body) {
  auto r = ParseCreate(body);
  EXPECT_FALSE(r.ok()) << body;
  if (r.ok()) return "<accepted>";
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
  return ParamOf(r.status());
}

TEST(ResponsesParseTest, ParsesEveryHonouredField) {
  auto r = ParseCreate(R"({
    "model": "tiny", "instructions": "be brief", "input": "hello",
    "max_output_tokens": 64, "temperature": 0.5, "top_p": 0.9, "stream": true,
    "store": false, "previous_response_id": "resp_1", "prompt_cache_key": "pck",
    "parallel_tool_calls": false, "user": "u-1", "metadata": {"session_id": "s", "k": "v"},
    "text": {"format": {"type": "text"}}, "background": false,
    "tools": [{"type": "function", "name": "get", "description": "fetch", "strict": true,
               "parameters": {"type": "object", "properties": {"k": {"type": "string"}}}}],
    "tool_choice": {"type": "function", "name": "get"}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model, "tiny");
  EXPECT_EQ(r->instructions, "be brief");
  ASSERT_EQ(r->input.size(), 1u);
  EXPECT_EQ(r->input[0].kind, Item::Kind::kMessage);
  EXPECT_EQ(r->input[0].role, "user");
  EXPECT_EQ(r->input[0].text, "hello");
  EXPECT_EQ(r->max_output_tokens, 64);
  EXPECT_DOUBLE_EQ(r->temperature, 0.5);
  EXPECT_DOUBLE_EQ(r->top_p, 0.9);
  EXPECT_TRUE(r->stream);
  EXPECT_FALSE(r->store);
  EXPECT_EQ(r->previous_response_id, "resp_1");
  EXPECT_EQ(r->prompt_cache_key, "pck");
  EXPECT_FALSE(r->parallel_tool_calls);
  EXPECT_EQ(r->user, "u-1");
  EXPECT_EQ(r->metadata, (std::map<std::string, std::string>{{"k", "v"}, {"session_id", "s"}}));
  ASSERT_EQ(r->tools.size(), 1u);
  EXPECT_EQ(r->tools[0].name, "get");
  EXPECT_EQ(r->tools[0].description, "fetch");
  EXPECT_EQ(r->tools[0].parameters_json,
            R"({"type":"object","properties":{"k":{"type":"string"}}})");
  EXPECT_EQ(r->tool_choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(r->tool_choice.function, "get");
  EXPECT_EQ(r->tool_choice_json, R"({"type":"function","name":"get"})");
  EXPECT_TRUE(r->ignored.empty());
}

TEST(ResponsesParseTest, DefaultsWhenOmitted) {
  auto r = ParseCreate(Body());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->store) << "store defaults to true, as OpenAI's";
  EXPECT_FALSE(r->stream);
  EXPECT_TRUE(r->parallel_tool_calls);
  EXPECT_EQ(r->max_output_tokens, 0);
  EXPECT_DOUBLE_EQ(r->temperature, 1.0);
  EXPECT_DOUBLE_EQ(r->top_p, 1.0);
  EXPECT_EQ(r->tool_choice.kind, ToolChoice::Kind::kAuto);
  EXPECT_EQ(r->tool_choice_json, "\"auto\"");
  EXPECT_EQ(r->tools_json, "[]");
  EXPECT_TRUE(r->ignored.empty());
}

TEST(ResponsesParseTest, NullMeansAbsent) {
  auto r = ParseCreate(
      Body(R"("instructions":null,"tools":null,"tool_choice":null,"max_output_tokens":null,)"
           R"("temperature":null,"store":null,"metadata":null,"text":null,"background":null,)"
           R"("conversation":null,"prompt":null,"previous_response_id":null)"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->store);
  EXPECT_TRUE(r->ignored.empty());
}

TEST(ResponsesParseTest, ListsAcceptedButIgnoredAndUnknownFields) {
  auto r = ParseCreate(Body(
      R"("reasoning":{"effort":"high","summary":"auto"},"include":["reasoning.encrypted_content"],)"
      R"("client_metadata":{"a":1},"prompt_cache_retention":"24h","service_tier":"auto",)"
      R"("truncation":"auto","safety_identifier":"x","n":3,"brand_new":{"x":1},)"
      R"("text":{"format":{"type":"text"},"verbosity":"low"})"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ignored, (std::vector<std::string>{"reasoning", "include", "client_metadata",
                                                  "service_tier", "truncation", "safety_identifier",
                                                  "n", "brand_new", "text.verbosity"}));
}

TEST(ResponsesParseTest, PromptCacheRetentionBecomesARetention) {
  auto day = ParseCreate(Body(R"("prompt_cache_retention":"24h")"));
  ASSERT_TRUE(day.ok()) << day.status();
  EXPECT_EQ(day->retain_ms, 86'400'000);
  auto memory = ParseCreate(Body(R"("prompt_cache_retention":"in-memory")"));
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->retain_ms, 0);
  EXPECT_EQ(RefusedParam(R"({"model":"m","input":"x","prompt_cache_retention":"1w"})"),
            "prompt_cache_retention");
}

TEST(ResponsesParseTest, RefusalsNameTheirParameter) {
  EXPECT_EQ(RefusedParam(R"({"input":"x"})"), "model");
  EXPECT_EQ(RefusedParam(R"({"model":"","input":"x"})"), "model");
  EXPECT_EQ(RefusedParam(R"({"model":7,"input":"x"})"), "model");
  EXPECT_EQ(RefusedParam(R"({"model":"m"})"), "input");
  EXPECT_EQ(RefusedParam(R"({"model":"m","input":5})"), "input");
  EXPECT_EQ(RefusedParam(Body(R"("background":true)")), "background");
  EXPECT_EQ(RefusedParam(Body(R"("background":"yes")")), "background");
  EXPECT_EQ(RefusedParam(Body(R"("conversation":"conv_1")")), "conversation");
  EXPECT_EQ(RefusedParam(Body(R"("prompt":{"id":"pmpt_1"})")), "prompt");
  EXPECT_EQ(RefusedParam(Body(R"("text":{"format":{"type":"json_schema","schema":{}}})")),
            "text.format");
  EXPECT_EQ(RefusedParam(Body(R"("text":{"format":{"type":"json_object"}})")), "text.format");
  EXPECT_EQ(RefusedParam(Body(R"("text":{"format":{"type":"yaml"}})")), "text.format.type");
  EXPECT_EQ(RefusedParam(Body(R"("text":"plain")")), "text");
  EXPECT_EQ(RefusedParam(Body(R"("max_output_tokens":0)")), "max_output_tokens");
  EXPECT_EQ(RefusedParam(Body(R"("max_output_tokens":1.5)")), "max_output_tokens");
  EXPECT_EQ(RefusedParam(Body(R"("temperature":2.5)")), "temperature");
  EXPECT_EQ(RefusedParam(Body(R"("top_p":0)")), "top_p");
  EXPECT_EQ(RefusedParam(Body(R"("stream":"true")")), "stream");
  EXPECT_EQ(RefusedParam(Body(R"("store":1)")), "store");
  EXPECT_EQ(RefusedParam(Body(R"("parallel_tool_calls":"no")")), "parallel_tool_calls");
  EXPECT_EQ(RefusedParam(Body(R"("instructions":["a"])")), "instructions");
  EXPECT_EQ(RefusedParam(Body(R"("previous_response_id":1)")), "previous_response_id");
  EXPECT_EQ(RefusedParam(Body(R"("prompt_cache_key":{})")), "prompt_cache_key");
  EXPECT_EQ(RefusedParam(Body(R"("user":false)")), "user");
  EXPECT_EQ(RefusedParam(Body(R"("metadata":{"k":1})")), "metadata.k");
  EXPECT_EQ(RefusedParam(Body(R"("metadata":[])")), "metadata");
  std::string many;
  for (int i = 0; i < 17; ++i) many += (i ? "," : "") + ("\"k" + std::to_string(i) + "\":\"v\"");
  EXPECT_EQ(RefusedParam(Body("\"metadata\":{" + many + "}")), "metadata");
  EXPECT_EQ(RefusedParam(Body("\"metadata\":{\"k\":\"" + std::string(513, 'v') + "\"}")),
            "metadata.k");
}

TEST(ResponsesParseTest, BodiesThatAreNotAnObjectNameNoParameter) {
  for (const char* body : {"", "[]", "\"x\"", "{\"model\":", "{} x", "nul"}) {
    auto r = ParseCreate(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_EQ(ParamOf(r.status()), "") << r.status();
  }
  auto bad = ParseCreate(R"({"model":"m",})");
  EXPECT_NE(bad.status().message().find("at byte"), std::string::npos) << bad.status();
  std::string deep(100, '[');
  auto r = ParseCreate(deep);
  EXPECT_NE(r.status().message().find("deeper"), std::string::npos) << r.status();
}

// ---------------------------------------------------------------------------------------------
// Input items.

TEST(ResponsesInputTest, ReadsEveryItemKind) {
  auto r = ParseCreate(R"({"model":"m","input":[
    {"role":"developer","content":"rules"},
    {"type":"message","role":"user","content":[{"type":"input_text","text":"a"},
                                               {"type":"input_text","text":"b"}]},
    {"type":"message","id":"msg_9","status":"completed","role":"assistant",
     "content":[{"type":"output_text","text":"sure","annotations":[]},
                {"type":"refusal","refusal":"but no"}]},
    {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}],
     "encrypted_content":"gAAA"},
    {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get",
     "arguments":"{\"k\":1}","status":"completed"},
    {"type":"function_call_output","call_id":"call_1","output":"42"},
    {"type":"function_call_output","call_id":"call_2",
     "output":[{"type":"input_text","text":"x"},{"type":"input_text","text":"y"}]}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->input.size(), 7u);
  EXPECT_EQ(r->input[0].role, "developer");
  EXPECT_EQ(r->input[0].text, "rules");
  EXPECT_EQ(r->input[1].text, "a\nb");
  EXPECT_EQ(r->input[2].id, "msg_9");
  EXPECT_EQ(r->input[2].status, "completed");
  EXPECT_EQ(r->input[2].text, "sure\nbut no");
  EXPECT_EQ(r->input[3].kind, Item::Kind::kReasoning);
  EXPECT_EQ(r->input[3].text, "think");
  EXPECT_EQ(r->input[4].kind, Item::Kind::kFunctionCall);
  EXPECT_EQ(r->input[4].id, "fc_1");
  EXPECT_EQ(r->input[4].call_id, "call_1");
  EXPECT_EQ(r->input[4].name, "get");
  EXPECT_EQ(r->input[4].arguments, "{\"k\":1}");
  EXPECT_EQ(r->input[5].kind, Item::Kind::kFunctionCallOutput);
  EXPECT_EQ(r->input[5].text, "42");
  EXPECT_EQ(r->input[6].text, "x\ny");
  EXPECT_EQ(r->ignored, std::vector<std::string>{"input[3] (reasoning)"});
}

TEST(ResponsesInputTest, HostedToolItemsAreLeftOutAndListedOnce) {
  auto r = ParseCreate(R"({"model":"m","input":[
    {"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search"}},
    {"role":"user","content":"q"},
    {"type":"web_search_call","id":"ws_2"},
    {"type":"reasoning","summary":[]},{"type":"reasoning","summary":[]},
    {"type":"custom_tool_call","call_id":"c","name":"apply_patch","input":"*** Begin"}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->input.size(), 3u);
  EXPECT_EQ(r->ignored,
            (std::vector<std::string>{"input[0] (web_search_call)", "input[3] (reasoning)",
                                      "input[5] (custom_tool_call)"}));
}

TEST(ResponsesInputTest, RefusalsNameTheItemPath) {
  auto input = [](const std::string& items) {
    return RefusedParam(R"({"model":"m","input":[)" + items + "]}");
  };
  EXPECT_EQ(input(R"("x")"), "input[0]");
  EXPECT_EQ(input(R"({"content":"no role, no type"})"), "input[0].type");
  EXPECT_EQ(input(R"({"role":"user","content":"a"},{"type":"telepathy"})"), "input[1].type");
  EXPECT_EQ(input(R"({"type":"item_reference","id":"msg_1"})"), "input[0].type");
  EXPECT_EQ(input(R"({"type":"message","content":"a"})"), "input[0].role");
  EXPECT_EQ(input(R"({"role":"tool","content":"a"})"), "input[0].role");
  EXPECT_EQ(input(R"({"role":"user"})"), "input[0].content");
  EXPECT_EQ(input(R"({"role":"user","content":7})"), "input[0].content");
  EXPECT_EQ(input(R"({"role":"user","content":[{"type":"input_image","image_url":"data:"}]})"),
            "input[0].content[0].type");
  EXPECT_EQ(input(R"({"role":"user","content":[{"type":"input_text","text":"a"},)"
                  R"({"type":"input_file","file_id":"f"}]})"),
            "input[0].content[1].type");
  EXPECT_EQ(input(R"({"role":"user","content":[{"type":"input_audio"}]})"),
            "input[0].content[0].type");
  EXPECT_EQ(input(R"({"role":"user","content":[{"type":"input_text"}]})"),
            "input[0].content[0].text");
  EXPECT_EQ(input(R"({"role":"user","content":["a"]})"), "input[0].content[0]");
  EXPECT_EQ(input(R"({"type":"function_call","name":"f","arguments":"{}"})"), "input[0].call_id");
  EXPECT_EQ(input(R"({"type":"function_call","call_id":"c","arguments":"{}"})"), "input[0].name");
  EXPECT_EQ(input(R"({"type":"function_call","call_id":"c","name":"f"})"), "input[0].arguments");
  EXPECT_EQ(input(R"({"type":"function_call","call_id":"c","name":"f","arguments":1})"),
            "input[0].arguments");
  EXPECT_EQ(input(R"({"role":"user","content":"a"},{"type":"function_call_output","output":"x"})"),
            "input[1].call_id");
  EXPECT_EQ(input(R"({"type":"function_call_output","call_id":"c"})"), "input[0].output");
  EXPECT_EQ(input(R"({"type":"function_call_output","call_id":"c",)"
                  R"("output":[{"type":"input_image","image_url":"x"}]})"),
            "input[0].output[0].type");
  EXPECT_EQ(input(R"({"role":"user","content":"a","id":5})"), "input[0].id");
}

TEST(ResponsesInputTest, EmptyInputNeedsAPreviousResponse) {
  EXPECT_EQ(RefusedParam(R"({"model":"m"})"), "input");
  auto r = ParseCreate(R"({"model":"m","previous_response_id":"resp_1"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->input.empty());
  auto empty = ParseCreate(R"({"model":"m","input":[]})");
  ASSERT_TRUE(empty.ok()) << empty.status();
}

// ---------------------------------------------------------------------------------------------
// Tools and tool_choice.

TEST(ResponsesToolsTest, FlattensNamespacesAndListsHostedTools) {
  auto r = ParseCreate(Body(R"("tools":[
    {"type":"function","name":"shell","parameters":{"type":"object"}},
    {"type":"web_search"},
    {"type":"namespace","name":"mcp__docs__","description":"Docs server",
     "tools":[{"type":"function","name":"search","description":"find","strict":false,
               "parameters":{"type":"object","properties":{"q":{"type":"string"}}}},
              {"type":"custom","name":"raw","format":{"type":"text"}}]},
    {"type":"namespace","name":"crm","tools":[{"type":"function","name":"search"},
                                              {"type":"function","name":"shell"}]},
    {"type":"local_shell"},{"type":"mcp","server_label":"x"}])"));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->tools.size(), 4u);
  EXPECT_EQ(r->tools[0].name, "shell");
  EXPECT_EQ(r->tools[1].name, "search");
  EXPECT_EQ(r->tools[1].description, "find");
  EXPECT_EQ(r->tools[2].name, "crm__search") << "the second 'search' is qualified";
  EXPECT_EQ(r->tools[3].name, "crm__shell") << "a top-level function keeps its name";
  ASSERT_EQ(r->routes.size(), 4u);
  EXPECT_EQ(r->routes[1].tool_namespace, "mcp__docs__");
  EXPECT_EQ(r->routes[1].name, "search");
  EXPECT_EQ(r->routes[2].tool_namespace, "crm");
  EXPECT_EQ(r->routes[2].name, "search");
  EXPECT_EQ(FlatNameOf(r->routes, "crm", "search"), "crm__search");
  EXPECT_EQ(FlatNameOf(r->routes, "", "shell"), "shell");
  EXPECT_EQ(FlatNameOf(r->routes, "", "search"), std::nullopt) << "ambiguous without namespace";
  EXPECT_EQ(RouteOf(r->routes, "crm__shell")->name, "shell");
  EXPECT_EQ(r->ignored,
            (std::vector<std::string>{"tools[1] (web_search)", "tools[2].tools[1] (custom)",
                                      "tools[4] (local_shell)", "tools[5] (mcp)"}));
  // The honoured tools are echoed as sent.
  nlohmann::json echoed = nlohmann::json::parse(r->tools_json);
  ASSERT_EQ(echoed.size(), 3u);
  EXPECT_EQ(echoed[1]["name"], "mcp__docs__");
}

TEST(ResponsesToolsTest, CodexStyleNamespaceJoinsWithoutExtraUnderscores) {
  auto r = ParseCreate(Body(R"("tools":[{"type":"function","name":"read"},
    {"type":"namespace","name":"mcp__fs__","tools":[{"type":"function","name":"read"}]}])"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tools[1].name, "mcp__fs__read");
}

TEST(ResponsesToolsTest, RefusalsNameTheToolPath) {
  EXPECT_EQ(RefusedParam(Body(R"("tools":{})")), "tools");
  EXPECT_EQ(RefusedParam(Body(R"("tools":[1])")), "tools[0]");
  EXPECT_EQ(RefusedParam(Body(R"("tools":[{"name":"f"}])")), "tools[0].type");
  EXPECT_EQ(RefusedParam(Body(R"("tools":[{"type":"teleport"}])")), "tools[0].type");
  EXPECT_EQ(RefusedParam(Body(R"("tools":[{"type":"function"}])")), "tools[0].name");
  EXPECT_EQ(RefusedParam(Body(R"("tools":[{"type":"function","name":"a b"}])")), "tools[0].name");
  EXPECT_EQ(RefusedParam(Body(R"("tools":[{"type":"function","name":"f","parameters":"{}"}])")),
            "tools[0].parameters");
  EXPECT_EQ(RefusedParam(Body(R"("tools":[{"type":"function","name":"f","strict":"yes"}])")),
            "tools[0].strict");
  EXPECT_EQ(RefusedParam(Body(R"("tools":[{"type":"function","name":"f"},)"
                              R"({"type":"function","name":"f"}])")),
            "tools[1].name");
  EXPECT_EQ(RefusedParam(Body(R"("tools":[{"type":"namespace","tools":[]}])")), "tools[0].name");
  EXPECT_EQ(RefusedParam(Body(R"("tools":[{"type":"namespace","name":"n"}])")), "tools[0].tools");
  EXPECT_EQ(RefusedParam(Body(R"("tools":[{"type":"namespace","name":"n","tools":[)"
                              R"({"type":"web_search"}]}])")),
            "tools[0].tools[0].type");
  EXPECT_EQ(
      RefusedParam(Body(R"("tools":[{"type":"namespace","name":"n","tools":[)"
                        R"({"type":"function","name":"f"},{"type":"function","name":"f"}]}])")),
      "tools[0].tools[1].name");
}

TEST(ResponsesToolsTest, ToolChoice) {
  const std::string tools = R"("tools":[{"type":"function","name":"get"},)"
                            R"({"type":"namespace","name":"crm","tools":[)"
                            R"({"type":"function","name":"find"}]}],)";
  for (auto [choice, kind] : {std::pair{"\"auto\"", ToolChoice::Kind::kAuto},
                              {"\"none\"", ToolChoice::Kind::kNone},
                              {"\"required\"", ToolChoice::Kind::kRequired}}) {
    auto r = ParseCreate(Body(tools + "\"tool_choice\":" + choice));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->tool_choice.kind, kind) << choice;
  }
  auto named = ParseCreate(Body(tools + R"("tool_choice":{"type":"function","name":"find"})"));
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->tool_choice.function, "find");
  auto ns = ParseCreate(
      Body(tools + R"("tool_choice":{"type":"function","name":"find","namespace":"crm"})"));
  ASSERT_TRUE(ns.ok()) << ns.status();
  EXPECT_EQ(ns->tool_choice.function, "find");

  EXPECT_EQ(RefusedParam(Body(R"("tool_choice":"required")")), "tool_choice");
  EXPECT_EQ(RefusedParam(Body(tools + R"("tool_choice":"any")")), "tool_choice");
  EXPECT_EQ(RefusedParam(Body(tools + R"("tool_choice":3)")), "tool_choice");
  EXPECT_EQ(RefusedParam(Body(tools + R"("tool_choice":{"type":"function","name":"nope"})")),
            "tool_choice.name");
  EXPECT_EQ(RefusedParam(Body(tools + R"("tool_choice":{"type":"function"})")), "tool_choice.name");
  EXPECT_EQ(RefusedParam(Body(tools + R"("tool_choice":{"type":"web_search_preview"})")),
            "tool_choice.type");
  EXPECT_EQ(RefusedParam(Body(tools + R"("tool_choice":{"type":"allowed_tools","mode":"auto"})")),
            "tool_choice.type");
}

// ---------------------------------------------------------------------------------------------
// The conversation.

TEST(ResponsesConversationTest, ItemsBecomeMessages) {
  auto r = ParseCreate(R"({"model":"m","instructions":"sys","max_output_tokens":9,
    "temperature":0.2,"top_p":0.5,"parallel_tool_calls":false,
    "tools":[{"type":"namespace","name":"crm","tools":[{"type":"function","name":"find"}]},
             {"type":"function","name":"find"}],
    "input":[
      {"role":"user","content":"q"},
      {"type":"message","role":"assistant","content":[{"type":"output_text","text":"let me"}]},
      {"type":"reasoning","summary":[]},
      {"type":"function_call","call_id":"c1","name":"find","namespace":"crm","arguments":"{}"},
      {"type":"function_call","call_id":"c2","name":"find","arguments":"{\"a\":1}"},
      {"type":"function_call_output","call_id":"c1","output":"r1"},
      {"type":"function_call_output","call_id":"c2","output":"r2"},
      {"type":"function_call","call_id":"c3","name":"gone","arguments":"{}"},
      {"type":"function_call_output","call_id":"c3","output":"r3"},
      {"type":"function_call_output","call_id":"c9","output":"orphan"}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  Conversation c = ToConversation(*r);
  EXPECT_EQ(c.model, "m");
  ASSERT_EQ(c.messages.size(), 8u);
  EXPECT_EQ(c.messages[0].role, "system");
  EXPECT_EQ(c.messages[0].content, "sys");
  EXPECT_EQ(c.messages[1].role, "user");
  EXPECT_EQ(c.messages[2].role, "assistant");
  EXPECT_EQ(c.messages[2].content, "let me");
  ASSERT_EQ(c.messages[2].tool_calls.size(), 2u) << "calls join the assistant message";
  EXPECT_EQ(c.messages[2].tool_calls[0].id, "c1");
  EXPECT_EQ(c.messages[2].tool_calls[0].name, "crm__find");
  EXPECT_EQ(c.messages[2].tool_calls[1].name, "find");
  EXPECT_EQ(c.messages[2].tool_calls[1].arguments, "{\"a\":1}");
  EXPECT_EQ(c.messages[3].role, "tool");
  EXPECT_EQ(c.messages[3].tool_call_id, "c1");
  EXPECT_EQ(c.messages[3].name, "crm__find");
  EXPECT_EQ(c.messages[3].content, "r1");
  EXPECT_EQ(c.messages[4].name, "find");
  EXPECT_EQ(c.messages[5].role, "assistant") << "a call after a tool result starts a turn";
  EXPECT_EQ(c.messages[5].content, "");
  EXPECT_EQ(c.messages[5].tool_calls[0].name, "gone") << "an undeclared name is kept";
  EXPECT_EQ(c.messages[6].name, "gone");
  EXPECT_EQ(c.messages[7].role, "tool");
  EXPECT_EQ(c.messages[7].name, "") << "an output of an unknown call has no name";
  ASSERT_EQ(c.tools.size(), 2u);
  EXPECT_EQ(c.tools[0].name, "crm__find");
  EXPECT_FALSE(c.parallel_tool_calls);
  EXPECT_EQ(c.sampling.max_tokens, 9);
  EXPECT_DOUBLE_EQ(c.sampling.temperature, 0.2);
  EXPECT_DOUBLE_EQ(c.sampling.top_p, 0.5);
}

TEST(ResponsesConversationTest, ChainPutsPreviousResponsesFirst) {
  auto first = ParseCreate(R"({"model":"m","instructions":"old","input":"what is 6*7?",
    "tools":[{"type":"function","name":"calc"}]})");
  ASSERT_TRUE(first.ok()) << first.status();
  StoredResponse r1 = NewResponse(*first, "resp_a", 100);
  ApplyAnswer(Answer{.text = "calling",
                     .tool_calls = {{"call_1", "calc", "{\"e\":\"6*7\"}"}},
                     .end = Answer::End::kToolCalls},
              first->routes, &r1);
  auto second = ParseCreate(R"({"model":"m","instructions":"new","previous_response_id":"resp_a",
    "tools":[{"type":"function","name":"calc"}],
    "input":[{"type":"function_call_output","call_id":"call_1","output":"42"}]})");
  ASSERT_TRUE(second.ok()) << second.status();
  StoredResponse r2 = NewResponse(*second, "resp_b", 101);
  ApplyAnswer(Answer{.text = "42"}, second->routes, &r2);
  auto third = ParseCreate(R"({"model":"m","previous_response_id":"resp_b","input":"thanks"})");
  ASSERT_TRUE(third.ok()) << third.status();

  Conversation c = ChainConversation({r1, r2}, *third);
  ASSERT_EQ(c.messages.size(), 5u);
  EXPECT_EQ(c.messages[0].role, "user") << "previous instructions are not carried over";
  EXPECT_EQ(c.messages[0].content, "what is 6*7?");
  EXPECT_EQ(c.messages[1].content, "calling");
  ASSERT_EQ(c.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(c.messages[1].tool_calls[0].id, "call_1");
  EXPECT_EQ(c.messages[2].role, "tool");
  EXPECT_EQ(c.messages[2].name, "calc");
  EXPECT_EQ(c.messages[3].role, "assistant");
  EXPECT_EQ(c.messages[3].content, "42");
  EXPECT_EQ(c.messages[4].content, "thanks");
  EXPECT_TRUE(c.tools.empty()) << "tools are the new request's";

  Conversation with_instructions = ChainConversation({r1, r2}, *second);
  EXPECT_EQ(with_instructions.messages[0].role, "system");
  EXPECT_EQ(with_instructions.messages[0].content, "new");
}

}  // namespace
}  // namespace switchyard::frontends::responses
