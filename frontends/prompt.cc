// PromptFormat (see prompt.h): the checkpoint's chat template or the plain format, and the
// model family's tool-call syntax.
#include "frontends/prompt.h"

#include "chat_template/chat.h"
#include "cpu_engine/json_constraint.h"
#include "frontends/openai/openai_prompt.h"

namespace switchyard::frontends {

namespace ct = chat_template;
using ct::Json;

namespace {

// A tool call's arguments as the template gets them: the text (RenderChat hands a JSON
// object's text to the template as the object, as Hugging Face templates expect).
Json TemplateCall(const ToolCall& c) {
  return Json{{"id", c.id},
              {"type", "function"},
              {"function", Json{{"name", c.name}, {"arguments", c.arguments}}}};
}

Json TemplateMessage(const Message& m) {
  Json j = Json::object();
  j["role"] = m.role == "developer" ? "system" : m.role;
  // A turn without text has content "" (not null): templates test `'</think>' in
  // message.content` (Qwen3) or concatenate it.
  j["content"] = m.content;
  if (!m.name.empty()) j["name"] = m.name;
  if (!m.reasoning.empty()) j["reasoning_content"] = m.reasoning;
  if (!m.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCall& c : m.tool_calls) calls.push_back(TemplateCall(c));
    j["tool_calls"] = std::move(calls);
  }
  if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
  return j;
}

std::string JsonString(std::string_view s) { return Json(std::string(s)).dump(); }

}  // namespace

std::string ForcedCallArguments(const std::string& schema, std::string_view text) {
  auto k = cpu_engine::JsonObjectConstraint::FromSchema(schema);
  if (!k.ok()) return "{}";
  std::string args;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!k->Feed(text.substr(i, 1))) break;
    args += text[i];
  }
  return k->complete() ? args : args + k->Completion();
}

Json TemplateMessages(const Conversation& conv) {
  Json out = Json::array();
  for (const Message& m : conv.messages) out.push_back(TemplateMessage(m));
  return out;
}

Json TemplateTools(const Conversation& conv) {
  Json out = Json::array();
  for (const ToolDef& t : conv.tools) {
    Json f = Json{{"name", t.name}};
    if (!t.description.empty()) f["description"] = t.description;
    if (!t.parameters_json.empty()) {
      Json p = Json::parse(t.parameters_json, nullptr, false);
      if (!p.is_discarded()) f["parameters"] = std::move(p);
    }
    out.push_back(Json{{"type", "function"}, {"function", std::move(f)}});
  }
  return out;
}

Result<std::shared_ptr<const PromptFormat>> PromptFormat::Create(const Spec& spec) {
  std::shared_ptr<PromptFormat> f(new PromptFormat());
  if (spec.chat_template.empty()) return std::shared_ptr<const PromptFormat>(std::move(f));
  SY_ASSIGN_OR_RETURN(ct::Template t, ct::Template::Parse(spec.chat_template));
  f->tmpl_ = std::make_unique<ct::Template>(std::move(t));
  f->bos_token_ = spec.bos_token;
  f->eos_token_ = spec.eos_token;
  f->family_ = ct::DetectToolCallFamily(spec.chat_template);
  if (f->family_ == ct::ToolCallFamily::kNone)
    f->family_ = ct::ToolCallFamilyForModelType(spec.model_type);
  if (f->family_ != ct::ToolCallFamily::kNone) f->parser_ = ct::MakeToolCallParser(f->family_);
  return std::shared_ptr<const PromptFormat>(std::move(f));
}

std::string_view PromptFormat::family_name() const {
  return tmpl_ ? ct::ToolCallFamilyName(family_) : "switchyard-plain";
}

Result<std::string> PromptFormat::Render(const Conversation& conv) const {
  if (!tmpl_) return openai::RenderChat(conv.messages, conv.tools);
  Json extra = Json::object();
  if (!bos_token_.empty()) extra["bos_token"] = bos_token_;
  if (!eos_token_.empty()) extra["eos_token"] = eos_token_;
  Json tools = conv.tools.empty() ? Json(nullptr) : TemplateTools(conv);
  return ct::RenderChat(*tmpl_, TemplateMessages(conv), tools, /*add_generation_prompt=*/true,
                        extra);
}

std::string PromptFormat::ForcedCallOpening(const std::string& id, const std::string& name) const {
  if (!tmpl_) {
    const std::string mark = "\x01";
    std::string turn = openai::RenderAssistantTurn("", {ToolCall{id, name, mark}});
    return turn.substr(0, turn.find(mark));
  }
  switch (family_) {
    case ct::ToolCallFamily::kHermes:
      return "<tool_call>\n{\"name\": " + JsonString(name) + ", \"arguments\": ";
    case ct::ToolCallFamily::kLlama3Json:
    case ct::ToolCallFamily::kNone:
      break;
  }
  return "{\"name\": " + JsonString(name) + ", \"parameters\": ";
}

}  // namespace switchyard::frontends
