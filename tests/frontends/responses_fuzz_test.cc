// Bounded fuzzing of the Responses protocol layer: byte-mutated bodies (truncations, stray
// tokens, invalid UTF-8, huge numbers, deep nesting), structurally mutated bodies (a random
// member replaced by a value of another type, removed, or an unknown one added), random
// headers and mutated stored responses, through ParseCreate, ParseHeaders and
// StoredResponse::FromJson. Asserts no crash and no exception, that a refused request is an
// InvalidArgument whose named parameter leads its message, that a refused stored form is
// DataLoss, and that whatever is accepted converts, formats, streams and stores to valid JSON.
// Fixed seeds and counts; SY_FUZZ_SEED and SY_FUZZ_ITERS widen a campaign run by hand.
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

#include "tests/frontends/fuzz_mutations.h"

#include "frontends/responses/responses_protocol.h"

namespace switchyard::frontends::responses {
namespace {

using Json = nlohmann::ordered_json;
using fuzz::EnvOr;
using fuzz::IsJson;
using fuzz::MutateStructure;
using fuzz::Pick;

const char* kSeeds[] = {
    R"({"model":"m","input":"hi","instructions":"be brief","max_output_tokens":8,"temperature":0.7,"stream":true,"store":false,"metadata":{"k":"v"}})",
    R"({"model":"m","input":[{"role":"developer","content":"d"},{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"e"},{"type":"function_call","call_id":"c1","name":"get","arguments":"{\"k\":1}"},{"type":"function_call_output","call_id":"c1","output":"42"}],"tools":[{"type":"function","name":"get","parameters":{"type":"object","properties":{"k":{"type":"integer"}}}},{"type":"namespace","name":"mcp__x__","tools":[{"type":"function","name":"get"},{"type":"custom","name":"raw"}]},{"type":"web_search"}],"tool_choice":{"type":"function","name":"get"},"parallel_tool_calls":false})",
    R"({"model":"m","previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}],"reasoning":{"effort":"low"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"p","text":{"format":{"type":"text"},"verbosity":"low"},"tool_choice":"none","n":2,"background":false})",
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
                                        "true",
                                        "\"text\"",
                                        "\"function_call\"",
                                        "\"namespace\"",
                                        "\"input_image\"",
                                        "\\ud800",
                                        "\xff",
                                        "\xc3",
                                        "99999999999999999999",
                                        std::string(80, '[')};
  return fuzz::MutateBytes(std::move(s), rng, kTokens);
}

// Everything a handler does with an accepted request must work on it.
void ExerciseAccepted(const CreateRequest& r) {
  Conversation c = ToConversation(r);
  ASSERT_EQ(c.tools.size(), r.routes.size());
  StoredResponse head = NewResponse(r, "resp_fz", 1);
  Answer answer{.text = c.messages.empty() ? "" : c.messages.back().content};
  for (const Message& m : c.messages) {
    answer.tool_calls.insert(answer.tool_calls.end(), m.tool_calls.begin(), m.tool_calls.end());
  }
  ResponsesStream stream(r.routes);
  std::string sse = stream.Start(head) + stream.Text(answer.text);
  for (const ToolCall& call : answer.tool_calls) sse += stream.ToolCall(call);
  StoredResponse final = head;
  ApplyAnswer(answer, r.routes, &final);
  sse += stream.Finish(final);
  for (size_t pos = 0; pos < sse.size();) {
    size_t data = sse.find("\ndata: ", pos), end = sse.find("\n\n", pos);
    ASSERT_NE(end, std::string::npos);
    ASSERT_TRUE(IsJson(sse.substr(data + 7, end - data - 7))) << sse.substr(pos, end - pos);
    pos = end + 2;
  }
  ASSERT_TRUE(IsJson(ResponseJson(final)));
  auto back = StoredResponse::FromJson(final.ToJson());
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << final.ToJson();
  ASSERT_EQ(back->output.size(), final.output.size());
  auto listed = InputItemsJson(*back, ListParams{});
  ASSERT_TRUE(listed.ok() && IsJson(*listed));
  (void)ChainConversation({*back}, r);
}

void CheckOutcome(const Result<CreateRequest>& r, const std::string& body, uint64_t* accepted) {
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
  HttpError e = ErrorFromStatus(s);
  ASSERT_EQ(e.http_status, 400);
  ASSERT_TRUE(IsJson(e.body)) << s;
}

TEST(ResponsesFuzzTest, ParseCreateSurvivesByteMutations) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 4243));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 2000);
  uint64_t accepted = 0;
  for (uint64_t i = 0; i < iters; ++i) {
    std::string body = Mutate(Pick(kSeeds, rng), rng);
    CheckOutcome(ParseCreate(body), body, &accepted);
  }
  EXPECT_GT(accepted, iters / 50) << "the mutations should leave some bodies valid";
  EXPECT_LT(accepted, iters - iters / 5);
}

TEST(ResponsesFuzzTest, ParseCreateSurvivesWrongTypesAndMissingMembers) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 9002));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 2000);
  std::vector<Json> seeds;
  for (const char* s : kSeeds) seeds.push_back(Json::parse(s));
  uint64_t accepted = 0;
  for (uint64_t i = 0; i < iters; ++i) {
    std::string body = MutateStructure(seeds[rng() % seeds.size()], rng);
    CheckOutcome(ParseCreate(body), body, &accepted);
  }
  EXPECT_GT(accepted, iters / 10) << "a wrong type in an ignored member is still accepted";
  EXPECT_LT(accepted, iters - iters / 5) << "most wrong types are refused";
}

TEST(ResponsesFuzzTest, ParseCreateSurvivesRandomBytesAndDeepNesting) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 78));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 2000);
  const char kAlphabet[] = "{}[]\":,0123456789.eE-+ \\untrfalsemodelinputtype\xff\xc3\x80";
  uint64_t accepted = 0;
  for (uint64_t i = 0; i < iters; ++i) {
    std::string body(rng() % 96, ' ');
    for (char& c : body) c = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
    CheckOutcome(ParseCreate(body), body, &accepted);
  }
  for (const std::string& open : {std::string("["), std::string("{\"a\":")}) {
    std::string body;
    for (int i = 0; i < 200000; ++i) body += open;
    auto r = ParseCreate(body);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("deeper"), std::string::npos) << r.status();
    EXPECT_FALSE(StoredResponse::FromJson(body).ok());
  }
}

TEST(ResponsesFuzzTest, FromJsonSurvivesMutatedStoredResponses) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 1234));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 2000);
  std::vector<Json> stored;
  for (const char* seed : kSeeds) {
    auto r = ParseCreate(seed);
    ASSERT_TRUE(r.ok()) << r.status();
    StoredResponse s = NewResponse(*r, "resp_seed", 7);
    ApplyAnswer(Answer{.text = "t", .tool_calls = {{"c9", "get", "{}"}}}, r->routes, &s);
    stored.push_back(Json::parse(s.ToJson()));
  }
  uint64_t accepted = 0;
  for (uint64_t i = 0; i < iters; ++i) {
    const Json& seed = stored[rng() % stored.size()];
    std::string text = rng() % 2 ? MutateStructure(seed, rng) : Mutate(seed.dump(), rng);
    auto r = StoredResponse::FromJson(text);
    if (!r.ok()) {
      ASSERT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status();
      continue;
    }
    ++accepted;
    ASSERT_TRUE(IsJson(ResponseJson(*r)));
    ASSERT_TRUE(StoredResponse::FromJson(r->ToJson()).ok()) << r->ToJson();
  }
  EXPECT_GT(accepted, iters / 20);
}

TEST(ResponsesFuzzTest, HeadersSurviveGarbage) {
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 31338));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 3000);
  const char* kNames[] = {
      "session-id",         "session_id",           "thread-id",  "thread_id",
      "conversation_id",    "x-client-request-id",  "originator", "authorization",
      "chatgpt-account-id", "x-codex-turn-metadata"};
  for (uint64_t i = 0; i < iters; ++i) {
    std::map<std::string, std::string> headers;
    for (int k = 0, n = static_cast<int>(rng() % 5); k < n; ++k) {
      std::string v(rng() % 300, ' ');
      for (char& c : v) c = static_cast<char>(rng() % 256);
      if (rng() % 3 == 0) v = "Bearer " + v.substr(0, 20);
      headers[Pick(kNames, rng)] = v;
    }
    auto h = ParseHeaders(headers);
    if (!h.ok()) {
      ASSERT_TRUE(h.status().IsInvalidArgument());
      ASSERT_FALSE(ParamOf(h.status()).empty()) << h.status();
      continue;
    }
    (void)SessionIdOf(*h, CreateRequest{});
  }
}

}  // namespace
}  // namespace switchyard::frontends::responses
