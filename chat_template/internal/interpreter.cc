// The evaluator of a parsed template, statements: see interpreter.h.
#include "chat_template/internal/interpreter.h"

#include "chat_template/internal/json_out.h"
#include "chat_template/internal/macros.h"

namespace switchyard::chat_template::internal {

const Value* Scope::Lookup(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
    const auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

Interpreter::DepthGuard::DepthGuard(Interpreter* in, const Node& site) : in_(in) {
  if (++in_->eval_depth_ > in_->limits_.max_eval_depth) {
    --in_->eval_depth_;
    in_->Error(site, "evaluation nests deeper than " + std::to_string(in_->limits_.max_eval_depth) +
                         " levels");
  }
}

Interpreter::CallGuard::CallGuard(Interpreter* in, const Node& site) : in_(in) {
  if (++in_->call_depth_ > in_->limits_.max_call_depth) {
    --in_->call_depth_;
    in_->Error(site, "macro calls nest deeper than " + std::to_string(in_->limits_.max_call_depth) +
                         " levels");
  }
}

Interpreter::~Interpreter() {
  for (const ScopePtr& s : captured_) s->vars.clear();
  for (const auto& ns : namespaces_) ns->Clear();
}

void Interpreter::Error(const Node& site, std::string message) const {
  Fail(site.pos, std::move(message));
}

void Interpreter::Charge(size_t steps) {
  steps_ += steps;
  if (steps_ > limits_.max_steps) {
    Fail({}, "the render takes more than " + std::to_string(limits_.max_steps) + " steps");
  }
}

Value Interpreter::NewString(std::string s, const Node& site) {
  if (s.size() > limits_.max_output_bytes) {
    Error(site,
          "a string exceeds the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  Charge(1 + s.size() / 64);
  return Value::Str(std::move(s));
}

Value Interpreter::NewList(std::vector<Value> items) {
  Charge(1 + items.size());
  return Value::List(std::move(items));
}

void Interpreter::Append(std::string* out, std::string_view text, const Node& site) {
  if (out->size() + text.size() > limits_.max_output_bytes) {
    Error(site,
          "the output exceeds the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  Charge(1 + text.size() / 64);
  out->append(text);
}

std::string Interpreter::Run(const std::vector<NodePtr>& program,
                             const nlohmann::ordered_json& context) {
  auto global = std::make_shared<Scope>(nullptr);
  InstallGlobals(global.get());
  for (const auto& [key, value] : context.items()) {
    if (global->vars.contains(key)) Fail({}, "context variable '" + key + "' is a builtin name");
    global->Set(key, FromJson(value));
  }
  std::string out;
  const Flow flow = RenderBlock(program, global, &out);
  if (flow != Flow::kNormal) Fail({}, "'break' or 'continue' outside a loop");
  global->vars.clear();
  return out;
}

Flow Interpreter::RenderBlock(const std::vector<NodePtr>& body, const ScopePtr& scope,
                              std::string* out) {
  for (const NodePtr& n : body) {
    DepthGuard guard(this, *n);
    Flow flow = Flow::kNormal;
    try {
      flow = RenderStatement(*n, scope, out);
    } catch (TemplateError& e) {
      if (e.pos.line == 0) e.pos = n->pos;
      throw;
    }
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Flow Interpreter::RenderStatement(const Node& n, const ScopePtr& scope, std::string* out) {
  switch (n.kind) {
    case NodeKind::kText:
      Append(out, n.str, n);
      return Flow::kNormal;
    case NodeKind::kComment:
      return Flow::kNormal;
    case NodeKind::kIf: {
      const bool test = Truthy(Eval(*n.a, scope));
      return RenderBlock(test ? n.body : n.alt, scope, out);
    }
    case NodeKind::kFor:
      return RenderFor(n, scope, out);
    case NodeKind::kSet:
      return ExecuteSet(n, scope);
    case NodeKind::kMacro:
      DefineMacro(n, scope);
      return Flow::kNormal;
    case NodeKind::kBreak:
      return Flow::kBreak;
    case NodeKind::kContinue:
      return Flow::kContinue;
    default:
      break;
  }
  Value v;
  if (n.kind == NodeKind::kOutput) {
    v = Eval(*n.a, scope);
  } else if (n.kind == NodeKind::kCallBlock) {
    v = RenderCallBlock(n, scope);
  } else if (n.kind == NodeKind::kFilterBlock) {
    std::string body;
    const Flow flow = RenderBlock(n.body, scope, &body);
    if (flow != Flow::kNormal) return flow;
    v = ApplyFilter(NewString(std::move(body), n), *n.a, scope);
  } else {
    Error(n, "unexpected expression in a statement list");
  }
  if (!v.is(Kind::kNull) && !v.IsUndefined()) Append(out, DisplayString(v, max_bytes()), n);
  return Flow::kNormal;
}

Flow Interpreter::RenderFor(const Node& n, const ScopePtr& scope, std::string* out) {
  auto loop_scope = std::make_shared<Scope>(scope);
  const std::vector<Value> items = LoopItems(n, loop_scope);
  const double length = static_cast<double>(items.size());
  bool none = true;
  for (size_t i = 0; i < items.size(); ++i) {
    Charge(10);
    auto loop = std::make_shared<ObjectData>();
    const double k = static_cast<double>(i);
    loop->Set("index", Value::Int(k + 1));
    loop->Set("index0", Value::Int(k));
    loop->Set("revindex", Value::Int(length - k));
    loop->Set("revindex0", Value::Int(length - k - 1));
    loop->Set("first", Value::Bool(i == 0));
    loop->Set("last", Value::Bool(i + 1 == items.size()));
    loop->Set("length", Value::Int(length));
    loop->Set("previtem", i > 0 ? items[i - 1] : Value());
    loop->Set("nextitem", i + 1 < items.size() ? items[i + 1] : Value());
    loop_scope->Set("loop", Value::Dict(std::move(loop)));
    BindTarget(*n.a, items[i], loop_scope.get());
    const size_t mark = out->size();
    const Flow flow = RenderBlock(n.body, loop_scope, out);
    if (flow != Flow::kNormal) out->resize(mark);  // the iteration's output is dropped
    if (flow == Flow::kContinue) continue;
    if (flow == Flow::kBreak) break;
    none = false;
  }
  if (none) return RenderBlock(n.alt, loop_scope, out);
  return Flow::kNormal;
}

std::vector<Value> Interpreter::LoopItems(const Node& n, const ScopePtr& scope) {
  const Value iterable = Eval(*n.b, scope);
  std::vector<Value> candidates;
  if (iterable.IsList()) {
    candidates = iterable.items();
  } else if (iterable.IsDict()) {
    for (const auto& [key, value] : iterable.dict().entries())
      candidates.push_back(Value::Str(key));
  } else {
    Error(*n.b, std::string("cannot loop over a ") + KindName(iterable));
  }
  Charge(candidates.size());
  if (n.a->kind == NodeKind::kIdent && !n.c) return candidates;
  std::vector<Value> items;
  for (const Value& c : candidates) {
    if (n.a->kind == NodeKind::kTuple) {
      if (!c.is(Kind::kArray)) Error(*n.a, std::string("cannot unpack a ") + KindName(c));
      if (c.items().size() != n.a->args.size()) {
        Error(*n.a, c.items().size() < n.a->args.size() ? "too few items to unpack"
                                                        : "too many items to unpack");
      }
    }
    if (n.c) {
      auto test_scope = std::make_shared<Scope>(scope);
      BindTarget(*n.a, c, test_scope.get());
      if (!Truthy(Eval(*n.c, test_scope))) continue;
    }
    items.push_back(c);
  }
  return items;
}

void Interpreter::BindTarget(const Node& target, const Value& item, Scope* scope) {
  if (target.kind == NodeKind::kIdent) {
    scope->Set(target.str, item);
    return;
  }
  for (size_t j = 0; j < target.args.size(); ++j) {
    const Node& name = *target.args[j];
    if (name.kind != NodeKind::kIdent) Error(name, "can only unpack into names");
    scope->Set(name.str, item.items()[j]);
  }
}

Flow Interpreter::ExecuteSet(const Node& n, const ScopePtr& scope) {
  Value v;
  if (n.b) {
    v = Eval(*n.b, scope);
  } else {
    std::string body;
    const Flow flow = RenderBlock(n.body, scope, &body);
    if (flow != Flow::kNormal) return flow;
    v = NewString(std::move(body), n);
  }
  const Node& target = *n.a;
  if (target.kind == NodeKind::kIdent) {
    scope->Set(target.str, std::move(v));
  } else if (target.kind == NodeKind::kTuple) {
    if (!v.IsList()) Error(n, std::string("cannot unpack a ") + KindName(v) + " in set");
    if (v.items().size() != target.args.size()) {
      Error(n, v.items().size() < target.args.size() ? "too few items to unpack in set"
                                                     : "too many items to unpack in set");
    }
    BindTarget(target, v, scope.get());
  } else if (target.kind == NodeKind::kMember) {
    const Value object = Eval(*target.a, scope);
    if (!object.is(Kind::kNamespace)) {
      Error(target, std::string("cannot set an attribute of a ") + KindName(object) +
                        " (only of a namespace)");
    }
    // As the reference: ns.x, and ns[x] too, set the attribute named x.
    if (target.b->kind != NodeKind::kIdent) Error(target, "can only set an attribute by name");
    object.dict().Set(target.b->str, std::move(v));
  } else {
    Error(target, "cannot assign to this expression");
  }
  return Flow::kNormal;
}

void Interpreter::DefineMacro(const Node& n, const ScopePtr& scope) {
  scope->Set(n.str, Value::Function(std::make_shared<MacroFunction>(&n, scope)));
  Capture(scope);
}

Value Interpreter::RenderCallBlock(const Node& n, const ScopePtr& scope) {
  const Node& call = *n.a;
  const Value caller = Value::Function(std::make_shared<CallerFunction>(&n, scope));
  Capture(scope);
  auto [args, kwargs] = EvalArguments(call.args, scope);
  args.push_back(Value::Dict(kwargs ? kwargs : std::make_shared<ObjectData>(), Kind::kKwargs));
  const Value fn = Eval(*call.a, scope);
  if (!fn.is(Kind::kFunction)) Error(call, std::string("cannot call a ") + KindName(fn));
  return CallValue(fn, std::move(args), call, &caller);
}

}  // namespace switchyard::chat_template::internal
