// The OpenAI-compatible front over real HTTP on loopback, answers computed by the CPU
// engine (a tiny model with random weights): models, chat and completions, streaming,
// errors in OpenAI's shape, sessions as workflows with wait nodes between turns, context
// reuse, and greedy answers that do not depend on what happened to the KV.
#include "frontends/openai/openai_front.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <filesystem>
#include <set>
#include <thread>

#include "base/mutex.h"
#include "http/http_server.h"
#include "serve/http_api.h"
#include "tests/common/wait_until.h"
#include "tests/frontends/fronts_test_util.h"
#include "tests/frontends/sse_events.h"
#include "tests/http/http_test_client.h"
#include "tests/serve/loopback_api.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;

constexpr char kOpenAiToken[] = "openai-tenant-token-0123456789";
using testing::kModel;

class OpenAiFrontTest : public testing::LoopbackApiTest {
 protected:
  void Start(uint64_t pool_bytes = 4ULL << 20,
             std::chrono::milliseconds idle = std::chrono::minutes(10), int64_t max_live = 0) {
    service::ServiceOptions so;
    if (max_live > 0) so.max_live_workflows_per_tenant = max_live;
    so.scheduler.engine = "cpu";
    so.scheduler.model_path = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json";
    so.scheduler.kv_pool_bytes = pool_bytes;
    so.scheduler.host_bytes = 64ULL << 20;
    so.scheduler.disk_bytes = 64ULL << 20;
    serve::HttpApiOptions ao;
    ao.fronts.session_idle_timeout = idle;
    http::HttpServerOptions ho;
    ho.threads = 4;
    Serve(so, OneTenant(kOpenAiToken, "openai-admin-token-0123456789"), ao, ho);
  }
  testing::ClientResponse Post(const std::string& path, const json& body,
                               const std::string& session = "") {
    std::map<std::string, std::string> h{{"Authorization", std::string("Bearer ") + kOpenAiToken},
                                         {"Content-Type", "application/json"}};
    if (!session.empty()) h["x-session-id"] = session;
    return testing::Request(port_, "POST", path, body.dump(), h);
  }
  json Chat(const json& body, const std::string& session = "", int expect = 200) {
    auto r = Post("/v1/chat/completions", body, session);
    EXPECT_EQ(r.status, expect) << r.body;
    {
      MutexLock lock(&mu_);  // several threads chat at once
      last_headers_ = r.headers;
    }
    return json::parse(r.body, nullptr, false);
  }
  json Get(const std::string& path) {
    auto r = testing::Request(port_, "GET", path, "",
                              {{"Authorization", std::string("Bearer ") + kOpenAiToken}});
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  }
  testing::ClientResponse Delete(const std::string& path) {
    return testing::Request(port_, "DELETE", path, "",
                            {{"Authorization", std::string("Bearer ") + kOpenAiToken}});
  }
  std::string StateOf(const std::string& wf) { return Get("/v1/workflows/" + wf)["state"]; }
  // Waits for workflow `wf` to reach `state` (testing::WaitUntil's bound); its last state.
  std::string AwaitState(const std::string& wf, const std::string& state) {
    std::string now;
    testing::WaitUntil([&] { return (now = StateOf(wf)) == state; });
    return now;
  }
  // The text a streamed chat answer carried (its content deltas, concatenated).
  static std::string StreamedText(const std::string& chunked) {
    std::string text;
    for (const json& e : Events(chunked)) {
      if (!e.contains("choices") || e["choices"].empty()) continue;
      const json& d = e["choices"][0]["delta"];
      if (d.contains("content") && d["content"].is_string())
        text += d["content"].get<std::string>();
    }
    return text;
  }
  // Starts a streamed chat request on a raw socket and returns the socket once the first
  // event arrived (the call was admitted and runs), with the response head in `head`.
  int StartStream(const json& body, const std::string& extra_headers, std::string* head) {
    const std::string payload = body.dump();
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port_);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                      std::string(kOpenAiToken) + "\r\n" + extra_headers +
                      "Content-Length: " + std::to_string(payload.size()) + "\r\n\r\n" + payload;
    EXPECT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    char buf[4096];
    while (head->find("data: ") == std::string::npos) {
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      head->append(buf, static_cast<size_t>(n));
    }
    return fd;
  }
  static std::string HeaderOf(const std::string& head, const std::string& name) {
    size_t at = head.find(name + ": ");
    if (at == std::string::npos) return "";
    at += name.size() + 2;
    return head.substr(at, head.find("\r\n", at) - at);
  }
  static json Body(const json& messages, int max_tokens = 8) {
    return json{
        {"model", kModel}, {"messages", messages}, {"max_tokens", max_tokens}, {"temperature", 0}};
  }
  // The content of every `data:` event of a chunked SSE body, [DONE] excluded.
  static std::vector<json> Events(const std::string& chunked) {
    const std::string body = testing::Dechunk(chunked);
    std::vector<json> out;
    for (size_t i = 0; (i = body.find("data: ", i)) != std::string::npos;) {
      size_t end = body.find("\n\n", i);
      std::string data = body.substr(i + 6, end - i - 6);
      if (data != "[DONE]") out.push_back(json::parse(data, nullptr, false));
      i = end;
    }
    return out;
  }

  Mutex mu_;
  std::map<std::string, std::string> last_headers_;  // of the latest Chat (single-threaded use)
};

TEST_F(OpenAiFrontTest, ModelsChatAndCompletions) {
  Start();
  json models = Get("/v1/models");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], kModel);
  json one = Get(std::string("/v1/models/") + kModel);  // the SDKs' models.retrieve()
  EXPECT_EQ(one["object"], "model") << one.dump();
  EXPECT_EQ(one["id"], kModel);
  auto missing = testing::Request(port_, "GET", "/v1/models/gpt-4", "",
                                  {{"Authorization", std::string("Bearer ") + kOpenAiToken}});
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(json::parse(missing.body, nullptr, false)["error"]["code"], "model_not_found")
      << missing.body;
  json r = Chat(Body({{{"role", "user"}, {"content", "hello"}}}));
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["model"], kModel);
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(r["choices"][0]["message"]["content"].is_string());
  EXPECT_EQ(r["usage"]["completion_tokens"], 8);
  EXPECT_NE(r["system_fingerprint"].get<std::string>().find("random-weights"), std::string::npos);
  EXPECT_FALSE(last_headers_["x-switchyard-workflow-id"].empty());
  EXPECT_EQ(last_headers_["x-switchyard-node-id"], "llm-0");
  auto c = Post("/v1/completions", {{"model", kModel}, {"prompt", "once upon"}, {"max_tokens", 5}});
  ASSERT_EQ(c.status, 200) << c.body;
  json cj = json::parse(c.body);
  EXPECT_EQ(cj["object"], "text_completion");
  EXPECT_TRUE(cj["choices"][0]["text"].is_string());
}

TEST_F(OpenAiFrontTest, ErrorsHaveOpenAisShape) {
  Start();
  auto unauth = testing::Request(port_, "POST", "/v1/chat/completions", "{}", {});
  EXPECT_EQ(unauth.status, 401);
  json u = json::parse(unauth.body);
  EXPECT_EQ(u["error"]["type"], "authentication_error") << unauth.body;
  json nf =
      Chat({{"model", "gpt-4"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}, "", 404);
  EXPECT_EQ(nf["error"]["code"], "model_not_found");
  EXPECT_EQ(nf["error"]["param"], "model");
  json n2 = Chat(
      {{"model", kModel}, {"n", 2}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}, "", 400);
  EXPECT_EQ(n2["error"]["param"], "n");
  EXPECT_EQ(n2["error"]["type"], "invalid_request_error");
  json big = Chat(Body({{{"role", "user"}, {"content", "x"}}}, 100000), "", 400);
  EXPECT_EQ(big["error"]["code"], "context_length_exceeded");
  // A session id is stored with its workflow: UTF-8 text, at most 256 bytes.
  json bad_sid = Chat(Body({{{"role", "user"}, {"content", "x"}}}), "caf\xe9", 400);
  EXPECT_EQ(bad_sid["error"]["code"], "invalid_session_id") << bad_sid.dump();
  EXPECT_EQ(bad_sid["error"]["param"], "x-session-id");
  Chat(Body({{{"role", "user"}, {"content", "x"}}}), std::string(257, 's'), 400);
  auto del = testing::Request(port_, "DELETE", "/v1/sessions/nope", "",
                              {{"Authorization", std::string("Bearer ") + kOpenAiToken}});
  EXPECT_EQ(del.status, 404);
  EXPECT_EQ(json::parse(del.body)["error"]["code"], "session_not_found");
}

TEST_F(OpenAiFrontTest, StreamingGivesTheSameTextAsNonStreaming) {
  Start();
  json msgs = {{{"role", "user"}, {"content", "tell me a story"}}};
  std::string whole = Chat(Body(msgs, 12))["choices"][0]["message"]["content"];
  json body = Body(msgs, 12);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto r = Post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "text/event-stream");
  std::vector<json> ev = Events(r.body);
  ASSERT_GE(ev.size(), 3u) << r.body;
  EXPECT_EQ(ev.front()["choices"][0]["delta"]["role"], "assistant");
  std::string text, finish;
  for (const json& e : ev) {
    if (e["choices"].empty()) {
      EXPECT_EQ(e["usage"]["completion_tokens"], 12);
      continue;
    }
    const json& d = e["choices"][0]["delta"];
    if (d.contains("content") && d["content"].is_string()) text += d["content"].get<std::string>();
    if (e["choices"][0]["finish_reason"].is_string()) finish = e["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, whole);
  EXPECT_EQ(finish, "length");
  EXPECT_TRUE(ev.back()["choices"].empty()) << "the usage chunk comes last";
}

// A session of several turns with forced tool calls: each turn extends the session's
// context, wait nodes named after the tools run between turns, and GET shows them with
// their measured durations and the KV decisions taken during the waits.
TEST_F(OpenAiFrontTest, ASessionIsAWorkflowWithToolWaitsBetweenTurns) {
  Start();
  json tools = json::array({{{"type", "function"},
                             {"function",
                              {{"name", "bash"},
                               {"parameters",
                                {{"type", "object"},
                                 {"properties", {{"command", {{"type", "string"}}}}},
                                 {"required", {"command"}}}}}}}});
  json msgs = {{{"role", "system"}, {"content", "you are an agent"}},
               {{"role", "user"}, {"content", "list the files"}}};
  std::string wf;
  int64_t cached = 0;
  for (int turn = 0; turn < 3; ++turn) {
    json body = Body(msgs, 6);
    body["tools"] = tools;
    body["tool_choice"] = "required";
    json r = Chat(body, "agent-1");
    ASSERT_TRUE(r.contains("choices")) << r.dump();
    EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
    json call = r["choices"][0]["message"]["tool_calls"][0];
    EXPECT_EQ(call["function"]["name"], "bash");
    json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(args.is_object()) << call.dump();
    EXPECT_TRUE(args["command"].is_string());
    if (turn > 0) {
      EXPECT_EQ(last_headers_["x-switchyard-workflow-id"], wf) << "one workflow per session";
      EXPECT_GT(r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), cached)
          << "the turn extended the session's context";
    }
    wf = last_headers_["x-switchyard-workflow-id"];
    cached = r["usage"]["prompt_tokens"].get<int64_t>();
    // The measured wait checked below.
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the tool's run time, not sync
    msgs.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}});
    msgs.push_back({{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "a.txt b.txt"}});
  }
  json st = Get("/v1/workflows/" + wf);
  int bash = 0;
  for (const json& n : st["nodes"]) {
    if (n.value("toolName", "") != "bash") continue;
    ++bash;
    if (n["state"] == "NODE_SUCCEEDED") {
      int64_t ms = std::stoll(n["durationMs"].get<std::string>());
      EXPECT_GE(ms, 140) << n.dump();  // the measured wait
    }
  }
  EXPECT_EQ(bash, 3) << st.dump();
  bool decided = false;
  for (const json& d : st["decisions"])
    if (d["kind"] == "keep" || d["kind"] == "demote" || d["kind"] == "discard") decided = true;
  EXPECT_TRUE(decided) << st.dump();
  auto del = testing::Request(port_, "DELETE", "/v1/sessions/agent-1", "",
                              {{"Authorization", std::string("Bearer ") + kOpenAiToken}});
  EXPECT_EQ(del.status, 200) << del.body;
  EXPECT_EQ(AwaitState(wf, "WORKFLOW_COMPLETED"), "WORKFLOW_COMPLETED");
}

// A client that re-sends the conversation with the assistant's answer changed (as agent
// harnesses do when they drop an answer's reasoning): the turn reuses the longest common
// prefix of the context and the new prompt — the same context, cut there (its node's
// cacheRefs[0].keepTokens), cached_tokens saying how much — and answers exactly what a
// fresh request with the same messages answers.
TEST_F(OpenAiFrontTest, ATurnThatChangesTheLastAnswerReusesTheCommonPrefix) {
  Start();
  json msgs = {{{"role", "system"}, {"content", "you are an agent"}},
               {{"role", "user"}, {"content", "summarise the repository"}}};
  json r = Chat(Body(msgs, 8), "rewrite-1");
  ASSERT_TRUE(r.contains("choices")) << r.dump();
  const std::string wf = last_headers_["x-switchyard-workflow-id"];
  const int64_t first_prompt = r["usage"]["prompt_tokens"].get<int64_t>();
  msgs.push_back({{"role", "assistant"}, {"content", "(answer elided)"}});  // not what it said
  msgs.push_back({{"role", "user"}, {"content", "now list the tests"}});
  r = Chat(Body(msgs, 8), "rewrite-1");
  ASSERT_TRUE(r.contains("choices")) << r.dump();
  EXPECT_EQ(last_headers_["x-switchyard-workflow-id"], wf);
  const int64_t cached = r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  EXPECT_GT(cached, 0);
  EXPECT_LT(cached, first_prompt + 8) << "the old answer is not reused";
  json st = Get("/v1/workflows/" + wf);
  bool seen = false;
  for (const json& n : st["nodes"]) {
    if (n["id"] != "llm-1") continue;
    seen = true;
    EXPECT_EQ(n["contexts"], json::array({"main"})) << "the same context, not a new one";
  }
  EXPECT_TRUE(seen) << st.dump();
  json fresh = Chat(Body(msgs, 8));
  EXPECT_EQ(fresh["choices"][0]["message"]["content"], r["choices"][0]["message"]["content"]);
}

TEST_F(OpenAiFrontTest, AnIdleSessionEnds) {
  Start(4ULL << 20, std::chrono::milliseconds(300));
  Chat(Body({{{"role", "user"}, {"content", "hi"}}}, 2), "idle-1");
  std::string wf = last_headers_["x-switchyard-workflow-id"];
  EXPECT_EQ(AwaitState(wf, "WORKFLOW_COMPLETED"), "WORKFLOW_COMPLETED");
}

// Many sessions at once on a small KV pool (contexts are kept, demoted, discarded,
// preempted and recomputed): every greedy answer equals the answer to a fresh request with
// the same conversation.
TEST_F(OpenAiFrontTest, AnswersUnderAKvSqueezeEqualFreshRequests) {
  Start(256ULL << 10);  // 512 tokens of this model's KV for 6 sessions
  constexpr int kSessions = 6, kTurns = 3;
  std::vector<std::vector<std::string>> answers(kSessions), fresh(kSessions);
  std::vector<json> convs(kSessions);
  std::vector<std::thread> threads;
  for (int s = 0; s < kSessions; ++s) {
    threads.emplace_back([&, s]() {
      json msgs = {{{"role", "user"}, {"content", "session " + std::to_string(s) + " begins"}}};
      for (int t = 0; t < kTurns; ++t) {
        json r = Chat(Body(msgs, 10), "squeeze-" + std::to_string(s));
        if (!r.contains("choices")) return;
        std::string a = r["choices"][0]["message"]["content"];
        answers[s].push_back(a);
        msgs.push_back({{"role", "assistant"}, {"content", a}});
        msgs.push_back({{"role", "user"}, {"content", "and then " + std::to_string(t)}});
      }
      convs[s] = msgs;
    });
  }
  for (auto& t : threads) t.join();
  for (int s = 0; s < kSessions; ++s) {
    ASSERT_EQ(answers[s].size(), static_cast<size_t>(kTurns)) << "session " << s;
    // The same conversation, turn by turn, as fresh one-node requests.
    json msgs = json::array();
    for (int t = 0; t < kTurns; ++t) {
      size_t upto = 1 + 2 * t;  // the messages the t-th request had
      json prefix(convs[s].begin(), convs[s].begin() + upto);
      json r = Chat(Body(prefix, 10));
      EXPECT_EQ(r["choices"][0]["message"]["content"], answers[s][t])
          << "session " << s << " turn " << t;
    }
  }
  // The squeeze happened: contexts left the pool (discarded, demoted or preempted).
  json kinds = Get("/v1/cluster")["decisionsByKind"];
  int64_t left = 0;
  for (const char* k : {"discard", "demote", "preempt"})
    if (kinds.contains(k)) left += std::stoll(kinds[k].get<std::string>());
  EXPECT_GT(left, 0) << kinds.dump();
}

// A forced call of a tool whose string argument may be null (`"type": ["string", "null"]`,
// as schema generators write an optional field): its arguments hold every required
// property (the type list takes any JSON value; null when max_tokens cut it).
TEST_F(OpenAiFrontTest, AForcedCallTakesANullableStringArgument) {
  Start();
  json tools =
      json::array({{{"type", "function"},
                    {"function",
                     {{"name", "search"},
                      {"parameters",
                       {{"type", "object"},
                        {"properties",
                         {{"limit", {{"type", "integer"}}}, {"q", {{"type", {"string", "null"}}}}}},
                        {"required", {"q", "limit"}}}}}}}});
  json body = Body({{{"role", "user"}, {"content", "find it"}}}, 6);
  body["tools"] = tools;
  body["tool_choice"] = "required";
  json r = Chat(body);
  ASSERT_TRUE(r.contains("choices")) << r.dump();
  json args = json::parse(
      r["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>(),
      nullptr, false);
  ASSERT_TRUE(args.is_object()) << r.dump();
  EXPECT_TRUE(args.contains("q") && args.contains("limit")) << args.dump();
  EXPECT_TRUE(args["limit"].is_number_integer()) << args.dump();
  // The server is still whole: another request is answered.
  EXPECT_TRUE(Chat(Body({{{"role", "user"}, {"content", "hi"}}}, 2)).contains("choices"));
}

// A stream cut by a stop sequence carries exactly the whole answer's text: the start of the
// stop sequence, generated before the rest of it, is held back and never sent.
TEST_F(OpenAiFrontTest, AStreamNeverSendsTheStartOfAStopSequence) {
  Start();
  json msgs = {{{"role", "user"}, {"content", "count to ten"}}};
  const std::string whole = Chat(Body(msgs, 24))["choices"][0]["message"]["content"];
  ASSERT_GE(whole.size(), 12u) << whole;
  const std::string stop = whole.substr(8, 3);
  json body = Body(msgs, 24);
  body["stop"] = stop;
  const std::string cut = Chat(body)["choices"][0]["message"]["content"];
  EXPECT_EQ(cut, whole.substr(0, whole.find(stop)));
  body["stream"] = true;
  auto r = Post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(StreamedText(r.body), cut) << "stop '" << stop << "' in '" << whole << "'";
}

// A request the service refuses (here: the tenant's live-workflow quota) is an error with
// its own status and Retry-After, streamed or not; the session's retry, once there is room,
// is answered (it starts its workflow then).
TEST_F(OpenAiFrontTest, ARefusedRequestIsAnErrorWithItsStatusAndTheSessionRecovers) {
  Start(4ULL << 20, std::chrono::minutes(10), /*max_live=*/1);
  json msgs = {{{"role", "user"}, {"content", "hello"}}};
  ASSERT_TRUE(Chat(Body(msgs, 2), "holder").contains("choices"));  // its workflow stays live
  json body = Body(msgs, 2);
  body["stream"] = true;
  auto streamed = Post("/v1/chat/completions", body, "late");
  EXPECT_EQ(streamed.status, 429) << streamed.body;
  EXPECT_FALSE(streamed.headers["retry-after"].empty());
  EXPECT_EQ(json::parse(streamed.body, nullptr, false)["error"]["type"], "rate_limit_error")
      << streamed.body;
  auto whole = Post("/v1/chat/completions", Body(msgs, 2), "late");
  EXPECT_EQ(whole.status, 429) << whole.body;
  ASSERT_EQ(Delete("/v1/sessions/holder").status, 200);
  testing::ClientResponse r;
  testing::WaitUntil(
      [&] { return (r = Post("/v1/chat/completions", Body(msgs, 2), "late")).status != 429; });
  EXPECT_EQ(r.status, 200) << r.body;
}

// A session whose workflow was cancelled under it (or failed) goes on: the request that
// finds it ended fails, and the session's next request starts a new workflow.
TEST_F(OpenAiFrontTest, ASessionWhoseWorkflowEndedStartsAfresh) {
  Start();
  json msgs = {{{"role", "user"}, {"content", "first"}}};
  json a = Chat(Body(msgs, 4), "phoenix");
  ASSERT_TRUE(a.contains("choices")) << a.dump();
  const std::string wf = last_headers_["x-switchyard-workflow-id"];
  ASSERT_EQ(Delete("/v1/workflows/" + wf).status, 200);
  msgs.push_back({{"role", "assistant"}, {"content", a["choices"][0]["message"]["content"]}});
  msgs.push_back({{"role", "user"}, {"content", "second"}});
  auto failed = Post("/v1/chat/completions", Body(msgs, 4), "phoenix");
  EXPECT_NE(failed.status, 200) << failed.body;
  json b = Chat(Body(msgs, 4), "phoenix");
  ASSERT_TRUE(b.contains("choices")) << b.dump();
  EXPECT_NE(last_headers_["x-switchyard-workflow-id"], wf);
  EXPECT_EQ(b["choices"][0]["message"]["content"],
            Chat(Body(msgs, 4))["choices"][0]["message"]["content"])
      << "the same answer as a fresh request";
}

// A client that goes away in the middle of a stream: its generation is cancelled with its
// workflow, and its session's next request is answered at once (not 409 session_busy).
TEST_F(OpenAiFrontTest, AClientThatGoesAwayMidStreamCancelsItsCall) {
  Start();
  json body = Body({{{"role", "user"}, {"content", "a long story"}}}, 1900);
  body["stream"] = true;
  std::string head;
  int fd = StartStream(body, "x-session-id: gone\r\n", &head);
  ASSERT_NE(head.find("data: "), std::string::npos) << head;
  ::close(fd);  // gone after the first chunk
  const std::string wf = HeaderOf(head, "x-switchyard-workflow-id");
  ASSERT_FALSE(wf.empty()) << head;
  EXPECT_EQ(AwaitState(wf, "WORKFLOW_CANCELLED"), "WORKFLOW_CANCELLED");
  json next = Chat(Body({{{"role", "user"}, {"content", "again"}}}, 2), "gone");
  EXPECT_TRUE(next.contains("choices")) << next.dump();
  EXPECT_NE(last_headers_["x-switchyard-workflow-id"], wf);
}

// A session serves one request at a time: a second request while the first one is being
// answered gets 409 session_busy. A session named only by the body's `user` (an end user's
// id, which parallel requests of one user share) instead answers the second request as a
// one-node workflow of its own.
TEST_F(OpenAiFrontTest, ASessionIsBusyWhileAnsweringUnlessNamedOnlyByUser) {
  Start();
  json msgs = {{{"role", "user"}, {"content", "a long story"}}};
  json long_body = Body(msgs, 1900);
  long_body["stream"] = true;
  std::string head;
  int fd = StartStream(long_body, "x-session-id: one-at-a-time\r\n", &head);
  auto second = Post("/v1/chat/completions", Body(msgs, 2), "one-at-a-time");
  EXPECT_EQ(second.status, 409) << second.body;
  EXPECT_EQ(json::parse(second.body, nullptr, false)["error"]["code"], "session_busy");
  ::close(fd);

  long_body["user"] = "end-user-7";
  std::string head2;
  fd = StartStream(long_body, "", &head2);
  const std::string first_wf = HeaderOf(head2, "x-switchyard-workflow-id");
  json quick = Body(msgs, 2);
  quick["user"] = "end-user-7";
  json r = Chat(quick);
  EXPECT_TRUE(r.contains("choices")) << r.dump();
  EXPECT_NE(last_headers_["x-switchyard-workflow-id"], first_wf);
  ::close(fd);
}

// Sampling without a seed differs from request to request (OpenAI's behaviour); with the
// same seed it repeats.
TEST_F(OpenAiFrontTest, RequestsWithoutASeedSampleAfresh) {
  Start();
  json body = Body({{{"role", "user"}, {"content", "pick words"}}}, 24);
  body["temperature"] = 1.0;
  std::set<std::string> unseeded;
  for (int i = 0; i < 3; ++i) unseeded.insert(Chat(body)["choices"][0]["message"]["content"]);
  EXPECT_GT(unseeded.size(), 1u) << "three unseeded samples were identical";
  body["seed"] = 7;
  EXPECT_EQ(Chat(body)["choices"][0]["message"]["content"],
            Chat(body)["choices"][0]["message"]["content"]);
}

}  // namespace
}  // namespace switchyard::frontends
