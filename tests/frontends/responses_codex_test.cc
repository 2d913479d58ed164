// A Codex turn through the Responses front's protocol layer: a request body and headers
// modelled on what Codex CLI sends on a later turn of a session (instructions; developer and
// user messages of input_text parts; a reasoning item with encrypted content; function calls
// and their outputs; function, namespace and hosted tools; store false; include; reasoning;
// prompt_cache_key) parse into the expected Conversation, with what is ignored listed, and
// its answer streams and stores as Codex reads it back.
#include <gtest/gtest.h>

#include "frontends/responses/responses_protocol.h"

namespace switchyard::frontends::responses {
namespace {

constexpr char kCodexTurn[] = R"json({
  "model": "gpt-5-codex",
  "instructions": "You are Codex, based on GPT-5. You are running as a coding agent in the Codex CLI on a user's computer.",
  "input": [
    {"type": "message", "role": "developer", "content": [
      {"type": "input_text", "text": "<permissions instructions>\nFilesystem sandboxing: workspace-write.\n</permissions instructions>"}]},
    {"type": "message", "role": "user", "content": [
      {"type": "input_text", "text": "# AGENTS.md instructions for /repo\n\nRun ctest before committing."}]},
    {"type": "message", "role": "user", "content": [
      {"type": "input_text", "text": "<environment_context>\n  <cwd>/repo</cwd>\n  <shell>bash</shell>\n</environment_context>"}]},
    {"type": "message", "role": "user", "content": [
      {"type": "input_text", "text": "fix the failing parser test"}]},
    {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAABo-opaque-blob"},
    {"type": "function_call", "name": "shell_command",
     "arguments": "{\"command\":\"ctest -R parser\",\"workdir\":\"/repo\"}", "call_id": "call_kX1"},
    {"type": "function_call_output", "call_id": "call_kX1",
     "output": "Exit code: 8\nWall time: 1.2 seconds\nOutput:\n1 test failed\n"},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Searching docs**"}],
     "encrypted_content": "gAAAAABo-another"},
    {"type": "function_call", "name": "search", "namespace": "mcp__docs__",
     "arguments": "{\"query\":\"parser grammar\"}", "call_id": "call_kX2"},
    {"type": "function_call_output", "call_id": "call_kX2",
     "output": [{"type": "input_text", "text": "grammar.md: rule 4"}]},
    {"type": "message", "role": "assistant", "content": [
      {"type": "output_text", "text": "The test expects rule 4. Shall I apply the fix?"}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "yes"}]}
  ],
  "tools": [
    {"type": "function", "name": "shell_command",
     "description": "Runs a shell command and returns its output.", "strict": false,
     "parameters": {"type": "object", "properties": {
       "command": {"type": "string", "description": "The shell script to execute"},
       "workdir": {"type": "string"}, "timeout_ms": {"type": "number"}},
       "required": ["command"], "additionalProperties": false}},
    {"type": "function", "name": "update_plan", "description": "Updates the task plan.",
     "strict": false, "parameters": {"type": "object", "properties": {
       "plan": {"type": "array", "items": {"type": "object"}}}, "required": ["plan"],
       "additionalProperties": false}},
    {"type": "namespace", "name": "mcp__docs__",
     "description": "Tools in the mcp__docs__ namespace.",
     "tools": [{"type": "function", "name": "search", "description": "Search the docs.",
                "strict": false, "defer_loading": true, "parameters": {"type": "object",
                "properties": {"query": {"type": "string"}}, "required": ["query"]}}]},
    {"type": "web_search", "external_web_access": false}
  ],
  "tool_choice": "auto",
  "parallel_tool_calls": false,
  "reasoning": {"effort": "medium", "summary": "auto"},
  "store": false,
  "stream": true,
  "include": ["reasoning.encrypted_content"],
  "prompt_cache_key": "0199a213-81c0-7800-8aa1-bbab2a035a53",
  "text": {"verbosity": "low"}
})json";

const std::map<std::string, std::string> kCodexHeaders = {
    {"authorization", "Bearer sk-test-123"},
    {"chatgpt-account-id", "acct-1"},
    {"originator", "codex_cli_rs"},
    {"openai-beta", "responses=experimental"},
    {"session-id", "0199a213-81c0-7800-8aa1-bbab2a035a53"},
    {"thread-id", "0199a213-81c0-7800-8aa1-bbab2a035a53"},
    {"version", "0.58.0"},
    {"x-client-request-id", "0199a213-81c0-7800-8aa1-bbab2a035a53"},
    {"x-codex-turn-metadata", "{}"}};

TEST(ResponsesCodexTest, ATurnParsesIntoTheConversation) {
  auto r = ParseCreate(kCodexTurn);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->stream);
  EXPECT_FALSE(r->store);
  EXPECT_FALSE(r->parallel_tool_calls);
  EXPECT_EQ(r->prompt_cache_key, "0199a213-81c0-7800-8aa1-bbab2a035a53");
  EXPECT_EQ(r->ignored, (std::vector<std::string>{"reasoning", "include", "tools[3] (web_search)",
                                                  "input[4] (reasoning)", "text.verbosity"}));
  Conversation c = ToConversation(*r);
  EXPECT_EQ(c.model, "gpt-5-codex");
  struct Expected {
    const char* role;
    std::string content;
    std::vector<ToolCall> calls;
    const char* tool_call_id = "";
    const char* name = "";
  };
  const std::vector<Expected> expected = {
      {"system",
       "You are Codex, based on GPT-5. You are running as a coding agent in the Codex "
       "CLI on a user's computer.",
       {}},
      {"developer",
       "<permissions instructions>\nFilesystem sandboxing: workspace-write.\n</permissions "
       "instructions>",
       {}},
      {"user", "# AGENTS.md instructions for /repo\n\nRun ctest before committing.", {}},
      {"user",
       "<environment_context>\n  <cwd>/repo</cwd>\n  <shell>bash</shell>\n</environment_context>",
       {}},
      {"user", "fix the failing parser test", {}},
      {"assistant",
       "",
       {{"call_kX1", "shell_command", R"({"command":"ctest -R parser","workdir":"/repo"})"}}},
      {"tool",
       "Exit code: 8\nWall time: 1.2 seconds\nOutput:\n1 test failed\n",
       {},
       "call_kX1",
       "shell_command"},
      {"assistant", "", {{"call_kX2", "search", R"({"query":"parser grammar"})"}}},
      {"tool", "grammar.md: rule 4", {}, "call_kX2", "search"},
      {"assistant", "The test expects rule 4. Shall I apply the fix?", {}},
      {"user", "yes", {}},
  };
  ASSERT_EQ(c.messages.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("message " + std::to_string(i));
    const Message& m = c.messages[i];
    EXPECT_EQ(m.role, expected[i].role);
    EXPECT_EQ(m.content, expected[i].content);
    EXPECT_EQ(m.tool_call_id, expected[i].tool_call_id);
    EXPECT_EQ(m.name, expected[i].name);
    ASSERT_EQ(m.tool_calls.size(), expected[i].calls.size());
    for (size_t k = 0; k < m.tool_calls.size(); ++k) {
      EXPECT_EQ(m.tool_calls[k].id, expected[i].calls[k].id);
      EXPECT_EQ(m.tool_calls[k].name, expected[i].calls[k].name);
      EXPECT_EQ(m.tool_calls[k].arguments, expected[i].calls[k].arguments);
    }
  }
  ASSERT_EQ(c.tools.size(), 3u);
  EXPECT_EQ(c.tools[0].name, "shell_command");
  EXPECT_EQ(c.tools[1].name, "update_plan");
  EXPECT_EQ(c.tools[2].name, "search");
  EXPECT_EQ(c.tools[2].description, "Search the docs.");
  EXPECT_EQ(c.tools[2].parameters_json,
            R"({"type":"object","properties":{"query":{"type":"string"}},"required":["query"]})");
  EXPECT_EQ(c.tool_choice.kind, ToolChoice::Kind::kAuto);
  EXPECT_FALSE(c.parallel_tool_calls);
}

TEST(ResponsesCodexTest, HeadersNameTheThread) {
  auto h = ParseHeaders(kCodexHeaders);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->originator, "codex_cli_rs");
  EXPECT_EQ(h->bearer_token, "sk-test-123");
  EXPECT_EQ(h->client_request_id, "0199a213-81c0-7800-8aa1-bbab2a035a53");
  EXPECT_EQ(h->ignored, (std::vector<std::string>{"chatgpt-account-id", "openai-beta", "version",
                                                  "x-codex-turn-metadata"}));
  auto r = ParseCreate(kCodexTurn);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(SessionIdOf(*h, *r), "0199a213-81c0-7800-8aa1-bbab2a035a53");
}

// Codex calls a namespaced function: the streamed item and the stored response name it as
// Codex declared it (name + namespace), and the next turn maps it back.
TEST(ResponsesCodexTest, ANamespacedCallRoundTrips) {
  auto r = ParseCreate(kCodexTurn);
  ASSERT_TRUE(r.ok());
  StoredResponse head = NewResponse(*r, "resp_codex1", 1700000000);
  ResponsesStream stream(r->routes);
  std::string sse = stream.Start(head);
  sse += stream.ToolCall({"call_kX3", "search", R"({"query":"rule 4"})"});
  StoredResponse final = head;
  ApplyAnswer(Answer{.tool_calls = {{"call_kX3", "search", R"({"query":"rule 4"})"}},
                     .end = Answer::End::kToolCalls,
                     .prompt_tokens = 900,
                     .completion_tokens = 12,
                     .cached_tokens = 850},
              r->routes, &final);
  sse += stream.Finish(final);
  EXPECT_NE(sse.find(R"("name":"search","namespace":"mcp__docs__")"), std::string::npos) << sse;
  ASSERT_EQ(final.output.size(), 1u);
  EXPECT_EQ(final.output[0].tool_namespace, "mcp__docs__");
  auto stored = StoredResponse::FromJson(final.ToJson());
  ASSERT_TRUE(stored.ok()) << stored.status();
  auto next = ParseCreate(
      R"({"model":"gpt-5-codex","previous_response_id":"resp_codex1","tools":[{"type":"namespace","name":"mcp__docs__","tools":[{"type":"function","name":"search"}]}],"input":[{"type":"function_call_output","call_id":"call_kX3","output":"ok"}]})");
  ASSERT_TRUE(next.ok()) << next.status();
  Conversation c = ChainConversation({*stored}, *next);
  ASSERT_GE(c.messages.size(), 2u);
  const Message& call = c.messages[c.messages.size() - 2];
  ASSERT_EQ(call.tool_calls.size(), 1u);
  EXPECT_EQ(call.tool_calls[0].name, "search");
  EXPECT_EQ(c.messages.back().name, "search");
}

}  // namespace
}  // namespace switchyard::frontends::responses
