// The JSON helpers of the Responses protocol (see responses_json.h): the body parser and the
// writer of items.
#include "frontends/responses/responses_json.h"

namespace switchyard::frontends::responses::detail {
namespace {

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

Result<Json> ParseObject(std::string_view text) { return json::ParseBody(text); }

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
