// The prompt of a chat request (see openai_prompt.h): the plain chat template, a forced
// tool call's prefix and arguments, and tool arguments built from generated text.
#include "frontends/openai/openai_prompt.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "frontends/openai/openai_json.h"

namespace switchyard::frontends::openai {
namespace {

using detail::Dump;
using detail::Get;
using detail::Json;

}  // namespace

// ---------------------------------------------------------------------------------------------
// The plain chat template.

namespace {

std::string Header(std::string_view role, std::string_view extra) {
  std::string h = "<|" + std::string(role) + "|>";
  if (!extra.empty()) h += " " + std::string(extra);
  return h + "\n";
}

std::string ToolsBlock(const std::vector<ToolDef>& tools) {
  std::string out =
      "# Tools\nTo call a tool, write <|tool_call|> <id> <name> and its JSON arguments on the "
      "next line.";
  for (const ToolDef& t : tools) {
    out += "\n- " + t.name;
    if (!t.description.empty()) out += ": " + t.description;
    if (!t.parameters_json.empty()) out += "\n  parameters: " + t.parameters_json;
  }
  return out;
}

bool IsSystem(const Message& m) { return m.role == "system" || m.role == "developer"; }

std::string RenderTurn(const Message& m) {
  if (m.role == "assistant")
    return Header("assistant", "") + RenderAssistantTurn(m.content, m.tool_calls);
  if (m.role == "tool") return Header("tool", m.tool_call_id) + m.content + "\n";
  return Header(IsSystem(m) ? "system" : m.role, m.name) + m.content + "\n";
}

}  // namespace

std::string RenderAssistantTurn(const std::string& content, const std::vector<ToolCall>& calls) {
  std::string body = content;
  for (const ToolCall& c : calls) {
    if (!body.empty()) body += '\n';
    body += "<|tool_call|> " + c.id + " " + c.name + "\n" + c.arguments;
  }
  return body + "\n";
}

std::string RenderChat(const std::vector<Message>& messages, const std::vector<ToolDef>& tools) {
  std::string out;
  size_t first = 0;
  if (!tools.empty()) {
    if (!messages.empty() && IsSystem(messages[0])) {
      const Message& m = messages[0];
      std::string body = m.content.empty() ? "" : m.content + "\n\n";
      out = Header("system", m.name) + body + ToolsBlock(tools) + "\n";
      first = 1;
    } else {
      out = Header("system", "") + ToolsBlock(tools) + "\n";
    }
  }
  for (size_t i = first; i < messages.size(); ++i) out += RenderTurn(messages[i]);
  return out + Header("assistant", "");
}

// ---------------------------------------------------------------------------------------------
// A forced tool call.

namespace {

std::string JsonString(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

// The first required string property of a JSON-schema object, else the first string
// property, else "input".
std::string ForcedArgument(const ToolDef& tool) {
  auto schema = nlohmann::json::parse(tool.parameters_json, nullptr, false);
  if (!schema.is_object() || !schema.contains("properties") || !schema["properties"].is_object())
    return "input";
  const auto& props = schema["properties"];
  // "type": "string", or a list of types that holds "string" (["string", "null"]: what
  // schema generators write for an optional string).
  auto is_string = [&](const std::string& k) {
    if (!props.contains(k) || !props[k].is_object() || !props[k].contains("type")) return false;
    const auto& t = props[k]["type"];
    if (t.is_string()) return t.get<std::string>() == "string";
    if (!t.is_array()) return false;
    for (const auto& e : t)
      if (e.is_string() && e.get<std::string>() == "string") return true;
    return false;
  };
  if (schema.contains("required") && schema["required"].is_array())
    for (const auto& r : schema["required"])
      if (r.is_string() && is_string(r.get<std::string>())) return r.get<std::string>();
  for (const auto& [k, v] : props.items())
    if (is_string(k)) return k;
  return "input";
}

// What the model is given before it generates a forced call's argument: the assistant
// turn's call header as RenderAssistantTurn writes it, and the arguments object opened.
std::string ForcedCallPrefix(const std::string& id, const std::string& name,
                             const std::string& argument) {
  const std::string mark = "\x01";
  std::string turn = RenderAssistantTurn("", {ToolCall{id, name, mark}});
  return turn.substr(0, turn.find(mark)) + "{" + JsonString(argument) + ": \"";
}

std::string ForcedCallArguments(const std::string& argument, const std::string& text) {
  return "{" + JsonString(argument) + ": " + JsonString(text) + "}";
}

// ---------------------------------------------------------------------------------------------
// Tool arguments from generated text.

namespace {

// The schema type of a property ("string" when unstated; the first non-null of a list).
std::string TypeOf(const Json& prop) {
  const Json* t = prop.is_object() ? Get(prop, "type") : nullptr;
  if (t != nullptr && t->is_string()) return t->get<std::string>();
  if (t != nullptr && t->is_array()) {
    for (const Json& x : *t) {
      if (x.is_string() && x.get_ref<const std::string&>() != "null") return x.get<std::string>();
    }
  }
  return "string";
}

// A fixed value for a property that takes no text (an enum, a const, a non-string type).
std::optional<Json> FixedValue(const Json& prop) {
  if (prop.is_object()) {
    const Json* e = Get(prop, "enum");
    if (e != nullptr && e->is_array() && !e->empty()) return (*e)[0];
    if (const Json* c = Get(prop, "const")) return *c;
  }
  const std::string type = TypeOf(prop);
  if (type == "string") return std::nullopt;
  if (type == "integer" || type == "number") return Json(0);
  if (type == "boolean") return Json(false);
  if (type == "array") return Json::array();
  if (type == "object") return Json::object();
  return Json(nullptr);
}

// `text` cut into n consecutive slices of about equal length, on character boundaries.
std::vector<std::string> Slices(std::string_view text, size_t n) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t k = 1; k <= n; ++k) {
    size_t end = k == n ? text.size() : text.size() * k / n;
    while (end > start && end < text.size() &&
           (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
      --end;
    }
    out.emplace_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

// Fills the required properties: strings with slices of `text`, the others with FixedValue.
Json FillRequired(const Json& props, const std::vector<std::string>& required,
                  std::string_view text) {
  auto prop = [&](const std::string& name) {
    auto it = props.find(name);
    return it == props.end() ? Json::object() : *it;
  };
  size_t strings = 0;
  for (const std::string& name : required) strings += !FixedValue(prop(name)).has_value();
  std::vector<std::string> slices = Slices(text, std::max<size_t>(strings, 1));
  Json args = Json::object();
  size_t next = 0;
  for (const std::string& name : required) {
    std::optional<Json> fixed = FixedValue(prop(name));
    args[name] = fixed ? *fixed : Json(slices[next++]);
  }
  return args;
}

}  // namespace

std::string ArgumentsFromText(const ToolDef* tool, std::string_view generated) {
  Json schema = tool == nullptr ? Json() : Json::parse(tool->parameters_json, nullptr, false);
  const Json* props = schema.is_object() ? Get(schema, "properties") : nullptr;
  if (props != nullptr && !props->is_object()) props = nullptr;
  std::vector<std::string> required;
  const Json* req = schema.is_object() ? Get(schema, "required") : nullptr;
  if (req != nullptr && req->is_array()) {
    for (const Json& r : *req) {
      if (r.is_string()) required.push_back(r.get<std::string>());
    }
  }
  const Json no_props = Json::object();
  if (!required.empty()) return Dump(FillRequired(props ? *props : no_props, required, generated));
  if (props != nullptr) {
    for (const auto& [name, prop] : props->items()) {
      if (!FixedValue(prop)) return Dump(Json{{name, std::string(generated)}});
    }
  }
  return Dump(Json{{"input", std::string(generated)}});
}

}  // namespace switchyard::frontends::openai
