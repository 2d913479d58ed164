// Agent-shaped sessions through a live server (loopback, the CPU engine on a tiny model with
// random weights): three-turn conversations replayed in the exact request shapes Claude Code
// (Messages) and Codex (Responses) send — their headers, system/instructions, tools with
// their JSON schemas, session naming, and the whole conversation re-sent each turn with
// the assistant turn as the server answered it. Turn 1 forces a shell tool, turn 2 returns
// its result and forces a file-reading tool, turn 3 returns that result. The random model
// never calls a tool on its own, so the calls are forced (tool_choice) where these clients
// leave the choice to the model. Each session is one workflow whose tool-wait nodes are
// named after the client's tools, and later turns read the session's context from cache
// (cache_read_input_tokens / input_tokens_details.cached_tokens > 0), whole and streamed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "serve/http_api.h"
#include "tests/frontends/fronts_test_util.h"
#include "tests/frontends/sse_events.h"
#include "tests/http/http_test_client.h"
#include "tests/serve/loopback_api.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;

constexpr char kAgentSessionsToken[] = "agent-sessions-tenant-token-0123";
using testing::kModel;
using testing::NamedEvents;
constexpr int kMaxTokens = 16;

// A JSON-schema property of `type` with a description, as the agents write them.
json Prop(const std::string& type, const std::string& description) {
  return {{"type", type}, {"description", description}};
}

// Claude Code's tools (a subset, with their schemas' shape) and its hosted web search.
json ClaudeCodeTools() {
  auto schema = [](json props, json required) {
    return json{{"type", "object"},
                {"properties", std::move(props)},
                {"required", std::move(required)},
                {"additionalProperties", false},
                {"$schema", "http://json-schema.org/draft-07/schema#"}};
  };
  return json::array(
      {{{"name", "Bash"},
        {"description", "Executes a given bash command in a persistent shell session."},
        {"input_schema",
         schema({{"command", Prop("string", "The command to execute")},
                 {"timeout", Prop("number", "Optional timeout in milliseconds (max 600000)")},
                 {"description", Prop("string", "What this command does in 5-10 words")},
                 {"run_in_background", Prop("boolean", "Run it in the background")}},
                {"command"})}},
       {{"name", "Read"},
        {"description", "Reads a file from the local filesystem."},
        {"input_schema", schema({{"file_path", Prop("string", "The absolute path to the file")},
                                 {"offset", Prop("number", "The line to start at")},
                                 {"limit", Prop("number", "The number of lines to read")}},
                                {"file_path"})}},
       {{"name", "Grep"},
        {"description", "A powerful search tool built on ripgrep."},
        {"input_schema",
         schema({{"pattern", Prop("string", "The regular expression")},
                 {"path", Prop("string", "File or directory to search in")},
                 {"output_mode",
                  {{"type", "string"}, {"enum", {"content", "files_with_matches", "count"}}}}},
                {"pattern"})}},
       {{"name", "Edit"},
        {"description", "Performs exact string replacements in files."},
        {"input_schema", schema({{"file_path", Prop("string", "The absolute path to the file")},
                                 {"old_string", Prop("string", "The text to replace")},
                                 {"new_string", Prop("string", "The text to replace it with")},
                                 {"replace_all", Prop("boolean", "Replace every occurrence")}},
                                {"file_path", "old_string", "new_string"})},
        {"cache_control", {{"type", "ephemeral"}}}},
       {{"type", "web_search_20250305"}, {"name", "web_search"}, {"max_uses", 8}}});
}

// Codex's tools: functions, a namespace of MCP tools and the hosted web search.
json CodexTools() {
  auto fn = [](const std::string& name, const std::string& description, json props, json required) {
    return json{{"type", "function"},
                {"name", name},
                {"description", description},
                {"strict", false},
                {"parameters",
                 {{"type", "object"},
                  {"properties", std::move(props)},
                  {"required", std::move(required)},
                  {"additionalProperties", false}}}};
  };
  json command = {{"type", "array"},
                  {"items", {{"type", "string"}}},
                  {"description", "The command to execute"}};
  return json::array(
      {fn("shell", "Runs a shell command and returns its output.",
          {{"command", command},
           {"workdir", Prop("string", "The working directory")},
           {"timeout_ms", Prop("number", "The timeout in milliseconds")}},
          {"command"}),
       fn("read_file", "Reads a local file with 1-indexed line numbers.",
          {{"file_path", Prop("string", "Absolute path to the file")},
           {"offset", Prop("number", "The line to start at")},
           {"limit", Prop("number", "The number of lines to return")}},
          {"file_path"}),
       fn("update_plan", "Updates the task plan.",
          {{"plan", {{"type", "array"}, {"items", {{"type", "object"}}}}}}, {"plan"}),
       {{"type", "namespace"},
        {"name", "mcp__docs__"},
        {"description", "Tools in the mcp__docs__ namespace."},
        {"tools",
         {fn("search", "Search the docs.", {{"query", Prop("string", "What to look for")}},
             {"query"})}}},
       {{"type", "web_search"}, {"external_web_access", false}}});
}

// A Messages stream put back together as the Anthropic SDK does: the message of
// message_start, its content blocks from their start, deltas and stop, then message_delta.
json MessageOfStream(const std::string& chunked) {
  json m;
  std::map<int, std::string> partial;  // tool_use blocks' input JSON as it streams
  for (auto& [type, data] : NamedEvents(chunked)) {
    if (type == "message_start") {
      m = data["message"];
    } else if (type == "content_block_start") {
      m["content"][data["index"].get<size_t>()] = data["content_block"];
    } else if (type == "content_block_delta") {
      const int index = data["index"].get<int>();
      json& block = m["content"][static_cast<size_t>(index)];
      const json& d = data["delta"];
      if (d["type"] == "text_delta")
        block["text"] = block["text"].get<std::string>() + d["text"].get<std::string>();
      if (d["type"] == "input_json_delta") partial[index] += d["partial_json"].get<std::string>();
    } else if (type == "content_block_stop") {
      const int index = data["index"].get<int>();
      json& block = m["content"][static_cast<size_t>(index)];
      auto it = partial.find(index);
      if (block["type"] == "tool_use" && it != partial.end())
        block["input"] = json::parse(it->second, nullptr, false);
    } else if (type == "message_delta") {
      m["stop_reason"] = data["delta"]["stop_reason"];
      m["usage"]["output_tokens"] = data["usage"]["output_tokens"];
    }
  }
  return m;
}

class AgentSessionsTest : public testing::LoopbackApiTest {
 protected:
  // tiny-llama-2l with room for the agents' prompts: its tokens are bytes, and Claude
  // Code's system, tools and three turns hold more than its 2048 positions.
  std::string TinyModelFile() {
    std::ifstream in(std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json");
    json shape = json::parse(in);
    shape["maxPositions"] = 4096;
    std::filesystem::create_directories(dir_);
    const std::string path = dir_ + "/tiny-llama-2l.json";
    std::ofstream(path) << shape.dump();
    return path;
  }
  void SetUp() override {
    LoopbackApiTest::SetUp();
    service::ServiceOptions so;
    so.scheduler.engine = "cpu";
    so.scheduler.model_path = TinyModelFile();
    so.scheduler.kv_pool_bytes = 16ULL << 20;
    so.scheduler.host_bytes = 64ULL << 20;
    so.scheduler.disk_bytes = 64ULL << 20;
    http::HttpServerOptions ho;
    ho.threads = 4;
    Serve(so, OneTenant(kAgentSessionsToken, "agent-sessions-admin-token-01234"), {}, ho);
  }
  testing::ClientResponse Post(const std::string& target, const json& body,
                               std::map<std::string, std::string> headers) {
    headers["content-type"] = "application/json";
    return testing::Request(port_, "POST", target, body.dump(), headers);
  }
  // The session's workflow: its tool nodes by tool name, and its state.
  json Workflow(const std::string& id) {
    auto r = Send("GET", "/v1/workflows/" + id, "", kAgentSessionsToken);
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  }
  // Expects the workflow's tool waits: one named after each of `tools`, in order, each
  // ended (SUCCEEDED) once the next turn was admitted.
  void ExpectToolWaits(const std::string& wf, const std::vector<std::string>& tools) {
    json st = Workflow(wf);
    std::vector<std::string> names;
    for (const json& n : st["nodes"]) {
      if (n.value("kind", "") != "TOOL" || n.value("toolName", "") == "client") continue;
      names.push_back(n.value("toolName", ""));
      EXPECT_EQ(n.value("state", ""), "NODE_SUCCEEDED") << n.dump();
    }
    EXPECT_EQ(names, tools) << st.dump();
  }
  // One three-turn session of each agent (below); `workflow` is its workflow's id.
  void RunClaudeCode(bool stream, const std::string& session, std::string* workflow);
  void RunCodex(bool stream, const std::string& thread, std::string* workflow);
};

// ---- Claude Code through /v1/messages --------------------------------------------------------

// Claude Code's cache_control moves to the last block of the last message each turn.
void MarkLastBlock(json* messages) {
  for (json& m : *messages)
    if (m["content"].is_array())
      for (json& block : m["content"]) block.erase("cache_control");
  (*messages).back()["content"].back()["cache_control"] = {{"type", "ephemeral"}};
}

void AgentSessionsTest::RunClaudeCode(bool stream, const std::string& session,
                                      std::string* workflow) {
  const std::map<std::string, std::string> headers = {
      {"x-api-key", kAgentSessionsToken},
      {"anthropic-version", "2023-06-01"},
      {"anthropic-beta",
       "claude-code-20250219,interleaved-thinking-2025-05-14,"
       "fine-grained-tool-streaming-2025-05-14,context-management-2025-06-27"},
      {"anthropic-dangerous-direct-browser-access", "true"},
      {"x-app", "cli"},
      {"user-agent", "claude-cli/2.0.30 (external, cli)"},
      {"x-claude-code-session-id", session},
      {"x-stainless-lang", "js"}};
  json messages = json::array(
      {{{"role", "user"},
        {"content",
         {{{"type", "text"},
           {"text",
            "<system-reminder>\nCLAUDE.md: run make check before committing.\n"
            "</system-reminder>"}},
          {{"type", "text"}, {"text", "The test in tests/parse_test.cc fails, fix it"}}}}}});
  const json results[] = {"FAILED: ParseTest.Empty\nExpected: 0\n  Actual: 1",
                          json::array({{{"type", "text"},
                                        {"text",
                                         "     1\tint Parse(std::string_view s) {\n"
                                         "     2\t  return s.empty();\n     3\t}"}}})};
  const char* forced[] = {"Bash", "Read"};
  int64_t prompt = 0;  // the previous turn's prompt tokens
  for (int turn = 0; turn < 3; ++turn) {
    SCOPED_TRACE("turn " + std::to_string(turn + 1) + (stream ? ", streamed" : ""));
    MarkLastBlock(&messages);
    json body = {
        {"model", kModel},
        {"messages", messages},
        {"temperature", 0},  // Claude Code sends 1; greedy keeps the test deterministic
        {"system",
         {{{"type", "text"},
           {"text", "You are Claude Code, Anthropic's official CLI for Claude."},
           {"cache_control", {{"type", "ephemeral"}}}},
          {{"type", "text"},
           {"text",
            "\nYou are an interactive CLI tool that helps users with software "
            "engineering tasks.\n\n# Tone and style\nBe concise."},
           {"cache_control", {{"type", "ephemeral"}}}}}},
        {"tools", ClaudeCodeTools()},
        {"metadata",
         {{"user_id", json{{"device_id", "3f9c0d7e1b2a4c5d"}, {"session_id", session}}.dump()}}},
        {"max_tokens", kMaxTokens},
        {"context_management",
         {{"edits", {{{"type", "clear_thinking_20251015"}, {"keep", "all"}}}}}},
        {"stream", stream}};
    // The API refuses thinking with a forced tool: only the free turn thinks.
    if (turn < 2)
      body["tool_choice"] = {{"type", "tool"}, {"name", forced[turn]}};
    else
      body["thinking"] = {{"type", "adaptive"}};
    auto r = Post("/v1/messages?beta=true", body, headers);
    ASSERT_EQ(r.status, 200) << r.body;
    json m = stream ? MessageOfStream(r.body) : json::parse(r.body, nullptr, false);
    ASSERT_TRUE(m.contains("content")) << r.body;
    const std::string wf = r.headers["x-switchyard-workflow-id"];
    ASSERT_FALSE(wf.empty());
    if (turn == 0) *workflow = wf;
    EXPECT_EQ(wf, *workflow) << "one workflow per session";
    const int64_t cached = m["usage"]["cache_read_input_tokens"].get<int64_t>();
    if (turn > 0) {
      EXPECT_GT(cached, 0) << "the session's context is reused: " << m["usage"];
    }
    // The whole previous prompt, at least: the re-sent answer renders as the engine wrote it.
    EXPECT_GE(cached, prompt) << m["usage"];
    prompt = cached + m["usage"]["input_tokens"].get<int64_t>();
    messages.push_back({{"role", "assistant"}, {"content", m["content"]}});
    if (turn == 2) break;
    EXPECT_EQ(m["stop_reason"], "tool_use") << r.body;
    const json& use = m["content"].back();
    ASSERT_EQ(use["type"], "tool_use") << r.body;
    EXPECT_EQ(use["name"], forced[turn]);
    EXPECT_TRUE(use["input"].contains(turn == 0 ? "command" : "file_path")) << use;
    messages.push_back({{"role", "user"},
                        {"content",
                         {{{"type", "tool_result"},
                           {"tool_use_id", use["id"]},
                           {"content", results[turn]},
                           {"is_error", turn == 0}}}}});
  }
}

TEST_F(AgentSessionsTest, AClaudeCodeSessionWhole) {
  std::string wf;
  RunClaudeCode(/*stream=*/false, "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f", &wf);
  ExpectToolWaits(wf, {"Bash", "Read"});
}

TEST_F(AgentSessionsTest, AClaudeCodeSessionStreamed) {
  std::string wf;
  RunClaudeCode(/*stream=*/true, "2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a", &wf);
  ExpectToolWaits(wf, {"Bash", "Read"});
}

// ---- Codex through /v1/responses -------------------------------------------------------------

// An input item as Codex re-sends an output item: without the server's id and status (its
// items are not stored: store is false).
json AsCodexInput(json item) {
  item.erase("id");
  item.erase("status");
  return item;
}

void AgentSessionsTest::RunCodex(bool stream, const std::string& thread, std::string* workflow) {
  const std::map<std::string, std::string> headers = {
      {"authorization", std::string("Bearer ") + kAgentSessionsToken},
      {"originator", "codex_cli_rs"},
      {"openai-beta", "responses=experimental"},
      {"session-id", thread},
      {"thread-id", thread},
      {"version", "0.58.0"},
      {"x-client-request-id", thread},
      {"x-codex-turn-metadata", "{}"},
      {"accept", "text/event-stream"}};
  auto text = [](const std::string& role, const std::string& s) {
    return json{
        {"type", "message"}, {"role", role}, {"content", {{{"type", "input_text"}, {"text", s}}}}};
  };
  json input = json::array(
      {text("developer",
            "<permissions instructions>\nFilesystem sandboxing: workspace-write.\n"
            "</permissions instructions>"),
       text("user", "# AGENTS.md instructions for /repo\n\nRun ctest before committing."),
       text("user",
            "<environment_context>\n  <cwd>/repo</cwd>\n  <shell>bash</shell>\n"
            "</environment_context>"),
       text("user", "fix the failing parser test")});
  const json results[] = {"Exit code: 8\nWall time: 1.2 seconds\nOutput:\n1 test failed\n",
                          json::array({{{"type", "input_text"}, {"text", "L1: int Parse();"}}})};
  const char* forced[] = {"shell", "read_file"};
  int64_t prompt = 0;  // the previous turn's prompt tokens
  for (int turn = 0; turn < 3; ++turn) {
    SCOPED_TRACE("turn " + std::to_string(turn + 1) + (stream ? ", streamed" : ""));
    json body = {{"model", kModel},
                 {"instructions",
                  "You are Codex, based on GPT-5. You are running as a coding "
                  "agent in the Codex CLI on a user's computer."},
                 {"input", input},
                 {"tools", CodexTools()},
                 {"tool_choice", "auto"},
                 {"parallel_tool_calls", false},
                 {"reasoning", {{"effort", "medium"}, {"summary", "auto"}}},
                 {"store", false},
                 {"stream", stream},
                 {"include", {"reasoning.encrypted_content"}},
                 {"prompt_cache_key", thread},
                 {"temperature", 0},                  // greedy: a deterministic test
                 {"max_output_tokens", kMaxTokens}};  // Codex sends none: a fast test
    if (turn < 2) body["tool_choice"] = {{"type", "function"}, {"name", forced[turn]}};
    auto r = Post("/v1/responses", body, headers);
    ASSERT_EQ(r.status, 200) << r.body;
    json response, output = json::array();
    if (stream) {  // Codex keeps the items of output_item.done and the usage of completed
      for (auto& [type, data] : NamedEvents(r.body)) {
        if (type == "response.output_item.done") output.push_back(data["item"]);
        if (type == "response.completed" || type == "response.incomplete")
          response = data["response"];
      }
      ASSERT_TRUE(response.is_object()) << "no response.completed in " << r.body;
      EXPECT_EQ(response["output"], output) << "the items streamed are the response's";
    } else {
      response = json::parse(r.body, nullptr, false);
      output = response["output"];
    }
    const std::string wf = r.headers["x-switchyard-workflow-id"];
    ASSERT_FALSE(wf.empty());
    if (turn == 0) *workflow = wf;
    EXPECT_EQ(wf, *workflow) << "one workflow per thread";
    const json& usage = response["usage"];
    const int64_t cached = usage["input_tokens_details"]["cached_tokens"].get<int64_t>();
    if (turn > 0) {
      EXPECT_GT(cached, 0) << "the thread's context is reused: " << usage;
    }
    EXPECT_GE(cached, prompt) << "the whole previous prompt, at least: " << usage;
    prompt = usage["input_tokens"].get<int64_t>();  // cached ones included
    for (const json& item : output) input.push_back(stream ? AsCodexInput(item) : item);
    if (turn == 2) break;
    ASSERT_FALSE(output.empty()) << r.body;
    const json& call = output.back();
    ASSERT_EQ(call["type"], "function_call") << r.body;
    EXPECT_EQ(call["name"], forced[turn]);
    json args = json::parse(call["arguments"].get<std::string>(), nullptr, false);
    EXPECT_TRUE(args.contains(turn == 0 ? "command" : "file_path")) << call;
    input.push_back({{"type", "function_call_output"},
                     {"call_id", call["call_id"]},
                     {"output", results[turn]}});
  }
}

TEST_F(AgentSessionsTest, ACodexThreadStreamed) {
  std::string wf;
  RunCodex(/*stream=*/true, "0199a213-81c0-7800-8aa1-bbab2a035a53", &wf);
  ExpectToolWaits(wf, {"shell", "read_file"});
}

TEST_F(AgentSessionsTest, ACodexThreadWhole) {
  std::string wf;
  RunCodex(/*stream=*/false, "0199a213-81c0-7800-8aa1-bbab2a035a54", &wf);
  ExpectToolWaits(wf, {"shell", "read_file"});
}

}  // namespace
}  // namespace switchyard::frontends
