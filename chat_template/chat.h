// RenderChat: a chat conversation in OpenAI shape rendered through a chat template, with
// the context Hugging Face's apply_chat_template builds.
//
// The context holds `messages`, `tools` (when given), `add_generation_prompt`, and every
// key of `extra` (bos_token, eos_token, enable_thinking, ...). Messages are as OpenAI
// clients send them: role, content (a string, null, or a list of parts), tool_calls
// ({id, type: "function", function: {name, arguments}}), tool_call_id, name, and any
// other field (reasoning_content, ...), passed through. As Hugging Face templates expect,
// a tool call's `arguments` given as a JSON string is handed to the template as the object
// it encodes (a string that is not a JSON object stays a string). A content list whose
// parts are all {"type": "text", "text": ...} becomes their texts joined with "\n" unless
// ChatOptions::keep_content_parts (templates written for text read content as a string).
// Tools are [{type: "function", function: {name, description, parameters}}].
//
// Errors: InvalidArgument naming the field (messages[2].role, tools, extra) or the
// template's own error (see template.h).
//
// Thread-safety: pure functions of their arguments; safe to call concurrently.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "chat_template/template.h"

namespace switchyard::chat_template {

struct ChatOptions {
  bool keep_content_parts = false;  // hand content lists to the template unchanged
  RenderOptions render;
};

// The render context for `messages` (a JSON array), `tools` (a JSON array, or null for
// none) and `extra` (a JSON object, or null).
Result<Json> BuildChatContext(const Json& messages, const Json& tools, bool add_generation_prompt,
                              const Json& extra = Json::object(), const ChatOptions& options = {});

Result<std::string> RenderChat(const Template& chat_template, const Json& messages,
                               const Json& tools, bool add_generation_prompt,
                               const Json& extra = Json::object(), const ChatOptions& options = {});
// Parses template_text (named "chat_template" in errors), then renders.
Result<std::string> RenderChat(std::string_view template_text, const Json& messages,
                               const Json& tools, bool add_generation_prompt,
                               const Json& extra = Json::object(), const ChatOptions& options = {});

}  // namespace switchyard::chat_template
