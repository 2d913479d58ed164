// FrontCore's prompts (see front_core.h): each served model's PromptFormat (its chat
// template or the plain format, its tool-call family), a call's prompt rendered and
// tokenized, and a forced call's opening.
#include <algorithm>

#include "cpu_engine/json_constraint.h"
#include "cpu_engine/model.h"
#include "cpu_engine/tokenizer.h"
#include "executors/generation.h"
#include "frontends/front_call.h"
#include "frontends/front_core.h"

namespace switchyard::frontends {

namespace {

std::vector<int32_t> PseudoTokens(const std::string& text) {  // the simulated engine's
  std::vector<int32_t> ids;
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t h = 2166136261u;
    for (size_t k = i; k < std::min(text.size(), i + 4); ++k)
      h = (h ^ static_cast<unsigned char>(text[k])) * 16777619u;
    ids.push_back(static_cast<int32_t>(h & 0xfffff));
  }
  return ids;
}

}  // namespace

std::optional<ToolDef> FrontCore::ForcedTool(const FrontRequest& r) {
  using Kind = ToolChoice::Kind;
  const Kind kind = r.conv.tool_choice.kind;
  if (!r.chat || r.conv.tools.empty() || (kind != Kind::kRequired && kind != Kind::kFunction))
    return std::nullopt;
  for (const ToolDef& t : r.conv.tools)
    if (kind == Kind::kFunction && t.name == r.conv.tool_choice.function) return t;
  return r.conv.tools.front();
}

Status FrontCore::PrepareForcedCall(Call* c) const {
  // No parameters: any object.
  c->schema =
      c->tool->parameters_json.empty() ? "{\"type\": \"object\"}" : c->tool->parameters_json;
  auto constraint = cpu_engine::JsonObjectConstraint::FromSchema(c->schema);
  if (!constraint.ok())
    return constraint.status().Annotate("tools: the parameters of function '" + c->tool->name +
                                        "'");
  return Status::OK();
}

Status FrontCore::CheckGuided(const Call& c) const {
  const Sampling& s = c.req.conv.sampling;
  if (s.logit_bias.empty() && s.choices.empty()) return Status::OK();
  const std::string what = s.choices.empty() ? "logit_bias" : "structured_outputs.choice";
  executors::Generation* d = service_->generation();
  const cpu_engine::Model* m = d ? d->cpu_model(c.model) : nullptr;
  if (!m)
    return Status::InvalidArgument(what + ": model '" + c.model +
                                   "' is not computed here (the simulated engine has no "
                                   "vocabulary to bias or constrain)");
  if (!s.choices.empty() && c.tool)
    return Status::InvalidArgument(what + ": not with a forced tool_choice (choose one)");
  for (const auto& [id, bias] : s.logit_bias)
    if (id >= m->shape().vocab_size)
      return Status::InvalidArgument("logit_bias." + std::to_string(id) +
                                     ": not a token of the model's vocabulary (" +
                                     std::to_string(m->shape().vocab_size) + " ids)");
  return Status::OK();
}

Result<std::shared_ptr<const PromptFormat>> FrontCore::FormatOf(const std::string& model) const {
  MutexLock lock(&formats_mu_);
  auto it = formats_.find(model);
  if (it != formats_.end()) return it->second;
  executors::Generation* d = service_->generation();
  const cpu_engine::Tokenizer* tok = d ? d->tokenizer(model) : nullptr;
  const cpu_engine::Model* m = d ? d->cpu_model(model) : nullptr;
  PromptFormat::Spec spec;
  if (tok) {
    spec.chat_template = tok->chat_template();
    spec.bos_token = tok->bos_token();
    spec.eos_token = tok->eos_token();
  }
  if (m) spec.model_type = cpu_engine::ArchName(m->shape().arch);
  auto f = PromptFormat::Create(spec);
  if (!f.ok()) return f.status().Annotate("model '" + model + "'");
  formats_.emplace(model, *f);
  return *f;
}

Result<std::string> FrontCore::RenderPrompt(const FrontRequest& r, const PromptFormat& f) const {
  if (!r.chat) return r.prompt;
  auto text = f.Render(r.conv);
  if (!text.ok()) return text.status().Annotate("messages");
  return text;
}

Result<std::vector<int32_t>> FrontCore::Tokenize(const std::string& text, const std::string& model,
                                                 bool with_bos) const {
  executors::Generation* d = service_->generation();
  const cpu_engine::Tokenizer* tok = d ? d->tokenizer(model) : nullptr;
  if (!tok) return PseudoTokens(text);
  auto ids = tok->Encode(text);
  if (!ids.ok()) return ids.status().Annotate("messages");
  std::vector<int32_t> out;
  if (with_bos && tok->add_bos() && tok->bos_id() >= 0) out.push_back(tok->bos_id());
  out.insert(out.end(), ids->begin(), ids->end());
  return out;
}

Result<std::vector<int32_t>> FrontCore::PromptTokens(const FrontRequest& r,
                                                     const std::string& model) const {
  SY_ASSIGN_OR_RETURN(std::shared_ptr<const PromptFormat> f, FormatOf(model));
  SY_ASSIGN_OR_RETURN(std::string text, RenderPrompt(r, *f));
  // A rendered template writes its own BOS (Hugging Face tokenizes it adding nothing).
  return Tokenize(text, model, /*with_bos=*/!(r.chat && f->templated()));
}

Status FrontCore::AddForcedPrefix(Call* c) const {
  c->call_id = c->reply->ToolCallId(0);
  SY_ASSIGN_OR_RETURN(std::shared_ptr<const PromptFormat> f, FormatOf(c->model));
  SY_ASSIGN_OR_RETURN(std::vector<int32_t> more,
                      Tokenize(f->ForcedCallOpening(c->call_id, c->tool->name), c->model,
                               /*with_bos=*/false));
  c->prompt.insert(c->prompt.end(), more.begin(), more.end());
  return Status::OK();
}

}  // namespace switchyard::frontends
