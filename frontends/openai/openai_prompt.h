// The prompt of a chat request: the plain chat template (for tokenizers without their own)
// and its tool-call syntax — how a conversation, its tools and the calls an answer makes
// are written for the model, and how a forced call's arguments are built around the text
// the model generates.
//
// Thread-safety: pure functions; call from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "frontends/openai/openai_request.h"

namespace switchyard::frontends::openai {

// A plain chat template for tokenizers without their own (the byte tokenizer of random-weight
// models). Each turn is "<|role|>[ name]\n<body>\n" (developer renders as system; a tool turn's
// header carries its tool_call_id; the assistant's name is not rendered), tools are listed in
// the first system turn (one is added when messages[0] is not system/developer), and the text
// ends with "<|assistant|>\n" so generation continues it. Deterministic; a prefix of the
// messages renders to a prefix of the text: Render(m[0..k]) + RenderAssistantTurn(answer) is a
// prefix of Render(m[0..k+2]) when m[k] echoes the answer back. Text is not escaped.
std::string RenderChat(const std::vector<Message>& messages, const std::vector<ToolDef>& tools);
// The assistant turn's body and end as RenderChat renders it (what the engine's output becomes
// in the next prompt): content, then per call "<|tool_call|> <id> <name>\n<arguments>", then
// "\n".
std::string RenderAssistantTurn(const std::string& content, const std::vector<ToolCall>& calls);

// A forced tool call (tool_choice `required` or a named function) with a random-weights
// model: the model generates one string argument, and the front writes the rest.
// The argument it generates: the first required string property of the tool's parameters
// schema (a "type" of "string", or a list of types that holds it), else the first string
// property (in the order of the schema's keys, sorted), else "input".
std::string ForcedArgument(const ToolDef& tool);
// What the model is given before it generates that argument: the assistant turn's call
// header as RenderAssistantTurn writes it (call `id` of tool `name`), and the arguments
// object opened up to the argument's string value.
std::string ForcedCallPrefix(const std::string& id, const std::string& name,
                             const std::string& argument);
// The call's arguments: the object with `argument` set to the generated `text` (UTF-8, as a
// tokenizer decodes it).
std::string ForcedCallArguments(const std::string& argument, const std::string& text);

// For a forced tool call with a random-weights model: arguments that are a valid JSON object
// built from the generated text. With a parameters schema that has required properties, each
// is filled (strings with consecutive slices of the text, or their first enum value; other
// types with 0 / false / [] / {}); with none, the first string property gets the whole text;
// otherwise (no tool, no schema) {"input": "<text>"}.
std::string ArgumentsFromText(const ToolDef* tool, std::string_view generated);

}  // namespace switchyard::frontends::openai
