// The plain chat template (for tokenizers without their own; frontends/prompt.h chooses) and
// its tool-call syntax: how a conversation, its tools and the calls an answer makes are
// written for the model.
//
// Thread-safety: pure functions; call from any thread.
#pragma once

#include <string>
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

}  // namespace switchyard::frontends::openai
