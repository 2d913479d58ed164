// The Anthropic front's headers: the API key (x-api-key or a bearer token), the version and
// betas, Claude Code's session and agent ids, the session key and the x-switchyard-ignored
// value.
#include <gtest/gtest.h>

#include "frontends/anthropic/anthropic_protocol.h"

namespace switchyard::frontends::anthropic {
namespace {

TEST(AnthropicHeadersTest, ReadsEveryHeader) {
  Headers h = ParseHeaders({{"x-api-key", " sk-ant-1 "},
                            {"authorization", "Bearer other"},
                            {"anthropic-version", "2023-06-01"},
                            {"anthropic-beta", " a-1 ,, b-2,"},
                            {"x-claude-code-session-id", "s-1"},
                            {"x-claude-code-agent-id", "agent-2"},
                            {"x-session-id", "generic"}});
  EXPECT_EQ(h.api_key, "sk-ant-1");
  EXPECT_FALSE(h.api_key_from_bearer);
  EXPECT_EQ(h.version, "2023-06-01");
  EXPECT_FALSE(h.version_missing);
  EXPECT_EQ(h.betas, (std::vector<std::string>{"a-1", "b-2"}));
  EXPECT_EQ(h.claude_code_session_id, "s-1");
  EXPECT_EQ(h.claude_code_agent_id, "agent-2");
  EXPECT_EQ(h.session_id, "generic");
}

TEST(AnthropicHeadersTest, MissingHeadersAndTheBearerFallback) {
  Headers none = ParseHeaders({});
  EXPECT_EQ(none.api_key, "");
  EXPECT_TRUE(none.version_missing);
  EXPECT_TRUE(none.betas.empty());
  Headers bearer = ParseHeaders({{"authorization", "bEaReR  tok-9"}});
  EXPECT_EQ(bearer.api_key, "tok-9");
  EXPECT_TRUE(bearer.api_key_from_bearer);
  EXPECT_EQ(ParseHeaders({{"authorization", "Basic dXNlcg=="}}).api_key, "");
  EXPECT_EQ(ParseHeaders({{"authorization", "Bearer "}}).api_key, "");
}

TEST(AnthropicHeadersTest, SessionKeyPrecedence) {
  MessagesRequest r;
  r.metadata_user_id = "user-1";
  SessionKey k = SessionKeyOf(ParseHeaders({}), r);
  EXPECT_EQ(k.Key(), "user-1");
  EXPECT_TRUE(k.from_user);
  r.metadata_session_id = "meta-s";
  EXPECT_EQ(SessionKeyOf(ParseHeaders({}), r).Key(), "meta-s");
  EXPECT_FALSE(SessionKeyOf(ParseHeaders({}), r).from_user);
  EXPECT_EQ(SessionKeyOf(ParseHeaders({{"x-session-id", "x-s"}}), r).Key(), "x-s");
  Headers cc = ParseHeaders({{"x-session-id", "x-s"},
                             {"x-claude-code-session-id", "cc-s"},
                             {"x-claude-code-agent-id", "sub"}});
  EXPECT_EQ(SessionKeyOf(cc, r).Key(), "cc-s/agent/sub");
  EXPECT_EQ(
      SessionKeyOf(ParseHeaders({{"x-claude-code-agent-id", "sub"}}), MessagesRequest{}).Key(), "")
      << "an agent without a session names none";
}

TEST(AnthropicHeadersTest, IgnoredHeaderValueIsSafe) {
  MessagesRequest r;
  r.ignored = {"top_k", "tools[2]:web_search_20250305", "evil\r\nx-injected: 1", "\xff\xfe", ","};
  Headers h = ParseHeaders({{"anthropic-beta", "b1"}});
  EXPECT_EQ(IgnoredHeaderValue(IgnoredOf(h, r)),
            "top_k, tools[2]:web_search_20250305, evilx-injected:1, anthropic-beta:b1");
  EXPECT_EQ(IgnoredHeaderValue({}), "");
  EXPECT_EQ(IgnoredHeaderValue({std::string(100, 'a')}), std::string(64, 'a'));
  std::vector<std::string> many(100, std::string(60, 'n'));
  const std::string v = IgnoredHeaderValue(many);
  EXPECT_LE(v.size(), 2048u);
  EXPECT_EQ(v.substr(v.size() - 5), ", ...");
}

}  // namespace
}  // namespace switchyard::frontends::anthropic
