// Conversation: one request of any front door (OpenAI Chat Completions, Anthropic
// Messages, OpenAI Responses) in protocol-neutral terms — the messages, the tools and the
// calls an assistant made, the sampling — and the answer in the same terms. Each front
// parses its wire format into a Conversation and formats an Answer back; the session layer
// (session.h), the prompt (chat template or the plain format) and the tool-call parsing
// work on these types only, so the three fronts share one model of a tool call.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace switchyard::conversation {

// A call an assistant made: Chat Completions' tool_calls[i], Messages' tool_use block,
// Responses' function_call item.
struct ToolCall {
  std::string id, name;
  std::string arguments;  // a JSON object as text
};

// One turn of the conversation. Roles: system, developer, user, assistant, tool (a tool
// result: Messages' tool_result block, Responses' function_call_output item).
struct Message {
  std::string role;
  std::string content;               // text; a protocol's text parts are joined with "\n"
  std::string name;                  // the speaker's name, where the protocol has one
  std::string tool_call_id;          // role tool: the call it answers
  std::vector<ToolCall> tool_calls;  // role assistant
  std::string reasoning;             // role assistant: reasoning text passed back, if any
  bool is_error = false;             // role tool: the result reports a failure (Messages'
                                     // tool_result.is_error); a prompt may say so
};

// A function the model may call.
struct ToolDef {
  std::string name, description;
  std::string parameters_json;  // a JSON schema object as text; "" if absent
};

struct ToolChoice {
  // auto: the model decides; none: no call; required: at least one call (Messages' "any");
  // function: that function (Messages' {"type":"tool","name"}).
  enum class Kind { kAuto, kNone, kRequired, kFunction } kind = Kind::kAuto;
  std::string function;  // kFunction: the tool's name (one of the request's tools)
};

struct Sampling {
  int64_t max_tokens = 0;  // >= 1 when given, 0 = not given
  double temperature = 1.0;
  double top_p = 1.0;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;  // stop sequences
  // (token id, bias in [-100, 100]) added to the logits (OpenAI's logit_bias); the ids are
  // checked against the model's vocabulary when the call is prepared.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Guided choice (vLLM's structured_outputs.choice): the answer is exactly one of these.
  std::vector<std::string> choices;
  // The request's priority as vLLM and SGLang take it (body `priority`): lower is more
  // important. The engine keeps the prefix-cache blocks of a more important request longer
  // (SequenceSpec::priority); 0 when not given.
  int64_t engine_priority = 0;
  // vLLM's `kv_transfer_params` for its CPU offloading, as engines with a host offload tier
  // take them (executors::KvTransferParams): tokens it may load back from the host tier (-1:
  // no limit, 0: recompute), whether it may load from it, tokens it may store there (-1: all).
  struct KvTransfer {
    int64_t max_load_tokens = -1;
    bool load_from_host = true;
    int64_t max_offload_tokens = -1;
  } kv_transfer;
};

struct Conversation {
  std::string model;
  std::vector<Message> messages;
  std::vector<ToolDef> tools;
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  Sampling sampling;
};

// What the engine's output became.
struct Answer {
  std::string text;
  std::string reasoning;
  std::vector<ToolCall> tool_calls;
  // Why generation ended: stop (EOS), stop_sequence (one of Sampling::stop), length
  // (max_tokens or the context), tool_calls (the answer holds calls).
  enum class End { kStop, kStopSequence, kLength, kToolCalls } end = End::kStop;
  std::string stop_sequence;  // kStopSequence: which
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens the session's context already held
};

}  // namespace switchyard::conversation
