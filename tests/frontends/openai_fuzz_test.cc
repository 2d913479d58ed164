// Bounded fuzzing of the OpenAI protocol layer: byte-mutated bodies (truncations, stray
// tokens, invalid UTF-8, huge numbers, deep nesting), structurally mutated bodies (a random
// member replaced by a value of another type, removed, or wrapped) and random headers, through
// every parser. Asserts no crash, that every failure is an InvalidArgument with a message (whose
// parameter, when named, leads it) and that whatever parses renders and formats to valid JSON.
// Fixed seeds and counts; SY_FUZZ_SEED and SY_FUZZ_ITERS widen a campaign run by hand.
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

#include "tests/frontends/fuzz_mutations.h"

#include "frontends/openai/openai_protocol.h"
#include "frontends/prompt.h"
#include "frontends/stream_text.h"

namespace switchyard::frontends::openai {
namespace {

using Json = nlohmann::ordered_json;
using fuzz::EnvOr;
using fuzz::IsJson;
using fuzz::MutateStructure;
using fuzz::Pick;

const char* kChatSeeds[] = {
    R"({"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"max_tokens":8,"temperature":0.7,"stop":["\n"],"stream":true,"stream_options":{"include_usage":true}})",
    R"({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"k\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"42"}],"tools":[{"type":"function","function":{"name":"get","description":"d","parameters":{"type":"object","properties":{"k":{"type":"string"},"n":{"type":"integer","enum":[1,2]}},"required":["k","n"]}}}],"tool_choice":{"type":"function","function":{"name":"get"}}})",
    R"({"model":"m","messages":[{"role":"developer","content":"d","name":"x"},{"role":"user","content":"q"}],"n":1,"seed":-5,"top_p":0.5,"metadata":{"session_id":"s"},"user":"u","nvext":{"agent_hints":{"latency_sensitivity":1.5,"osl":10,"priority":1}},"logprobs":false,"response_format":{"type":"text"},"frequency_penalty":0,"extra":[1,2]})",
};
const char* kCompletionSeeds[] = {
    R"({"model":"m","prompt":"once upon","max_tokens":16,"echo":false,"best_of":1,"stop":"."})",
    R"({"model":"m","prompt":["one"],"suffix":null,"logprobs":null,"seed":3,"temperature":0})",
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
                                        "\"tool\"",
                                        "\"image_url\"",
                                        "\xff",
                                        "\xc3",
                                        "\xed\xa0\x80",
                                        "\xf4\x90\x80\x80",
                                        std::string(80, '['),
                                        std::string(80, '{')};
  return fuzz::MutateBytes(std::move(s), rng, kTokens);
}

// Everything a handler does with a parsed request must work on whatever the parser accepted.
void ExerciseAccepted(const Request& r) {
  const std::string prompt = r.chat ? RenderChat(r.messages, r.tools) : r.prompt;
  ASSERT_TRUE(!r.chat || prompt.size() >= 14) << prompt;
  for (const ToolDef& t : r.tools) {
    Json args =
        Json::parse(ForcedCallArguments(t.parameters_json, prompt.substr(0, 40)), nullptr, false);
    ASSERT_TRUE(args.is_object()) << t.parameters_json;
  }
  Response resp;
  resp.chat = r.chat;
  resp.model = r.model;
  resp.choice.text = prompt.substr(prompt.size() / 2);
  for (const Message& m : r.messages) {
    resp.choice.tool_calls.insert(resp.choice.tool_calls.end(), m.tool_calls.begin(),
                                  m.tool_calls.end());
  }
  resp.choice.finish_reason = "stop";
  ASSERT_TRUE(IsJson(ResponseJson(resp)));
  const std::string chunk = ChunkEvent(resp, resp.choice.text, true, "", &resp.choice.tool_calls);
  ASSERT_TRUE(IsJson(chunk.substr(6)));
  ASSERT_TRUE(IsJson(UsageEvent(resp).substr(6)));
  (void)SessionIdOf({}, r);
}

// Checks one parse; counts it in accepted[r.ok()].
void CheckOutcome(const Result<Request>& r, const std::string& body, uint64_t* accepted) {
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

TEST(OpenAiFuzzTest, ParsersSurviveByteMutations) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 4242));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 2000);
  uint64_t accepted = 0, wrong_endpoint = 0;
  for (uint64_t i = 0; i < iters; ++i) {
    const bool chat = rng() % 3 != 0;
    std::string body = Mutate(chat ? Pick(kChatSeeds, rng) : Pick(kCompletionSeeds, rng), rng);
    CheckOutcome(chat ? ParseChat(body) : ParseCompletion(body), body, &accepted);
    CheckOutcome(chat ? ParseCompletion(body) : ParseChat(body), body, &wrong_endpoint);
  }
  EXPECT_GT(accepted, iters / 50) << "the mutations should leave some bodies valid";
  EXPECT_LT(accepted, iters - iters / 5);
}

TEST(OpenAiFuzzTest, ParsersSurviveWrongTypesAndMissingMembers) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 9001));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 2000);
  std::vector<Json> chat_seeds, completion_seeds;
  for (const char* s : kChatSeeds) chat_seeds.push_back(Json::parse(s));
  for (const char* s : kCompletionSeeds) completion_seeds.push_back(Json::parse(s));
  uint64_t accepted = 0;
  for (uint64_t i = 0; i < iters; ++i) {
    const bool chat = rng() % 3 != 0;
    const auto& seeds = chat ? chat_seeds : completion_seeds;
    std::string body = MutateStructure(seeds[rng() % seeds.size()], rng);
    CheckOutcome(chat ? ParseChat(body) : ParseCompletion(body), body, &accepted);
  }
  EXPECT_GT(accepted, iters / 10) << "a wrong type in an ignored member is still accepted";
  EXPECT_LT(accepted, iters - iters / 5) << "most wrong types are refused";
}

TEST(OpenAiFuzzTest, ParsersSurviveRandomBytes) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 77));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 2000);
  const char kAlphabet[] = "{}[]\":,0123456789.eE-+ \\untrfalsemodelpromptmessages\xff\xc3\x80";
  for (uint64_t i = 0; i < iters; ++i) {
    std::string body(rng() % 96, ' ');
    for (char& c : body) c = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
    uint64_t accepted = 0;
    CheckOutcome(ParseChat(body), body, &accepted);
    CheckOutcome(ParseCompletion(body), body, &accepted);
  }
}

TEST(OpenAiFuzzTest, DeepNestingIsRefusedWithoutRecursion) {
  for (const std::string& open : {std::string("["), std::string("{\"a\":")}) {
    std::string body;
    for (int i = 0; i < 200000; ++i) body += open;
    auto r = ParseChat(body);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_NE(r.status().message().find("deeper"), std::string::npos) << r.status();
  }
  // Brackets inside strings (escaped quotes too) are text, not nesting.
  std::string text = "\\\"" + std::string(5000, '[') + std::string(5000, '{');
  auto ok = ParseChat(R"({"model":"m","messages":[{"role":"user","content":")" + text + "\"}]}");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->messages[0].content.size(), 10001u);
  // Nesting within the limit in a tool schema renders and fills arguments.
  std::string schema = "{\"type\":\"object\"}";
  for (int i = 0; i < 25; ++i)
    schema = "{\"properties\":{\"p\":" + schema + "},\"required\":[\"p\"]}";
  auto tools = ParseChat(R"({"model":"m","messages":[{"role":"user","content":"x"}],"tools":[)"
                         R"({"type":"function","function":{"name":"f","parameters":)" +
                         schema + "}}]}");
  ASSERT_TRUE(tools.ok()) << tools.status();
  ExerciseAccepted(*tools);
}

TEST(OpenAiFuzzTest, HeadersSurviveGarbage) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 31337));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 3000);
  const char* kValid[] = {
      "30", "2.5",  "2025-06-01T12:00:00.5Z", "2024-02-29T23:59:60+14:00", "interactive", "batch",
      "2",  "0.000"};
  const char kAlphabet[] = "0123456789.:-+TZtz abcdefinxy\xff\t";
  const int64_t now = 1'700'000'000'000;
  for (uint64_t i = 0; i < iters; ++i) {
    std::string v;
    if (rng() % 2 == 0) {
      v = Mutate(Pick(kValid, rng), rng);
    } else {
      v.resize(rng() % 40);
      for (char& c : v) c = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
    }
    auto d = ParseDeadline(v, now);
    if (!d.ok()) {
      ASSERT_TRUE(d.status().IsInvalidArgument()) << v;
      ASSERT_EQ(ParamOf(d.status()), "x-switchyard-deadline") << d.status();
    }
    auto p = ParsePriority(v);
    if (p.ok()) {
      ASSERT_TRUE(*p >= 1 && *p <= 3) << v;
    } else {
      ASSERT_EQ(ParamOf(p.status()), "x-switchyard-priority") << p.status();
    }
  }
}

// A forced call's arguments (frontends/prompt.h) from mutated schemas and random text: a
// JSON object holding every required property, or "{}" for a schema the constraint refuses.
TEST(OpenAiFuzzTest, ForcedCallArgumentsAreAlwaysAJsonObject) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 5150));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 3000);
  const char* kSchemas[] = {
      R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a","b"]})",
      R"({"properties":{"a":{"enum":["x"]},"c":{"type":["null","string"]}},"required":["a","c","zz"]})",
      R"({"properties":{"n":{"type":"number"}}})",
      R"({"required":"a","properties":[]})",
      "",
  };
  for (uint64_t i = 0; i < iters; ++i) {
    ToolDef t{"f", "", Mutate(Pick(kSchemas, rng), rng)};
    std::string text(rng() % 64, ' ');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    Json args = Json::parse(ForcedCallArguments(t.parameters_json, text), nullptr, false);
    ASSERT_TRUE(args.is_object()) << t.parameters_json;
    Json schema = Json::parse(t.parameters_json, nullptr, false);
    if (args.empty() || !schema.is_object() || !schema.contains("required") ||
        !schema["required"].is_array())
      continue;
    for (const Json& k : schema["required"])
      if (k.is_string()) {
        ASSERT_TRUE(args.contains(k.get<std::string>())) << t.parameters_json;
      }
    ASSERT_LE(Utf8SafePrefix(text), text.size());
  }
}

}  // namespace
}  // namespace switchyard::frontends::openai
