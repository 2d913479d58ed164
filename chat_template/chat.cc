// RenderChat: see chat.h.
#include "chat_template/chat.h"

namespace switchyard::chat_template {
namespace {

std::string At(size_t i) { return "messages[" + std::to_string(i) + "]"; }

// A text-only part list as one string; anything else unchanged.
Json JoinTextParts(const Json& content) {
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      return content;
    }
    if (i > 0) text += "\n";
    text += part["text"].get<std::string>();
  }
  return content.empty() ? content : Json(text);
}

Status NormalizeToolCalls(const std::string& where, Json& calls) {
  if (calls.is_null()) return Status::OK();
  if (!calls.is_array()) return Status::InvalidArgument(where + ".tool_calls must be an array");
  for (size_t k = 0; k < calls.size(); ++k) {
    const std::string at = where + ".tool_calls[" + std::to_string(k) + "]";
    Json& call = calls[k];
    if (!call.is_object()) return Status::InvalidArgument(at + " must be an object");
    if (!call.contains("function")) continue;
    Json& fn = call["function"];
    if (!fn.is_object()) return Status::InvalidArgument(at + ".function must be an object");
    if (!fn.contains("name") || !fn["name"].is_string()) {
      return Status::InvalidArgument(at + ".function.name must be a string");
    }
    if (fn.contains("arguments") && fn["arguments"].is_string()) {
      Json parsed = Json::parse(fn["arguments"].get<std::string>(), nullptr, false);
      if (!parsed.is_discarded() && parsed.is_object()) fn["arguments"] = std::move(parsed);
    }
  }
  return Status::OK();
}

Status NormalizeMessage(size_t i, Json& m, const ChatOptions& options) {
  if (!m.is_object()) return Status::InvalidArgument(At(i) + " must be an object");
  if (!m.contains("role") || !m["role"].is_string()) {
    return Status::InvalidArgument(At(i) + ".role must be a string");
  }
  if (m.contains("content")) {
    Json& content = m["content"];
    if (!content.is_string() && !content.is_null() && !content.is_array()) {
      return Status::InvalidArgument(At(i) + ".content must be a string, null or a list of parts");
    }
    if (content.is_array() && !options.keep_content_parts) content = JoinTextParts(content);
  }
  if (m.contains("tool_calls")) SY_RETURN_IF_ERROR(NormalizeToolCalls(At(i), m["tool_calls"]));
  return Status::OK();
}

}  // namespace

Result<Json> BuildChatContext(const Json& messages, const Json& tools, bool add_generation_prompt,
                              const Json& extra, const ChatOptions& options) {
  if (!messages.is_array()) return Status::InvalidArgument("messages must be an array");
  if (!tools.is_null() && !tools.is_array()) {
    return Status::InvalidArgument("tools must be an array or null");
  }
  if (!extra.is_null() && !extra.is_object())
    return Status::InvalidArgument("extra must be an object");
  Json context = Json::object();
  if (extra.is_object()) {
    for (const auto& [key, value] : extra.items()) {
      if (key == "messages" || key == "tools" || key == "add_generation_prompt") {
        return Status::InvalidArgument("extra must not set '" + key + "'");
      }
      context[key] = value;
    }
  }
  Json normalized = messages;
  for (size_t i = 0; i < normalized.size(); ++i) {
    SY_RETURN_IF_ERROR(NormalizeMessage(i, normalized[i], options));
  }
  context["messages"] = std::move(normalized);
  if (tools.is_array()) {
    for (size_t i = 0; i < tools.size(); ++i) {
      if (!tools[i].is_object()) {
        return Status::InvalidArgument("tools[" + std::to_string(i) + "] must be an object");
      }
    }
    context["tools"] = tools;
  }
  context["add_generation_prompt"] = add_generation_prompt;
  return context;
}

Result<std::string> RenderChat(const Template& chat_template, const Json& messages,
                               const Json& tools, bool add_generation_prompt, const Json& extra,
                               const ChatOptions& options) {
  SY_ASSIGN_OR_RETURN(Json context,
                      BuildChatContext(messages, tools, add_generation_prompt, extra, options));
  return chat_template.Render(context, options.render);
}

Result<std::string> RenderChat(std::string_view template_text, const Json& messages,
                               const Json& tools, bool add_generation_prompt, const Json& extra,
                               const ChatOptions& options) {
  SY_ASSIGN_OR_RETURN(Template parsed, Template::Parse(template_text));
  return RenderChat(parsed, messages, tools, add_generation_prompt, extra, options);
}

}  // namespace switchyard::chat_template
