// The items of the OpenAI Responses API, normalized: one request's input and one response's
// output are lists of items (messages, function calls, their outputs, reasoning), and a
// conversation is the items of a previous_response_id chain in order. An Item keeps what the
// conversation needs and what a re-served response or an input_items listing shows; the
// JSON shapes are written by responses_object.h. ToolRoute ties a function the model sees
// (a flat name) to where the client declared it (a `namespace` tool groups functions, and
// calls to them carry the namespace back).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/conversation_names.h"

namespace switchyard::frontends::responses {

struct Item {
  // message: a turn (role system, developer, user, assistant); function_call: a call the
  // assistant made; function_call_output: its result; reasoning: accepted in input and kept
  // for listings, never part of the conversation.
  enum class Kind { kMessage, kFunctionCall, kFunctionCallOutput, kReasoning };
  Kind kind = Kind::kMessage;
  std::string id;      // "msg_...", "fc_...", "fco_...", "rs_..."; "" until assigned
  std::string status;  // completed, incomplete, in_progress; "" when the client sent none
  std::string role;    // kMessage
  // kMessage: the text parts joined with "\n"; kFunctionCallOutput: the output (text parts
  // joined with "\n"); kReasoning: the summary texts joined with "\n".
  std::string text;
  std::string call_id;         // kFunctionCall, kFunctionCallOutput
  std::string name;            // kFunctionCall: the function as the client names it
  std::string tool_namespace;  // kFunctionCall: its namespace tool ("" for a top-level one)
  std::string arguments;       // kFunctionCall: a JSON object as text
};

// "message", "function_call", "function_call_output", "reasoning".
std::string_view KindName(Item::Kind kind);
// The id prefix of a kind: "msg", "fc", "fco", "rs".
std::string_view IdPrefix(Item::Kind kind);

// A function of the request's tools as the model sees it: `flat_name` (the name in the
// Conversation's ToolDefs and ToolCalls) and where the client declared it: the namespace
// tool's name ("" for a top-level function) and the function's name there. A namespaced
// function keeps its own name unless another tool took it; then it is "<namespace>__<name>"
// ("<namespace><name>" when the namespace already ends in '_', as Codex's "mcp__server__").
struct ToolRoute {
  std::string flat_name, tool_namespace, name;
};
// The flat name of (namespace, name) in `routes`; with an empty namespace, a top-level
// function or else the only namespaced function of that name. nullopt if none.
std::optional<std::string> FlatNameOf(const std::vector<ToolRoute>& routes,
                                      std::string_view tool_namespace, std::string_view name);
// The route of a flat name, or nullptr.
const ToolRoute* RouteOf(const std::vector<ToolRoute>& routes, std::string_view flat_name);

// The messages of `items` in order: a message item is a Message; a function_call joins the
// assistant message right before it (an assistant message, or the calls that joined it) or
// starts one with no text; a function_call_output is a role "tool" message answering its
// call_id (named after the call's function when an earlier item made that call); reasoning
// items are left out. Call names are mapped to flat names through `routes` (left as sent
// when the request no longer declares the function).
std::vector<Message> ItemsToMessages(const std::vector<Item>& items,
                                     const std::vector<ToolRoute>& routes);

}  // namespace switchyard::frontends::responses
