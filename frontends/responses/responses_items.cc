// The normalized items of the Responses API (see responses_items.h): their names, the
// routes of flattened functions, and items as conversation messages.
#include "frontends/responses/responses_items.h"

#include <map>

namespace switchyard::frontends::responses {

std::string_view KindName(Item::Kind kind) {
  switch (kind) {
    case Item::Kind::kMessage:
      return "message";
    case Item::Kind::kFunctionCall:
      return "function_call";
    case Item::Kind::kFunctionCallOutput:
      return "function_call_output";
    case Item::Kind::kReasoning:
      return "reasoning";
  }
  return "message";
}

std::string_view IdPrefix(Item::Kind kind) {
  switch (kind) {
    case Item::Kind::kMessage:
      return "msg";
    case Item::Kind::kFunctionCall:
      return "fc";
    case Item::Kind::kFunctionCallOutput:
      return "fco";
    case Item::Kind::kReasoning:
      return "rs";
  }
  return "msg";
}

std::optional<std::string> FlatNameOf(const std::vector<ToolRoute>& routes,
                                      std::string_view tool_namespace, std::string_view name) {
  const ToolRoute* namespaced = nullptr;
  int namespaced_matches = 0;
  for (const ToolRoute& r : routes) {
    if (r.name != name) continue;
    if (r.tool_namespace == tool_namespace) return r.flat_name;
    if (tool_namespace.empty()) {
      namespaced = &r;
      ++namespaced_matches;
    }
  }
  if (namespaced_matches == 1) return namespaced->flat_name;
  return std::nullopt;
}

const ToolRoute* RouteOf(const std::vector<ToolRoute>& routes, std::string_view flat_name) {
  for (const ToolRoute& r : routes) {
    if (r.flat_name == flat_name) return &r;
  }
  return nullptr;
}

namespace {

// Whether a function_call may join the last message: an assistant turn (its text, or calls
// that joined it) that no tool result has followed.
bool JoinsLast(const std::vector<Message>& messages) {
  return !messages.empty() && messages.back().role == "assistant";
}

}  // namespace

std::vector<Message> ItemsToMessages(const std::vector<Item>& items,
                                     const std::vector<ToolRoute>& routes) {
  std::vector<Message> out;
  std::map<std::string, std::string> call_names;  // call_id -> flat name
  for (const Item& item : items) {
    switch (item.kind) {
      case Item::Kind::kMessage:
        out.push_back(Message{.role = item.role, .content = item.text});
        break;
      case Item::Kind::kFunctionCall: {
        std::string name = FlatNameOf(routes, item.tool_namespace, item.name).value_or(item.name);
        call_names[item.call_id] = name;
        if (!JoinsLast(out)) out.push_back(Message{.role = "assistant"});
        out.back().tool_calls.push_back(ToolCall{item.call_id, std::move(name), item.arguments});
        break;
      }
      case Item::Kind::kFunctionCallOutput: {
        auto it = call_names.find(item.call_id);
        out.push_back(Message{.role = "tool",
                              .content = item.text,
                              .name = it == call_names.end() ? "" : it->second,
                              .tool_call_id = item.call_id});
        break;
      }
      case Item::Kind::kReasoning:
        break;
    }
  }
  return out;
}

}  // namespace switchyard::frontends::responses
