// Pieces the tool-call parsers share: see tool_call_util.h.
#include "chat_template/internal/tool_call_util.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace switchyard::chat_template::internal {

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

void ContentSink::Add(std::string_view text, std::string* out) {
  if (started_) {
    out->append(text);
    return;
  }
  const bool blank = std::all_of(text.begin(), text.end(), IsAsciiSpace);
  if (blank) {
    held_.append(text);
    return;
  }
  out->append(held_);
  held_.clear();
  out->append(text);
  started_ = true;
}

size_t ObjectScanner::Scan(std::string_view text) {
  for (; pos_ < text.size(); ++pos_) {
    const char c = text[pos_];
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{') {
      ++depth_;
    } else if (c == '}' && --depth_ == 0) {
      return ++pos_;
    }
  }
  return 0;
}

std::optional<ToolCall> CallFromJson(std::string_view json, std::string_view args_key,
                                     std::string_view alt_args_key) {
  using Json = nlohmann::ordered_json;
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return std::nullopt;
  }
  auto args = j.find(std::string(args_key));
  if (args == j.end()) args = j.find(std::string(alt_args_key));
  ToolCall call{name->get<std::string>(), "{}"};
  if (args == j.end()) return call;
  Json object = *args;
  if (object.is_string()) object = Json::parse(object.get<std::string>(), nullptr, false);
  if (object.is_discarded() || !object.is_object()) return std::nullopt;
  call.arguments_json = object.dump(-1, ' ', false, Json::error_handler_t::replace);
  return call;
}

size_t HeldPrefix(std::string_view text, std::string_view marker) {
  for (size_t k = std::min(text.size(), marker.size() - 1); k > 0; --k) {
    if (text.substr(text.size() - k) == marker.substr(0, k)) return k;
  }
  return 0;
}

}  // namespace switchyard::chat_template::internal
