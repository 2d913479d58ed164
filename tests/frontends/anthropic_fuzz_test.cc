// Bounded fuzzing of the Anthropic protocol layer: byte-mutated bodies (truncations, stray
// tokens, invalid UTF-8, huge numbers, deep nesting), structurally mutated bodies (a random
// member replaced by a value of another type, removed, or an unknown one added), random bytes
// and random headers, through ParseMessages, ParseCountTokens and ParseHeaders, and random
// feeding of a MessagesStream. Asserts no crash and no exception, that every failure is an
// InvalidArgument with a message (whose parameter, when named, leads it), that whatever parses
// formats to valid JSON, and that every stream stays well formed. Fixed seeds and counts;
// SY_FUZZ_SEED and SY_FUZZ_ITERS widen a campaign run by hand.
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "tests/frontends/fuzz_mutations.h"

#include "frontends/anthropic/anthropic_protocol.h"

namespace switchyard::frontends::anthropic {
namespace {

using Json = nlohmann::ordered_json;
using fuzz::EnvOr;
using fuzz::IsJson;
using fuzz::MutateStructure;
using fuzz::Pick;

const char* kSeeds[] = {
    R"({"model":"m","max_tokens":64,"system":"s","messages":[{"role":"user","content":"hi"}],"temperature":0.5,"top_p":0.9,"top_k":5,"stop_sequences":["\n"],"stream":true,"metadata":{"user_id":"{\"session_id\":\"s1\"}"}})",
    R"({"model":"m","max_tokens":64,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b","cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"redacted_thinking","data":"d"},{"type":"text","text":"ok"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"k":[1,2,{"x":null}]}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"r"}],"is_error":true},{"type":"text","text":"more","cache_control":{"type":"ephemeral"}}]},{"role":"system","content":"mid"}],"tools":[{"name":"f","description":"d","input_schema":{"type":"object","properties":{"k":{"type":"array"}}},"cache_control":{"type":"ephemeral"}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},"thinking":{"type":"enabled","budget_tokens":2048}})",
    R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"prefill"}],"tools":[{"type":"custom","name":"g","input_schema":{}}],"tool_choice":{"type":"any"},"context_management":{},"service_tier":"auto","container":null,"mcp_servers":[],"output_config":{"effort":"low"},"extra":[1,2]})",
};

// Byte-level edits of a body.
std::string Mutate(std::string s, std::mt19937_64& rng) {
  static const std::string kTokens[] = {"{",
                                        "}",
                                        "[",
                                        "]",
                                        ",",
                                        ":",
                                        "\"",
                                        "null",
                                        "-1",
                                        "0",
                                        "1.5",
                                        "1e309",
                                        "-1e400",
                                        "99999999999999999999",
                                        "-9223372036854775809",
                                        "\\u0000",
                                        "\\ud800",
                                        "true",
                                        "\"text\"",
                                        "\"user\"",
                                        "\"assistant\"",
                                        "\"system\"",
                                        "\"tool_use\"",
                                        "\"tool_result\"",
                                        "\"image\"",
                                        "\"thinking\"",
                                        "\"cache_control\"",
                                        "\xff",
                                        "\xc3",
                                        "\xed\xa0\x80",
                                        "\xf4\x90\x80\x80",
                                        std::string(80, '['),
                                        std::string(80, '{')};
  return fuzz::MutateBytes(std::move(s), rng, kTokens);
}

// Everything a front does with a parsed request must work on whatever the parser accepted.
void ExerciseAccepted(const MessagesRequest& r) {
  const Conversation& c = r.conversation;
  ASSERT_FALSE(c.model.empty());
  ASSERT_FALSE(c.messages.empty());
  for (const Message& m : c.messages) {
    for (const ToolCall& call : m.tool_calls) ASSERT_TRUE(Json::parse(call.arguments).is_object());
    ASSERT_TRUE(m.role != "tool" || !m.tool_call_id.empty());
  }
  for (const ToolDef& t : c.tools) ASSERT_TRUE(Json::parse(t.parameters_json).is_object());
  for (const CacheBreakpoint& b : r.cache_breakpoints) {
    ASSERT_LT(b.message, static_cast<int64_t>(c.messages.size()));
    ASSERT_LT(b.tool, static_cast<int64_t>(c.tools.size()));
  }
  Answer a;
  a.text = c.messages.back().content;
  a.reasoning = c.messages.back().reasoning;
  for (const Message& m : c.messages) {
    a.tool_calls.insert(a.tool_calls.end(), m.tool_calls.begin(), m.tool_calls.end());
  }
  const MessageHead head{"msg_f", c.model, r.thinking.type == Thinking::Type::kEnabled};
  ASSERT_TRUE(IsJson(MessageJson(a, head, UsageOf(a))));
  MessagesStream s(head);
  std::string sse = s.Start(UsageOf(a));
  sse += s.Thinking(a.reasoning);
  sse += s.Text(a.text);
  sse += s.Finish(a, UsageOf(a));
  const std::string last = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  ASSERT_TRUE(sse.size() > last.size() && sse.substr(sse.size() - last.size()) == last) << sse;
  const std::string header = IgnoredHeaderValue(IgnoredOf(ParseHeaders({}), r));
  for (char ch : header) ASSERT_TRUE(ch >= ' ' && ch < 0x7f) << header;
  (void)SessionKeyOf(ParseHeaders({}), r).Key();
}

// Checks one parse; counts it in *accepted when it parsed.
void CheckOutcome(const Result<MessagesRequest>& r, const std::string& body, uint64_t* accepted) {
  if (r.ok()) {
    ++*accepted;
    ExerciseAccepted(*r);
    return;
  }
  const Status& s = r.status();
  ASSERT_TRUE(s.IsInvalidArgument()) << s << " for " << body;
  ASSERT_FALSE(s.message().empty()) << body;
  const std::string param = ParamOf(s);
  if (!param.empty()) {
    ASSERT_EQ(s.message().rfind(param + ": ", 0), 0u) << s;
  }
  const Error e = ErrorFromStatus(s);
  ASSERT_EQ(e.http_status, 400);
  ASSERT_TRUE(IsJson(ErrorJson(e))) << s;
}

TEST(AnthropicFuzzTest, ParsersSurviveByteMutations) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 4243));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 2000);
  uint64_t accepted = 0, counted = 0;
  for (uint64_t i = 0; i < iters; ++i) {
    const std::string body = Mutate(Pick(kSeeds, rng), rng);
    CheckOutcome(ParseMessages(body), body, &accepted);
    CheckOutcome(ParseCountTokens(body), body, &counted);
  }
  EXPECT_GT(accepted, iters / 50) << "the mutations should leave some bodies valid";
  EXPECT_LT(accepted, iters - iters / 5);
}

TEST(AnthropicFuzzTest, ParsersSurviveWrongTypesAndMissingMembers) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 9002));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 2000);
  std::vector<Json> seeds;
  for (const char* s : kSeeds) seeds.push_back(Json::parse(s));
  uint64_t accepted = 0, counted = 0;
  for (uint64_t i = 0; i < iters; ++i) {
    const std::string body = MutateStructure(seeds[rng() % seeds.size()], rng);
    CheckOutcome(ParseMessages(body), body, &accepted);
    CheckOutcome(ParseCountTokens(body), body, &counted);
  }
  EXPECT_GT(accepted, iters / 10) << "a wrong type in an ignored member is still accepted";
  EXPECT_LT(accepted, iters - iters / 5) << "most wrong types are refused";
}

TEST(AnthropicFuzzTest, ParsersSurviveRandomBytes) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 78));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 2000);
  const char kAlphabet[] =
      "{}[]\":,0123456789.eE-+ \\untrfalsemodelmax_tokensmessagesroletextcontent\xff\xc3\x80";
  for (uint64_t i = 0; i < iters; ++i) {
    std::string body(rng() % 96, ' ');
    for (char& c : body) c = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
    uint64_t accepted = 0;
    CheckOutcome(ParseMessages(body), body, &accepted);
    CheckOutcome(ParseCountTokens(body), body, &accepted);
  }
}

TEST(AnthropicFuzzTest, DeepNestingIsRefusedWithoutRecursion) {
  for (const std::string& open : {std::string("["), std::string("{\"a\":")}) {
    std::string body;
    for (int i = 0; i < 200000; ++i) body += open;
    auto r = ParseMessages(body);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_NE(r.status().message().find("deeper"), std::string::npos) << r.status();
  }
  // Brackets inside strings (escaped quotes too) are text, not nesting.
  const std::string text = "\\\"" + std::string(5000, '[') + std::string(5000, '{');
  auto ok = ParseMessages(R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":")" +
                          text + "\"}]}");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->conversation.messages[0].content.size(), 10001u);
  // Generated arguments nesting deeper than the limit become {} rather than recursing.
  std::string deep(100000, '[');
  Answer a;
  a.tool_calls = {{"t", "f", "{\"a\":" + deep}};
  EXPECT_NE(MessageJson(a, {"msg", "m"}, UsageOf(a)).find("\"input\":{}"), std::string::npos);
}

TEST(AnthropicFuzzTest, HeadersSurviveGarbage) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 31338));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 3000);
  const char* kNames[] = {"x-api-key",
                          "authorization",
                          "anthropic-version",
                          "anthropic-beta",
                          "x-claude-code-session-id",
                          "x-claude-code-agent-id",
                          "x-session-id",
                          "other"};
  const char kAlphabet[] = "abcBearer ,\t-_0123456789\xff\r\n:";
  for (uint64_t i = 0; i < iters; ++i) {
    std::map<std::string, std::string> headers;
    for (int n = static_cast<int>(rng() % 6); n > 0; --n) {
      std::string v(rng() % 40, ' ');
      for (char& c : v) c = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
      headers[Pick(kNames, rng)] = v;
    }
    Headers h = ParseHeaders(headers);
    for (const std::string& beta : h.betas) ASSERT_FALSE(beta.empty());
    MessagesRequest r;
    r.ignored = {headers.empty() ? "" : headers.begin()->second};
    const std::string v = IgnoredHeaderValue(IgnoredOf(h, r));
    for (char c : v) ASSERT_TRUE(c >= ' ' && c < 0x7f) << v;
    ASSERT_LE(v.size(), 2048u);
    (void)SessionKeyOf(h, r).Key();
  }
}

// A random feeding of a MessagesStream stays well formed: indexes contiguous, each block
// started before its deltas and stopped once, nothing after message_stop.
TEST(AnthropicFuzzTest, StreamsStayWellFormed) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 555));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 500);
  for (uint64_t i = 0; i < iters; ++i) {
    MessagesStream s({"msg", "m", rng() % 2 == 0});
    std::string sse;
    for (int op = 0, n = static_cast<int>(rng() % 12); op < n; ++op) {
      switch (rng() % 7) {
        case 0:
          sse += s.Start({});
          break;
        case 1:
          sse += s.Thinking(rng() % 4 == 0 ? "" : "th");
          break;
        case 2:
          sse += s.Text(rng() % 4 == 0 ? "" : "tx\xff");
          break;
        case 3:
          sse += s.ToolUse({"t", "f", rng() % 2 == 0 ? "{\"a\":1}" : "[oops"});
          break;
        case 4:
          sse += s.BeginToolUse("u", "g");
          break;
        case 5:
          sse += s.ToolUseDelta(rng() % 2 == 0 ? "{\"b\":" : "2}");
          break;
        default:
          sse += rng() % 8 == 0 ? s.Fail(Status::Internal("x")) : "";
          break;
      }
    }
    Answer a;
    a.tool_calls.resize(rng() % 3, ToolCall{"c", "h", "{}"});
    sse += s.Finish(a, UsageOf(a));
    // Walk the events: the structural rules only (tool inputs from split deltas may be
    // partial JSON here, as the deltas above are random).
    int open = -1, next = 0;
    bool done = false;
    size_t at = 0;
    while (at < sse.size()) {
      const size_t end = sse.find("\n\n", at);
      ASSERT_NE(end, std::string::npos);
      const std::string block = sse.substr(at, end - at);
      at = end + 2;
      ASSERT_FALSE(done) << block;
      Json d = Json::parse(block.substr(block.find("\ndata: ") + 7), nullptr, false);
      ASSERT_FALSE(d.is_discarded()) << block;
      const std::string type = d["type"];
      if (type == "content_block_start") {
        ASSERT_EQ(open, -1);
        ASSERT_EQ(d["index"], next);
        open = next++;
      } else if (type == "content_block_delta") {
        ASSERT_EQ(d["index"], open);
      } else if (type == "content_block_stop") {
        ASSERT_EQ(d["index"], open);
        open = -1;
      } else if (type == "message_delta") {
        ASSERT_EQ(open, -1);
      } else if (type == "message_stop" || type == "error") {
        done = true;
      }
    }
    ASSERT_TRUE(done);
  }
}

}  // namespace
}  // namespace switchyard::frontends::anthropic
