// Macros and {% call %} blocks as callable values: see macros.h.
#include "chat_template/internal/macros.h"

namespace switchyard::chat_template::internal {
namespace {

// Binds parameters (kIdent or kKwarg nodes) in `scope` from `args`.
void BindArguments(Interpreter& in, const std::string& display, const Node& owner,
                   const std::vector<Value>& args_in, const Node& site, const ScopePtr& scope) {
  std::vector<Value> positional = args_in;
  ObjectData keywords;
  if (!positional.empty() && positional.back().is(Kind::kKwargs)) {
    for (const auto& [k, v] : positional.back().dict().entries()) keywords.Set(k, v);
    positional.pop_back();
  }
  const std::vector<NodePtr>& params = owner.args;
  std::vector<const Node*> pending;  // parameters that take their default
  for (size_t i = 0; i < params.size(); ++i) {
    const Node& p = *params[i];
    Value v;
    bool given = i < positional.size();
    if (given) {
      v = positional[i];
    } else if (const Value* kw = keywords.Find(p.str)) {
      v = *kw;
      keywords.Erase(p.str);
      given = true;
    }
    if (!given && p.kind == NodeKind::kKwarg) pending.push_back(&p);
    scope->Set(p.str, std::move(v));
  }
  if (owner.special & kUsesKwargs) {
    auto rest = std::make_shared<ObjectData>(keywords);
    scope->Set("kwargs", Value::Dict(std::move(rest)));
  } else if (keywords.size() > 0) {
    in.Error(site, "macro " + display + " takes no keyword argument '" +
                       keywords.entries().front().first + "'");
  }
  if (owner.special & kUsesVarargs) {
    std::vector<Value> rest;
    for (size_t i = params.size(); i < positional.size(); ++i) rest.push_back(positional[i]);
    scope->Set("varargs", in.NewList(std::move(rest)));
  } else if (positional.size() > params.size()) {
    in.Error(site, "macro " + display + " takes not more than " + std::to_string(params.size()) +
                       " argument(s)");
  }
  for (const Node* p : pending) scope->Set(p->str, in.Eval(*p->a, scope));
}

Value RenderBody(Interpreter& in, const Node& owner, const ScopePtr& scope, const Node& site) {
  std::string out;
  if (in.RenderBlock(owner.body, scope, &out) != Flow::kNormal) {
    in.Error(site, "'break' or 'continue' outside a loop (inside a macro)");
  }
  return in.NewString(std::move(out), site);
}

}  // namespace

Value MacroFunction::Call(Interpreter& in, std::vector<Value> args, const Node& site,
                          const Value* caller) const {
  Interpreter::CallGuard guard(&in, site);
  ScopePtr parent = scope_;
  if (node_->special & kUsesCaller) {
    parent = std::make_shared<Scope>(scope_);
    parent->Set("caller", caller != nullptr ? *caller : Value());
  }
  auto scope = std::make_shared<Scope>(parent);
  BindArguments(in, "'" + node_->str + "'", *node_, args, site, scope);
  return RenderBody(in, *node_, scope, site);
}

Value CallerFunction::Call(Interpreter& in, std::vector<Value> args, const Node& site,
                           const Value* caller) const {
  Interpreter::CallGuard guard(&in, site);
  auto scope = std::make_shared<Scope>(scope_);
  BindArguments(in, "None", *node_, args, site, scope);
  return RenderBody(in, *node_, scope, site);
}

}  // namespace switchyard::chat_template::internal
