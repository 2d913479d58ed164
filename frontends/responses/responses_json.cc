// The JSON helpers of the Responses protocol (see responses_json.h): the body parser and the
// writer of items.
#include "frontends/responses/responses_json.h"

#include <algorithm>

namespace switchyard::frontends::responses::detail {
namespace {

constexpr int kMaxDepth = 64;

// The deepest nesting of [ and { outside strings; stops counting past kMaxDepth.
int NestingDepth(std::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
      if (max_depth > kMaxDepth) break;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

// A message part: input_text for what the client said, output_text for the assistant.
Json TextPart(const Item& item) {
  if (item.role == "assistant") {
    return {{"type", "output_text"}, {"text", item.text}, {"annotations", Json::array()}};
  }
  return {{"type", "input_text"}, {"text", item.text}};
}

}  // namespace

bool IsOneOf(std::string_view words, std::string_view word) {
  if (word.empty() || word.find(' ') != std::string_view::npos) return false;
  for (size_t at = words.find(word); at != std::string_view::npos; at = words.find(word, at + 1)) {
    const bool starts = at == 0 || words[at - 1] == ' ';
    const size_t end = at + word.size();
    if (starts && (end == words.size() || words[end] == ' ')) return true;
  }
  return false;
}

Result<Json> ParseObject(std::string_view text) {
  if (NestingDepth(text) > kMaxDepth) {
    return Status::InvalidArgument("request body nests deeper than " + std::to_string(kMaxDepth) +
                                   " levels");
  }
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return Status::InvalidArgument("request body is not valid JSON (at byte " +
                                   std::to_string(e.byte) + ")");
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(std::string("request body is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) return Status::InvalidArgument("request body must be a JSON object");
  return j;
}

Json ItemJson(const Item& item) {
  Json j = {{"type", KindName(item.kind)}, {"id", item.id}};
  switch (item.kind) {
    case Item::Kind::kMessage:
      j["status"] = item.status.empty() ? "completed" : item.status;
      j["role"] = item.role;
      j["content"] = Json::array({TextPart(item)});
      break;
    case Item::Kind::kFunctionCall:
      j["call_id"] = item.call_id;
      j["name"] = item.name;
      if (!item.tool_namespace.empty()) j["namespace"] = item.tool_namespace;
      j["arguments"] = item.arguments;
      j["status"] = item.status.empty() ? "completed" : item.status;
      break;
    case Item::Kind::kFunctionCallOutput:
      j["call_id"] = item.call_id;
      j["output"] = item.text;
      j["status"] = item.status.empty() ? "completed" : item.status;
      break;
    case Item::Kind::kReasoning:
      if (!item.status.empty()) j["status"] = item.status;
      j["summary"] = Json::array();
      if (!item.text.empty()) {
        j["summary"].push_back({{"type", "summary_text"}, {"text", item.text}});
      }
      break;
  }
  return j;
}

}  // namespace switchyard::frontends::responses::detail
