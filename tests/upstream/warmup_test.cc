// Tests of MakeWarmup: one request per API, shaped as its engine takes it.
#include "upstream/warmup.h"

#include <gtest/gtest.h>

namespace switchyard::upstream {
namespace {

using nlohmann::json;

json Body(const UpstreamCall& call) { return json::parse(call.body); }

TEST(WarmupTest, ChatAppendsTheAnswerAsTheAssistantsTurn) {
  json request = json::parse(R"({"model":"m","stream":true,"stream_options":{"include_usage":true},
      "max_completion_tokens":500,"n":2,"tools":[{"type":"function","function":{"name":"f"}}],
      "messages":[{"role":"system","content":"s"},{"role":"user","content":"q"}]})");
  auto call = MakeWarmup({"/v1/chat/completions", request, "the answer"});
  ASSERT_TRUE(call.ok()) << call.status().ToString();
  EXPECT_EQ(call->kind, CallKind::kWarmup);
  EXPECT_EQ(call->method, "POST");
  EXPECT_EQ(call->path, "/v1/chat/completions");
  EXPECT_TRUE(call->background);
  EXPECT_EQ(Body(*call), json::parse(R"({"model":"m","stream":false,"max_tokens":1,
      "tools":[{"type":"function","function":{"name":"f"}}],
      "messages":[{"role":"system","content":"s"},{"role":"user","content":"q"},
                  {"role":"assistant","content":"the answer"}]})"));
}

TEST(WarmupTest, ChatKeepsAnAnswersToolCalls) {
  json request = json::parse(R"({"model":"m","messages":[{"role":"user","content":"q"}]})");
  json answer = json::parse(R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1",
      "type":"function","function":{"name":"f","arguments":"{}"}}]})");
  auto call = MakeWarmup({"/v1/chat/completions", request, answer});
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(Body(*call)["messages"].back(), answer);
}

TEST(WarmupTest, MessagesAppendsAnAssistantMessage) {
  json request = json::parse(R"({"model":"claude","max_tokens":4096,"stream":true,
      "system":"s","messages":[{"role":"user","content":"q"}]})");
  json blocks = json::parse(R"([{"type":"text","text":"a"},
      {"type":"tool_use","id":"t1","name":"bash","input":{"cmd":"ls"}}])");
  auto call = MakeWarmup({"/v1/messages?beta=true", request, blocks});
  ASSERT_TRUE(call.ok()) << call.status().ToString();
  EXPECT_EQ(call->path, "/v1/messages?beta=true");
  json body = Body(*call);
  EXPECT_EQ(body["max_tokens"], 1);
  EXPECT_EQ(body["stream"], false);
  EXPECT_EQ(body["system"], "s");
  EXPECT_EQ(body["messages"].back(), json({{"role", "assistant"}, {"content", blocks}}));

  call = MakeWarmup({"/v1/messages", request, "text"});
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(Body(*call)["messages"].back(), json({{"role", "assistant"}, {"content", "text"}}));
}

TEST(WarmupTest, ResponsesAppendsToInputAndStoresNothing) {
  json request = json::parse(R"({"model":"m","instructions":"i","input":"q",
      "max_output_tokens":900,"store":true,"background":true,"stream":true})");
  auto call = MakeWarmup({"/v1/responses", request, "a"});
  ASSERT_TRUE(call.ok()) << call.status().ToString();
  EXPECT_EQ(Body(*call), json::parse(R"({"model":"m","instructions":"i","stream":false,
      "max_output_tokens":1,"store":false,
      "input":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]})"));

  json items = json::parse(R"([{"type":"function_call","call_id":"c1","name":"f",
      "arguments":"{}"}])");
  request["input"] = json::parse(R"([{"role":"user","content":"q"}])");
  call = MakeWarmup({"/v1/responses", request, items});
  ASSERT_TRUE(call.ok());
  json input = Body(*call)["input"];
  ASSERT_EQ(input.size(), 2u);
  EXPECT_EQ(input[1], items[0]);
}

TEST(WarmupTest, CompletionsAppendsTheText) {
  json request = json::parse(R"({"model":"m","prompt":"Once","max_tokens":64,"echo":true})");
  auto call = MakeWarmup({"/v1/completions", request, " upon a time"});
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(Body(*call), json::parse(R"({"model":"m","prompt":"Once upon a time",
      "max_tokens":1,"stream":false})"));
}

TEST(WarmupTest, ErrorsNameThePathAndTheField) {
  auto bad_path = MakeWarmup({"/v1/embeddings", json::object(), "a"});
  ASSERT_FALSE(bad_path.ok());
  EXPECT_TRUE(bad_path.status().IsInvalidArgument());
  EXPECT_NE(bad_path.status().message().find("/v1/embeddings"), std::string::npos);
  EXPECT_NE(bad_path.status().message().find("/v1/responses"), std::string::npos);

  auto no_messages = MakeWarmup({"/v1/chat/completions", json{{"model", "m"}}, "a"});
  ASSERT_FALSE(no_messages.ok());
  EXPECT_NE(no_messages.status().message().find("`messages`"), std::string::npos);

  auto tokens = MakeWarmup({"/v1/completions", json{{"prompt", json::array({1, 2})}}, "a"});
  ASSERT_FALSE(tokens.ok());
  EXPECT_NE(tokens.status().message().find("`prompt` is not text"), std::string::npos);

  auto not_object = MakeWarmup({"/v1/messages", json::array(), "a"});
  EXPECT_FALSE(not_object.ok());
  auto bad_answer = MakeWarmup({"/v1/chat/completions", json::parse(R"({"messages":[]})"), 3});
  EXPECT_FALSE(bad_answer.ok());
}

}  // namespace
}  // namespace switchyard::upstream
