// Proxy mode's translation against a fake Chat Completions upstream on loopback: what the
// upstream is sent (POST /v1/chat/completions, the upstream's key, none of the client's
// headers), and its failures — a 5xx, an answer that is not a chat completion, a stream
// that stops before its answer ends — each coming back in the front's error shape while the
// proxy stays up and the session goes on in a new workflow.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "tests/frontends/proxy_server.h"
#include "tests/http/http_test_client.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;
using testing::kModel;
using testing::kToken;
using testing::kUpToken;

// The fake upstream's answers, in order (the last one repeats): a status and a body, or an
// event stream ("stream": its bytes, then the end).
struct Canned {
  int status;
  std::string body;
  bool stream = false;
};

TEST(TranslateProxyFaultsTest, UpstreamFailuresComeBackInTheFrontsShapeAndTheSessionGoesOn) {
  const std::vector<Canned> answers = {
      {500, R"({"error":{"message":"upstream broke","type":"server_error"}})"},
      {200, R"({"id":"x","choices":"none"})"},
      {200, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n", true},
      {200, R"({"choices":[{"index":0,"message":{"role":"assistant","content":"fine"},
                "finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}})"}};
  Mutex mu;
  std::vector<http::HttpRequest> seen;  // guarded by mu
  http::HttpServerOptions ho;
  ho.port = 0;
  ho.threads = 2;
  http::HttpServer upstream(ho, [&](const http::HttpRequest& req, http::HttpServer::Respond done) {
    size_t n;
    {
      MutexLock lock(&mu);
      seen.push_back(req);
      n = std::min(seen.size() - 1, answers.size() - 1);
    }
    const Canned& a = answers[n];
    if (!a.stream) return done(http::HttpResponse{a.status, "application/json", {}, a.body});
    auto stream = std::make_shared<http::ResponseStream>();
    http::HttpResponse r{a.status, "text/event-stream", {}, ""};
    r.stream = stream;
    stream->Write(a.body);
    stream->Close();  // no finish_reason, no [DONE]
    done(std::move(r));
  });
  auto up_port = upstream.Start();
  ASSERT_TRUE(up_port.ok()) << up_port.status();
  testing::ProxyTestServer proxy;
  proxy.Start(::testing::TempDir() + "/sy_translate_faults_" + std::to_string(::getpid()), kToken,
              "http://127.0.0.1:" + std::to_string(*up_port) + "#chat");

  auto send = [&](bool stream) {
    json body = {{"model", kModel},
                 {"messages", {{{"role", "user"}, {"content", "hello"}}}},
                 {"max_tokens", 4},
                 {"stream", stream}};
    return testing::Request(proxy.port, "POST", "/v1/messages", body.dump(),
                            {{"x-api-key", kToken},
                             {"anthropic-version", "2023-06-01"},
                             {"content-type", "application/json"},
                             {"x-claude-code-session-id", "faulty"}});
  };
  std::set<std::string> workflows;
  auto failed = send(false);
  EXPECT_EQ(failed.status, 500) << failed.body;
  json e = json::parse(failed.body, nullptr, false);
  EXPECT_EQ(e["type"], "error") << failed.body;
  EXPECT_EQ(e["error"]["type"], "api_error") << failed.body;
  EXPECT_EQ(e["error"]["message"], "the upstream answered 500: upstream broke");
  workflows.insert(failed.headers["x-switchyard-workflow-id"]);

  auto odd = send(false);
  EXPECT_EQ(odd.status, 500) << odd.body;
  EXPECT_NE(odd.body.find("not a chat completion"), std::string::npos) << odd.body;

  auto cut = send(true);
  EXPECT_EQ(cut.status, 200) << cut.body;
  EXPECT_NE(cut.body.find("\"text\":\"half\""), std::string::npos) << "the text that came";
  EXPECT_NE(cut.body.find("event: error"), std::string::npos) << cut.body;
  EXPECT_EQ(cut.body.find("message_stop"), std::string::npos) << cut.body;

  auto fine = send(false);
  ASSERT_EQ(fine.status, 200) << fine.body;
  EXPECT_EQ(json::parse(fine.body)["content"][0]["text"], "fine");
  workflows.insert(fine.headers["x-switchyard-workflow-id"]);
  EXPECT_EQ(workflows.size(), 2u) << "a failed call's session goes on in a new workflow";

  MutexLock lock(&mu);
  ASSERT_EQ(seen.size(), 4u);
  for (const http::HttpRequest& req : seen) {
    EXPECT_EQ(req.method + " " + req.target, "POST /v1/chat/completions");
    EXPECT_EQ(req.Header("authorization"), std::string("Bearer ") + kUpToken);
    EXPECT_EQ(req.Header("x-api-key"), "") << "the client's credentials stay here";
    EXPECT_EQ(req.Header("x-claude-code-session-id"), "");
  }
  EXPECT_EQ(json::parse(seen[2].body)["stream_options"]["include_usage"], true);
  upstream.Stop();
}

}  // namespace
}  // namespace switchyard::frontends
