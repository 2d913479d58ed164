// The OpenAI front's proxy mode end to end on loopback: a Switchyard server with the CPU
// engine is the upstream; a second Switchyard server (no engine: it reports the proxied
// calls) orders and admits the requests, forwards each to the upstream with session
// affinity and passes the answer back unchanged, streaming included.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "http/http_server.h"
#include "serve/http_api.h"
#include "tests/common/wait_until.h"
#include "tests/frontends/proxy_server.h"
#include "tests/http/http_test_client.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;

using testing::kModel;
using testing::kToken;
using testing::kUpToken;
using Server = testing::ProxyTestServer;

class OpenAiProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string base = ::testing::TempDir() + "/sy_proxy_" + std::to_string(::getpid());
    up_.Start(base + "_up", kUpToken);
    proxy_.Start(base + "_front", kToken, "http://127.0.0.1:" + std::to_string(up_.port));
  }
  testing::ClientResponse Post(uint16_t port, const char* token, const json& body,
                               const std::string& session = "") {
    std::map<std::string, std::string> h{{"Authorization", std::string("Bearer ") + token},
                                         {"Content-Type", "application/json"}};
    if (!session.empty()) h["x-session-id"] = session;
    return testing::Request(port, "POST", "/v1/chat/completions", body.dump(), h);
  }
  json Get(uint16_t port, const char* token, const std::string& path) {
    auto r = testing::Request(port, "GET", path, "",
                              {{"Authorization", std::string("Bearer ") + token}});
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  }
  static json Body(const json& messages) {
    return json{{"model", kModel}, {"messages", messages}, {"max_tokens", 8}, {"temperature", 0}};
  }
  Server up_, proxy_;
};

TEST_F(OpenAiProxyTest, AnswersPassThroughUnchangedAndTheSessionIsAWorkflowHere) {
  json msgs = {{{"role", "user"}, {"content", "hello through the proxy"}}};
  auto via = Post(proxy_.port, kToken, Body(msgs), "p-1");
  ASSERT_EQ(via.status, 200) << via.body;
  auto direct = Post(up_.port, kUpToken, Body(msgs));
  ASSERT_EQ(direct.status, 200) << direct.body;
  json a = json::parse(via.body), b = json::parse(direct.body);
  EXPECT_EQ(a["choices"][0]["message"]["content"], b["choices"][0]["message"]["content"]);
  EXPECT_EQ(a["model"], kModel) << "the upstream's answer, unchanged";
  const std::string wf = via.headers["x-switchyard-workflow-id"];
  ASSERT_FALSE(wf.empty());
  json st = Get(proxy_.port, kToken, "/v1/workflows/" + wf);
  std::map<std::string, std::string> state;
  for (const json& n : st["nodes"]) state[n["id"]] = n["state"];
  EXPECT_EQ(state["llm-0"], "NODE_SUCCEEDED") << st.dump();
  EXPECT_EQ(state["client-0"], "NODE_RUNNING") << "the wait until the next request";
  bool placed = false;
  for (const json& d : st["decisions"]) placed |= d["kind"] == "place";
  EXPECT_TRUE(placed) << "the proxy's scheduler placed the call before it was forwarded";
  json cluster = Get(proxy_.port, kToken, "/v1/cluster");
  EXPECT_NE(cluster["openaiFront"].get<std::string>().find("steered by their adapters"),
            std::string::npos)
      << cluster.dump();
  // The upstream's steering figures: a generic upstream, one session, its decorated call.
  ASSERT_EQ(cluster["upstreams"].size(), 1u) << cluster.dump();
  const json& u = cluster["upstreams"][0];
  EXPECT_EQ(u["kind"], "generic");
  EXPECT_TRUE(u["steering"].get<bool>());
  EXPECT_EQ(u["sessions"], "1");
  EXPECT_EQ(u["actions"]["decorated"], "1");
  EXPECT_TRUE(u["capabilities"]["prefix_caching"].get<bool>()) << "assumed for generic";
  // /v1/models is the upstream's.
  json models = Get(proxy_.port, kToken, "/v1/models");
  EXPECT_EQ(models["data"][0]["id"], kModel) << models.dump();
}

TEST_F(OpenAiProxyTest, StreamsPassThroughAndTheSessionsNextTurnFollowsAtOnce) {
  json msgs = {{{"role", "user"}, {"content", "stream it"}}};
  json body = Body(msgs);
  body["stream"] = true;
  auto via = Post(proxy_.port, kToken, body, "p-2");
  ASSERT_EQ(via.status, 200) << via.body;
  EXPECT_EQ(via.headers["content-type"], "text/event-stream");
  EXPECT_NE(via.body.find("data: [DONE]"), std::string::npos) << via.body;
  EXPECT_NE(via.body.find("chat.completion.chunk"), std::string::npos);
  const std::string wf = via.headers["x-switchyard-workflow-id"];
  ASSERT_FALSE(wf.empty());
  json st;
  const bool done = testing::WaitUntil([&] {  // the node ends with the stream
    st = Get(proxy_.port, kToken, "/v1/workflows/" + wf);
    for (const json& n : st["nodes"])
      if (n["id"] == "llm-0" && n["state"] == "NODE_SUCCEEDED") return true;
    return false;
  });
  EXPECT_TRUE(done) << st.dump();
  // The next turn, sent as soon as the stream ended (as agents do), finds the session
  // free: the stream's end was held back until the session was released.
  msgs.push_back({{"role", "assistant"}, {"content", "streamed"}});
  msgs.push_back({{"role", "user"}, {"content", "and again"}});
  for (int turn = 1; turn <= 2; ++turn) {
    json next = Body(msgs);
    next["stream"] = true;
    auto again = Post(proxy_.port, kToken, next, "p-2");
    ASSERT_EQ(again.status, 200) << "turn " << turn << ": " << again.body;
    EXPECT_EQ(again.headers["x-switchyard-workflow-id"], wf) << "one session, one workflow";
    EXPECT_NE(again.body.find("data: [DONE]"), std::string::npos) << again.body;
    msgs.push_back({{"role", "assistant"}, {"content", "streamed"}});
    msgs.push_back({{"role", "user"}, {"content", "once more"}});
  }
}

// Steering reads a stream's usage even where the client did not ask for it
// (stream_options.include_usage, added on the way up); the usage event, whose choices are
// empty, does not reach that client. A client that asked gets it.
TEST_F(OpenAiProxyTest, SteeringReadsAStreamsUsageWithoutHandingItToAClientThatDidNotAsk) {
  auto usage_events = [](const std::string& sse) {
    int n = 0;
    for (size_t at = 0; (at = sse.find("\"choices\":[]", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  json body = Body({{{"role", "user"}, {"content", "stream without usage"}}});
  body["stream"] = true;
  auto plain = Post(proxy_.port, kToken, body, "u-1");
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(usage_events(plain.body), 0) << plain.body;
  EXPECT_NE(plain.body.find("data: [DONE]"), std::string::npos) << plain.body;
  json u;
  EXPECT_TRUE(testing::WaitUntil([&] {  // the tap applies the usage when the stream ends
    u = Get(proxy_.port, (std::string(kToken) + "-admin").c_str(), "/v1/cluster")["upstreams"][0];
    return std::stoll(u.value("promptTokens", std::string("0"))) > 0;
  })) << u.dump();
  body["stream_options"] = {{"include_usage", true}};
  auto asked = Post(proxy_.port, kToken, body, "u-2");
  ASSERT_EQ(asked.status, 200) << asked.body;
  EXPECT_EQ(usage_events(asked.body), 1) << asked.body;
}

// An upstream that fails a call (5xx) or answers in shapes the front does not expect
// (wrong JSON types where it looks for usage and tool calls): each answer goes back
// unchanged, the proxy stays up, and the session goes on — a failed call's workflow is
// replaced by a new one on the session's next request.
TEST(OpenAiProxyFaultsTest, UpstreamFailuresAndOddAnswersLeaveTheSessionUsable) {
  const std::vector<std::pair<int, std::string>> answers = {
      {500, R"({"error":{"message":"upstream broke"}})"},
      {200,
       R"({"id":"a","object":"chat.completion","choices":[1],"usage":{"completion_tokens":null}})"},
      {200,
       R"({"id":"b","choices":[{"message":{"tool_calls":[{"function":{"name":7}},"x"]}}],"usage":"n"})"},
      {200,
       R"({"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"completion_tokens":1}})"}};
  std::atomic<size_t> next{0};
  http::HttpServerOptions ho;
  ho.port = 0;
  ho.threads = 2;
  http::HttpServer upstream(ho, [&](const http::HttpRequest&, http::HttpServer::Respond done) {
    const auto& [status, body] = answers[std::min(next.fetch_add(1), answers.size() - 1)];
    done(http::HttpResponse{status, "application/json", {}, body});
  });
  auto up_port = upstream.Start();
  ASSERT_TRUE(up_port.ok()) << up_port.status();
  Server proxy;
  proxy.Start(::testing::TempDir() + "/sy_proxy_faults_" + std::to_string(::getpid()), kToken,
              "http://127.0.0.1:" + std::to_string(*up_port));
  json body = {{"model", kModel},
               {"messages", {{{"role", "user"}, {"content", "hello"}}}},
               {"max_tokens", 4}};
  std::set<std::string> workflows;
  for (size_t i = 0; i < answers.size(); ++i) {
    auto r = testing::Request(proxy.port, "POST", "/v1/chat/completions", body.dump(),
                              {{"Authorization", std::string("Bearer ") + kToken},
                               {"Content-Type", "application/json"},
                               {"x-session-id", "faulty"}});
    EXPECT_EQ(r.status, answers[i].first) << "answer " << i << ": " << r.body;
    EXPECT_EQ(r.body, answers[i].second) << "answer " << i;
    workflows.insert(r.headers["x-switchyard-workflow-id"]);
  }
  EXPECT_EQ(next.load(), answers.size());
  EXPECT_EQ(workflows.size(), 2u) << "a new workflow after the failed call, then one workflow";
  upstream.Stop();
}

}  // namespace
}  // namespace switchyard::frontends
