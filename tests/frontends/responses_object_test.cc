// The Responses API's response object: a response built from a request and an answer, its
// JSON (every member), the stored form's round trip and refusals, input_items listings,
// deletions, errors, and the request headers.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "frontends/responses/responses_protocol.h"

namespace switchyard::frontends::responses {
namespace {

using nlohmann::json;

CreateRequest Request(const std::string& body) {
  auto r = ParseCreate(body);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : CreateRequest{};
}

// A completed response with a message and a namespaced call.
StoredResponse Completed() {
  CreateRequest req = Request(R"({"model":"tiny","instructions":"be brief","input":[
      {"role":"user","content":"weather?"},
      {"type":"reasoning","id":"rs_x","summary":[{"type":"summary_text","text":"hmm"}]}],
    "tools":[{"type":"namespace","name":"wx","tools":[{"type":"function","name":"get"}]}],
    "max_output_tokens":50,"temperature":0.5,"store":true,"previous_response_id":"resp_0",
    "user":"u","prompt_cache_key":"k","metadata":{"a":"b"},"parallel_tool_calls":false})");
  StoredResponse r = NewResponse(req, "resp_abc", 1741476542);
  ApplyAnswer(Answer{.text = "Checking.",
                     .tool_calls = {{"call_1", "get", R"({"city":"Oslo"})"}},
                     .end = Answer::End::kToolCalls,
                     .prompt_tokens = 30,
                     .completion_tokens = 7,
                     .cached_tokens = 20},
              req.routes, &r);
  return r;
}

TEST(ResponsesObjectTest, NewResponseAssignsInputIds) {
  StoredResponse r = Completed();
  ASSERT_EQ(r.input.size(), 2u);
  EXPECT_EQ(r.input[0].id, "msg_abc_i0");
  EXPECT_EQ(r.input[0].status, "completed");
  EXPECT_EQ(r.input[1].id, "rs_x") << "a client's id is kept";
  EXPECT_EQ(OutputItemId(Item::Kind::kFunctionCall, "resp_abc", 3), "fc_abc_3");
  EXPECT_EQ(OutputItemId(Item::Kind::kMessage, "plain", 0), "msg_plain_0");
  EXPECT_EQ(InputItemId(Item::Kind::kFunctionCallOutput, "resp_abc", 2), "fco_abc_i2");
}

TEST(ResponsesObjectTest, ResponseJsonHasEveryMember) {
  json j = json::parse(ResponseJson(Completed()));
  json expected = json::parse(R"({
    "id": "resp_abc", "object": "response", "created_at": 1741476542, "status": "completed",
    "background": false, "error": null, "incomplete_details": null,
    "instructions": "be brief", "max_output_tokens": 50, "model": "tiny",
    "output": [
      {"type": "message", "id": "msg_abc_0", "status": "completed", "role": "assistant",
       "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
      {"type": "function_call", "id": "fc_abc_1", "call_id": "call_1", "name": "get",
       "namespace": "wx", "arguments": "{\"city\":\"Oslo\"}", "status": "completed"}],
    "parallel_tool_calls": false, "previous_response_id": "resp_0", "prompt_cache_key": "k",
    "store": true, "temperature": 0.5, "text": {"format": {"type": "text"}},
    "tool_choice": "auto",
    "tools": [{"type": "namespace", "name": "wx", "tools": [{"type": "function", "name": "get"}]}],
    "top_p": 1.0,
    "usage": {"input_tokens": 30, "input_tokens_details": {"cached_tokens": 20},
              "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0},
              "total_tokens": 37},
    "user": "u", "metadata": {"a": "b"}})");
  EXPECT_EQ(j, expected) << j.dump(2);
  EXPECT_FALSE(j.contains("output_text")) << "output_text is the SDKs' convenience, not sent";
}

TEST(ResponsesObjectTest, NullsWhenEmpty) {
  StoredResponse r = NewResponse(Request(R"({"model":"m","input":"x"})"), "resp_1", 5);
  json j = json::parse(ResponseJson(r));
  EXPECT_EQ(j["status"], "in_progress");
  EXPECT_TRUE(j["instructions"].is_null());
  EXPECT_TRUE(j["max_output_tokens"].is_null());
  EXPECT_TRUE(j["previous_response_id"].is_null());
  EXPECT_TRUE(j["usage"].is_null());
  EXPECT_TRUE(j["user"].is_null());
  EXPECT_EQ(j["output"], json::array());
  EXPECT_EQ(j["metadata"], json::object());
  EXPECT_EQ(j["tools"], json::array());
}

TEST(ResponsesObjectTest, LengthCutIsIncomplete) {
  StoredResponse r = NewResponse(Request(R"({"model":"m","input":"x"})"), "resp_1", 5);
  ApplyAnswer(Answer{.text = "partial", .end = Answer::End::kLength}, {}, &r);
  EXPECT_EQ(r.status, ResponseStatus::kIncomplete);
  json j = json::parse(ResponseJson(r));
  EXPECT_EQ(j["status"], "incomplete");
  EXPECT_EQ(j["incomplete_details"], json::parse(R"({"reason":"max_output_tokens"})"));
  EXPECT_EQ(j["output"][0]["status"], "incomplete");
}

TEST(ResponsesObjectTest, FailedCarriesTheError) {
  StoredResponse r = NewResponse(Request(R"({"model":"m","input":"x"})"), "resp_1", 5);
  FailResponse(Status::Unavailable("engine down"), &r);
  json j = json::parse(ResponseJson(r));
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["error"], json::parse(R"({"code":"server_error","message":"engine down"})"));
  FailResponse(Status::ResourceExhausted("busy"), &r);
  EXPECT_EQ(r.error_code, "rate_limit_exceeded");
  FailResponse(Status::InvalidArgument("bad prompt"), &r);
  EXPECT_EQ(r.error_code, "invalid_prompt");
  FailResponse(Status::OutOfRange("prompt longer than the context"), &r);
  EXPECT_EQ(r.error_code, "context_length_exceeded");
}

TEST(ResponsesObjectTest, StatusNames) {
  for (auto s :
       {ResponseStatus::kInProgress, ResponseStatus::kCompleted, ResponseStatus::kIncomplete,
        ResponseStatus::kFailed, ResponseStatus::kCancelled, ResponseStatus::kQueued}) {
    EXPECT_EQ(StatusFromName(StatusName(s)), s);
  }
  EXPECT_EQ(StatusFromName("done"), std::nullopt);
}

// ---------------------------------------------------------------------------------------------
// The stored form.

void ExpectSameItems(const std::vector<Item>& a, const std::vector<Item>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("item " + std::to_string(i));
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].status, b[i].status);
    EXPECT_EQ(a[i].role, b[i].role);
    EXPECT_EQ(a[i].text, b[i].text);
    EXPECT_EQ(a[i].call_id, b[i].call_id);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].tool_namespace, b[i].tool_namespace);
    EXPECT_EQ(a[i].arguments, b[i].arguments);
  }
}

TEST(ResponsesStoreTest, RoundTrip) {
  StoredResponse r = Completed();
  r.input.push_back(Item{.kind = Item::Kind::kFunctionCallOutput,
                         .id = "fco_1",
                         .status = "completed",
                         .text = "sunny",
                         .call_id = "call_0"});
  auto back = StoredResponse::FromJson(r.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->id, r.id);
  EXPECT_EQ(back->created_at, r.created_at);
  EXPECT_EQ(back->status, r.status);
  EXPECT_EQ(back->model, r.model);
  EXPECT_EQ(back->instructions, r.instructions);
  ExpectSameItems(back->input, r.input);
  ExpectSameItems(back->output, r.output);
  EXPECT_EQ(back->tools_json, r.tools_json);
  EXPECT_EQ(back->tool_choice_json, r.tool_choice_json);
  EXPECT_EQ(back->parallel_tool_calls, r.parallel_tool_calls);
  EXPECT_EQ(back->max_output_tokens, r.max_output_tokens);
  EXPECT_DOUBLE_EQ(back->temperature, r.temperature);
  EXPECT_DOUBLE_EQ(back->top_p, r.top_p);
  EXPECT_EQ(back->store, r.store);
  EXPECT_EQ(back->previous_response_id, r.previous_response_id);
  EXPECT_EQ(back->prompt_cache_key, r.prompt_cache_key);
  EXPECT_EQ(back->user, r.user);
  EXPECT_EQ(back->metadata, r.metadata);
  ASSERT_TRUE(back->usage.has_value());
  EXPECT_EQ(back->usage->input_tokens, 30);
  EXPECT_EQ(back->usage->cached_tokens, 20);
  EXPECT_EQ(back->usage->output_tokens, 7);
  EXPECT_EQ(back->ToJson(), r.ToJson()) << "a second trip changes nothing";
}

TEST(ResponsesStoreTest, RoundTripOfFailedAndIncomplete) {
  StoredResponse failed = NewResponse(Request(R"({"model":"m","input":"x"})"), "resp_f", 1);
  FailResponse(Status::Internal("boom"), &failed);
  auto f = StoredResponse::FromJson(failed.ToJson());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->status, ResponseStatus::kFailed);
  EXPECT_EQ(f->error_code, "server_error");
  EXPECT_EQ(f->error_message, "boom");
  EXPECT_FALSE(f->usage.has_value());

  StoredResponse cut = NewResponse(Request(R"({"model":"m","input":"x"})"), "resp_c", 1);
  ApplyAnswer(Answer{.text = "par", .end = Answer::End::kLength}, {}, &cut);
  auto c = StoredResponse::FromJson(cut.ToJson());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->incomplete_reason, "max_output_tokens");
  EXPECT_EQ(c->output[0].status, "incomplete");
}

TEST(ResponsesStoreTest, RefusesWhatIsNotTheStoredForm) {
  const std::string good = Completed().ToJson();
  auto mutated = [&](const std::function<void(json&)>& edit) {
    json j = json::parse(good);
    edit(j);
    return StoredResponse::FromJson(j.dump());
  };
  for (auto r : {StoredResponse::FromJson(""), StoredResponse::FromJson("[]"),
                 mutated([](json& j) { j.erase("id"); }),
                 mutated([](json& j) { j["created_at"] = "yesterday"; }),
                 mutated([](json& j) { j.erase("created_at"); }),
                 mutated([](json& j) { j["status"] = "done"; }),
                 mutated([](json& j) { j["output"] = json::object(); }),
                 mutated([](json& j) { j["output"][1].erase("call_id"); }),
                 mutated([](json& j) { j["input"][0]["type"] = "telepathy"; }),
                 mutated([](json& j) { j["usage"]["input_tokens"] = -1; }),
                 mutated([](json& j) { j["metadata"]["a"] = 1; }),
                 mutated([](json& j) { j["tools"] = "none"; })}) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status();
    EXPECT_EQ(r.status().message().rfind("stored response: ", 0), 0u) << r.status();
  }
}

// ---------------------------------------------------------------------------------------------
// input_items, deletions and errors.

StoredResponse WithInputs(int n) {
  std::string items;
  for (int i = 0; i < n; ++i) {
    items +=
        (i ? "," : "") + std::string(R"({"role":"user","content":"m)") + std::to_string(i) + "\"}";
  }
  return NewResponse(Request(R"({"model":"m","input":[)" + items + "]}"), "resp_l", 1);
}

TEST(ResponsesListTest, ListsInputItemsInEitherOrder) {
  StoredResponse r = WithInputs(5);
  auto params = ParseListParams({});
  ASSERT_TRUE(params.ok());
  EXPECT_FALSE(params->ascending) << "desc is the default";
  EXPECT_EQ(params->limit, 20);
  json desc = json::parse(*InputItemsJson(r, *params));
  EXPECT_EQ(desc["object"], "list");
  ASSERT_EQ(desc["data"].size(), 5u);
  EXPECT_EQ(desc["first_id"], "msg_l_i4");
  EXPECT_EQ(desc["last_id"], "msg_l_i0");
  EXPECT_EQ(desc["has_more"], false);
  EXPECT_EQ(desc["data"][0], json::parse(R"({"type":"message","id":"msg_l_i4",
    "status":"completed","role":"user","content":[{"type":"input_text","text":"m4"}]})"));

  auto page = ParseListParams({{"order", "asc"}, {"limit", "2"}, {"after", "msg_l_i0"}});
  ASSERT_TRUE(page.ok()) << page.status();
  json asc = json::parse(*InputItemsJson(r, *page));
  ASSERT_EQ(asc["data"].size(), 2u);
  EXPECT_EQ(asc["first_id"], "msg_l_i1");
  EXPECT_EQ(asc["last_id"], "msg_l_i2");
  EXPECT_EQ(asc["has_more"], true);

  auto last = InputItemsJson(r, ListParams{.ascending = true, .after = "msg_l_i4", .limit = 2});
  ASSERT_TRUE(last.ok());
  json empty = json::parse(*last);
  EXPECT_EQ(empty["data"], json::array());
  EXPECT_TRUE(empty["first_id"].is_null());
  EXPECT_EQ(empty["has_more"], false);

  auto unknown = InputItemsJson(r, ListParams{.after = "msg_nope"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(ParamOf(unknown.status()), "after");
}

TEST(ResponsesListTest, RefusesBadParameters) {
  EXPECT_EQ(ParamOf(ParseListParams({{"order", "up"}}).status()), "order");
  for (const char* limit : {"0", "101", "-1", "x", "", "1000"}) {
    EXPECT_EQ(ParamOf(ParseListParams({{"limit", limit}}).status()), "limit") << limit;
  }
  auto ok = ParseListParams({{"limit", "100"}, {"include", "x"}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->limit, 100);
}

TEST(ResponsesErrorTest, Shapes) {
  EXPECT_EQ(DeletedJson("resp_1"), R"({"id":"resp_1","object":"response","deleted":true})");
  EXPECT_EQ(json::parse(ErrorJson(400, "input[2].call_id: required", "input[2].call_id")),
            json::parse(R"({"error":{"message":"input[2].call_id: required",
              "type":"invalid_request_error","param":"input[2].call_id","code":null}})"));
  EXPECT_EQ(json::parse(ErrorJson(429, "slow down", "", "rate_limit_exceeded"))["error"]["type"],
            "rate_limit_error");
  EXPECT_EQ(json::parse(ErrorJson(503, "x"))["error"]["type"], "server_error");

  auto bad = ParseCreate(R"({"model":"m","input":[{"type":"function_call_output","output":"x"}]})");
  HttpError e = ErrorFromStatus(bad.status());
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(json::parse(e.body)["error"]["param"], "input[0].call_id");
  EXPECT_EQ(ErrorFromStatus(Status::NotFound("no response resp_9")).http_status, 404);
  EXPECT_EQ(json::parse(ErrorFromStatus(Status::NotFound("x")).body)["error"]["code"], "not_found");
  EXPECT_EQ(ErrorFromStatus(Status::Unauthenticated("key")).http_status, 401);
  EXPECT_EQ(ErrorFromStatus(Status::ResourceExhausted("q")).http_status, 429);
  EXPECT_EQ(ErrorFromStatus(Status::Internal("x")).http_status, 500);
}

// ---------------------------------------------------------------------------------------------
// Headers.

TEST(ResponsesHeadersTest, ReadsIdsAndFallsBack) {
  auto old_style = ParseHeaders({{"session_id", "s1"}, {"conversation_id", "t1"}});
  ASSERT_TRUE(old_style.ok());
  EXPECT_EQ(old_style->session_id, "s1");
  EXPECT_EQ(old_style->thread_id, "t1");
  CreateRequest r = Request(
      R"({"model":"m","input":"x","prompt_cache_key":"pck","metadata":{"session_id":"md"},"user":"u"})");
  EXPECT_EQ(SessionIdOf(*old_style, r), "t1");
  EXPECT_EQ(SessionIdOf(Headers{.session_id = "s"}, r), "s");
  EXPECT_EQ(SessionIdOf(Headers{}, r), "pck");
  r.prompt_cache_key.clear();
  EXPECT_EQ(SessionIdOf(Headers{}, r), "md");
  r.metadata.clear();
  EXPECT_EQ(SessionIdOf(Headers{}, r), "u");

  EXPECT_EQ(ParseHeaders({{"authorization", "bearer  tok "}})->bearer_token, "tok");
  EXPECT_EQ(ParseHeaders({{"authorization", "Basic dXNlcg=="}})->bearer_token, "");
  EXPECT_EQ(ParseHeaders({{"authorization", "Bearer"}})->bearer_token, "");
}

TEST(ResponsesHeadersTest, RefusesBadIds) {
  EXPECT_EQ(ParamOf(ParseHeaders({{"session-id", std::string(257, 'a')}}).status()), "session-id");
  EXPECT_EQ(ParamOf(ParseHeaders({{"thread-id", "a\x01"}}).status()), "thread-id");
  EXPECT_EQ(ParamOf(ParseHeaders({{"x-client-request-id", "\xff"}}).status()),
            "x-client-request-id");
  EXPECT_TRUE(ParseHeaders({{"session-id", std::string(256, 'a')}}).ok());
}

}  // namespace
}  // namespace switchyard::frontends::responses
