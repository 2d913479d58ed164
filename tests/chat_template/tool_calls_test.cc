// Tool-call parsers: each family one-shot and streamed (every split of the text must give
// what one-shot parsing gives), malformed calls left as content, and the registry.
#include "chat_template/tool_calls.h"

#include <gtest/gtest.h>

#include <random>

namespace switchyard::chat_template {
namespace {

ParsedOutput ParseWith(ToolCallFamily family, std::string_view text) {
  return MakeToolCallParser(family)->Parse(text);
}

// Streams `text` cut at the given offsets; returns everything let out, and checks that no
// call is reported twice and content is only ever appended.
ParsedOutput Stream(ToolCallFamily family, std::string_view text, const std::vector<size_t>& cuts) {
  auto stream = MakeToolCallParser(family)->NewStream();
  ParsedOutput out;
  size_t from = 0;
  auto take = [&](StreamDelta d) {
    out.content += d.content;
    for (ToolCall& c : d.tool_calls) out.tool_calls.push_back(std::move(c));
  };
  for (size_t cut : cuts) {
    take(stream->Feed(text.substr(from, cut - from)));
    from = cut;
  }
  take(stream->Feed(text.substr(from)));
  take(stream->Finish());
  return out;
}

// One-shot parsing, and the same result for every single cut, byte-by-byte feeding and
// random cuts.
ParsedOutput ParseEveryWay(ToolCallFamily family, std::string_view text) {
  const ParsedOutput whole = ParseWith(family, text);
  auto same = [&](const ParsedOutput& p, const std::string& how) {
    EXPECT_EQ(p.content, whole.content) << how << "\n  text: " << text;
    EXPECT_EQ(p.tool_calls, whole.tool_calls) << how << "\n  text: " << text;
  };
  for (size_t cut = 0; cut <= text.size(); ++cut)
    same(Stream(family, text, {cut}), "cut at " + std::to_string(cut));
  std::vector<size_t> bytes;
  for (size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
  same(Stream(family, text, bytes), "byte by byte");
  std::mt19937 rng(static_cast<unsigned>(text.size()));
  for (int round = 0; round < 20; ++round) {
    std::vector<size_t> cuts;
    for (size_t i = 1; i < text.size(); ++i) {
      if (rng() % 5 == 0) cuts.push_back(i);
    }
    same(Stream(family, text, cuts), "random cuts");
  }
  return whole;
}

const ToolCall kWeather{"get_weather", R"({"city":"Paris","days":2})"};
const ToolCall kTime{"get_time", "{}"};

TEST(HermesToolCalls, CallsAndText) {
  const auto p =
      ParseEveryWay(ToolCallFamily::kHermes,
                    "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                    "{\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n"
                    "{\"name\": \"get_time\"}\n</tool_call>");
  EXPECT_EQ(p.content, "Let me check.\n\n");
  EXPECT_EQ(p.tool_calls, (std::vector<ToolCall>{kWeather, kTime}));
}

TEST(HermesToolCalls, OnlyCallsMeansNoContent) {
  const auto p =
      ParseEveryWay(ToolCallFamily::kHermes,
                    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n");
  EXPECT_EQ(p.content, "");
  EXPECT_EQ(p.tool_calls, std::vector<ToolCall>{kTime});
}

TEST(HermesToolCalls, InterleavedText) {
  const auto p =
      ParseEveryWay(ToolCallFamily::kHermes,
                    "A <tool_call>{\"name\": \"get_time\"}</tool_call> B <tool_call>"
                    "{\"name\": \"get_time\", \"parameters\": {}}</tool_call> C <tool_ca");
  EXPECT_EQ(p.content, "A  B  C <tool_ca");
  EXPECT_EQ(p.tool_calls, (std::vector<ToolCall>{kTime, kTime}));
}

TEST(HermesToolCalls, MalformedCallsStayContent) {
  // Invalid JSON: the whole call, tags included, is content; the valid one after it counts.
  auto p = ParseEveryWay(
      ToolCallFamily::kHermes,
      "<tool_call>{\"name\": get_time}</tool_call><tool_call>{\"name\": \"get_time\"}</tool_call>");
  EXPECT_EQ(p.content, "<tool_call>{\"name\": get_time}</tool_call>");
  EXPECT_EQ(p.tool_calls, std::vector<ToolCall>{kTime});
  // No name, an empty name, arguments that are not an object.
  for (const char* body : {"{\"arguments\": {}}", "{\"name\": \"\"}",
                           "{\"name\": \"f\", \"arguments\": [1]}", "[1]"}) {
    const std::string text = std::string("x<tool_call>") + body + "</tool_call>";
    p = ParseEveryWay(ToolCallFamily::kHermes, text);
    EXPECT_EQ(p.content, text);
    EXPECT_TRUE(p.tool_calls.empty());
  }
  // Unclosed: the tag and the rest are content.
  p = ParseEveryWay(ToolCallFamily::kHermes, "Sure <tool_call>{\"name\": \"get_time\"}");
  EXPECT_EQ(p.content, "Sure <tool_call>{\"name\": \"get_time\"}");
  EXPECT_TRUE(p.tool_calls.empty());
  // Arguments given as a string holding JSON are accepted.
  p = ParseEveryWay(ToolCallFamily::kHermes,
                    "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>");
  EXPECT_EQ(p.tool_calls, (std::vector<ToolCall>{{"f", "{\"a\":1}"}}));
}

TEST(HermesToolCalls, StreamingHoldsBackOnlyWhatMayBeACall) {
  auto s = MakeToolCallParser(ToolCallFamily::kHermes)->NewStream();
  EXPECT_EQ(s->Feed("  ").content, "");  // leading whitespace waits
  EXPECT_EQ(s->Feed("Hello <tool").content, "  Hello ");
  EXPECT_EQ(s->Feed("box>").content, "<toolbox>");
  EXPECT_EQ(s->Feed("<tool_call>{\"name\": ").content, "");
  const StreamDelta d = s->Feed("\"get_time\"}</tool_call> done");
  EXPECT_EQ(d.tool_calls, std::vector<ToolCall>{kTime});
  EXPECT_EQ(d.content, " done");
  EXPECT_EQ(s->Finish().content, "");
}

TEST(Llama3JsonToolCalls, Calls) {
  auto p = ParseEveryWay(
      ToolCallFamily::kLlama3Json,
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}");
  EXPECT_EQ(p.content, "");
  EXPECT_EQ(p.tool_calls, std::vector<ToolCall>{kWeather});
  p = ParseEveryWay(
      ToolCallFamily::kLlama3Json,
      " <|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", "
      "\"days\": 2}}; {\"name\": \"get_time\", \"parameters\": {}}\n{\"name\": \"get_time\"}");
  EXPECT_EQ(p.content, "");
  EXPECT_EQ(p.tool_calls, (std::vector<ToolCall>{kWeather, kTime, kTime}));
}

TEST(Llama3JsonToolCalls, ProseIsContent) {
  auto p = ParseEveryWay(ToolCallFamily::kLlama3Json, "The weather is {\"sunny\": true}.");
  EXPECT_EQ(p.content, "The weather is {\"sunny\": true}.");
  EXPECT_TRUE(p.tool_calls.empty());
  // Braces inside strings do not end the object.
  p = ParseEveryWay(ToolCallFamily::kLlama3Json,
                    "{\"name\": \"f\", \"parameters\": {\"s\": \"}{\\\"\"}}");
  EXPECT_EQ(p.tool_calls, (std::vector<ToolCall>{{"f", "{\"s\":\"}{\\\"\"}"}}));
}

TEST(Llama3JsonToolCalls, MalformedCallsStayContent) {
  for (const char* text :
       {"{\"name\": \"f\", \"parameters\": {}", "{\"parameters\": {}}", "{name: f}",
        "<|python_tag|>brave_search.call(query=\"x\")", "<|python_tag|>"}) {
    const auto p = ParseEveryWay(ToolCallFamily::kLlama3Json, text);
    EXPECT_EQ(p.content, text);
    EXPECT_TRUE(p.tool_calls.empty()) << text;
  }
  // A valid call followed by something else: the call counts, the rest is content.
  const auto p = ParseEveryWay(ToolCallFamily::kLlama3Json,
                               "{\"name\": \"get_time\"} ; then some words {\"x\": 1}");
  EXPECT_EQ(p.tool_calls, std::vector<ToolCall>{kTime});
  EXPECT_EQ(p.content, "then some words {\"x\": 1}");
}

TEST(Llama3JsonToolCalls, StreamingLetsCallsOutAsTheyClose) {
  auto s = MakeToolCallParser(ToolCallFamily::kLlama3Json)->NewStream();
  EXPECT_EQ(s->Feed("<|python").content, "");
  StreamDelta d = s->Feed("_tag|>{\"name\": \"get_time\"}");
  EXPECT_EQ(d.tool_calls, std::vector<ToolCall>{kTime});
  d = s->Feed("; {\"name\": \"get_t");
  EXPECT_TRUE(d.tool_calls.empty());
  d = s->Feed("ime\"}");
  EXPECT_EQ(d.tool_calls, std::vector<ToolCall>{kTime});
  EXPECT_EQ(s->Finish().content, "");
  // Plain prose streams through at once.
  s = MakeToolCallParser(ToolCallFamily::kLlama3Json)->NewStream();
  EXPECT_EQ(s->Feed("Hello").content, "Hello");
  EXPECT_EQ(s->Feed(" {").content, " {");
}

TEST(NoneToolCalls, EverythingIsContent) {
  const auto p = ParseEveryWay(ToolCallFamily::kNone, "<tool_call>{\"name\": \"f\"}</tool_call>");
  EXPECT_EQ(p.content, "<tool_call>{\"name\": \"f\"}</tool_call>");
  EXPECT_TRUE(p.tool_calls.empty());
  EXPECT_EQ(ParseEveryWay(ToolCallFamily::kNone, " \n ").content, "");
}

TEST(ToolCallRegistry, ChoosesTheFamily) {
  EXPECT_EQ(DetectToolCallFamily("... <tool_call>\\n{\"name\": ...} ..."), ToolCallFamily::kHermes);
  EXPECT_EQ(DetectToolCallFamily("{{- '<|start_header_id|>' }} \"parameters\": dict"),
            ToolCallFamily::kLlama3Json);
  EXPECT_EQ(DetectToolCallFamily("{{ '<|python_tag|>' }}"), ToolCallFamily::kLlama3Json);
  EXPECT_EQ(DetectToolCallFamily("{% for m in messages %}{{ m.content }}{% endfor %}"),
            ToolCallFamily::kNone);
  EXPECT_EQ(ToolCallFamilyForModelType("qwen3"), ToolCallFamily::kHermes);
  EXPECT_EQ(ToolCallFamilyForModelType("llama"), ToolCallFamily::kLlama3Json);
  EXPECT_EQ(ToolCallFamilyForModelType("gpt2"), ToolCallFamily::kNone);
  EXPECT_EQ(*ToolCallFamilyByName("hermes"), ToolCallFamily::kHermes);
  EXPECT_EQ(ToolCallFamilyByName("nope").status().message(),
            "unknown tool-call family 'nope' (known: hermes, llama3_json, none)");
  for (const ToolCallFamilyInfo& f : ToolCallFamilies()) {
    EXPECT_EQ(MakeToolCallParser(f.family)->family(), f.family);
    EXPECT_EQ(ToolCallFamilyName(f.family), f.name);
  }
}

}  // namespace
}  // namespace switchyard::chat_template
