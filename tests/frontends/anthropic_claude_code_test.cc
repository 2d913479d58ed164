// A request as Claude Code sends it (system text blocks with cache_control, JSON-schema
// tools and a hosted one, thinking, metadata.user_id holding a JSON string with the
// session id, a mid-conversation system message, tool_use / tool_result turns), and the
// Conversation, breakpoints, ignored names and session key it must become.
#include <gtest/gtest.h>

#include "frontends/anthropic/anthropic_protocol.h"

namespace switchyard::frontends::anthropic {
namespace {

constexpr char kClaudeCodeBody[] = R"json({
  "model": "claude-sonnet-4-5-20250929",
  "messages": [
    {"role": "user", "content": [
      {"type": "text", "text": "<system-reminder>\nThis is a reminder: CLAUDE.md says run `make check` before committing.\n</system-reminder>"},
      {"type": "text", "text": "The test in tests/parse_test.cc fails, fix it"}]},
    {"role": "assistant", "content": [
      {"type": "thinking", "thinking": "I should run the test first.", "signature": "EqQBCkYIBxgCKkBz"},
      {"type": "text", "text": "I'll run the failing test."},
      {"type": "tool_use", "id": "toolu_01A9", "name": "Bash",
       "input": {"command": "ctest -R parse", "description": "Run the parse tests", "timeout": 120000}}]},
    {"role": "user", "content": [
      {"tool_use_id": "toolu_01A9", "type": "tool_result", "is_error": true,
       "content": "FAILED: ParseTest.Empty\nExpected: 0\n  Actual: 1"}]},
    {"role": "assistant", "content": [
      {"type": "tool_use", "id": "toolu_01B2", "name": "Read", "input": {"file_path": "/repo/parse.cc"}},
      {"type": "tool_use", "id": "toolu_01C3", "name": "Grep",
       "input": {"pattern": "Empty", "path": "/repo/tests", "output_mode": "content", "-n": true}}]},
    {"role": "user", "content": [
      {"tool_use_id": "toolu_01B2", "type": "tool_result",
       "content": [{"type": "text", "text": "     1\tint Parse(std::string_view s) {\n     2\t  return s.empty();\n     3\t}"}]},
      {"tool_use_id": "toolu_01C3", "type": "tool_result", "content": "tests/parse_test.cc:7:TEST(ParseTest, Empty)"},
      {"type": "text", "text": "<system-reminder>\nThe TodoWrite tool hasn't been used recently.\n</system-reminder>"}]},
    {"role": "system", "content": "Note: /repo/parse.cc was modified by the user since it was read."},
    {"role": "user", "content": [
      {"type": "text", "text": "also keep the old behaviour for null input",
       "cache_control": {"type": "ephemeral"}}]}
  ],
  "temperature": 1,
  "system": [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.",
     "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "\nYou are an interactive CLI tool that helps users with software engineering tasks.\n\n# Tone and style\nBe concise.",
     "cache_control": {"type": "ephemeral"}}
  ],
  "tools": [
    {"name": "Bash", "description": "Executes a given bash command in a persistent shell session.",
     "input_schema": {"type": "object", "properties": {
        "command": {"type": "string", "description": "The command to execute"},
        "timeout": {"type": "number", "description": "Optional timeout in milliseconds (max 600000)"},
        "description": {"type": "string", "description": "Clear, concise description of what this command does in 5-10 words"},
        "run_in_background": {"type": "boolean"}},
      "required": ["command"], "additionalProperties": false,
      "$schema": "http://json-schema.org/draft-07/schema#"}},
    {"name": "Read", "description": "Reads a file from the local filesystem.",
     "input_schema": {"type": "object", "properties": {
        "file_path": {"type": "string", "description": "The absolute path to the file to read"},
        "offset": {"type": "number"}, "limit": {"type": "number"}},
      "required": ["file_path"], "additionalProperties": false,
      "$schema": "http://json-schema.org/draft-07/schema#"}},
    {"name": "Grep", "description": "A powerful search tool built on ripgrep.",
     "input_schema": {"type": "object", "properties": {
        "pattern": {"type": "string"}, "path": {"type": "string"},
        "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
        "-n": {"type": "boolean"}},
      "required": ["pattern"], "additionalProperties": false,
      "$schema": "http://json-schema.org/draft-07/schema#"}},
    {"name": "TodoWrite", "description": "Create and manage a structured task list.",
     "input_schema": {"type": "object", "properties": {
        "todos": {"type": "array", "items": {"type": "object", "properties": {
          "content": {"type": "string", "minLength": 1},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
          "activeForm": {"type": "string", "minLength": 1}},
          "required": ["content", "status", "activeForm"], "additionalProperties": false}}},
      "required": ["todos"], "additionalProperties": false,
      "$schema": "http://json-schema.org/draft-07/schema#"},
     "cache_control": {"type": "ephemeral"}},
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 8}
  ],
  "metadata": {"user_id": "{\"device_id\":\"3f9c0d7e1b2a4c5d\",\"account_uuid\":\"8a1b2c3d-0000-4e5f-9a8b-7c6d5e4f3a2b\",\"session_id\":\"1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f\"}"},
  "max_tokens": 32000,
  "thinking": {"type": "enabled", "budget_tokens": 31999},
  "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
  "stream": true
})json";

TEST(AnthropicClaudeCodeTest, ParsesIntoTheExpectedConversation) {
  auto parsed = ParseMessages(kClaudeCodeBody);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const MessagesRequest& r = *parsed;
  const Conversation& c = r.conversation;
  EXPECT_EQ(c.model, "claude-sonnet-4-5-20250929");
  EXPECT_EQ(c.sampling.max_tokens, 32000);
  EXPECT_DOUBLE_EQ(c.sampling.temperature, 1.0);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.thinking.type, Thinking::Type::kEnabled);
  EXPECT_EQ(r.thinking.budget_tokens, 31999);
  EXPECT_EQ(r.metadata_session_id, "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f");
  EXPECT_FALSE(r.assistant_prefill);

  struct Turn {
    std::string role, content, tool_call_id;
    size_t calls = 0;
    bool is_error = false;
    std::string reasoning;
  };
  const std::vector<Turn> want = {
      {"system",
       "You are Claude Code, Anthropic's official CLI for Claude.\n\nYou are an interactive CLI "
       "tool that helps users with software engineering tasks.\n\n# Tone and style\nBe concise."},
      {"user",
       "<system-reminder>\nThis is a reminder: CLAUDE.md says run `make check` before "
       "committing.\n</system-reminder>\nThe test in tests/parse_test.cc fails, fix it"},
      {"assistant", "I'll run the failing test.", "", 1, false, "I should run the test first."},
      {"tool", "FAILED: ParseTest.Empty\nExpected: 0\n  Actual: 1", "toolu_01A9", 0, true},
      {"assistant", "", "", 2},
      {"tool", "     1\tint Parse(std::string_view s) {\n     2\t  return s.empty();\n     3\t}",
       "toolu_01B2"},
      {"tool", "tests/parse_test.cc:7:TEST(ParseTest, Empty)", "toolu_01C3"},
      {"user",
       "<system-reminder>\nThe TodoWrite tool hasn't been used recently.\n</system-reminder>"},
      {"system", "Note: /repo/parse.cc was modified by the user since it was read."},
      {"user", "also keep the old behaviour for null input"},
  };
  ASSERT_EQ(c.messages.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const Message& m = c.messages[i];
    EXPECT_EQ(m.role, want[i].role) << i;
    EXPECT_EQ(m.content, want[i].content) << i;
    EXPECT_EQ(m.tool_call_id, want[i].tool_call_id) << i;
    EXPECT_EQ(m.tool_calls.size(), want[i].calls) << i;
    EXPECT_EQ(m.is_error, want[i].is_error) << i;
    EXPECT_EQ(m.reasoning, want[i].reasoning) << i;
  }
  EXPECT_EQ(c.messages[2].tool_calls[0].id, "toolu_01A9");
  EXPECT_EQ(c.messages[2].tool_calls[0].name, "Bash");
  EXPECT_EQ(c.messages[2].tool_calls[0].arguments,
            R"({"command":"ctest -R parse","description":"Run the parse tests","timeout":120000})");
  EXPECT_EQ(c.messages[4].tool_calls[1].name, "Grep");
  EXPECT_EQ(c.messages[4].tool_calls[1].arguments,
            R"({"pattern":"Empty","path":"/repo/tests","output_mode":"content","-n":true})");

  ASSERT_EQ(c.tools.size(), 4u);
  EXPECT_EQ(c.tools[0].name, "Bash");
  EXPECT_EQ(c.tools[3].name, "TodoWrite");
  EXPECT_EQ(c.tools[1].parameters_json.rfind(R"({"type":"object","properties":{"file_path")", 0),
            0u)
      << "schemas keep the client's key order";
  EXPECT_EQ(c.tool_choice.kind, ToolChoice::Kind::kAuto);
  EXPECT_EQ(r.ignored, (std::vector<std::string>{"thinking", "context_management",
                                                 "tools[4]:web_search_20250305"}));
}

TEST(AnthropicClaudeCodeTest, BreakpointsSessionAndIgnoredHeader) {
  auto r = ParseMessages(kClaudeCodeBody);
  ASSERT_TRUE(r.ok()) << r.status();
  using On = CacheBreakpoint::On;
  ASSERT_EQ(r->cache_breakpoints.size(), 4u);
  EXPECT_EQ(r->cache_breakpoints[0].on, On::kTool);
  EXPECT_EQ(r->cache_breakpoints[0].tool, 3);
  EXPECT_EQ(r->cache_breakpoints[1].on, On::kSystem);
  EXPECT_EQ(r->cache_breakpoints[1].index, 0u);
  EXPECT_EQ(r->cache_breakpoints[2].index, 1u);
  EXPECT_EQ(r->cache_breakpoints[2].message, 0);
  EXPECT_EQ(r->cache_breakpoints[3].on, On::kMessage);
  EXPECT_EQ(r->cache_breakpoints[3].index, 6u);
  EXPECT_EQ(r->cache_breakpoints[3].message, 9) << "the last turn: the whole prompt";

  Headers h = ParseHeaders({{"x-api-key", "sk-local"},
                            {"anthropic-version", "2023-06-01"},
                            {"anthropic-beta",
                             "claude-code-20250219,interleaved-thinking-2025-05-14,"
                             "fine-grained-tool-streaming-2025-05-14"},
                            {"x-claude-code-agent-id", "agent-7"}});
  SessionKey key = SessionKeyOf(h, *r);
  EXPECT_EQ(key.session_id, "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f");
  EXPECT_FALSE(key.from_user);
  EXPECT_EQ(key.Key(), "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f/agent/agent-7");
  EXPECT_EQ(IgnoredHeaderValue(IgnoredOf(h, *r)),
            "thinking, context_management, tools[4]:web_search_20250305, "
            "anthropic-beta:claude-code-20250219, "
            "anthropic-beta:interleaved-thinking-2025-05-14, "
            "anthropic-beta:fine-grained-tool-streaming-2025-05-14");
}

TEST(AnthropicClaudeCodeTest, CountTokensOfTheSameConversation) {
  // Claude Code counts tokens with the same messages, system and tools, without max_tokens.
  std::string body = kClaudeCodeBody;
  const std::string max_tokens = "\"max_tokens\": 32000,";
  body.erase(body.find(max_tokens), max_tokens.size());
  auto counted = ParseCountTokens(body);
  auto full = ParseMessages(kClaudeCodeBody);
  ASSERT_TRUE(counted.ok()) << counted.status();
  ASSERT_TRUE(full.ok());
  ASSERT_EQ(counted->conversation.messages.size(), full->conversation.messages.size());
  EXPECT_EQ(counted->conversation.tools.size(), full->conversation.tools.size());
  EXPECT_EQ(counted->ignored,
            (std::vector<std::string>{"temperature", "metadata", "thinking", "context_management",
                                      "stream", "tools[4]:web_search_20250305"}));
}

}  // namespace
}  // namespace switchyard::frontends::anthropic
