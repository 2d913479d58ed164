// The plain chat template (see openai_prompt.h).
#include "frontends/openai/openai_prompt.h"

namespace switchyard::frontends::openai {

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

}  // namespace switchyard::frontends::openai
