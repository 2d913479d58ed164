// A call's answer in the Messages API's shapes (see anthropic_reply.h).
#include "frontends/anthropic/anthropic_reply.h"

#include <nlohmann/json.hpp>

namespace switchyard::frontends::anthropic {

namespace {

std::string Short(const std::string& wf) { return wf.size() > 8 ? wf.substr(wf.size() - 8) : wf; }

// An upstream's stream of Messages events: the tool_use blocks content_block_start opens
// (their name, by the block's index) and the output tokens message_delta reports.
class EventReader : public upstream::UpstreamStreamReader {
 protected:
  void Data(std::string_view payload) override {
    if (payload.find("\"content_block_start\"") == std::string_view::npos &&
        payload.find("\"message_delta\"") == std::string_view::npos)
      return;  // text and the other events
    auto j = nlohmann::json::parse(payload, nullptr, false);
    const std::string type = upstream::UpstreamString(j, "type");
    if (type == "message_delta") {
      auto usage = j.find("usage");
      if (usage == j.end()) return;
      if (int64_t n = upstream::UpstreamInt(*usage, "output_tokens", -1); n >= 0) OutputTokens(n);
    } else if (type == "content_block_start") {
      auto block = j.find("content_block");
      if (block != j.end() && UpstreamString(*block, "type") == "tool_use")
        Tool(upstream::UpstreamInt(j, "index", 0), UpstreamString(*block, "name"));
    }
  }
};

}  // namespace

http::HttpResponse ErrorResponse(int status, std::string_view message) {
  http::HttpResponse r{status, "application/json", {}, ErrorJson(status, message)};
  if (status == 529 || status == 503 || status == 429) r.headers["retry-after"] = "1";
  return r;
}

void AnthropicReply::SetHead(const CallHead& head) {
  call_ = head;
  head_.id = "msg_" + head.workflow + "_" + head.node;
}

std::string AnthropicReply::ToolCallId(int index) const {
  return "toolu_" + Short(call_.workflow) + "_" + std::to_string(call_.turn) + "_" +
         std::to_string(index);
}

http::HttpResponse AnthropicReply::Whole(const Answer& answer) {
  return http::HttpResponse{
      200, "application/json", {}, MessageJson(answer, head_, UsageOf(answer))};
}

http::HttpResponse AnthropicReply::Error(const Status& st, Stage stage) {
  if (stage == Stage::kTurn && st.code() == StatusCode::kAborted)
    return ErrorResponse(409, st.message());  // the session answers another request
  anthropic::Error e = ErrorFromStatus(st);
  return ErrorResponse(e.http_status, e.message);
}

std::string AnthropicReply::StreamStart() {
  stream_ = std::make_unique<MessagesStream>(head_);
  Usage u;
  u.cache_read_input_tokens = std::min(call_.cached_tokens, call_.prompt_tokens);
  u.input_tokens = call_.prompt_tokens - u.cache_read_input_tokens;
  return stream_->Start(u);
}

std::string AnthropicReply::StreamText(std::string_view delta) {
  return stream_ ? stream_->Text(delta) : "";
}

std::string AnthropicReply::StreamEnd(const Answer& answer) {
  return stream_ ? stream_->Finish(answer, UsageOf(answer)) : "";
}

std::string AnthropicReply::StreamError(const Status& st) {
  return stream_ ? stream_->Fail(st) : "";
}

void AnthropicReply::ReadUpstreamAnswer(std::string_view body, std::vector<std::string>* tools,
                                        int64_t* output_tokens) const {
  auto j = nlohmann::json::parse(body, nullptr, false);
  *output_tokens = 0;
  if (!j.is_object()) return;
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    auto o = u->find("output_tokens");
    if (o != u->end() && o->is_number_integer()) *output_tokens = o->get<int64_t>();
  }
  auto content = j.find("content");
  if (content == j.end() || !content->is_array()) return;
  for (const auto& block : *content) {
    if (!block.is_object() || block.value("type", "") != "tool_use") continue;
    auto name = block.find("name");
    tools->push_back(name != block.end() && name->is_string() ? name->get<std::string>() : "tool");
  }
}

std::unique_ptr<upstream::UpstreamStreamReader> AnthropicReply::NewUpstreamStreamReader() const {
  return std::make_unique<EventReader>();
}

}  // namespace switchyard::frontends::anthropic
