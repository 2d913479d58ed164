// What proxy mode reads of an upstream's streamed answer (upstream/upstream_stream.h and
// each Reply's reader): the SSE lines however the body is split, a line too long skipped,
// and — for Chat Completions, Messages and Responses — the tool calls' names and the output
// tokens, from the streams Switchyard's own fronts write (split at every size) and from
// streams in the shapes the hosted APIs send (names in an opening delta, CRLF, usage null).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "frontends/anthropic/anthropic_reply.h"
#include "frontends/openai/openai_reply.h"
#include "frontends/responses/responses_reply.h"
#include "frontends/responses/responses_request.h"
#include "upstream/upstream_stream.h"

namespace switchyard::frontends {
namespace {

// Keeps each data payload.
class Recorder : public upstream::UpstreamStreamReader {
 public:
  std::vector<std::string> payloads;

 protected:
  void Data(std::string_view payload) override { payloads.emplace_back(payload); }
};

// Feeds `body` in pieces of `size` bytes (0: whole).
void Feed(upstream::UpstreamStreamReader* r, std::string_view body, size_t size) {
  if (size == 0) size = body.size();
  for (size_t at = 0; at < body.size(); at += size) r->Read(body.substr(at, size));
}

struct Learned {
  std::vector<std::string> tools;
  int64_t output_tokens = -1;
};

Learned Read(const Reply& reply, std::string_view body, size_t size) {
  std::unique_ptr<upstream::UpstreamStreamReader> r = reply.NewUpstreamStreamReader();
  Feed(r.get(), body, size);
  Learned out;
  r->End(&out.tools, &out.output_tokens);
  return out;
}

std::vector<size_t> SplitSizes() { return {1, 2, 3, 5, 7, 13, 64, 0}; }

TEST(UpstreamStreamTest, DataLinesWhereverTheBodyIsSplit) {
  const std::string body =
      "event: a\ndata: {\"x\":1}\n\n: a comment\r\ndata:{\"y\":2}\r\n\r\nid: 3\ndata: [DONE]\n\n"
      "data: last without a newline";
  for (size_t size : SplitSizes()) {
    SCOPED_TRACE(size);
    Recorder r;
    Feed(&r, body, size);
    std::vector<std::string> tools;
    int64_t tokens = -1;
    r.End(&tools, &tokens);
    EXPECT_EQ(r.payloads, (std::vector<std::string>{"{\"x\":1}", "{\"y\":2}", "[DONE]",
                                                    "last without a newline"}));
    EXPECT_TRUE(tools.empty());
    EXPECT_EQ(tokens, 0);
  }
}

TEST(UpstreamStreamTest, ALineLongerThanTheBoundIsSkipped) {
  Recorder r;
  r.Read("data: a\ndata: ");
  const std::string chunk(64 << 10, 'x');
  for (size_t n = 0; n <= upstream::UpstreamStreamReader::kMaxLineBytes; n += chunk.size())
    r.Read(chunk);
  r.Read("still the long line\ndata: b\n");
  r.Read(std::string(upstream::UpstreamStreamReader::kMaxLineBytes + 1, 'y'));  // in one piece
  r.Read("\ndata: c\n");
  EXPECT_EQ(r.payloads, (std::vector<std::string>{"a", "b", "c"}));
}

// An answer with text and two tool calls, its output tokens 7.
Answer TwoCalls() {
  Answer a;
  a.text = "Let me look.";
  a.tool_calls = {{"call_1", "Bash", R"({"command":"ls"})"}, {"call_2", "Read", R"({"p":"a"})"}};
  a.end = Answer::End::kToolCalls;
  a.prompt_tokens = 11;
  a.completion_tokens = 7;
  return a;
}

// What a Reply streams of `answer`, as an upstream Switchyard would send it.
std::string Stream(Reply* reply, const Answer& answer) {
  reply->SetHead(CallHead{.workflow = "wf-0123456789", .node = "n1", .model = "tiny"});
  std::string out = reply->StreamStart();  // one call after the other: + does not order them
  out += reply->StreamText("Let me");
  out += reply->StreamText(" look.");
  return out + reply->StreamEnd(answer);
}

void ExpectLearned(const Reply& reader, const std::string& body,
                   const std::vector<std::string>& tools, int64_t tokens) {
  for (size_t size : SplitSizes()) {
    SCOPED_TRACE(size);
    Learned got = Read(reader, body, size);
    EXPECT_EQ(got.tools, tools);
    EXPECT_EQ(got.output_tokens, tokens);
  }
}

TEST(UpstreamStreamTest, ChatCompletionsFromSwitchyard) {
  openai::OpenAiReply up(/*chat=*/true, "tiny", /*include_usage=*/true);
  const std::string body = Stream(&up, TwoCalls());
  openai::OpenAiReply front(true, "tiny", true);
  ExpectLearned(front, body, {"Bash", "Read"}, 7);

  openai::OpenAiReply no_usage(true, "tiny", /*include_usage=*/false);
  ExpectLearned(front, Stream(&no_usage, TwoCalls()), {"Bash", "Read"}, 0);
  openai::OpenAiReply text(true, "tiny", true);
  ExpectLearned(front, Stream(&text, Answer{.text = "Let me look.", .completion_tokens = 3}), {},
                3);
}

TEST(UpstreamStreamTest, ChatCompletionsAsOpenAiStreamsThem) {
  // Each call opens with its name; its arguments follow in deltas without one. Every chunk
  // carries "usage": null until the last; lines end in CRLF.
  const std::string body =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,"
      "\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":"
      "{\"name\":\"Bash\",\"arguments\":\"\"}}]}}],\"usage\":null}\r\n\r\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
      "{\"arguments\":\"{\\\"command\\\":\"}}]}}],\"usage\":null}\r\n\r\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\","
      "\"type\":\"function\",\"function\":{\"name\":\"Read\",\"arguments\":\"{}\"}}]}}],"
      "\"usage\":null}\r\n\r\n"
      "data: {\"choices\":[{\"index\":1,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
      "{\"name\":\"OtherChoice\"}}]}}]}\r\n\r\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],"
      "\"usage\":null}\r\n\r\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":12,"
      "\"total_tokens\":17}}\r\n\r\ndata: [DONE]\r\n\r\n";
  openai::OpenAiReply front(true, "tiny", true);
  ExpectLearned(front, body, {"Bash", "Read"}, 12);
}

TEST(UpstreamStreamTest, MessagesFromSwitchyardAndAsAnthropicStreamsThem) {
  anthropic::AnthropicReply up("tiny", false);
  anthropic::AnthropicReply front("tiny", false);
  ExpectLearned(front, Stream(&up, TwoCalls()), {"Bash", "Read"}, 7);

  const std::string body =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"
      "{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
      "{\"type\":\"text_delta\",\"text\":\"content_block_start tool_use\"}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
      "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"Bash\","
      "\"input\":{}}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":"
      "{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,"
      "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":5}}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
      "\"tool_use\"},\"usage\":{\"output_tokens\":15}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  ExpectLearned(front, body, {"Bash", "tool"}, 15);
}

std::unique_ptr<responses::ResponsesReply> ResponsesFront() {
  auto req = responses::ParseCreate(R"({"model":"tiny","input":"hi","tools":[
    {"type":"function","name":"Bash","parameters":{"type":"object"}},
    {"type":"function","name":"Read","parameters":{"type":"object"}}]})");
  EXPECT_TRUE(req.ok()) << req.status();
  req->store = false;
  return std::make_unique<responses::ResponsesReply>(
      responses::NewResponse(*req, "resp_up1", 1700000000), req->routes, nullptr, "t");
}

TEST(UpstreamStreamTest, ResponsesFromSwitchyardAndAsOpenAiStreamsThem) {
  auto up = ResponsesFront();
  auto front = ResponsesFront();
  ExpectLearned(*front, Stream(up.get(), TwoCalls()), {"Bash", "Read"}, 7);

  const std::string body =
      "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
      "\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\"}}\n\n"
      "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
      "\"output_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":"
      "\"call_1\",\"name\":\"shell\",\"arguments\":\"\"}}\n\n"
      "event: response.function_call_arguments.delta\ndata: {\"type\":"
      "\"response.function_call_arguments.delta\",\"output_index\":1,\"delta\":\"{}\"}\n\n"
      "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\","
      "\"output_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":"
      "\"call_1\",\"name\":\"shell\",\"arguments\":\"{}\"}}\n\n"
      "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":"
      "{\"status\":\"completed\",\"usage\":{\"input_tokens\":5,\"output_tokens\":9}}}\n\n";
  ExpectLearned(*front, body, {"shell"}, 9);
}

TEST(UpstreamStreamTest, WhatIsNotReadableIsLeftOut) {
  const std::string body =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":\"Bash\"}}]}\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[7,{\"function\":[]}]}}]}\n"
      "data: {\"tool_calls\" broken\n"
      "data: {\"usage\":{\"completion_tokens\":\"9\"}}\n";
  openai::OpenAiReply front(true, "tiny", true);
  // The second line's call at position 1 has no index and no name.
  ExpectLearned(front, body, {"tool"}, 0);
}

}  // namespace
}  // namespace switchyard::frontends
