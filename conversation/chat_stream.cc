// A Chat Completions stream read into an Answer (see chat_stream.h).
#include "conversation/chat_stream.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "conversation/chat_answer.h"
#include "conversation/chat_json.h"

namespace switchyard::conversation::translate {
namespace {

using Json = nlohmann::json;
constexpr size_t kMaxOther = 64 * 1024;

}  // namespace

std::string ChatStreamReader::Feed(std::string_view bytes) {
  std::string text;
  buffer_.append(bytes);
  size_t at = 0;
  for (size_t nl; (nl = buffer_.find('\n', at)) != std::string::npos; at = nl + 1) {
    std::string_view line(buffer_.data() + at, nl - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    text += Line(line);
  }
  buffer_.erase(0, at);
  return text;
}

std::string ChatStreamReader::Finish() {
  std::string text;
  if (!buffer_.empty()) text += Line(buffer_);
  buffer_.clear();
  text += Line("");  // the last event, if no blank line closed it
  if (error_.ok() && !done_ && !finished_ && !other_.empty()) error_ = ChatErrorStatus(0, other_);
  if (!answer_.tool_calls.empty()) answer_.end = Answer::End::kToolCalls;
  return text;
}

std::string ChatStreamReader::Line(std::string_view line) {
  if (line.empty()) {  // the event ends
    if (!has_data_) return "";
    has_data_ = false;
    std::string data = std::move(data_);
    data_.clear();
    return Event(data);
  }
  if (line.substr(0, 5) == "data:") {
    line.remove_prefix(5);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (has_data_) data_ += '\n';
    data_.append(line);
    has_data_ = true;
  } else if (line.front() != ':' && line.substr(0, 6) != "event:" && line.substr(0, 3) != "id:" &&
             line.substr(0, 6) != "retry:" && other_.size() < kMaxOther) {
    other_.append(line).append("\n");
  }
  return "";
}

std::string ChatStreamReader::Event(const std::string& data) {
  if (!error_.ok() || done_) return "";
  if (data == "[DONE]") {
    done_ = true;
    return "";
  }
  return Chunk(data);
}

std::string ChatStreamReader::Chunk(const std::string& data) {
  Json j = Json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "";
  if (detail::Field(j, "error")) {
    error_ = ChatErrorStatus(0, data);
    return "";
  }
  detail::ReadUsage(j, &answer_);
  const Json* choices = detail::Field(j, "choices");
  if (!choices || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) return "";
  const Json& choice = (*choices)[0];
  std::string text;
  if (const Json* delta = detail::Field(choice, "delta"); delta && delta->is_object()) {
    text = detail::String(*delta, "content");
    answer_.text += text;
    std::string reasoning = detail::String(*delta, "reasoning_content");
    answer_.reasoning += reasoning.empty() ? detail::String(*delta, "reasoning") : reasoning;
    const Json* calls = detail::Field(*delta, "tool_calls");
    for (size_t i = 0; calls && calls->is_array() && i < calls->size(); ++i) {
      const Json& call = (*calls)[i];
      const Json* index = detail::Field(call, "index");
      const int64_t at =
          index && index->is_number_integer() ? index->get<int64_t>() : static_cast<int64_t>(i);
      auto it = std::find(call_index_.begin(), call_index_.end(), at);
      if (it == call_index_.end()) {
        call_index_.push_back(at);
        answer_.tool_calls.emplace_back();
        it = call_index_.end() - 1;
      }
      detail::ReadCallDelta(call, &answer_.tool_calls[it - call_index_.begin()]);
    }
  }
  if (detail::Field(choice, "finish_reason")) {
    detail::ReadEnd(choice, &answer_);
    finished_ = true;
  }
  return text;
}

}  // namespace switchyard::conversation::translate
