// The server-sent events of a streamed Messages answer (see anthropic_stream.h).
#include "frontends/anthropic/anthropic_stream.h"

#include <utility>

#include "frontends/anthropic/anthropic_json.h"

namespace switchyard::frontends::anthropic {
namespace {

using detail::Dump;
using detail::Json;

std::string Event(std::string_view type, const Json& data) {
  std::string out = "event: ";
  out += type;
  out += "\ndata: ";
  out += Dump(data);
  out += "\n\n";
  return out;
}

std::string DeltaEvent(int index, Json delta) {
  return Event("content_block_delta",
               {{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(delta)}});
}

}  // namespace

MessagesStream::MessagesStream(MessageHead head) : head_(std::move(head)) {}

std::string MessagesStream::Start(const Usage& usage) {
  if (started_ || finished_) return "";
  started_ = true;
  Json message = {{"id", head_.id},           {"type", "message"},
                  {"role", "assistant"},      {"model", head_.model},
                  {"content", Json::array()}, {"stop_reason", nullptr},
                  {"stop_sequence", nullptr}, {"usage", detail::UsageJson(usage)}};
  return Event("message_start", {{"type", "message_start"}, {"message", std::move(message)}}) +
         Event("ping", {{"type", "ping"}});
}

std::string MessagesStream::StartIfNot() { return started_ ? "" : Start(Usage{}); }

std::string MessagesStream::Close() {
  if (open_ == Block::kNone) return "";
  open_ = Block::kNone;
  return Event("content_block_stop", {{"type", "content_block_stop"}, {"index", next_index_ - 1}});
}

std::string MessagesStream::Open(Block kind, std::string_view id, std::string_view name) {
  std::string out = StartIfNot();  // statements, not one expression: each changes the state
  out += Close();
  Json block;
  switch (kind) {
    case Block::kThinking:
      block = {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}};
      break;
    case Block::kToolUse:
      block = {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", Json::object()}};
      ++tool_uses_;
      break;
    default:
      block = {{"type", "text"}, {"text", ""}};
      break;
  }
  open_ = kind;
  out += Event("content_block_start", {{"type", "content_block_start"},
                                       {"index", next_index_++},
                                       {"content_block", std::move(block)}});
  return out;
}

std::string MessagesStream::Thinking(std::string_view delta) {
  if (finished_ || delta.empty() || !head_.thinking) return "";
  std::string out = open_ == Block::kThinking ? "" : Open(Block::kThinking);
  return out + DeltaEvent(next_index_ - 1, {{"type", "thinking_delta"}, {"thinking", delta}});
}

std::string MessagesStream::Text(std::string_view delta) {
  if (finished_ || delta.empty()) return "";
  std::string out = open_ == Block::kText ? "" : Open(Block::kText);
  return out + DeltaEvent(next_index_ - 1, {{"type", "text_delta"}, {"text", delta}});
}

std::string MessagesStream::BeginToolUse(std::string_view id, std::string_view name) {
  if (finished_) return "";
  return Open(Block::kToolUse, id, name);
}

std::string MessagesStream::ToolUseDelta(std::string_view partial_json) {
  if (finished_ || open_ != Block::kToolUse || partial_json.empty()) return "";
  return DeltaEvent(next_index_ - 1,
                    {{"type", "input_json_delta"}, {"partial_json", partial_json}});
}

std::string MessagesStream::ToolUse(const ToolCall& call) {
  if (finished_) return "";
  std::string out = BeginToolUse(call.id, call.name);
  out += ToolUseDelta(Dump(detail::ToolInput(call)));
  out += Close();
  return out;
}

std::string MessagesStream::Finish(const Answer& a, const Usage& usage) {
  if (finished_) return "";
  std::string out = StartIfNot();
  out += Close();
  for (size_t i = tool_uses_; i < a.tool_calls.size(); ++i) out += ToolUse(a.tool_calls[i]);
  const bool stop_sequence = a.end == Answer::End::kStopSequence && !a.stop_sequence.empty();
  Json delta = {{"stop_reason", StopReasonOf(a.end, tool_uses_ > 0)},
                {"stop_sequence", stop_sequence ? Json(a.stop_sequence) : Json(nullptr)}};
  out += Event("message_delta", {{"type", "message_delta"},
                                 {"delta", std::move(delta)},
                                 {"usage", detail::UsageJson(usage)}});
  out += Event("message_stop", {{"type", "message_stop"}});
  finished_ = true;
  return out;
}

std::string MessagesStream::Fail(const Status& s) {
  if (finished_) return "";
  finished_ = true;
  open_ = Block::kNone;
  return Event("error", detail::ErrorBody(ErrorFromStatus(s)));
}

}  // namespace switchyard::frontends::anthropic
