// The server-sent events of a streamed Responses API answer (see responses_stream.h).
#include "frontends/responses/responses_stream.h"

#include "frontends/openai/openai_response.h"
#include "frontends/responses/responses_json.h"
#include "frontends/stream_text.h"

namespace switchyard::frontends::responses {
namespace {

using detail::Dump;
using detail::Json;

// "event: <type>\ndata: {"type":<type>,<fields>,"sequence_number":N}\n\n". Each call takes
// the next number, so events are joined statement by statement (the operands of one `+` are
// evaluated in no fixed order).
std::string Event(int64_t* sequence, std::string_view type, const Json& fields) {
  Json j = {{"type", type}};
  for (const auto& [key, value] : fields.items()) j[key] = value;
  j["sequence_number"] = (*sequence)++;
  std::string out = "event: ";
  out += type;
  out += "\ndata: ";
  out += Dump(j);
  out += "\n\n";
  return out;
}

Json TextPart(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}};
}

// Where a content event points: the item, its index in the output, content index 0.
Json Where(const Item& item, size_t index) {
  return {{"item_id", item.id}, {"output_index", index}, {"content_index", 0}};
}

Json With(Json j, const char* key, Json value) {
  j[key] = std::move(value);
  return j;
}

}  // namespace

ResponsesStream::ResponsesStream(std::vector<ToolRoute> routes) : routes_(std::move(routes)) {}

std::string ResponsesStream::Start(const StoredResponse& head) {
  if (started_ || finished_) return "";
  started_ = true;
  head_ = head;
  head_.status = ResponseStatus::kInProgress;
  head_.output.clear();
  head_.usage.reset();
  const Json response = {{"response", detail::ResponseObject(head_)}};
  std::string out = Event(&sequence_, "response.created", response);
  return out + Event(&sequence_, "response.in_progress", response);
}

std::string ResponsesStream::OpenMessage() {
  const size_t index = items_.size();
  items_.push_back(Item{.kind = Item::Kind::kMessage,
                        .id = OutputItemId(Item::Kind::kMessage, head_.id, index),
                        .status = "in_progress",
                        .role = "assistant"});
  message_open_ = true;
  const Item& m = items_.back();
  Json added = {{"type", "message"},
                {"id", m.id},
                {"status", m.status},
                {"role", m.role},
                {"content", Json::array()}};
  std::string out = Event(&sequence_, "response.output_item.added",
                          {{"output_index", index}, {"item", std::move(added)}});
  return out + Event(&sequence_, "response.content_part.added",
                     With(Where(m, index), "part", TextPart("")));
}

std::string ResponsesStream::Text(std::string_view delta) {
  if (!started_ || finished_) return "";
  pending_ += delta;
  const size_t settled = frontends::Utf8SafePrefix(pending_);
  if (settled == 0) return "";
  std::string out = message_open_ ? "" : OpenMessage();
  const std::string send = pending_.substr(0, settled);
  pending_.erase(0, settled);
  items_.back().text += send;
  Json fields = With(Where(items_.back(), items_.size() - 1), "delta", send);
  fields["logprobs"] = Json::array();
  return out + Event(&sequence_, "response.output_text.delta", fields);
}

std::string ResponsesStream::CloseMessage(bool complete) {
  std::string out;
  if (!pending_.empty()) {  // bytes of a character never completed: sent as they are
    if (!message_open_) out += OpenMessage();
    items_.back().text += pending_;
    Json fields = With(Where(items_.back(), items_.size() - 1), "delta", pending_);
    fields["logprobs"] = Json::array();
    out += Event(&sequence_, "response.output_text.delta", fields);
    pending_.clear();
  }
  if (!message_open_) return out;
  message_open_ = false;
  Item& m = items_.back();
  const size_t index = items_.size() - 1;
  m.status = complete ? "completed" : "incomplete";
  Json done = With(Where(m, index), "text", m.text);
  done["logprobs"] = Json::array();
  out += Event(&sequence_, "response.output_text.done", done);
  out += Event(&sequence_, "response.content_part.done",
               With(Where(m, index), "part", TextPart(m.text)));
  return out + Event(&sequence_, "response.output_item.done",
                     {{"output_index", index}, {"item", detail::ItemJson(m)}});
}

std::string ResponsesStream::ToolCall(const frontends::ToolCall& call) {
  if (!started_ || finished_) return "";
  std::string out = CloseMessage(/*complete=*/true);
  const size_t index = items_.size();
  items_.push_back(
      CallItem(call, routes_, OutputItemId(Item::Kind::kFunctionCall, head_.id, index)));
  const Item& item = items_.back();
  Item added = item;
  added.arguments.clear();
  added.status = "in_progress";
  const Json where = {{"item_id", item.id}, {"output_index", index}};
  out += Event(&sequence_, "response.output_item.added",
               {{"output_index", index}, {"item", detail::ItemJson(added)}});
  if (!item.arguments.empty()) {
    out += Event(&sequence_, "response.function_call_arguments.delta",
                 With(where, "delta", item.arguments));
  }
  Json done = With(where, "name", item.name);
  done["arguments"] = item.arguments;
  out += Event(&sequence_, "response.function_call_arguments.done", done);
  return out + Event(&sequence_, "response.output_item.done",
                     {{"output_index", index}, {"item", detail::ItemJson(item)}});
}

std::string ResponsesStream::Terminal(const StoredResponse& r) {
  finished_ = true;
  const char* type = r.status == ResponseStatus::kCompleted    ? "response.completed"
                     : r.status == ResponseStatus::kIncomplete ? "response.incomplete"
                                                               : "response.failed";
  return Event(&sequence_, type, {{"response", detail::ResponseObject(r)}});
}

std::string ResponsesStream::Finish(const StoredResponse& final) {
  if (!started_ || finished_) return "";
  std::string out = CloseMessage(final.status != ResponseStatus::kIncomplete);
  return out + Terminal(final);
}

std::string ResponsesStream::Fail(const Status& s) {
  if (finished_) return "";
  StoredResponse failed = head_;
  FailResponse(s, &failed);
  if (!started_) {
    finished_ = true;
    return Event(&sequence_, "error",
                 {{"code", failed.error_code}, {"message", s.message()}, {"param", nullptr}});
  }
  std::string out = CloseMessage(/*complete=*/false);
  failed.output = items_;
  return out + Terminal(failed);
}

}  // namespace switchyard::frontends::responses
