// The Anthropic protocol's answers: the message object (content blocks, stop reasons,
// usage derived from an Answer), the token count, and errors by HTTP status and by Status.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "frontends/anthropic/anthropic_protocol.h"

namespace switchyard::frontends::anthropic {
namespace {

using Json = nlohmann::ordered_json;

Json ParsedJson(const std::string& text) {
  Json j = Json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

TEST(AnthropicResponseTest, UsageSeparatesCachedPromptTokens) {
  Answer a;
  a.prompt_tokens = 1000;
  a.cached_tokens = 900;
  a.completion_tokens = 42;
  Usage u = UsageOf(a);
  EXPECT_EQ(u.input_tokens, 100);
  EXPECT_EQ(u.cache_read_input_tokens, 900);
  EXPECT_EQ(u.cache_creation_input_tokens, 0);
  EXPECT_EQ(u.output_tokens, 42);
  a.cached_tokens = 5000;  // never more than the prompt
  u = UsageOf(a);
  EXPECT_EQ(u.cache_read_input_tokens, 1000);
  EXPECT_EQ(u.input_tokens, 0);
  a.cached_tokens = -3;
  EXPECT_EQ(UsageOf(a).input_tokens, 1000);
}

TEST(AnthropicResponseTest, TextMessage) {
  Answer a;
  a.text = "Hi there";
  a.reasoning = "not asked for";
  a.prompt_tokens = 10;
  a.cached_tokens = 4;
  a.completion_tokens = 3;
  EXPECT_EQ(MessageJson(a, {"msg_01", "claude-x"}, UsageOf(a)),
            R"({"id":"msg_01","type":"message","role":"assistant","model":"claude-x",)"
            R"("content":[{"type":"text","text":"Hi there"}],"stop_reason":"end_turn",)"
            R"("stop_sequence":null,"usage":{"input_tokens":6,"cache_creation_input_tokens":0,)"
            R"("cache_read_input_tokens":4,"output_tokens":3}})");
}

TEST(AnthropicResponseTest, ToolUseMessageWithThinking) {
  Answer a;
  a.reasoning = "look first";
  a.tool_calls = {{"toolu_1", "Read", R"({"file_path":"/x","limit":5})"},
                  {"toolu_2", "Bad", "[1,2]"}};
  a.end = Answer::End::kToolCalls;
  Json j = ParsedJson(MessageJson(a, {"msg_02", "m", /*thinking=*/true}, UsageOf(a)));
  EXPECT_EQ(j["content"], ParsedJson(R"([
    {"type":"thinking","thinking":"look first","signature":""},
    {"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/x","limit":5}},
    {"type":"tool_use","id":"toolu_2","name":"Bad","input":{}}])"));
  EXPECT_EQ(j["stop_reason"], "tool_use");
  EXPECT_TRUE(j["stop_sequence"].is_null());
}

TEST(AnthropicResponseTest, StopReasons) {
  using End = Answer::End;
  EXPECT_EQ(StopReasonOf(End::kStop, false), "end_turn");
  EXPECT_EQ(StopReasonOf(End::kStop, true), "tool_use");
  EXPECT_EQ(StopReasonOf(End::kToolCalls, true), "tool_use");
  EXPECT_EQ(StopReasonOf(End::kLength, true), "max_tokens");
  EXPECT_EQ(StopReasonOf(End::kStopSequence, false), "stop_sequence");
  Answer a;
  a.text = "x";
  a.end = End::kStopSequence;
  a.stop_sequence = "\n\nHuman:";
  Json j = ParsedJson(MessageJson(a, {"msg", "m"}, UsageOf(a)));
  EXPECT_EQ(j["stop_reason"], "stop_sequence");
  EXPECT_EQ(j["stop_sequence"], "\n\nHuman:");
  Answer empty;
  j = ParsedJson(MessageJson(empty, {"msg", "m"}, UsageOf(empty)));
  EXPECT_TRUE(j["content"].is_array() && j["content"].empty()) << j;
}

TEST(AnthropicResponseTest, InvalidUtf8IsReplaced) {
  Answer a;
  a.text = "ok\xc3";
  Json j = ParsedJson(MessageJson(a, {"msg", "m\xff"}, UsageOf(a)));
  EXPECT_EQ(j["content"][0]["text"], "ok\xef\xbf\xbd");
}

TEST(AnthropicResponseTest, CountTokens) {
  EXPECT_EQ(CountTokensJson(1234), R"({"input_tokens":1234})");
}

TEST(AnthropicResponseTest, ErrorTypesByHttpStatus) {
  const std::vector<std::pair<int, std::string>> want = {{400, "invalid_request_error"},
                                                         {401, "authentication_error"},
                                                         {402, "billing_error"},
                                                         {403, "permission_error"},
                                                         {404, "not_found_error"},
                                                         {405, "invalid_request_error"},
                                                         {413, "request_too_large"},
                                                         {429, "rate_limit_error"},
                                                         {500, "api_error"},
                                                         {502, "api_error"},
                                                         {503, "overloaded_error"},
                                                         {504, "timeout_error"},
                                                         {529, "overloaded_error"}};
  for (const auto& [status, type] : want) EXPECT_EQ(ErrorTypeOf(status), type) << status;
  EXPECT_EQ(
      ErrorJson(404, "model 'x' not found"),
      R"({"type":"error","error":{"type":"not_found_error","message":"model 'x' not found"}})");
  EXPECT_EQ(ParsedJson(ErrorJson(503, "busy"))["error"]["type"], "overloaded_error");
}

TEST(AnthropicResponseTest, ErrorsFromStatus) {
  struct Case {
    Status s;
    int http;
    std::string type;
  };
  const std::vector<Case> cases = {
      {Status::InvalidArgument("max_tokens: required"), 400, "invalid_request_error"},
      {Status::OutOfRange("prompt is too long"), 400, "invalid_request_error"},
      {Status::NotSupported("images"), 400, "invalid_request_error"},
      {Status::Unauthenticated("bad key"), 401, "authentication_error"},
      {Status::PermissionDenied("tenant"), 403, "permission_error"},
      {Status::NotFound("model"), 404, "not_found_error"},
      {Status::ResourceExhausted("queue full"), 429, "rate_limit_error"},
      {Status::Unavailable("draining"), 529, "overloaded_error"},
      {Status::DeadlineExceeded("deadline"), 504, "timeout_error"},
      {Status::Internal("bug"), 500, "api_error"},
      {Status::DataLoss("kv"), 500, "api_error"},
  };
  for (const Case& c : cases) {
    Error e = ErrorFromStatus(c.s);
    EXPECT_EQ(e.http_status, c.http) << c.s;
    EXPECT_EQ(e.type, c.type) << c.s;
    EXPECT_EQ(e.message, c.s.message());
    Json j = ParsedJson(ErrorJson(e));
    EXPECT_EQ(j["type"], "error");
    EXPECT_EQ(j["error"]["type"], c.type);
    EXPECT_EQ(j["error"]["message"], c.s.message());
  }
}

}  // namespace
}  // namespace switchyard::frontends::anthropic
