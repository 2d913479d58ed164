// The llama3_json tool-call syntax (Llama 3.1 / 3.2 with JSON tool calling): the answer
// is the calls themselves,
//   {"name": "get_weather", "parameters": {"city": "Paris"}}
// optionally after <|python_tag|>, several separated by ";" (or only whitespace). Each is a
// JSON object with a non-empty string "name" and an object "parameters" ("arguments" is
// accepted too; no parameters means {}).
//
// Calls are read from the start of the answer (after whitespace and <|python_tag|>) for
// as long as they are valid; the text from the first thing that is not a valid call on
// (after the separator) is content, verbatim. If the answer does not begin with a valid
// call, all of it is content, <|python_tag|> included: prose, an unclosed object, invalid
// JSON, or an object without "name". Built-in tool calls in Python syntax
// (<|python_tag|>brave_search.call(...)) are content too. Streaming holds back the start of
// the answer until it is known whether it begins with a call, and an object until it
// closes; calls are let out as each one closes.
//
// Thread-safety: as tool_calls.h.
#pragma once

#include <memory>

#include "chat_template/tool_calls.h"

namespace switchyard::chat_template {

std::unique_ptr<ToolCallParser> MakeLlama3JsonToolCallParser();
bool Llama3JsonTemplateMatches(std::string_view chat_template);

}  // namespace switchyard::chat_template
