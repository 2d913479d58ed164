// MessagesStream: the server-sent events of one streamed Messages answer, in the exact
// sequence Anthropic's SDKs accumulate:
//
//   message_start        the message with empty content, stop_reason null, usage so far
//   ping
//   per content block:   content_block_start (text "", thinking "" with signature "", or
//                        tool_use with input {}), content_block_delta* (text_delta,
//                        thinking_delta, input_json_delta with partial_json),
//                        content_block_stop
//   message_delta        delta {stop_reason, stop_sequence}, usage (the final counts)
//   message_stop
//
// or `error` ({"type":"error","error":{...}}) for a failure mid-stream, which ends it. Each
// event is "event: <type>\ndata: <json>\n\n". The front feeds what the engine produced and
// writes the bytes each call returns. Block indexes count from 0 without gaps; a block is
// stopped before the next one starts (a text block closes before a tool_use block opens), and
// each is stopped once. A call before Start() starts the stream first (with zero usage);
// calls after Finish() or Error() return "".
//
// Thread-safety: not thread-safe; one per response, fed by one thread at a time.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "frontends/anthropic/anthropic_response.h"
#include "frontends/conversation_names.h"

namespace switchyard::frontends::anthropic {

class MessagesStream {
 public:
  explicit MessagesStream(MessageHead head);

  // message_start with `usage` (the prompt's counts; output_tokens as given, usually 0),
  // then a ping, sent at once so that a client waiting through a long prefill hears from us.
  std::string Start(const Usage& usage);
  // A thinking_delta, opening a thinking block first if the open block is another; "" for an
  // empty delta or when the head does not ask for thinking.
  std::string Thinking(std::string_view delta);
  // A text_delta, opening a text block first if the open block is another; "" when empty.
  std::string Text(std::string_view delta);
  // A whole call: its tool_use block, one input_json_delta with its input (ToolInput: the
  // arguments' object, {} when they are not one), and the block's stop.
  std::string ToolUse(const ToolCall& call);
  // A call streamed in pieces: BeginToolUse opens its block; ToolUseDelta sends a piece of its
  // input, and the pieces must concatenate to a JSON object. A delta with no tool_use block
  // open, or empty, is "".
  std::string BeginToolUse(std::string_view id, std::string_view name);
  std::string ToolUseDelta(std::string_view partial_json);
  // Closes the open block, sends the calls of `a` not fed yet (a.tool_calls[tool_uses()..]),
  // then message_delta (StopReasonOf, stop_sequence, `usage`) and message_stop. The text and
  // reasoning are only what was fed.
  std::string Finish(const Answer& a, const Usage& usage);
  // An error event for a failure mid-stream (ErrorFromStatus's type); ends the stream.
  std::string Fail(const Status& s);

  bool started() const { return started_; }
  bool finished() const { return finished_; }
  int blocks() const { return next_index_; }  // content blocks opened so far
  size_t tool_uses() const { return tool_uses_; }

 private:
  enum class Block { kNone, kThinking, kText, kToolUse };

  std::string StartIfNot();
  // Closes the open block and opens one of `kind` (id and name: a tool_use's).
  std::string Open(Block kind, std::string_view id = {}, std::string_view name = {});
  std::string Close();

  MessageHead head_;
  bool started_ = false, finished_ = false;
  Block open_ = Block::kNone;
  int next_index_ = 0;    // the index of the next block
  size_t tool_uses_ = 0;  // tool_use blocks opened
};

}  // namespace switchyard::frontends::anthropic
