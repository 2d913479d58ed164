// Native serving on the CPU engine reuses a system prompt that another session computed
// (automatic prefix caching, `serve --prefix-caching on`, the default): a second session
// with the same preamble reports it cached on its first turn and answers what it answers
// when everything is computed; with prefix caching off it computes the preamble again.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <string>

#include "tests/frontends/fronts_test_util.h"
#include "tests/frontends/proxy_server.h"
#include "tests/http/http_test_client.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;

struct PreambleRun {
  int64_t prompt = 0, cached = 0;  // the second session's first turn
  std::string text;                // its answer
};

PreambleRun SecondSessionOf(bool caching) {
  testing::ProxyTestServer server;
  testing::ProxyTestOptions o;
  o.prefix_caching = caching;
  server.Start(::testing::TempDir() + "/sy_preamble_" + (caching ? "on" : "off") +
                   std::to_string(::getpid()),
               testing::kToken, "", o);
  std::string preamble = "You are a careful coding agent. ";
  while (preamble.size() < 600) preamble += "Read the file before editing it. ";
  json last;
  for (const char* session : {"first", "second"}) {
    json body = {
        {"model", testing::kModel},
        {"messages",
         {{{"role", "system"}, {"content", preamble}},
          {{"role", "user"}, {"content", std::string("task of the ") + session + " session"}}}},
        {"max_tokens", 4},
        {"temperature", 0}};
    auto r = testing::Request(server.port, "POST", "/v1/chat/completions", body.dump(),
                              {{"Authorization", std::string("Bearer ") + testing::kToken},
                               {"Content-Type", "application/json"},
                               {"x-session-id", session}});
    EXPECT_EQ(r.status, 200) << r.body;
    last = json::parse(r.body, nullptr, false);
  }
  PreambleRun out;
  if (!last.is_object() || !last.contains("usage")) return out;
  out.prompt = last["usage"].value("prompt_tokens", int64_t{0});
  out.cached = last["usage"]["prompt_tokens_details"].value("cached_tokens", int64_t{0});
  out.text = last["choices"][0]["message"].value("content", "");
  return out;
}

TEST(SharedPreamble, ASecondSessionReusesTheSystemPromptOnlyWithPrefixCaching) {
  const PreambleRun on = SecondSessionOf(true);
  const PreambleRun off = SecondSessionOf(false);
  ASSERT_GT(on.prompt, 600);  // a byte vocabulary: a token a byte, and the chat format
  EXPECT_EQ(on.prompt, off.prompt);
  // Whole blocks of the shared preamble, not the session's own message.
  EXPECT_GE(on.cached, 512) << "the first session's preamble found in the prefix cache";
  EXPECT_LT(on.cached, on.prompt);
  EXPECT_EQ(off.cached, 0) << "prefix caching off: the preamble computed again";
  EXPECT_EQ(on.text, off.text) << "reused KV answers what computed KV answers (greedy)";
}

}  // namespace
}  // namespace switchyard::frontends
