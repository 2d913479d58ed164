// A Conversation as a Chat Completions request (see chat_request.h).
#include "conversation/chat_request.h"

#include <nlohmann/json.hpp>

namespace switchyard::conversation::translate {
namespace {

using OrderedJson = nlohmann::ordered_json;

// A JSON text the front already checked, as a value; `fallback` if it is not JSON.
OrderedJson Parsed(const std::string& text, OrderedJson fallback) {
  if (text.empty()) return fallback;
  OrderedJson j = OrderedJson::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? fallback : j;
}

OrderedJson MessageOf(const Message& m) {
  OrderedJson out = OrderedJson::object();
  const bool system = m.role == "system" || m.role == "developer";
  out["role"] = system ? "system" : m.role;
  if (m.role == "tool") {
    out["tool_call_id"] = m.tool_call_id;
    out["content"] = m.content;
    return out;
  }
  if (m.role == "assistant" && !m.tool_calls.empty()) {
    out["content"] = m.content.empty() ? OrderedJson(nullptr) : OrderedJson(m.content);
    OrderedJson calls = OrderedJson::array();
    for (const ToolCall& call : m.tool_calls) {
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    out["tool_calls"] = std::move(calls);
  } else {
    out["content"] = m.content;
  }
  if (!m.name.empty()) out["name"] = m.name;
  return out;
}

OrderedJson ToolOf(const ToolDef& t) {
  OrderedJson fn = {{"name", t.name}};
  if (!t.description.empty()) fn["description"] = t.description;
  fn["parameters"] = Parsed(t.parameters_json, OrderedJson{{"type", "object"}});
  return {{"type", "function"}, {"function", std::move(fn)}};
}

OrderedJson ToolChoiceOf(const ToolChoice& choice) {
  switch (choice.kind) {
    case ToolChoice::Kind::kNone:
      return "none";
    case ToolChoice::Kind::kRequired:
      return "required";
    case ToolChoice::Kind::kFunction:
      return {{"type", "function"}, {"function", {{"name", choice.function}}}};
    case ToolChoice::Kind::kAuto:
      break;
  }
  return "auto";
}

void AddTools(const Conversation& conv, OrderedJson* body) {
  if (conv.tools.empty()) return;
  OrderedJson tools = OrderedJson::array();
  for (const ToolDef& t : conv.tools) tools.push_back(ToolOf(t));
  (*body)["tools"] = std::move(tools);
  (*body)["tool_choice"] = ToolChoiceOf(conv.tool_choice);
  if (!conv.parallel_tool_calls) (*body)["parallel_tool_calls"] = false;
}

void AddSampling(const Sampling& s, int64_t max_tokens, OrderedJson* body) {
  if (max_tokens > 0) (*body)["max_tokens"] = max_tokens;
  if (s.temperature != 1.0) (*body)["temperature"] = s.temperature;
  if (s.top_p != 1.0) (*body)["top_p"] = s.top_p;
  if (s.seed) (*body)["seed"] = *s.seed;
  if (!s.stop.empty()) (*body)["stop"] = s.stop;
}

}  // namespace

std::string ChatRequestBody(const Conversation& conv, int64_t max_tokens, bool stream) {
  OrderedJson body = OrderedJson::object();
  body["model"] = conv.model;
  OrderedJson messages = OrderedJson::array();
  for (const Message& m : conv.messages) messages.push_back(MessageOf(m));
  body["messages"] = std::move(messages);
  AddTools(conv, &body);
  AddSampling(conv.sampling, max_tokens, &body);
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

http::HttpRequest ChatRequest(const Conversation& conv, int64_t max_tokens, bool stream) {
  http::HttpRequest req;
  req.method = "POST";
  req.target = "/v1/chat/completions";
  req.headers["content-type"] = "application/json";
  req.headers["accept"] = stream ? "text/event-stream" : "application/json";
  req.body = ChatRequestBody(conv, max_tokens, stream);
  return req;
}

}  // namespace switchyard::conversation::translate
