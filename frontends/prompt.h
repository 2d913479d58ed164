// PromptFormat: how one served model is prompted and how its answers are read, for every
// front door — the conversation rendered through the checkpoint's own chat template (the
// Jinja subset of chat_template/, with the context Hugging Face's apply_chat_template
// builds), or through Switchyard's plain format (openai/openai_prompt.h) for a model whose
// tokenizer has no template (random-weight shapes with a byte vocabulary); the tool-call
// syntax of the model's family (chat_template/tool_calls.h: hermes for Qwen, llama3_json
// for Llama 3), used to parse the calls an answer makes under tool_choice "auto" and to open
// a forced call the way the model would write it.
//
// A templated prompt is tokenized as Hugging Face tokenizes a rendered template: special
// tokens written in the text become their ids and nothing is added (the template writes
// its own BOS); a plain prompt starts with the tokenizer's BOS when it adds one.
//
// Thread-safety: immutable after Create; every method may be called from several threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "chat_template/template.h"
#include "chat_template/tool_calls.h"
#include "frontends/conversation_names.h"

namespace switchyard::frontends {

class PromptFormat {
 public:
  struct Spec {
    std::string chat_template;         // the checkpoint's; "" for the plain format
    std::string bos_token, eos_token;  // their text, for the template's context
    std::string model_type;  // config.json's ("qwen3", "llama"): the tool-call family when
                             // the template names none
  };
  // InvalidArgument naming the template's line when it cannot be parsed.
  static Result<std::shared_ptr<const PromptFormat>> Create(const Spec& spec);

  bool templated() const { return tmpl_ != nullptr; }
  chat_template::ToolCallFamily family() const { return family_; }
  std::string_view family_name() const;

  // The prompt's text for `conv`, ending where the assistant's answer begins. A template's
  // own error (raise_exception, a role it refuses) is InvalidArgument naming the template.
  Result<std::string> Render(const Conversation& conv) const;

  // A forced call of tool `name` (call id `id`): the text written after the generation
  // prompt, in the family's syntax, up to where the model writes the arguments object
  // (hermes: `<tool_call>\n{"name": "f", "arguments": `; llama3_json: `{"name": "f",
  // "parameters": `; the plain format: its call header).
  std::string ForcedCallOpening(const std::string& id, const std::string& name) const;

  // The parser of the calls an answer makes in the family's syntax; nullptr when answers
  // are not parsed for calls (the plain format, or a family this server has no parser for).
  const chat_template::ToolCallParser* parser() const { return parser_.get(); }

 private:
  PromptFormat() = default;
  std::unique_ptr<chat_template::Template> tmpl_;  // null: the plain format
  std::string bos_token_, eos_token_;
  chat_template::ToolCallFamily family_ = chat_template::ToolCallFamily::kNone;
  std::unique_ptr<chat_template::ToolCallParser> parser_;
};

// A forced call's arguments: the text the engine generated under the constraint of
// `schema` (cpu_engine/json_constraint.h: an object holding every required property),
// closed into a complete object where it was cut (max_tokens, a stop sequence). Text past what the
// constraint accepts (the simulated engine's placeholder is not JSON at all) is replaced by the
// completion: the result is always a JSON object holding every required property. "{}" for a schema
// the constraint refuses.
std::string ForcedCallArguments(const std::string& schema, std::string_view text);

// The conversation in the shape Hugging Face chat templates read (OpenAI's): messages with
// role, content ("" for a turn without text), name, tool_calls ({id, type, function: {name,
// arguments}}), tool_call_id and reasoning_content; developer turns become system turns. Tools as
// [{type: "function", function: {name, description, parameters}}] (a parameters text that is not
// JSON stays out).
chat_template::Json TemplateMessages(const Conversation& conv);
chat_template::Json TemplateTools(const Conversation& conv);

}  // namespace switchyard::frontends
