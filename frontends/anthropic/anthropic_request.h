// The requests of the Anthropic front: the bodies of POST /v1/messages and
// POST /v1/messages/count_tokens parsed into a MessagesRequest, whose Conversation
// (conversation/conversation.h) is what the session layer and the prompt work on. Every field
// the service acts on is validated; what it cannot honour is refused with a 400 naming the
// field, or accepted and named in `ignored` (for the response header x-switchyard-ignored):
//
//   field                          | here
//   -------------------------------+------------------------------------------------------
//   model, messages                | required
//   max_tokens                     | required (>= 1) for messages; count_tokens: ignored
//   system                         | string or text blocks -> Conversation::messages[0]
//   messages[].role                | user, assistant; "system" (Claude Code sends it
//                                  | mid-conversation) -> a system turn in place
//   content text                   | joined with "\n" per turn
//   content image, document        | refused (no vision, no documents)
//   content tool_use               | assistant only -> Message::tool_calls (input compact)
//   content tool_result            | user only -> one role "tool" turn each, in order;
//                                  | the turn's text blocks -> one user turn after them
//   content thinking               | assistant only -> Message::reasoning
//   content redacted_thinking      | dropped (encrypted; nothing to render)
//   other content block types      | refused
//   cache_control                  | kept as cache_breakpoints (type "ephemeral", ttl)
//   tools[] custom                 | {name, description, input_schema} -> Conversation::tools
//   tools[] of a versioned type    | web_search_20250305, bash_20250124, text_editor_*,
//                                  | computer_*, ...: left out of the prompt, ignored
//   tool_choice                    | auto | any | tool(name) | none; disable_parallel_tool_use
//   stop_sequences                 | non-empty strings
//   temperature, top_p             | [0, 1], (0, 1]
//   top_k                          | an integer >= 0, ignored (the engine has no top-k)
//   stream                         | kept
//   metadata.user_id               | kept, and the session_id Claude Code puts in it
//   thinking                       | validated and kept, ignored (no budget is enforced)
//   context_management,            | ignored
//   output_config, service_tier,   |
//   container, mcp_servers         |
//   any other top-level field      | ignored
//
// JSON goes through nlohmann::json; no exception leaves these functions: a malformed body is
// an InvalidArgument.
//
// Thread-safety: pure functions; call from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "frontends/conversation_names.h"

namespace switchyard::frontends::anthropic {

// A cache_control marker: the prompt prefix up to and including the block it is on may be
// kept for `ttl`. Anthropic's prompt order is tools, then system, then messages.
struct CacheBreakpoint {
  enum class On { kTool, kSystem, kMessage } on = On::kMessage;
  size_t index = 0;  // in the request: tools[index], system[index] or messages[index]
  size_t block = 0;  // kMessage: messages[index].content[block]
  // Where it lands in the Conversation. kTool: Conversation::tools' index of that tool, or of
  // the last custom tool before it when it is on an ignored (hosted) tool (-1: none).
  // kSystem, kMessage: Conversation::messages' index of the turn holding the block.
  int64_t tool = -1, message = -1;
  std::string ttl = "5m";  // cache_control.ttl: "5m" (the default) or "1h"
};

// The request's thinking parameter (kept for the answer's format; no budget is enforced).
struct Thinking {
  enum class Type { kAbsent, kEnabled, kDisabled, kAdaptive } type = Type::kAbsent;
  int64_t budget_tokens = 0;  // kEnabled: >= 1024
};

struct MessagesRequest {
  bool count_tokens = false;  // parsed as a /v1/messages/count_tokens body
  // model, messages (the system prompt first), tools (custom ones), tool_choice and
  // parallel_tool_calls (!disable_parallel_tool_use), sampling (max_tokens, temperature,
  // top_p, stop_sequences).
  Conversation conversation;
  bool stream = false;
  std::optional<int64_t> top_k;  // accepted, ignored
  Thinking thinking;
  std::string metadata_user_id;     // metadata.user_id as sent
  std::string metadata_session_id;  // the session id held in metadata.user_id, else ""
  // The last message is the assistant's (a prefill): the answer continues it.
  bool assistant_prefill = false;
  std::vector<CacheBreakpoint> cache_breakpoints;  // in request order: tools, system, messages
  // Accepted and not honoured, in body order: top-level field names ("top_k", "thinking",
  // an unknown "foo"), then hosted tools as "tools[<i>]:<type>".
  std::vector<std::string> ignored;
};

// Parse a request body. Errors are InvalidArgument whose message starts with the offending
// parameter ("max_tokens: required", "messages[3].content[1].tool_use_id: required"); use
// ParamOf to recover it. A body that is not a JSON object (or nests deeper than 64 levels)
// names no parameter. null counts as absent for every optional field.
Result<MessagesRequest> ParseMessages(std::string_view body);
// count_tokens takes model, messages, system, tools, tool_choice and thinking (as above);
// any other field is ignored and named, unvalidated.
Result<MessagesRequest> ParseCountTokens(std::string_view body);
// What the breakpoints ask of the server: the session's context is retained (kept in HBM
// or moved to a tier, never dropped for recompute) for the longest ttl among them from
// the answer's end, in ms ("5m": 300000, "1h": 3600000); 0 without breakpoints. Anthropic
// caches each marked prefix; Switchyard keeps the session's whole context, which holds
// every marked prefix (see Sessions::Turn::retain_ms).
int64_t RetentionMs(const std::vector<CacheBreakpoint>& breakpoints);
// The parameter an InvalidArgument of this layer names ("" if none or another code).
std::string ParamOf(const Status& s);

}  // namespace switchyard::frontends::anthropic
