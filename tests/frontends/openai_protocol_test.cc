// The OpenAI protocol layer: request parsing (accepted, ignored and refused fields, the
// parameter an error names), the Switchyard headers, the plain chat template and its prefix
// property, tool arguments from generated text, and the response / SSE / error formats.
#include "frontends/openai/openai_protocol.h"
#include "frontends/stream_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace switchyard::frontends::openai {
namespace {

using nlohmann::json;

// A minimal valid chat body with `extra` members spliced in ("\"n\":1").
std::string Chat(const std::string& extra = "") {
  std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
  if (!extra.empty()) body.insert(body.size() - 1, "," + extra);
  return body;
}

std::string Completion(const std::string& extra = "") {
  std::string body = R"({"model":"m","prompt":"once"})";
  if (!extra.empty()) body.insert(body.size() - 1, "," + extra);
  return body;
}

json Parsed(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

json EventJson(const std::string& event) {
  EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n") << event;
  return Parsed(event.substr(6, event.size() - 8));
}

// ---------------------------------------------------------------------------------------------
// Parsing.

TEST(OpenAiParseTest, ParsesAFullChatRequest) {
  auto r = ParseChat(R"({
    "model": "tiny", "max_tokens": 10, "max_completion_tokens": 20,
    "temperature": 0.5, "top_p": 0.9, "seed": 7, "stream": true,
    "stream_options": {"include_usage": true}, "stop": ["\n\n", "END"],
    "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "name": "ann", "content": [{"type": "text", "text": "a"},
                                                  {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get", "arguments": "{\"k\":1}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "42"}],
    "tools": [{"type": "function", "function": {"name": "get", "description": "fetch",
               "parameters": {"type": "object", "properties": {"k": {"type": "integer"}}}}}],
    "tool_choice": {"type": "function", "function": {"name": "get"}},
    "metadata": {"session_id": "s-1"}, "user": "u-1",
    "nvext": {"agent_hints": {"latency_sensitivity": 0.8, "osl": 128, "priority": 2},
              "other": 1},
    "brand_new_field": {"x": 1}, "another": 2})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->chat);
  EXPECT_EQ(r->model, "tiny");
  EXPECT_EQ(r->max_tokens, 20);
  EXPECT_DOUBLE_EQ(r->temperature, 0.5);
  EXPECT_DOUBLE_EQ(r->top_p, 0.9);
  EXPECT_EQ(r->seed, 7u);
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->stop, (std::vector<std::string>{"\n\n", "END"}));
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[1].content, "a\nb");
  EXPECT_EQ(r->messages[1].name, "ann");
  EXPECT_EQ(r->messages[2].content, "");
  ASSERT_EQ(r->messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r->messages[2].tool_calls[0].id, "call_1");
  EXPECT_EQ(r->messages[2].tool_calls[0].name, "get");
  EXPECT_EQ(r->messages[2].tool_calls[0].arguments, "{\"k\":1}");
  EXPECT_EQ(r->messages[3].tool_call_id, "call_1");
  ASSERT_EQ(r->tools.size(), 1u);
  EXPECT_EQ(r->tools[0].description, "fetch");
  EXPECT_EQ(r->tools[0].parameters_json,
            R"({"type":"object","properties":{"k":{"type":"integer"}}})");
  EXPECT_EQ(r->tool_choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(r->tool_choice.function, "get");
  EXPECT_EQ(r->metadata_session_id, "s-1");
  EXPECT_EQ(r->user, "u-1");
  EXPECT_DOUBLE_EQ(r->hints.latency_sensitivity.value_or(0), 0.8);
  EXPECT_EQ(r->hints.osl, 128);
  EXPECT_EQ(r->hints.priority, 2);
  EXPECT_EQ(r->ignored, (std::vector<std::string>{"brand_new_field", "another"}));
}

TEST(OpenAiParseTest, DefaultsWhenOmitted) {
  auto r = ParseChat(Chat());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->max_tokens, 0);
  EXPECT_DOUBLE_EQ(r->temperature, 1.0);
  EXPECT_DOUBLE_EQ(r->top_p, 1.0);
  EXPECT_FALSE(r->seed.has_value());
  EXPECT_FALSE(r->stream);
  EXPECT_TRUE(r->stop.empty());
  EXPECT_EQ(r->tool_choice.kind, ToolChoice::Kind::kAuto);
  EXPECT_TRUE(r->ignored.empty());
  EXPECT_FALSE(r->hints.osl.has_value());
}

TEST(OpenAiParseTest, NullMeansAbsent) {
  auto r = ParseChat(
      Chat(R"("max_tokens":null,"temperature":null,"stop":null,"tools":null,"tool_choice":null,)"
           R"("n":null,"seed":null,"response_format":null,"metadata":null,"nvext":null)"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->max_tokens, 0);
  EXPECT_DOUBLE_EQ(r->temperature, 1.0);
}

TEST(OpenAiParseTest, AcceptsAndIgnoresNeutralClientFields) {
  auto r = ParseChat(Chat(
      R"("frequency_penalty":0,"presence_penalty":0.0,"logit_bias":{},"parallel_tool_calls":true,)"
      R"("response_format":{"type":"text"},"service_tier":"auto","store":false,"user":"x",)"
      R"("metadata":{"k":"v"},"n":1,"logprobs":false,"top_logprobs":0,)"
      R"("stream_options":{"include_usage":false,"continuous_usage_stats":true},)"
      R"("modalities":["text"],"nvext":{"greed_sampling":true},"tool_choice":"none")"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ignored.empty());
  EXPECT_EQ(r->tool_choice.kind, ToolChoice::Kind::kNone);
}

TEST(OpenAiParseTest, StopAsAString) {
  auto r = ParseChat(Chat(R"("stop":"###")"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop, std::vector<std::string>{"###"});
}

TEST(OpenAiParseTest, ToolChoiceRequired) {
  auto r = ParseChat(
      Chat(R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required")"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tool_choice.kind, ToolChoice::Kind::kRequired);
  EXPECT_EQ(r->tools[0].parameters_json, "");
}

TEST(OpenAiParseTest, NegativeAndLargeSeeds) {
  auto neg = ParseChat(Chat(R"("seed":-1)"));
  ASSERT_TRUE(neg.ok()) << neg.status();
  EXPECT_EQ(neg->seed, UINT64_MAX);
  auto big = ParseChat(Chat(R"("seed":18446744073709551615)"));
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->seed, UINT64_MAX);
}

// vLLM's request priority: an integer, lower more important; anything else is refused
// naming the field.
TEST(OpenAiParseTest, PriorityIsAnIntegerInRange) {
  auto r = ParseChat(Chat(R"("priority":-3)"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->priority, -3);
  EXPECT_EQ(ParseChat(Chat("")).value().priority, 0) << "absent: 0";
  for (const char* bad : {R"("priority":1.5)", R"("priority":"high")", R"("priority":2000000)"}) {
    auto e = ParseChat(Chat(bad));
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(ParamOf(e.status()), "priority") << bad << " -> " << e.status();
  }
}

// vLLM's kv_transfer_params for its CPU offloading: the limits and the load tiers are read;
// a connector's own members pass; a wrong type or a negative limit is refused naming it.
TEST(OpenAiParseTest, KvTransferParamsAreReadAsVllmTakesThem) {
  auto r = ParseChat(Chat(R"("kv_transfer_params":{"max_load_tokens":0,"max_offload_tokens":512,
      "kv_load_tiers":[{"medium":"GPU"}],"do_remote_prefill":true})"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kv_transfer.max_load_tokens, 0);
  EXPECT_EQ(r->kv_transfer.max_offload_tokens, 512);
  EXPECT_FALSE(r->kv_transfer.load_from_host) << "no CPU tier named";
  auto cpu = ParseChat(Chat(R"("kv_transfer_params":{"kv_load_tiers":[{"medium":"CPU"}]})"));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_TRUE(cpu->kv_transfer.load_from_host);
  EXPECT_EQ(cpu->kv_transfer.max_load_tokens, -1) << "absent: no limit";
  EXPECT_TRUE(cpu->ignored.empty()) << "a known field";
  const std::pair<const char*, const char*> bad[] = {
      {R"("kv_transfer_params":[1])", "kv_transfer_params"},
      {R"("kv_transfer_params":{"max_load_tokens":-1})", "kv_transfer_params.max_load_tokens"},
      {R"("kv_transfer_params":{"max_offload_tokens":"all"})",
       "kv_transfer_params.max_offload_tokens"},
      {R"("kv_transfer_params":{"kv_load_tiers":"CPU"})", "kv_transfer_params.kv_load_tiers"},
      {R"("kv_transfer_params":{"kv_load_tiers":[{"tier":"CPU"}]})",
       "kv_transfer_params.kv_load_tiers[0].medium"},
  };
  for (const auto& [body, param] : bad) {
    auto e = ParseChat(Chat(body));
    ASSERT_FALSE(e.ok()) << body;
    EXPECT_EQ(ParamOf(e.status()), param) << body << " -> " << e.status();
  }
}

TEST(OpenAiParseTest, AssistantArgumentsSentAsAnObject) {
  auto r = ParseChat(R"({"model":"m","messages":[{"role":"assistant","tool_calls":[
      {"id":"c","function":{"name":"f","arguments":{"a":[1,2]}}}]}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->messages[0].tool_calls[0].arguments, R"({"a":[1,2]})");
}

struct Refusal {
  std::string body;
  std::string param;
};

void ExpectRefusals(const std::vector<Refusal>& cases, bool chat) {
  for (const Refusal& c : cases) {
    auto r = chat ? ParseChat(c.body) : ParseCompletion(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
    EXPECT_EQ(ParamOf(r.status()), c.param) << c.body << " -> " << r.status();
    EXPECT_EQ(r.status().message().rfind(c.param + ": ", 0), 0u) << r.status();
    EXPECT_GT(r.status().message().size(), c.param.size() + 2) << r.status();
  }
}

TEST(OpenAiParseTest, RefusesWhatItCannotHonourNamingTheField) {
  ExpectRefusals(
      {
          {Chat(R"("n":2)"), "n"},
          {Chat(R"("n":0)"), "n"},
          {Chat(R"("logprobs":true)"), "logprobs"},
          {Chat(R"("top_logprobs":3)"), "top_logprobs"},
          {Chat(R"("response_format":{"type":"json_object"})"), "response_format"},
          {Chat(R"("response_format":{"type":"json_schema","json_schema":{}})"), "response_format"},
          {Chat(R"("audio":{"voice":"alloy","format":"wav"})"), "audio"},
          {Chat(R"("modalities":["text","audio"])"), "modalities"},
          {Chat(R"("frequency_penalty":0.5)"), "frequency_penalty"},
          {Chat(R"("presence_penalty":-1)"), "presence_penalty"},
          {Chat(R"("logit_bias":{"x":-100})"), "logit_bias.x"},
          {Chat(R"("logit_bias":{"5":101})"), "logit_bias.5"},
          {Chat(R"("structured_outputs":{"choice":[]})"), "structured_outputs.choice"},
          {Chat(R"("structured_outputs":{"regex":"a"})"), "structured_outputs.regex"},
          {Chat(R"("guided_choice":[1])"), "guided_choice"},
          {Chat(R"("functions":[{"name":"f"}])"), "functions"},
          {R"({"model":"m","messages":[{"role":"function","content":"x"}]})", "messages[0].role"},
          {R"({"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":)"
           R"([{"type":"text","text":"b"},{"type":"image_url","image_url":{"url":"x"}}]}]})",
           "messages[1].content[1].type"},
      },
      /*chat=*/true);
}

TEST(OpenAiParseTest, RefusesWrongTypesAndRanges) {
  ExpectRefusals(
      {
          {R"({"messages":[{"role":"user","content":"hi"}]})", "model"},
          {R"({"model":"","messages":[{"role":"user","content":"hi"}]})", "model"},
          {R"({"model":3,"messages":[]})", "model"},
          {R"({"model":"m"})", "messages"},
          {R"({"model":"m","messages":[]})", "messages"},
          {R"({"model":"m","messages":{}})", "messages"},
          {R"({"model":"m","messages":["hi"]})", "messages[0]"},
          {R"({"model":"m","messages":[{"content":"hi"}]})", "messages[0].role"},
          {R"({"model":"m","messages":[{"role":"user"}]})", "messages[0].content"},
          {R"({"model":"m","messages":[{"role":"user","content":7}]})", "messages[0].content"},
          {R"({"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]})",
           "messages[0].content[0].text"},
          {R"({"model":"m","messages":[{"role":"tool","content":"x"}]})",
           "messages[0].tool_call_id"},
          {R"({"model":"m","messages":[{"role":"user","content":"x","tool_calls":[]}]})",
           "messages[0].tool_calls"},
          {R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c",)"
           R"("function":{"name":"f"}}]}]})",
           "messages[0].tool_calls[0].function.arguments"},
          {Chat(R"("temperature":"hot")"), "temperature"},
          {Chat(R"("temperature":2.5)"), "temperature"},
          {Chat(R"("top_p":0)"), "top_p"},
          {Chat(R"("max_tokens":1.5)"), "max_tokens"},
          {Chat(R"("max_tokens":0)"), "max_tokens"},
          {Chat(R"("max_completion_tokens":-3)"), "max_completion_tokens"},
          {Chat(R"("max_tokens":99999999999999999999)"), "max_tokens"},
          {Chat(R"("max_tokens":18446744073709551615)"), "max_tokens"},
          {Chat(R"("seed":"x")"), "seed"},
          {Chat(R"("stream":"yes")"), "stream"},
          {Chat(R"("stream_options":{"include_usage":1})"), "stream_options.include_usage"},
          {Chat(R"("stop":["a","b","c","d","e"])"), "stop"},
          {Chat(R"("stop":["a",1])"), "stop[1]"},
          {Chat(R"("stop":"")"), "stop"},
          {Chat(R"("metadata":{"session_id":5})"), "metadata.session_id"},
          {Chat(R"("metadata":[])"), "metadata"},
          {Chat(R"("user":1)"), "user"},
          {Chat(R"("nvext":{"agent_hints":{"osl":-1}})"), "nvext.agent_hints.osl"},
          {Chat(R"("nvext":{"agent_hints":{"priority":"high"}})"), "nvext.agent_hints.priority"},
          {Chat(R"("tools":{})"), "tools"},
          {Chat(R"("tools":[{"type":"custom","custom":{}}])"), "tools[0].type"},
          {Chat(R"("tools":[{"type":"function"}])"), "tools[0].function"},
          {Chat(R"("tools":[{"type":"function","function":{"name":"a b"}}])"),
           "tools[0].function.name"},
          {Chat(R"("tools":[{"type":"function","function":{"name":"f","parameters":"{}"}}])"),
           "tools[0].function.parameters"},
          {Chat(R"("tools":[{"type":"function","function":{"name":"f"}},)"
                R"({"type":"function","function":{"name":"f"}}])"),
           "tools[1].function.name"},
          {Chat(R"("tool_choice":"required")"), "tool_choice"},
          {Chat(R"("tool_choice":"maybe")"), "tool_choice"},
          {Chat(R"("tool_choice":{"type":"function","function":{"name":"g"}})"),
           "tool_choice.function.name"},
          {Chat(R"("parallel_tool_calls":"yes")"), "parallel_tool_calls"},
      },
      /*chat=*/true);
}

TEST(OpenAiParseTest, BodyErrorsNameNoParameter) {
  for (std::string body :
       {std::string("{"), std::string("[]"), std::string("\"x\""), std::string(""),
        std::string("{\"model\":\"\xff\"}"), std::string(200, '[') + std::string(200, ']')}) {
    auto r = ParseChat(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_EQ(ParamOf(r.status()), "") << r.status();
    EXPECT_NE(r.status().message().find("request body"), std::string::npos) << r.status();
  }
  EXPECT_NE(ParseChat("{\"model\":").status().message().find("at byte"), std::string::npos);
}

TEST(OpenAiParseTest, ParamOfOnlyReadsInvalidArgument) {
  EXPECT_EQ(ParamOf(Status::NotFound("model: no such model")), "");
  EXPECT_EQ(ParamOf(Status::OK()), "");
  EXPECT_EQ(ParamOf(Status::InvalidArgument("messages[0].content[1].type: bad")),
            "messages[0].content[1].type");
  EXPECT_EQ(ParamOf(Status::InvalidArgument("no colon here")), "");
}

TEST(OpenAiParseTest, ParsesCompletions) {
  auto r = ParseCompletion(Completion(R"("max_tokens":5,"echo":false,"best_of":1,"suffix":"")"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->chat);
  EXPECT_EQ(r->prompt, "once");
  EXPECT_EQ(r->max_tokens, 5);
  auto one = ParseCompletion(R"({"model":"m","prompt":["only one"],"logprobs":null})");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->prompt, "only one");
  auto chat_fields = ParseCompletion(Completion(R"("messages":[],"tools":[])"));
  ASSERT_TRUE(chat_fields.ok()) << chat_fields.status();
  EXPECT_EQ(chat_fields->ignored, (std::vector<std::string>{"messages", "tools"}));
}

TEST(OpenAiParseTest, RefusesCompletionFeatures) {
  ExpectRefusals(
      {
          {R"({"model":"m"})", "prompt"},
          {R"({"model":"m","prompt":[1,2,3]})", "prompt"},
          {R"({"model":"m","prompt":[[1,2],[3]]})", "prompt"},
          {R"({"model":"m","prompt":["a","b"]})", "prompt"},
          {R"({"model":"m","prompt":[]})", "prompt"},
          {R"({"model":"m","prompt":{}})", "prompt"},
          {R"({"model":"m","prompt":[{}]})", "prompt[0]"},
          {Completion(R"("echo":true)"), "echo"},
          {Completion(R"("suffix":"end")"), "suffix"},
          {Completion(R"("best_of":2)"), "best_of"},
          {Completion(R"("logprobs":1)"), "logprobs"},
          {Completion(R"("logprobs":"x")"), "logprobs"},
          {Completion(R"("n":3)"), "n"},
      },
      /*chat=*/false);
}

// ---------------------------------------------------------------------------------------------
// Headers.

TEST(OpenAiHeadersTest, SessionIdPrecedence) {
  Request r;
  r.user = "user-1";
  EXPECT_EQ(SessionIdOf({}, r), "user-1");
  r.metadata_session_id = "meta-1";
  EXPECT_EQ(SessionIdOf({}, r), "meta-1");
  std::map<std::string, std::string> h = {{"session-id", "d"}};
  EXPECT_EQ(SessionIdOf(h, r), "d");
  h["session_id"] = "c";
  EXPECT_EQ(SessionIdOf(h, r), "c");
  h["x-claude-code-session-id"] = "b";
  EXPECT_EQ(SessionIdOf(h, r), "b");
  h["x-session-id"] = "a";
  EXPECT_EQ(SessionIdOf(h, r), "a");
  h["x-session-id"] = "";  // empty counts as absent
  EXPECT_EQ(SessionIdOf(h, r), "b");
  EXPECT_EQ(SessionIdOf({}, Request{}), "");
}

TEST(OpenAiHeadersTest, DeadlineInSecondsFromNow) {
  const int64_t now = 1'700'000'000'000;
  EXPECT_EQ(ParseDeadline("30", now).value_or(-1), now + 30'000);
  EXPECT_EQ(ParseDeadline("2.5", now).value_or(-1), now + 2'500);
  EXPECT_EQ(ParseDeadline(" 0.0015 ", now).value_or(-1), now + 2);
  EXPECT_EQ(ParseDeadline("0", now).value_or(-1), now);
  EXPECT_EQ(ParseDeadline("1000000000", now).value_or(-1), now + 1'000'000'000'000);
}

TEST(OpenAiHeadersTest, DeadlineAsAnRfc3339Time) {
  EXPECT_EQ(ParseDeadline("1970-01-01T00:00:10Z", 0).value_or(-1), 10'000);
  // date -u -d 2025-06-01T12:00:00Z +%s = 1748779200
  EXPECT_EQ(ParseDeadline("2025-06-01T12:00:00.5Z", 0).value_or(-1), 1'748'779'200'500);
  EXPECT_EQ(ParseDeadline("2025-06-01T14:00:00.500123+02:00", 0).value_or(-1), 1'748'779'200'500);
  EXPECT_EQ(ParseDeadline("2025-06-01 07:30:00-04:30", 0).value_or(-1), 1'748'779'200'000);
  EXPECT_EQ(ParseDeadline("2024-02-29t00:00:00z", 0).value_or(-1), 1'709'164'800'000);
}

TEST(OpenAiHeadersTest, BadDeadlinesNameTheHeader) {
  for (const char* v : {"", "-5", "abc", "1e3", "1.", ".5", "inf", "nan", "0x10", "10000000000",
                        "2025-13-01T00:00:00Z", "2025-02-29T00:00:00Z", "2025-06-01T24:00:00Z",
                        "2025-06-01T12:00:00", "2025-06-01T12:00:00+2:00", "2025-06-01T12:00Z",
                        "2025-06-01T12:00:00.Z", "2025-06-01"}) {
    auto d = ParseDeadline(v, 0);
    ASSERT_FALSE(d.ok()) << v;
    EXPECT_EQ(ParamOf(d.status()), "x-switchyard-deadline") << d.status();
  }
}

TEST(OpenAiHeadersTest, Priority) {
  EXPECT_EQ(ParsePriority("interactive").value_or(-1), 1);
  EXPECT_EQ(ParsePriority("STANDARD").value_or(-1), 2);
  EXPECT_EQ(ParsePriority(" batch ").value_or(-1), 3);
  EXPECT_EQ(ParsePriority("0").value_or(-1), 1);
  EXPECT_EQ(ParsePriority("1").value_or(-1), 2);
  EXPECT_EQ(ParsePriority("2").value_or(-1), 3);
  for (const char* v : {"", "3", "-1", "urgent", "01", "1.0"}) {
    auto p = ParsePriority(v);
    ASSERT_FALSE(p.ok()) << v;
    EXPECT_EQ(ParamOf(p.status()), "x-switchyard-priority") << p.status();
  }
}

// ---------------------------------------------------------------------------------------------
// The chat template.

Message Msg(std::string role, std::string content) {
  Message m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

TEST(OpenAiTemplateTest, RendersTurnsAndEndsWithTheAssistantHeader) {
  std::vector<Message> m = {Msg("system", "be brief"), Msg("user", "hi")};
  m[1].name = "ann";
  EXPECT_EQ(RenderChat(m, {}), "<|system|>\nbe brief\n<|user|> ann\nhi\n<|assistant|>\n");
  EXPECT_EQ(RenderChat({Msg("developer", "d")}, {}), "<|system|>\nd\n<|assistant|>\n");
  EXPECT_EQ(RenderChat({}, {}), "<|assistant|>\n");
}

TEST(OpenAiTemplateTest, RendersToolsInTheSystemTurn) {
  std::vector<ToolDef> tools = {{"get", "fetch a key", R"({"type":"object"})"}};
  std::string with_system = RenderChat({Msg("system", "sys"), Msg("user", "hi")}, tools);
  EXPECT_EQ(with_system.rfind("<|system|>\nsys\n\n# Tools\n", 0), 0u) << with_system;
  EXPECT_NE(with_system.find("- get: fetch a key\n  parameters: {\"type\":\"object\"}\n<|user|>"),
            std::string::npos)
      << with_system;
  std::string without = RenderChat({Msg("user", "hi")}, tools);
  EXPECT_EQ(without.rfind("<|system|>\n# Tools\n", 0), 0u) << without;
  EXPECT_NE(without.find("\n<|user|>\nhi\n<|assistant|>\n"), std::string::npos) << without;
}

TEST(OpenAiTemplateTest, RendersToolCallsAndResults) {
  Message a = Msg("assistant", "let me look");
  a.tool_calls = {{"call_1", "get", R"({"k":1})"}};
  Message t = Msg("tool", "42");
  t.tool_call_id = "call_1";
  EXPECT_EQ(RenderAssistantTurn(a.content, a.tool_calls),
            "let me look\n<|tool_call|> call_1 get\n{\"k\":1}\n");
  EXPECT_EQ(RenderAssistantTurn("", a.tool_calls), "<|tool_call|> call_1 get\n{\"k\":1}\n");
  EXPECT_EQ(RenderChat({Msg("user", "q"), a, t}, {}),
            "<|user|>\nq\n<|assistant|>\nlet me look\n<|tool_call|> call_1 get\n{\"k\":1}\n"
            "<|tool|> call_1\n42\n<|assistant|>\n");
}

// The property the KV cache relies on: the next request's prompt extends the previous prompt
// plus what the engine produced, turn after turn.
TEST(OpenAiTemplateTest, NextRequestExtendsThePreviousPromptAndAnswer) {
  std::vector<ToolDef> tools = {{"search", "web search", R"({"type":"object"})"}};
  std::vector<Message> convo = {Msg("system", "agent"), Msg("user", "find x")};
  std::vector<std::pair<std::string, std::vector<ToolCall>>> answers = {
      {"", {{"call_a", "search", R"({"q":"x"})"}}},
      {"found it", {}},
      {"two calls", {{"c1", "search", "{}"}, {"c2", "search", R"({"q":"y"})"}}},
  };
  for (size_t turn = 0; turn < answers.size(); ++turn) {
    const std::string prompt = RenderChat(convo, tools);
    const auto& [content, calls] = answers[turn];
    const std::string produced = prompt + RenderAssistantTurn(content, calls);
    Message echoed = Msg("assistant", content);
    echoed.tool_calls = calls;
    convo.push_back(echoed);
    if (calls.empty()) {
      convo.push_back(Msg("user", "next " + std::to_string(turn)));
    } else {
      Message result = Msg("tool", "result " + std::to_string(turn));
      result.tool_call_id = calls[0].id;
      convo.push_back(result);
    }
    const std::string next = RenderChat(convo, tools);
    EXPECT_EQ(next.rfind(produced, 0), 0u) << "turn " << turn << "\n"
                                           << produced << "\n---\n"
                                           << next;
    EXPECT_GT(next.size(), produced.size());
  }
  EXPECT_EQ(RenderChat(convo, tools), RenderChat(convo, tools));  // deterministic
}

// ---------------------------------------------------------------------------------------------
// Streamed text.

TEST(OpenAiStreamTextTest, Utf8SafePrefix) {
  EXPECT_EQ(Utf8SafePrefix(""), 0u);
  EXPECT_EQ(Utf8SafePrefix("abc"), 3u);
  EXPECT_EQ(Utf8SafePrefix("a\xc3"), 1u);
  EXPECT_EQ(Utf8SafePrefix("a\xc3\xa9"), 3u);
  EXPECT_EQ(Utf8SafePrefix("a\xe2\x82"), 1u);
  EXPECT_EQ(Utf8SafePrefix("a\xe2\x82\xac"), 4u);
  EXPECT_EQ(Utf8SafePrefix("\xf0\x9f\x98"), 0u);
  EXPECT_EQ(Utf8SafePrefix("\xf0\x9f\x98\x80"), 4u);
  EXPECT_EQ(Utf8SafePrefix("a\xff"), 2u);  // invalid bytes are not held back
}

// What a stream holds back: a tail that may begin a stop sequence, and trailing U+FFFD (a
// character the decoder could not complete yet: a SentencePiece byte-fallback emoji
// arrives one byte per token).
TEST(OpenAiStreamTextTest, UnsettledTail) {
  EXPECT_EQ(UnsettledTail("hello", {}), 0u);
  EXPECT_EQ(UnsettledTail("hello EN", {"END"}), 2u);
  EXPECT_EQ(UnsettledTail("hello E", {"END", "xyz"}), 1u);
  EXPECT_EQ(UnsettledTail("hello", {"END"}), 0u);
  EXPECT_EQ(UnsettledTail("hello", {"lo!"}), 2u);  // the longest tail that begins a stop
  EXPECT_EQ(UnsettledTail("ab", {"abc"}), 2u);     // the whole text may begin it
  EXPECT_EQ(UnsettledTail("hi", {""}), 0u);
  EXPECT_EQ(UnsettledTail("hi \xef\xbf\xbd", {}), 3u);
  EXPECT_EQ(UnsettledTail("hi \xef\xbf\xbd\xef\xbf\xbd", {}), 6u);
  EXPECT_EQ(UnsettledTail("\xef\xbf\xbd ok", {}), 0u);  // settled: text came after it
}

// ---------------------------------------------------------------------------------------------
// Responses.

Response Head(bool chat) {
  Response r;
  r.id = chat ? "chatcmpl-1" : "cmpl-1";
  r.created = 1700000000;
  r.model = "tiny";
  r.chat = chat;
  r.usage = {12, 3, 8};
  return r;
}

TEST(OpenAiResponseTest, ChatCompletion) {
  Response r = Head(true);
  r.choice = {"hello", {}, "stop"};
  json j = Parsed(ResponseJson(r));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"], "chatcmpl-1");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_TRUE(j["system_fingerprint"].is_null());
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "hello");
  EXPECT_FALSE(j["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 12);
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  EXPECT_EQ(j["usage"]["total_tokens"], 15);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
}

TEST(OpenAiResponseTest, ChatCompletionWithToolCalls) {
  Response r = Head(true);
  r.system_fingerprint = "fp";
  r.choice = {"", {{"call_1", "get", R"({"k":1})"}}, "tool_calls"};
  json j = Parsed(ResponseJson(r));
  const json& m = j["choices"][0]["message"];
  EXPECT_TRUE(m["content"].is_null());
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(m["tool_calls"][0]["type"], "function");
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], R"({"k":1})");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(j["system_fingerprint"], "fp");
}

TEST(OpenAiResponseTest, TextCompletion) {
  Response r = Head(false);
  r.choice = {" upon a time", {}, "length"};
  json j = Parsed(ResponseJson(r));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], " upon a time");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(j["choices"][0].contains("message"));
  EXPECT_EQ(j["usage"]["total_tokens"], 15);
}

TEST(OpenAiResponseTest, InvalidUtf8IsReplacedNotThrown) {
  Response r = Head(true);
  r.choice = {"a\xff\xc3", {}, "stop"};
  json j = Parsed(ResponseJson(r));
  EXPECT_EQ(j["choices"][0]["message"]["content"], "a\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(EventJson(ChunkEvent(r, "\xff", false, ""))["choices"][0]["delta"]["content"],
            "\xef\xbf\xbd");
}

TEST(OpenAiResponseTest, ChatStreamChunks) {
  Response head = Head(true);
  json first = EventJson(ChunkEvent(head, "", true, ""));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["id"], "chatcmpl-1");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  json mid = EventJson(ChunkEvent(head, "lo", false, ""));
  EXPECT_FALSE(mid["choices"][0]["delta"].contains("role"));
  EXPECT_EQ(mid["choices"][0]["delta"]["content"], "lo");
  std::vector<ToolCall> calls = {{"c1", "f", "{}"}, {"c2", "g", R"({"a":1})"}};
  json tc = EventJson(ChunkEvent(head, "", false, "", &calls));
  const json& d = tc["choices"][0]["delta"];
  EXPECT_FALSE(d.contains("content"));
  ASSERT_EQ(d["tool_calls"].size(), 2u);
  EXPECT_EQ(d["tool_calls"][1]["index"], 1);
  EXPECT_EQ(d["tool_calls"][1]["id"], "c2");
  EXPECT_EQ(d["tool_calls"][1]["type"], "function");
  EXPECT_EQ(d["tool_calls"][1]["function"]["name"], "g");
  EXPECT_EQ(d["tool_calls"][1]["function"]["arguments"], R"({"a":1})");
  json last = EventJson(ChunkEvent(head, "", false, "tool_calls"));
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "tool_calls");
  json usage = EventJson(UsageEvent(head));
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 15);
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
  EXPECT_EQ(std::string(kDoneEvent), "data: [DONE]\n\n");
}

TEST(OpenAiResponseTest, CompletionStreamChunks) {
  Response head = Head(false);
  json c = EventJson(ChunkEvent(head, "tok", true, ""));
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "tok");
  EXPECT_FALSE(c["choices"][0].contains("delta"));
  json last = EventJson(ChunkEvent(head, "", false, "length"));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(EventJson(UsageEvent(head))["object"], "text_completion");
}

TEST(OpenAiResponseTest, Models) {
  json j = Parsed(ModelsJson({"a", "b"}, 42, "switchyard"));
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1],
            json({{"id", "b"}, {"object", "model"}, {"created", 42}, {"owned_by", "switchyard"}}));
  EXPECT_EQ(Parsed(ModelsJson({}, 0, "x"))["data"], json::array());
}

TEST(OpenAiResponseTest, Errors) {
  json j = Parsed(ErrorJson({400, "n: only 1 is supported", "invalid_request_error", "n", ""}));
  EXPECT_EQ(j, json({{"error",
                      {{"message", "n: only 1 is supported"},
                       {"type", "invalid_request_error"},
                       {"param", "n"},
                       {"code", nullptr}}}}));
  json none = Parsed(ErrorJson(Error{}));
  EXPECT_TRUE(none["error"]["param"].is_null());
  EXPECT_TRUE(none["error"]["code"].is_null());

  auto bad = ParseChat(Chat(R"("n":4)"));
  Error e = ErrorFromStatus(bad.status());
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "n");
  EXPECT_EQ(e.type, "invalid_request_error");
  EXPECT_EQ(ErrorFromStatus(Status::Unauthenticated("no key")).http_status, 401);
  EXPECT_EQ(ErrorFromStatus(Status::NotFound("model")).http_status, 404);
  EXPECT_EQ(ErrorFromStatus(Status::ResourceExhausted("slow down")).http_status, 429);
  EXPECT_EQ(ErrorFromStatus(Status::Unavailable("later")).http_status, 503);
  EXPECT_EQ(ErrorFromStatus(Status::DeadlineExceeded("late")).http_status, 504);
  Error internal = ErrorFromStatus(Status::Internal("boom"));
  EXPECT_EQ(internal.http_status, 500);
  EXPECT_EQ(internal.type, "server_error");
  EXPECT_EQ(internal.message, "boom");
}

}  // namespace
}  // namespace switchyard::frontends::openai
