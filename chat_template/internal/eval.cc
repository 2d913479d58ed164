// The evaluator of a parsed template: names, literals, attributes, subscripts, slices and
// calls. See interpreter.h.
#include <cmath>

#include "chat_template/internal/interpreter.h"
#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {
namespace {

// The reference's slice(): Python's rules for start/stop/step on a length.
std::vector<size_t> SliceIndexes(size_t size, const Value& start_v, const Value& stop_v,
                                 const Value& step_v) {
  const double len = static_cast<double>(size);
  const double step = step_v.IsUndefined() ? 1 : step_v.num();
  std::vector<size_t> out;
  if (std::isnan(step) || step == 0) return out;
  const bool up = step > 0;
  double start, stop;
  if (up) {
    start = start_v.IsUndefined() ? 0 : start_v.num();
    stop = stop_v.IsUndefined() ? len : stop_v.num();
    start = start < 0 ? std::max(len + start, 0.0) : std::min(start, len);
    stop = stop < 0 ? std::max(len + stop, 0.0) : std::min(stop, len);
  } else {
    start = start_v.IsUndefined() ? len - 1 : start_v.num();
    stop = stop_v.IsUndefined() ? -1 : stop_v.num();
    start = start < 0 ? std::max(len + start, -1.0) : std::min(start, len - 1);
    stop = stop < -1 ? std::max(len + stop, -1.0) : std::min(stop, len - 1);
  }
  for (double i = start; up ? i < stop : i > stop; i += step) {
    if (std::isnan(i) || i < 0 || i >= len) break;
    out.push_back(static_cast<size_t>(i));
  }
  return out;
}

}  // namespace

Value Interpreter::Eval(const Node& n, const ScopePtr& scope) {
  DepthGuard guard(this, n);
  Charge(1);
  try {
    return EvalNode(n, scope);
  } catch (TemplateError& e) {
    if (e.pos.line == 0) e.pos = n.pos;
    throw;
  }
}

Value Interpreter::EvalNode(const Node& n, const ScopePtr& scope) {
  switch (n.kind) {
    case NodeKind::kIdent: {
      const Value* v = scope->Lookup(n.str);
      return v != nullptr ? *v : Value();
    }
    case NodeKind::kInt:
      return Value::Int(n.number);
    case NodeKind::kFloat:
      return Value::Float(n.number);
    case NodeKind::kString:
      return Value::Str(n.str);
    case NodeKind::kList:
    case NodeKind::kTuple: {
      std::vector<Value> items;
      for (const NodePtr& e : n.args) items.push_back(Eval(*e, scope));
      Value list = NewList(std::move(items));
      return n.kind == NodeKind::kTuple ? Value::Tuple(list.items()) : list;
    }
    case NodeKind::kDict:
      return EvalDict(n, scope);
    case NodeKind::kBinary:
      return EvalBinary(n, scope);
    case NodeKind::kUnary:
      return EvalUnary(n, scope);
    case NodeKind::kFilter:
      return ApplyFilter(Eval(*n.a, scope), *n.b, scope);
    case NodeKind::kTest:
      return EvalTest(n, scope);
    case NodeKind::kSelect:
      return Truthy(Eval(*n.b, scope)) ? Eval(*n.a, scope) : Value();
    case NodeKind::kTernary:
      return Truthy(Eval(*n.a, scope)) ? Eval(*n.b, scope) : Eval(*n.c, scope);
    case NodeKind::kMember:
      return EvalMember(n, scope);
    case NodeKind::kCall:
      return EvalCall(n, scope);
    default:
      Error(n, "this is not an expression");
  }
}

Value Interpreter::EvalDict(const Node& n, const ScopePtr& scope) {
  auto data = std::make_shared<ObjectData>();
  for (size_t i = 0; i + 1 < n.args.size(); i += 2) {
    const Value key = Eval(*n.args[i], scope);
    if (!key.is(Kind::kString)) {
      Error(*n.args[i], std::string("dict keys must be strings, got ") + KindName(key));
    }
    data->Set(key.str(), Eval(*n.args[i + 1], scope));
  }
  Charge(n.args.size());
  return Value::Dict(std::move(data));
}

Value Interpreter::EvalMember(const Node& n, const ScopePtr& scope) {
  const Value object = Eval(*n.a, scope);
  if (n.flag && n.b->kind == NodeKind::kSlice) return EvalSlice(object, *n.b, scope);
  Value key;
  if (n.flag) {
    key = Eval(*n.b, scope);
  } else {
    key = n.b->kind == NodeKind::kInt ? Value::Int(n.b->number) : Value::Str(n.b->str);
  }
  if (object.HasAttributes()) {
    if (!key.is(Kind::kString)) {
      Error(n, std::string("cannot look up a ") + KindName(key) + " in a " + KindName(object));
    }
    if (const Value* v = object.dict().Find(key.str())) return *v;
    return object.IsDict() ? DictMethod(object, key.str()) : Value();
  }
  if (object.IsList() || object.is(Kind::kString)) {
    if (key.is(Kind::kInt)) {
      if (object.is(Kind::kString)) {
        auto ch = Utf16At(object.str(), key.num());
        return ch ? Value::Str(std::move(*ch)) : Value();
      }
      const double len = static_cast<double>(object.items().size());
      double i = std::isnan(key.num()) ? 0 : std::trunc(key.num());
      if (i < 0) i += len;
      if (i < 0 || i >= len) return Value();
      return object.items()[static_cast<size_t>(i)];
    }
    if (!key.is(Kind::kString)) {
      Error(n, std::string("cannot index a ") + KindName(object) + " with a " + KindName(key));
    }
    if (object.is(Kind::kString)) return StringMember(object, key.str());
    return key.str() == "length" ? Value::Int(static_cast<double>(object.items().size())) : Value();
  }
  if (!key.is(Kind::kString)) {
    Error(n, std::string("cannot index a ") + KindName(object) + " with a " + KindName(key));
  }
  return Value();  // an attribute of undefined, none, a number, a boolean or a function
}

Value Interpreter::EvalSlice(const Value& object, const Node& slice, const ScopePtr& scope) {
  if (!object.IsList() && !object.is(Kind::kString)) {
    Error(slice, std::string("cannot slice a ") + KindName(object));
  }
  Value parts[3];
  const Node* nodes[3] = {slice.a.get(), slice.b.get(), slice.c.get()};
  for (int i = 0; i < 3; ++i) {
    if (nodes[i] != nullptr) parts[i] = Eval(*nodes[i], scope);
    if (!parts[i].IsUndefined() && !parts[i].is(Kind::kInt)) {
      Error(slice, std::string("slice bounds must be integers, got ") + KindName(parts[i]));
    }
  }
  if (object.IsList()) {
    const std::vector<Value>& items = object.items();
    std::vector<Value> out;
    for (size_t i : SliceIndexes(items.size(), parts[0], parts[1], parts[2]))
      out.push_back(items[i]);
    return NewList(std::move(out));
  }
  const std::vector<std::string_view> chars = CodePoints(object.str());
  std::string out;
  for (size_t i : SliceIndexes(chars.size(), parts[0], parts[1], parts[2])) out += chars[i];
  return NewString(std::move(out), slice);
}

std::pair<std::vector<Value>, std::shared_ptr<ObjectData>> Interpreter::EvalArguments(
    const std::vector<NodePtr>& args, const ScopePtr& scope) {
  std::vector<Value> positional;
  std::shared_ptr<ObjectData> keywords;
  for (const NodePtr& a : args) {
    if (a->kind == NodeKind::kSpread) {
      const Value list = Eval(*a->a, scope);
      if (!list.IsList()) Error(*a, std::string("cannot unpack a ") + KindName(list) + " with '*'");
      for (const Value& v : list.items()) positional.push_back(v);
    } else if (a->kind != NodeKind::kKwarg && a->kind != NodeKind::kKwSpread) {
      positional.push_back(Eval(*a, scope));
    }
  }
  auto add = [&](const Node& site, const std::string& key, Value v) {
    if (!keywords) keywords = std::make_shared<ObjectData>();
    if (keywords->Find(key)) Error(site, "got multiple values for keyword argument '" + key + "'");
    keywords->Set(key, std::move(v));
  };
  for (const NodePtr& a : args) {
    if (a->kind == NodeKind::kKwarg) {
      add(*a, a->str, Eval(*a->a, scope));
    } else if (a->kind == NodeKind::kKwSpread) {
      const Value dict = Eval(*a->a, scope);
      if (!dict.IsDict()) Error(*a, std::string("'**' needs a dict, got ") + KindName(dict));
      for (const auto& [k, v] : dict.dict().entries()) add(*a, k, v);
    }
  }
  return {std::move(positional), std::move(keywords)};
}

std::vector<Value> Interpreter::EvalCallArgs(const std::vector<NodePtr>& args,
                                             const ScopePtr& scope) {
  for (const NodePtr& a : args) {
    if (a->kind == NodeKind::kKwarg || a->kind == NodeKind::kSpread ||
        a->kind == NodeKind::kKwSpread) {
      auto [positional, keywords] = EvalArguments(args, scope);
      if (keywords && keywords->size() > 0) {
        positional.push_back(Value::Dict(std::move(keywords), Kind::kKwargs));
      }
      return positional;
    }
  }
  std::vector<Value> out;
  out.reserve(args.size());
  for (const NodePtr& a : args) out.push_back(Eval(*a, scope));
  return out;
}

Value Interpreter::EvalCall(const Node& n, const ScopePtr& scope) {
  std::vector<Value> args = EvalCallArgs(n.args, scope);
  const Value fn = Eval(*n.a, scope);
  if (!fn.is(Kind::kFunction)) {
    const std::string what = n.a->kind == NodeKind::kIdent ? "'" + n.a->str + "', " : "";
    Error(n, "cannot call " + what + "a " + KindName(fn) + " (not a function)");
  }
  return CallValue(fn, std::move(args), n, nullptr);
}

Value Interpreter::CallValue(const Value& fn, std::vector<Value> args, const Node& site,
                             const Value* caller) {
  Charge(1 + args.size());
  return fn.fn().Call(*this, std::move(args), site, caller);
}

}  // namespace switchyard::chat_template::internal
