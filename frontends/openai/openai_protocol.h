// openai: the protocol layer of the OpenAI-compatible front door.
//
// Pure functions between the wire and the service: they parse the bodies of
// POST /v1/chat/completions and POST /v1/completions into a Request (validating every field
// the service acts on and refusing, with a 400 naming the field, what it cannot honour), read
// the Switchyard headers (session id, deadline, priority), render a conversation into a prompt
// for tokenizers without a chat template, and format responses, SSE chunks, model lists and
// errors as OpenAI clients expect them. Nothing here calls the service or allocates ids.
//
// JSON goes through nlohmann::json; no exception leaves this layer: a malformed body is an
// InvalidArgument, and text that is not valid UTF-8 (a byte-level tokenizer's output) is
// written with U+FFFD in place of the bad bytes.
//
// Thread-safety: every function is pure (no shared state); call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/status.h"

namespace switchyard::frontends::openai {

struct ToolCall {
  std::string id, name, arguments;  // arguments: a JSON object as text
};

struct Message {
  std::string role;     // system, developer, user, assistant, tool
  std::string content;  // text; an array of {"type":"text","text":...} parts is joined with "\n"
  std::string name, tool_call_id;
  std::vector<ToolCall> tool_calls;  // assistant messages
};

struct ToolDef {
  std::string name, description, parameters_json;  // tools[i].function; parameters "" if absent
};

struct ToolChoice {
  enum class Kind { kAuto, kNone, kRequired, kFunction } kind = Kind::kAuto;
  std::string function;  // kFunction: the tool's name (one of Request::tools)
};

// Dynamo's nvext.agent_hints.
struct AgentHints {
  std::optional<double> latency_sensitivity;
  std::optional<int64_t> osl, priority;
};

struct Request {
  bool chat = true;               // /v1/chat/completions (messages) or /v1/completions (prompt)
  std::string model;              // required, non-empty
  std::vector<Message> messages;  // chat: at least one
  std::string prompt;             // completions: a string (an array of one string accepted)
  int64_t max_tokens = 0;  // max_completion_tokens, else max_tokens; >= 1 when given, 0 = not given
  double temperature = 1.0;                    // OpenAI's default; [0, 2]
  double top_p = 1.0;                          // (0, 1]
  std::optional<uint64_t> seed;                // a negative seed is kept as its two's complement
  bool stream = false, include_usage = false;  // stream_options.include_usage (as sent)
  std::vector<std::string> stop;               // a string or an array of up to 4 non-empty strings
  std::vector<ToolDef> tools;                  // chat only; names unique
  ToolChoice tool_choice;                      // kRequired / kFunction only with tools
  std::string metadata_session_id;             // metadata.session_id
  std::string user;
  AgentHints hints;
  std::vector<std::string> ignored;  // unknown top-level fields, accepted and ignored (for logs)
};

// Parse a request body. Errors are InvalidArgument whose message starts with the offending
// parameter ("n: only 1 is supported", "messages[2].content[0].type: ..."); use ParamOf to
// recover it. A body that is not a JSON object (or nests deeper than 64 levels) names no
// parameter. null counts as absent for every optional field.
Result<Request> ParseChat(std::string_view body);
Result<Request> ParseCompletion(std::string_view body);
// The parameter an InvalidArgument from this file names ("" if none or another code).
std::string ParamOf(const Status& s);

struct Error {
  int http_status = 400;
  std::string message, type = "invalid_request_error", param, code;
};
// {"error":{"message","type","param","code"}} (param/code null when empty).
std::string ErrorJson(const Error& e);
// The OpenAI error for a Status: InvalidArgument -> 400 with ParamOf as param,
// Unauthenticated 401, PermissionDenied 403, NotFound 404, ResourceExhausted 429,
// DeadlineExceeded 504, Unavailable 503, anything else 500.
Error ErrorFromStatus(const Status& s);

// The session id: the first non-empty of the headers x-session-id, x-claude-code-session-id,
// session_id, session-id (a lower-case header map), then metadata.session_id, then user.
// "" if none.
std::string SessionIdOf(const std::map<std::string, std::string>& headers, const Request& r);
// Whether that session id is the request's `user` (no header or metadata named one).
bool SessionIdIsUser(const std::map<std::string, std::string>& headers, const Request& r);
// x-switchyard-deadline: seconds from now ("30", "2.5"; plain decimal, at most 1e9) or an
// RFC 3339 time ("2025-06-01T12:00:00.5Z", "...+02:00"); returns the absolute deadline in ms
// since the Unix epoch given now_ms (a time in the past is returned as is). InvalidArgument
// naming the header otherwise.
Result<int64_t> ParseDeadline(std::string_view value, int64_t now_ms);
// x-switchyard-priority: "interactive" | "standard" | "batch" (any case) or an integer 0..2 ->
// 1..3 (v1::PriorityClass: INTERACTIVE=1, STANDARD=2, BATCH=3). InvalidArgument naming the
// header otherwise.
Result<int> ParsePriority(std::string_view value);

// A plain chat template for tokenizers without their own (the byte tokenizer of random-weight
// models). Each turn is "<|role|>[ name]\n<body>\n" (developer renders as system; a tool turn's
// header carries its tool_call_id; the assistant's name is not rendered), tools are listed in
// the first system turn (one is added when messages[0] is not system/developer), and the text
// ends with "<|assistant|>\n" so generation continues it. Deterministic; a prefix of the
// messages renders to a prefix of the text: Render(m[0..k]) + RenderAssistantTurn(answer) is a
// prefix of Render(m[0..k+2]) when m[k] echoes the answer back. Text is not escaped.
std::string RenderChat(const std::vector<Message>& messages, const std::vector<ToolDef>& tools);
// The assistant turn's body and end as RenderChat renders it (what the engine's output becomes
// in the next prompt): content, then per call "<|tool_call|> <id> <name>\n<arguments>", then
// "\n".
std::string RenderAssistantTurn(const std::string& content, const std::vector<ToolCall>& calls);

// For a forced tool call with a random-weights model: arguments that are a valid JSON object
// built from the generated text. With a parameters schema that has required properties, each
// is filled (strings with consecutive slices of the text, or their first enum value; other
// types with 0 / false / [] / {}); with none, the first string property gets the whole text;
// otherwise (no tool, no schema) {"input": "<text>"}.
std::string ArgumentsFromText(const ToolDef* tool, std::string_view generated);

// How many bytes at the end of a streamed answer's decoded `text` may still change or be
// cut when more tokens come, so are not sent yet: trailing U+FFFD (the decoder's stand-in
// for a character whose bytes have not all been generated) and the longest tail that
// begins one of the `stops` sequences.
size_t UnsettledTail(std::string_view text, const std::vector<std::string>& stops);

// The length of the longest prefix of `text` that does not end inside a UTF-8 sequence: stream
// text[0..n) now and keep the rest for the next delta, so multi-byte characters are not split.
size_t Utf8SafePrefix(std::string_view text);

struct Choice {
  std::string text;
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;  // stop, length, tool_calls ("" -> null)
};
struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};
struct Response {
  std::string id;
  int64_t created = 0;                    // seconds since the Unix epoch
  std::string model, system_fingerprint;  // fingerprint null when empty
  bool chat = true;
  Choice choice;
  Usage usage;
};
// chat.completion / text_completion, usage with prompt_tokens_details.cached_tokens.
std::string ResponseJson(const Response& r);
// One SSE event "data: {...}\n\n" of a chat.completion.chunk / text_completion chunk. Chat: the
// first chunk carries role "assistant" (and content, "" if none), later ones the content delta
// (omitted when empty) and tool_calls deltas (index, id, type, function name + arguments);
// finish_reason non-empty marks the final chunk. head's choice and usage are not read.
std::string ChunkEvent(const Response& head, const std::string& delta_text, bool first,
                       const std::string& finish_reason,
                       const std::vector<ToolCall>* tool_calls = nullptr);
// The usage chunk (choices []) sent before [DONE] when stream_options.include_usage.
std::string UsageEvent(const Response& head);
inline constexpr char kDoneEvent[] = "data: [DONE]\n\n";
// GET /v1/models: {"object":"list","data":[{"id","object":"model","created","owned_by"}]}.
std::string ModelsJson(const std::vector<std::string>& ids, int64_t created,
                       const std::string& owned_by);
// GET /v1/models/{id}: {"id","object":"model","created","owned_by"}.
std::string ModelJson(const std::string& id, int64_t created, const std::string& owned_by);

}  // namespace switchyard::frontends::openai
