// Proxy mode's translation of a Chat Completions upstream's answers back
// (conversation/): a whole answer and a stream's chunks read into an Answer (text,
// tool calls, why it ended, usage), whatever way the stream's bytes are split; errors read
// into a Status; and a stream written as the call's front's events by its Reply.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "conversation/chat_answer.h"
#include "conversation/chat_stream.h"
#include "conversation/translated_stream.h"
#include "frontends/anthropic/anthropic_reply.h"
#include "frontends/responses/responses_object.h"
#include "frontends/responses/responses_reply.h"
#include "frontends/responses/responses_request.h"

namespace switchyard::frontends {
namespace {

// The translation under test (conversation/), beside the fronts' parsers that feed it.
using namespace translate;  // NOLINT(build/namespaces)

using nlohmann::json;

TEST(TranslateAnswerTest, AWholeAnswerWithToolCallsAndUsage) {
  auto a = ReadChatAnswer(R"({"id":"x","object":"chat.completion","choices":[{"index":0,
    "message":{"role":"assistant","content":"Let me look.","reasoning_content":"hmm",
      "tool_calls":[{"id":"call_1","type":"function","function":{"name":"Bash",
        "arguments":"{\"command\":\"ls\"}"}},
        {"id":"call_2","type":"function","function":{"name":"Read","arguments":{"path":"a"}}},
        "junk"]},
    "finish_reason":"tool_calls"}],
    "usage":{"prompt_tokens":12,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":4}}})");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->text, "Let me look.");
  EXPECT_EQ(a->reasoning, "hmm");
  ASSERT_EQ(a->tool_calls.size(), 2u) << "what is not a call is left out";
  EXPECT_EQ(a->tool_calls[0].id, "call_1");
  EXPECT_EQ(a->tool_calls[0].name, "Bash");
  EXPECT_EQ(a->tool_calls[0].arguments, R"({"command":"ls"})");
  EXPECT_EQ(a->tool_calls[1].arguments, R"({"path":"a"})") << "an object is written as text";
  EXPECT_EQ(a->end, Answer::End::kToolCalls);
  EXPECT_EQ(a->prompt_tokens, 12);
  EXPECT_EQ(a->completion_tokens, 7);
  EXPECT_EQ(a->cached_tokens, 4);
}

TEST(TranslateAnswerTest, WhyAnAnswerEnded) {
  auto end = [](const std::string& choice) {
    auto a = ReadChatAnswer(R"({"choices":[)" + choice + "]}");
    EXPECT_TRUE(a.ok()) << choice;
    return a.ok() ? *a : Answer{};
  };
  EXPECT_EQ(end(R"({"message":{"content":"a"},"finish_reason":"length"})").end,
            Answer::End::kLength);
  EXPECT_EQ(end(R"({"message":{"content":null},"finish_reason":"stop"})").end, Answer::End::kStop);
  Answer stopped = end(R"({"message":{"content":"a"},"finish_reason":"stop","stop_reason":"END"})");
  EXPECT_EQ(stopped.end, Answer::End::kStopSequence) << "vLLM names the stop sequence";
  EXPECT_EQ(stopped.stop_sequence, "END");
  // A forced call some servers end with "stop".
  EXPECT_EQ(end(R"({"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]},
                  "finish_reason":"stop"})")
                .end,
            Answer::End::kToolCalls);
  for (const char* bad : {"", "[]", R"({"choices":[]})", R"({"choices":["x"]})", "<html>"}) {
    auto a = ReadChatAnswer(bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.status().code(), StatusCode::kInternal) << bad;
  }
}

TEST(TranslateAnswerTest, UpstreamErrorsBecomeStatusesWithTheirMessage) {
  Status bad = ChatErrorStatus(400, R"({"error":{"message":"max_tokens is too large",
    "type":"invalid_request_error"}})");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "the upstream answered 400: max_tokens is too large");
  EXPECT_EQ(ChatErrorStatus(404, R"({"detail":"Not Found"})").message(),
            "the upstream answered 404: Not Found");
  EXPECT_EQ(ChatErrorStatus(404, "").code(), StatusCode::kNotFound);
  EXPECT_EQ(ChatErrorStatus(429, "slow down").code(), StatusCode::kResourceExhausted);
  EXPECT_NE(ChatErrorStatus(429, "slow down").message().find("slow down"), std::string::npos);
  EXPECT_EQ(ChatErrorStatus(401, "{}").code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(ChatErrorStatus(409, "{}").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ChatErrorStatus(500, "{}").code(), StatusCode::kInternal);
  EXPECT_EQ(ChatErrorStatus(502, "{}").code(), StatusCode::kUnavailable);
  EXPECT_EQ(ChatErrorStatus(504, "{}").code(), StatusCode::kDeadlineExceeded);
  // An error event inside a stream: the status its code says.
  EXPECT_EQ(ChatErrorStatus(0, R"({"error":{"message":"m","code":"upstream_timeout"}})").code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_EQ(ChatErrorStatus(0, R"({"error":{"message":"m","code":400}})").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ChatErrorStatus(0, R"({"error":{"message":"m"}})").code(), StatusCode::kInternal);
}

// A stream with text, two calls whose pieces interleave, the finish, usage and [DONE].
std::string ToolStream() {
  auto chunk = [](std::string delta, const std::string& rest = "") {
    delta.erase(std::remove(delta.begin(), delta.end(), '\n'), delta.end());  // one line
    return "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":" +
           delta + rest + "}]}\n\n";
  };
  return ": keep-alive\n\n" + chunk(R"({"role":"assistant","content":""})") +
         chunk(R"({"content":"Héllo"})") + chunk(R"({"content":" there"})") +
         chunk(R"({"tool_calls":[{"index":0,"id":"call_a","type":"function",
                   "function":{"name":"Bash","arguments":""}}]})") +
         chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"comm"}}]})") +
         chunk(R"({"tool_calls":[{"index":1,"id":"call_b","function":{"name":"Read",
                   "arguments":"{\"path\":"}}]})") +
         chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]})") +
         chunk(R"({"tool_calls":[{"index":1,"function":{"arguments":"\"a\"}"}}]})") +
         chunk("{}", R"(,"finish_reason":"tool_calls")") +
         "event: ignored\r\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,"
         "\"completion_tokens\":5}}\r\n\r\n" +
         "data: [DONE]\n\n";
}

void ExpectToolStreamAnswer(const Answer& a) {
  EXPECT_EQ(a.text, "Héllo there");
  ASSERT_EQ(a.tool_calls.size(), 2u);
  EXPECT_EQ(a.tool_calls[0].id, "call_a");
  EXPECT_EQ(a.tool_calls[0].name, "Bash");
  EXPECT_EQ(a.tool_calls[0].arguments, R"({"command":"ls"})");
  EXPECT_EQ(a.tool_calls[1].id, "call_b");
  EXPECT_EQ(a.tool_calls[1].name, "Read");
  EXPECT_EQ(a.tool_calls[1].arguments, R"({"path":"a"})");
  EXPECT_EQ(a.end, Answer::End::kToolCalls);
  EXPECT_EQ(a.prompt_tokens, 9);
  EXPECT_EQ(a.completion_tokens, 5);
}

TEST(ChatStreamReaderTest, ReadsAStreamSplitAtEveryByte) {
  const std::string body = ToolStream();
  for (size_t piece : {body.size(), size_t{1}, size_t{7}}) {
    ChatStreamReader reader;
    std::string text;
    for (size_t at = 0; at < body.size(); at += piece) text += reader.Feed(body.substr(at, piece));
    text += reader.Finish();
    EXPECT_EQ(text, "Héllo there") << "pieces of " << piece;
    EXPECT_TRUE(reader.whole());
    EXPECT_TRUE(reader.error().ok()) << reader.error();
    ExpectToolStreamAnswer(reader.answer());
  }
}

TEST(ChatStreamReaderTest, ErrorsAndStreamsThatEndEarly) {
  ChatStreamReader failed;
  EXPECT_EQ(failed.Feed("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
                        "data: {\"error\":{\"message\":\"engine died\",\"code\":500}}\n\n"
                        "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n"),
            "a");
  EXPECT_FALSE(failed.whole());
  EXPECT_EQ(failed.error().code(), StatusCode::kInternal);
  EXPECT_NE(failed.error().message().find("engine died"), std::string::npos);

  ChatStreamReader cut;  // no finish_reason, no [DONE]; the last event has no blank line
  EXPECT_EQ(cut.Feed("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
                     "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}"),
            "a");
  EXPECT_EQ(cut.Finish(), "b");
  EXPECT_FALSE(cut.whole());
  EXPECT_TRUE(cut.error().ok());

  ChatStreamReader json_error;  // an error answered in a chunked JSON body
  json_error.Feed("{\"error\":{\"message\":\"bad\",\n\"code\":400}}");
  json_error.Finish();
  EXPECT_EQ(json_error.error().code(), StatusCode::kInvalidArgument) << json_error.error();
}

// The (event, data) pairs of an SSE text.
std::vector<std::pair<std::string, json>> Events(const std::string& sse) {
  std::vector<std::pair<std::string, json>> out;
  for (size_t i = 0; (i = sse.find("event: ", i)) != std::string::npos;) {
    size_t eol = sse.find('\n', i);
    size_t end = sse.find("\n\n", eol);
    out.emplace_back(sse.substr(i + 7, eol - i - 7),
                     json::parse(sse.substr(eol + 7, end - eol - 7), nullptr, false));
    i = end;
  }
  return out;
}

TEST(TranslatedStreamTest, AChatStreamBecomesMessagesEvents) {
  anthropic::AnthropicReply reply("claude-x", /*thinking=*/false);
  reply.SetHead(CallHead{.workflow = "wf-1", .node = "llm-0", .prompt_tokens = 9});
  TranslatedStream t(&reply);
  const std::string body = ToolStream();
  std::string out;
  for (size_t at = 0; at < body.size(); at += 5) out += t.Feed(body.substr(at, 5));
  out += t.End(/*complete=*/true);
  auto a = t.answer();
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectToolStreamAnswer(*a);
  out += reply.StreamEnd(*a);
  auto events = Events(out);
  ASSERT_GE(events.size(), 4u) << out;
  EXPECT_EQ(events.front().first, "message_start");
  EXPECT_EQ(events.front().second["message"]["model"], "claude-x");
  std::string text;
  std::vector<std::string> tools;
  for (const auto& [type, data] : events) {
    if (type == "content_block_delta" && data["delta"]["type"] == "text_delta")
      text += data["delta"]["text"].get<std::string>();
    if (type == "content_block_start" && data["content_block"]["type"] == "tool_use")
      tools.push_back(data["content_block"]["name"]);
  }
  EXPECT_EQ(text, "Héllo there");
  EXPECT_EQ(tools, (std::vector<std::string>{"Bash", "Read"}));
  EXPECT_EQ(events[events.size() - 2].second["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(events.back().first, "message_stop");
}

TEST(TranslatedStreamTest, AnUpstreamFailureIsTheFrontsErrorEvent) {
  auto create = responses::ParseCreate(R"({"model":"m","input":"hi","stream":true})");
  ASSERT_TRUE(create.ok());
  responses::ResponsesReply reply(responses::NewResponse(*create, "resp_1", 1), {}, nullptr, "t");
  TranslatedStream t(&reply);
  std::string out = t.Feed("data: {\"choices\":[{\"delta\":{\"content\":\"par\"}}]}\n\n");
  out +=
      t.Feed("data: {\"error\":{\"message\":\"upstream broke\",\"code\":\"upstream_broken\"}}\n\n");
  EXPECT_EQ(t.Feed("data: {\"choices\":[{\"delta\":{\"content\":\"tial\"}}]}\n\n"), "")
      << "nothing after the error";
  EXPECT_EQ(t.End(/*complete=*/false), "");
  ASSERT_FALSE(t.answer().ok());
  EXPECT_EQ(t.answer().status().code(), StatusCode::kUnavailable);
  auto events = Events(out);
  ASSERT_FALSE(events.empty()) << out;
  EXPECT_EQ(events.front().first, "response.created");
  bool delta = false, failed = false;
  for (const auto& [type, data] : events) {
    delta |= type == "response.output_text.delta" && data["delta"] == "par";
    failed |= type == "error" || type == "response.failed";
  }
  EXPECT_TRUE(delta) << out;
  EXPECT_TRUE(failed) << out;

  anthropic::AnthropicReply cut_reply("m", false);  // a stream that ends before its answer
  TranslatedStream cut(&cut_reply);
  std::string cut_out = cut.Feed("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n");
  cut_out += cut.End(/*complete=*/true);
  ASSERT_FALSE(cut.answer().ok());
  EXPECT_EQ(Events(cut_out).back().first, "error") << cut_out;
}

}  // namespace
}  // namespace switchyard::frontends
