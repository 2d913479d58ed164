// The hermes tool-call syntax (Qwen2.5, Qwen3, NousResearch Hermes): each call is
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// anywhere in the text, several in a row. The body is one JSON object with a non-empty
// string "name" and an object "arguments" ("parameters" is accepted too; a string holding
// a JSON object is accepted; no arguments means {}).
//
// Malformed calls stay content, verbatim: a body that is not such an object keeps its
// tags in the content; a <tool_call> never closed makes it and everything after it
// content. A <tool_call> inside an open call is part of that call's body. Streaming holds
// back a suffix that may begin "<tool_call>", and everything inside an open call.
//
// Thread-safety: as tool_calls.h.
#pragma once

#include <memory>

#include "chat_template/tool_calls.h"

namespace switchyard::chat_template {

std::unique_ptr<ToolCallParser> MakeHermesToolCallParser();
bool HermesTemplateMatches(std::string_view chat_template);

}  // namespace switchyard::chat_template
