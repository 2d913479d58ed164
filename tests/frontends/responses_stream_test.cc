// The SSE events of a streamed Responses answer: the exact sequence for text, function-call,
// mixed, cut and failed answers; sequence numbers contiguous from 0; every item added before
// its deltas and done once; and an accumulator modelled on the openai npm SDK's
// ResponseStream (snapshot from response.created, items pushed on output_item.added, parts
// on content_part.added, deltas appended) ending with the same output as the final
// response.completed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "frontends/responses/responses_protocol.h"

namespace switchyard::frontends::responses {
namespace {

using nlohmann::json;

struct Event {
  std::string type;
  json data;
};

// Splits "event: T\ndata: J\n\n" frames; every frame must be well formed.
std::vector<Event> ParseSse(const std::string& sse) {
  std::vector<Event> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << sse.substr(pos);
    if (end == std::string::npos) break;
    std::string frame = sse.substr(pos, end - pos);
    pos = end + 2;
    size_t nl = frame.find('\n');
    EXPECT_EQ(frame.rfind("event: ", 0), 0u) << frame;
    EXPECT_EQ(frame.compare(nl + 1, 6, "data: "), 0) << frame;
    Event e{frame.substr(7, nl - 7), json::parse(frame.substr(nl + 7), nullptr, false)};
    EXPECT_FALSE(e.data.is_discarded()) << frame;
    EXPECT_EQ(e.data["type"], e.type);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> Types(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& e : events) out.push_back(e.type);
  return out;
}

// The SDK's accumulation, plus the ordering rules; returns the accumulated response.
json Accumulate(const std::vector<Event>& events) {
  json snapshot;
  std::set<std::string> added, done;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& d = events[i].data;
    SCOPED_TRACE(events[i].type);
    EXPECT_EQ(d["sequence_number"], i) << "contiguous from 0";
    if (events[i].type == "response.created") {
      EXPECT_EQ(i, 0u);
      snapshot = d["response"];
      EXPECT_EQ(snapshot["status"], "in_progress");
      EXPECT_EQ(snapshot["output"], json::array());
      continue;
    }
    EXPECT_FALSE(snapshot.is_null()) << "expected response.created first";
    const std::string type = events[i].type;
    if (type == "response.output_item.added") {
      EXPECT_EQ(d["output_index"], snapshot["output"].size());
      EXPECT_TRUE(added.insert(d["item"]["id"].get<std::string>()).second);
      snapshot["output"].push_back(d["item"]);
    } else if (type == "response.content_part.added") {
      json& item = snapshot["output"][d["output_index"].get<size_t>()];
      EXPECT_EQ(item["id"], d["item_id"]);
      item["content"].push_back(d["part"]);
    } else if (type == "response.output_text.delta") {
      json& item = snapshot["output"][d["output_index"].get<size_t>()];
      EXPECT_FALSE(done.count(d["item_id"].get<std::string>())) << "delta after done";
      json& part = item["content"][d["content_index"].get<size_t>()];
      EXPECT_EQ(part["type"], "output_text");
      part["text"] = part["text"].get<std::string>() + d["delta"].get<std::string>();
    } else if (type == "response.function_call_arguments.delta") {
      json& item = snapshot["output"][d["output_index"].get<size_t>()];
      EXPECT_EQ(item["type"], "function_call");
      item["arguments"] = item["arguments"].get<std::string>() + d["delta"].get<std::string>();
    } else if (type == "response.output_text.done" || type == "response.content_part.done" ||
               type == "response.function_call_arguments.done") {
      EXPECT_TRUE(added.count(d["item_id"].get<std::string>()));
    } else if (type == "response.output_item.done") {
      const std::string id = d["item"]["id"];
      EXPECT_TRUE(added.count(id)) << "done before added";
      EXPECT_TRUE(done.insert(id).second) << "done twice";
      json& item = snapshot["output"][d["output_index"].get<size_t>()];
      if (item["type"] == "message") {
        EXPECT_EQ(item["content"], d["item"]["content"]) << "accumulated text matches done";
      } else {
        EXPECT_EQ(item["arguments"], d["item"]["arguments"]);
      }
      item = d["item"];
    } else if (type == "response.completed" || type == "response.incomplete" ||
               type == "response.failed") {
      EXPECT_EQ(i, events.size() - 1) << "terminal event last";
      EXPECT_EQ(added, done) << "every item done";
      EXPECT_EQ(d["response"]["output"], snapshot["output"]) << "final output = accumulated";
      snapshot = d["response"];
    } else if (type != "response.in_progress") {
      ADD_FAILURE() << "unexpected event " << type;
    }
  }
  return snapshot;
}

CreateRequest CreateWithTools() {
  auto r = ParseCreate(R"({"model":"tiny","input":"hi","tools":[
    {"type":"function","name":"get","parameters":{"type":"object"}},
    {"type":"namespace","name":"crm","tools":[{"type":"function","name":"find"}]}]})");
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

// Streams `answer` (its text in `chunks`, then its calls) and finishes with ApplyAnswer's
// response; returns the events.
std::vector<Event> StreamAnswer(const Answer& answer, const std::vector<std::string>& chunks) {
  CreateRequest req = CreateWithTools();
  StoredResponse head = NewResponse(req, "resp_s1", 1700000000);
  ResponsesStream stream(req.routes);
  std::string sse = stream.Start(head);
  for (const std::string& c : chunks) sse += stream.Text(c);
  for (const ToolCall& call : answer.tool_calls) sse += stream.ToolCall(call);
  StoredResponse final = head;
  ApplyAnswer(answer, req.routes, &final);
  sse += stream.Finish(final);
  EXPECT_TRUE(stream.finished());
  EXPECT_EQ(stream.Text("late"), "");
  EXPECT_EQ(stream.Finish(final), "");
  return ParseSse(sse);
}

TEST(ResponsesStreamTest, TextAnswer) {
  auto events = StreamAnswer(Answer{.text = "Hello!"}, {"Hel", "", "lo!"});
  EXPECT_EQ(Types(events),
            (std::vector<std::string>{"response.created", "response.in_progress",
                                      "response.output_item.added", "response.content_part.added",
                                      "response.output_text.delta", "response.output_text.delta",
                                      "response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", "response.completed"}));
  json final = Accumulate(events);
  EXPECT_EQ(final["status"], "completed");
  EXPECT_EQ(final["output"][0]["content"][0]["text"], "Hello!");
  EXPECT_EQ(events[2].data["item"], json::parse(R"({"type":"message","id":"msg_s1_0",
    "status":"in_progress","role":"assistant","content":[]})"));
  EXPECT_EQ(events[3].data["part"],
            json::parse(R"({"type":"output_text","text":"","annotations":[]})"));
  EXPECT_EQ(events[4].data["item_id"], "msg_s1_0");
  EXPECT_EQ(events[4].data["output_index"], 0);
  EXPECT_EQ(events[4].data["content_index"], 0);
  EXPECT_EQ(events[4].data["delta"], "Hel");
  EXPECT_EQ(events[6].data["text"], "Hello!");
  EXPECT_EQ(events[8].data["item"]["status"], "completed");
}

TEST(ResponsesStreamTest, FunctionCallAnswer) {
  auto events = StreamAnswer(
      Answer{.tool_calls = {{"call_1", "get", R"({"k":1})"}}, .end = Answer::End::kToolCalls}, {});
  EXPECT_EQ(Types(events),
            (std::vector<std::string>{
                "response.created", "response.in_progress", "response.output_item.added",
                "response.function_call_arguments.delta", "response.function_call_arguments.done",
                "response.output_item.done", "response.completed"}));
  json final = Accumulate(events);
  EXPECT_EQ(events[2].data["item"], json::parse(R"({"type":"function_call","id":"fc_s1_0",
    "call_id":"call_1","name":"get","arguments":"","status":"in_progress"})"));
  EXPECT_EQ(events[3].data["delta"], R"({"k":1})");
  EXPECT_EQ(events[4].data["arguments"], R"({"k":1})");
  EXPECT_EQ(events[4].data["name"], "get");
  EXPECT_EQ(final["output"][0]["status"], "completed");
  EXPECT_EQ(final["output"][0]["arguments"], R"({"k":1})");
}

TEST(ResponsesStreamTest, TextThenCallsIncludingANamespacedOne) {
  auto events = StreamAnswer(
      Answer{.text = "Let me look.",
             .tool_calls = {{"call_1", "get", "{}"}, {"call_2", "find", R"({"q":"x"})"}},
             .end = Answer::End::kToolCalls},
      {"Let me", " look."});
  json final = Accumulate(events);
  ASSERT_EQ(final["output"].size(), 3u);
  EXPECT_EQ(final["output"][0]["type"], "message");
  EXPECT_EQ(final["output"][1]["id"], "fc_s1_1");
  EXPECT_EQ(final["output"][2]["name"], "find");
  EXPECT_EQ(final["output"][2]["namespace"], "crm");
  // The message closes before the first call is added.
  auto types = Types(events);
  auto message_done = std::find(types.begin(), types.end(), "response.output_item.done");
  auto first_call = std::find(types.begin(), types.end(), "response.function_call_arguments.delta");
  EXPECT_LT(message_done, first_call);
}

TEST(ResponsesStreamTest, LengthCutEndsIncomplete) {
  auto events = StreamAnswer(Answer{.text = "partial", .end = Answer::End::kLength}, {"partial"});
  EXPECT_EQ(events.back().type, "response.incomplete");
  json final = Accumulate(events);
  EXPECT_EQ(final["status"], "incomplete");
  EXPECT_EQ(final["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(final["output"][0]["status"], "incomplete");
}

TEST(ResponsesStreamTest, FailureAfterPartialText) {
  CreateRequest req = CreateWithTools();
  ResponsesStream stream(req.routes);
  std::string sse = stream.Start(NewResponse(req, "resp_f", 1));
  sse += stream.Text("half");
  sse += stream.Fail(Status::Unavailable("engine lost"));
  EXPECT_EQ(stream.Fail(Status::Internal("again")), "");
  auto events = ParseSse(sse);
  EXPECT_EQ(events.back().type, "response.failed");
  json final = Accumulate(events);
  EXPECT_EQ(final["status"], "failed");
  EXPECT_EQ(final["error"], json::parse(R"({"code":"server_error","message":"engine lost"})"));
  EXPECT_EQ(final["output"][0]["status"], "incomplete");
  EXPECT_EQ(final["output"][0]["content"][0]["text"], "half");
}

TEST(ResponsesStreamTest, FailureBeforeStartIsAnErrorEvent) {
  ResponsesStream stream;
  EXPECT_EQ(stream.Text("x"), "") << "nothing before Start";
  auto events = ParseSse(stream.Fail(Status::ResourceExhausted("queue full")));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "error");
  EXPECT_EQ(events[0].data["code"], "rate_limit_exceeded");
  EXPECT_EQ(events[0].data["message"], "queue full");
  EXPECT_EQ(events[0].data["sequence_number"], 0);
  EXPECT_EQ(stream.Start(StoredResponse{}), "") << "a failed stream stays finished";
}

TEST(ResponsesStreamTest, CharactersAreNotSplitAcrossDeltas) {
  CreateRequest req = CreateWithTools();
  ResponsesStream stream;
  std::string sse = stream.Start(NewResponse(req, "resp_u", 1));
  EXPECT_EQ(stream.Text("\xc3"), "") << "half of 'é' waits";
  sse += stream.Text("\xa9t\xe2\x82");
  sse += stream.Text("\xac");
  StoredResponse final = NewResponse(req, "resp_u", 1);
  ApplyAnswer(Answer{.text = "\xc3\xa9t\xe2\x82\xac"}, {}, &final);
  sse += stream.Finish(final);
  auto events = ParseSse(sse);
  std::vector<std::string> deltas;
  for (const Event& e : events) {
    if (e.type == "response.output_text.delta") deltas.push_back(e.data["delta"]);
  }
  EXPECT_EQ(deltas, (std::vector<std::string>{"\xc3\xa9t", "\xe2\x82\xac"}));
  Accumulate(events);
}

TEST(ResponsesStreamTest, StartsOnce) {
  CreateRequest req = CreateWithTools();
  ResponsesStream stream;
  EXPECT_FALSE(stream.Start(NewResponse(req, "resp_1", 1)).empty());
  EXPECT_EQ(stream.Start(NewResponse(req, "resp_1", 1)), "");
}

}  // namespace
}  // namespace switchyard::frontends::responses
