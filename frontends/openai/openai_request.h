// The requests of the OpenAI front: the bodies of POST /v1/chat/completions and
// POST /v1/completions parsed into a Request, every field the service acts on validated,
// and what it cannot honour refused with a 400 naming the field. The chat-only fields
// (messages, tools, tool_choice and the parameters accepted only at their neutral values)
// are read by openai_chat_request.cc, the rest by openai_request.cc.
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

namespace switchyard::frontends::openai {

// The protocol-neutral types (conversation/conversation.h), as this front names them.
using ToolCall = frontends::ToolCall;
using Message = frontends::Message;  // content: an array of {"type":"text"} parts joined with "\n"
using ToolDef = frontends::ToolDef;  // tools[i].function
using ToolChoice = frontends::ToolChoice;

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
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> bias in [-100, 100]
  std::vector<std::string> choices;  // structured_outputs.choice (or guided_choice)
  int64_t priority = 0;              // vLLM's `priority`: lower is more important
  Sampling::KvTransfer kv_transfer;  // vLLM's `kv_transfer_params` (its CPU offloading)
  std::vector<ToolDef> tools;        // chat only; names unique
  ToolChoice tool_choice;            // kRequired / kFunction only with tools
  std::string metadata_session_id;   // metadata.session_id
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
// The parameter an InvalidArgument of this layer names ("" if none or another code).
std::string ParamOf(const Status& s);

}  // namespace switchyard::frontends::openai
