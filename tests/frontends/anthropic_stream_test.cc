// MessagesStream: the exact SSE sequence of a text answer and of a tool_use answer, checked
// event by event and through an accumulator that does what Anthropic's SDKs do with a
// stream (MessageStream's accumulateMessage) and enforces what they assume: message_start
// first, block indexes contiguous from 0, each block started before its deltas, deltas of
// the block's own kind, each block stopped once and before the next starts, message_stop last.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "frontends/anthropic/anthropic_protocol.h"

namespace switchyard::frontends::anthropic {
namespace {

using Json = nlohmann::ordered_json;

struct Event {
  std::string type;
  Json data;
};

// Splits "event: <type>\ndata: <json>\n\n"... and checks each event's shape.
std::vector<Event> SplitEvents(const std::string& sse) {
  std::vector<Event> out;
  size_t at = 0;
  while (at < sse.size()) {
    size_t end = sse.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << "unterminated event at " << at;
    if (end == std::string::npos) break;
    const std::string block = sse.substr(at, end - at);
    const size_t nl = block.find('\n');
    EXPECT_EQ(block.rfind("event: ", 0), 0u) << block;
    EXPECT_EQ(block.compare(nl + 1, 6, "data: "), 0) << block;
    Event e{block.substr(7, nl - 7), Json::parse(block.substr(nl + 7), nullptr, false)};
    EXPECT_FALSE(e.data.is_discarded()) << block;
    EXPECT_EQ(e.data.value("type", ""), e.type) << block;
    out.push_back(std::move(e));
    at = end + 2;
  }
  return out;
}

// The message an SDK would assemble, or a test failure naming the first broken assumption.
Json Accumulate(const std::vector<Event>& events) {
  Json message;
  std::vector<std::string> partial_json;
  int open = -1;
  bool stopped = false;
  for (size_t i = 0; i < events.size(); ++i) {
    Event e = events[i];  // a copy: a member it lacks reads as null rather than asserting
    const std::string at = "event " + std::to_string(i) + " " + e.type;
    EXPECT_FALSE(stopped) << at << " after message_stop";
    if (e.type == "ping") continue;
    if (i == 0 || e.type == "message_start") {
      EXPECT_EQ(i, 0u) << at;
      EXPECT_EQ(e.type, "message_start") << at;
      message = e.data["message"];
      EXPECT_TRUE(message["content"].empty()) << at;
      EXPECT_TRUE(message["stop_reason"].is_null()) << at;
    } else if (e.type == "content_block_start") {
      EXPECT_EQ(open, -1) << at << ": block " << open << " still open";
      EXPECT_EQ(e.data["index"], message["content"].size()) << at << ": indexes not contiguous";
      open = e.data["index"].get<int>();
      message["content"].push_back(e.data["content_block"]);
      partial_json.emplace_back();
    } else if (e.type == "content_block_delta") {
      EXPECT_EQ(e.data["index"], open) << at << ": delta outside its open block";
      if (open < 0) continue;
      Json& block = message["content"][open];
      const Json& d = e.data["delta"];
      if (d["type"] == "text_delta") {
        EXPECT_EQ(block["type"], "text") << at;
        block["text"] = block["text"].get<std::string>() + d["text"].get<std::string>();
      } else if (d["type"] == "thinking_delta") {
        EXPECT_EQ(block["type"], "thinking") << at;
        block["thinking"] = block["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      } else {
        EXPECT_EQ(d["type"], "input_json_delta") << at;
        EXPECT_EQ(block["type"], "tool_use") << at;
        partial_json[open] += d["partial_json"].get<std::string>();
      }
    } else if (e.type == "content_block_stop") {
      EXPECT_EQ(e.data["index"], open) << at << ": stop of a block not open";
      if (open >= 0 && message["content"][open]["type"] == "tool_use") {
        Json input = Json::parse(partial_json[open].empty() ? "{}" : partial_json[open]);
        EXPECT_TRUE(input.is_object()) << at;
        message["content"][open]["input"] = input;
      }
      open = -1;
    } else if (e.type == "message_delta") {
      EXPECT_EQ(open, -1) << at << ": a block is still open";
      message["stop_reason"] = e.data["delta"]["stop_reason"];
      message["stop_sequence"] = e.data["delta"]["stop_sequence"];
      for (const auto& [k, v] : e.data["usage"].items()) message["usage"][k] = v;
    } else if (e.type == "message_stop") {
      stopped = true;
    } else {
      ADD_FAILURE() << at << ": unexpected event";
    }
  }
  EXPECT_TRUE(stopped) << "no message_stop";
  return message;
}

std::vector<std::string> Types(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& e : events) out.push_back(e.type);
  return out;
}

Usage Prompt(int64_t input, int64_t cached) {
  Usage u;
  u.input_tokens = input;
  u.cache_read_input_tokens = cached;
  return u;
}

TEST(AnthropicStreamTest, TextAnswerExactSequence) {
  MessagesStream s({"msg_1", "m"});
  std::string sse = s.Start(Prompt(20, 100));
  sse += s.Text("Hel");
  sse += s.Text("");
  sse += s.Text("lo");
  Answer a;
  a.text = "Hello";
  a.prompt_tokens = 120;
  a.cached_tokens = 100;
  a.completion_tokens = 2;
  sse += s.Finish(a, UsageOf(a));
  EXPECT_EQ(sse,
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
            "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],"
            "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":20,"
            "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":100,"
            "\"output_tokens\":0}}}\n\n"
            "event: ping\ndata: {\"type\":\"ping\"}\n\n"
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
            "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
            "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
            "\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n"
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
            "\"end_turn\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":20,"
            "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":100,"
            "\"output_tokens\":2}}\n\n"
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
  Json m = Accumulate(SplitEvents(sse));
  EXPECT_EQ(m["content"], Json::parse(R"([{"type":"text","text":"Hello"}])"));
  EXPECT_EQ(m["usage"]["output_tokens"], 2);
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.Text("late"), "");
  EXPECT_EQ(s.Finish(a, UsageOf(a)), "");
}

TEST(AnthropicStreamTest, ToolUseAnswerClosesTextFirstAndAccumulates) {
  MessagesStream s({"msg_2", "m", /*thinking=*/true});
  std::string sse = s.Start(Prompt(50, 0));
  sse += s.Thinking("need ");
  sse += s.Thinking("the file");
  sse += s.Text("Reading it.");
  sse += s.ToolUse({"toolu_1", "Read", R"({"file_path":"/a"})"});
  sse += s.BeginToolUse("toolu_2", "Grep");
  sse += s.ToolUseDelta(R"({"pattern":)");
  sse += s.ToolUseDelta(R"("x"})");
  Answer a;
  a.text = "Reading it.";
  a.tool_calls = {{"toolu_1", "Read", R"({"file_path":"/a"})"},
                  {"toolu_2", "Grep", R"({"pattern":"x"})"},
                  {"toolu_3", "Glob", "not json"}};
  a.end = Answer::End::kToolCalls;
  a.prompt_tokens = 50;
  a.completion_tokens = 30;
  sse += s.Finish(a, UsageOf(a));
  const std::vector<Event> events = SplitEvents(sse);
  EXPECT_EQ(Types(events), (std::vector<std::string>{"message_start",       "ping",
                                                     "content_block_start", "content_block_delta",
                                                     "content_block_delta", "content_block_stop",
                                                     "content_block_start", "content_block_delta",
                                                     "content_block_stop",  "content_block_start",
                                                     "content_block_delta", "content_block_stop",
                                                     "content_block_start", "content_block_delta",
                                                     "content_block_delta", "content_block_stop",
                                                     "content_block_start", "content_block_delta",
                                                     "content_block_stop",  "message_delta",
                                                     "message_stop"}));
  EXPECT_EQ(events[9].data["content_block"],
            Json::parse(R"({"type":"tool_use","id":"toolu_1","name":"Read","input":{}})"));
  EXPECT_EQ(events[2].data["content_block"],
            Json::parse(R"({"type":"thinking","thinking":"","signature":""})"));
  Json m = Accumulate(events);
  EXPECT_EQ(m["content"], Json::parse(R"([
    {"type":"thinking","thinking":"need the file","signature":""},
    {"type":"text","text":"Reading it."},
    {"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/a"}},
    {"type":"tool_use","id":"toolu_2","name":"Grep","input":{"pattern":"x"}},
    {"type":"tool_use","id":"toolu_3","name":"Glob","input":{}}])"));
  EXPECT_EQ(m["stop_reason"], "tool_use");
  EXPECT_EQ(s.blocks(), 5);
  EXPECT_EQ(s.tool_uses(), 3u);
}

TEST(AnthropicStreamTest, StopSequenceMaxTokensAndEmptyAnswers) {
  Answer a;
  a.end = Answer::End::kStopSequence;
  a.stop_sequence = "END";
  MessagesStream s({"msg_3", "m"});
  std::string sse = s.Start({});
  sse += s.Text("x");
  sse += s.Finish(a, UsageOf(a));
  Json m = Accumulate(SplitEvents(sse));
  EXPECT_EQ(m["stop_reason"], "stop_sequence");
  EXPECT_EQ(m["stop_sequence"], "END");

  Answer empty;
  empty.end = Answer::End::kLength;
  MessagesStream e({"msg_4", "m"});
  sse = e.Finish(empty, UsageOf(empty));  // starts the stream itself
  EXPECT_EQ(Types(SplitEvents(sse)),
            (std::vector<std::string>{"message_start", "ping", "message_delta", "message_stop"}));
  m = Accumulate(SplitEvents(sse));
  EXPECT_EQ(m["stop_reason"], "max_tokens");
  EXPECT_TRUE(m["content"].empty());
}

TEST(AnthropicStreamTest, ThinkingOnlyWhenAskedAndDeltasOnlyInTheirBlock) {
  MessagesStream s({"msg_5", "m"});
  EXPECT_EQ(s.Thinking("hidden"), "") << "the request did not enable thinking";
  EXPECT_FALSE(s.started());
  std::string sse = s.Start({});
  EXPECT_EQ(s.Start({}), "") << "starts once";
  EXPECT_EQ(s.ToolUseDelta("{}"), "") << "no tool_use block open";
  sse += s.Text("a");
  EXPECT_EQ(s.ToolUseDelta("{}"), "") << "the open block is text";
  sse += s.BeginToolUse("t", "f");
  EXPECT_EQ(s.ToolUseDelta(""), "");
  sse += s.Text("b");  // text after a call: the call's block closes, a new text block opens
  Answer a;
  a.text = "ab";
  sse += s.Finish(a, UsageOf(a));
  Json m = Accumulate(SplitEvents(sse));
  ASSERT_EQ(m["content"].size(), 3u);
  EXPECT_EQ(m["content"][1]["input"], Json::object());
  EXPECT_EQ(m["content"][2]["text"], "b");
  EXPECT_EQ(m["stop_reason"], "tool_use");
}

TEST(AnthropicStreamTest, ErrorMidStreamEndsIt) {
  MessagesStream s({"msg_6", "m"});
  std::string sse = s.Start({});
  sse += s.Text("partial");
  const std::string err = s.Fail(Status::Unavailable("engine restarted"));
  EXPECT_EQ(err,
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
            "\"message\":\"engine restarted\"}}\n\n");
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.Text("more"), "");
  EXPECT_EQ(s.Fail(Status::Internal("again")), "");
  Answer a;
  EXPECT_EQ(s.Finish(a, UsageOf(a)), "");
  const std::vector<Event> events = SplitEvents(sse + err);
  EXPECT_EQ(events.back().data["error"]["type"], "overloaded_error");
}

TEST(AnthropicStreamTest, InvalidUtf8IsReplaced) {
  MessagesStream s({"msg_7", "m"});
  const std::string sse = s.Text(
      "a\xff"
      "b");
  const std::vector<Event> events = SplitEvents(sse);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[3].data["delta"]["text"],
            "a\xef\xbf\xbd"
            "b");
}

}  // namespace
}  // namespace switchyard::frontends::anthropic
