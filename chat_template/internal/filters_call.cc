// The evaluator of a parsed template: filters called with arguments (x|join(", ")). See
// interpreter.h; chat_template/README.md lists them.
//
// tojson(indent, ensure_ascii, sort_keys, separators), join, int, float and default apply
// to any operand; on lists sort(reverse, case_sensitive, attribute), selectattr,
// rejectattr and map(attribute=, default=); on strings indent(width, first, blank) and
// replace(old, new, count); on dicts their methods. The reference reads selectattr's
// arguments only as string literals.
#include <algorithm>
#include <cmath>

#include "chat_template/internal/builtin.h"
#include "chat_template/internal/filter_args.h"
#include "chat_template/internal/js_number.h"
#include "chat_template/internal/json_out.h"
#include "chat_template/internal/strings.h"
#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {
namespace {

// The value at a dotted path ("function.name", "0.x") inside dicts, namespaces and lists.
Value AttributeAt(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (v.HasAttributes()) {
      const Value* f = v.dict().Find(part);
      v = f != nullptr ? *f : Value();
    } else if (v.IsList()) {
      const double i = JsParseInt(part);
      if (std::isnan(i) || i < 0 || i >= static_cast<double>(v.items().size())) return Value();
      v = v.items()[static_cast<size_t>(i)];
    } else {
      return Value();
    }
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

Value ToJsonFilter(Interpreter& in, const Value& v, const FilterArgs& a, const Node& site) {
  JsonFormat f;
  f.max_bytes = in.max_bytes();
  const Value indent = a.Keyword("indent", Value::Null());
  const Value ascii = a.Keyword("ensure_ascii", Value::Bool(false));
  const Value sort = a.Keyword("sort_keys", Value::Bool(false));
  const Value seps = a.Keyword("separators", Value::Null());
  if (!indent.is(Kind::kInt) && !indent.is(Kind::kNull))
    in.Error(site, "tojson: indent must be an integer");
  if (!ascii.is(Kind::kBool)) in.Error(site, "tojson: ensure_ascii must be a boolean");
  if (!sort.is(Kind::kBool)) in.Error(site, "tojson: sort_keys must be a boolean");
  if (indent.is(Kind::kInt) && !std::isnan(indent.num())) {
    if (indent.num() < 0 || indent.num() > 1000) in.Error(site, "tojson: indent must be 0 to 1000");
    f.indent = static_cast<int>(indent.num());
  }
  f.ensure_ascii = ascii.boolean();
  f.sort_keys = sort.boolean();
  if (seps.IsList()) {
    const auto& s = seps.items();
    if (s.size() != 2 || !s[0].is(Kind::kString) || !s[1].is(Kind::kString)) {
      in.Error(site, "tojson: separators must be two strings");
    }
    f.separators = std::make_pair(s[0].str(), s[1].str());
  } else if (!seps.is(Kind::kNull)) {
    in.Error(site, "tojson: separators must be two strings");
  }
  return in.NewString(ToJson(v, f), site);
}

Value JoinFilter(Interpreter& in, const Value& v, const FilterArgs& a, const Node& site) {
  std::vector<std::string> parts;
  if (v.is(Kind::kString)) {
    for (std::string_view c : CodePoints(v.str())) parts.emplace_back(c);
  } else if (v.IsList()) {
    for (const Value& item : v.items()) parts.push_back(JoinString(item, in.max_bytes()));
  } else {
    FilterError(in, v, "join", site);
  }
  const Value sep = a.Get(0, "separator", Value::Str(""));
  if (!sep.is(Kind::kString)) in.Error(site, "join: the separator must be a string");
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep.str();
    out += parts[i];
    if (out.size() > in.max_bytes()) in.Error(site, "join: the result exceeds the output limit");
  }
  return in.NewString(std::move(out), site);
}

Value NumberConvert(Interpreter& in, const Value& v, const FilterArgs& a, bool to_int,
                    const Node& site) {
  const Value fallback = a.Get(0, "default", to_int ? Value::Int(0) : Value::Float(0));
  if (v.is(Kind::kString)) {
    const double n = to_int ? JsParseInt(v.str()) : JsParseFloat(v.str());
    if (std::isnan(n)) return fallback;
    return to_int ? Value::Int(n) : Value::Float(n);
  }
  if (v.IsNumeric()) return to_int ? Value::Int(std::trunc(v.num()) + 0.0) : Value::Float(v.num());
  FilterError(in, v, to_int ? "int" : "float", site);
}

Value DefaultFilter(Interpreter& in, const Value& v, const FilterArgs& a, const Node& site) {
  const Value fallback = a.pos.empty() ? Value::Str("") : a.pos[0];
  const Value boolean = a.Get(1, "boolean", Value::Bool(false));
  if (!boolean.is(Kind::kBool)) in.Error(site, "default: the boolean flag must be a boolean");
  if (v.IsUndefined() || (boolean.boolean() && !Truthy(v))) return fallback;
  return v;
}

Value SortFilter(Interpreter& in, const Value& v, const FilterArgs& a, const Node& site) {
  const Value reverse = a.Get(0, "reverse", Value::Bool(false));
  const Value cs = a.Get(1, "case_sensitive", Value::Bool(false));
  const Value attr = a.Get(2, "attribute", Value::Null());
  if (!reverse.is(Kind::kBool)) in.Error(site, "sort: reverse must be a boolean");
  if (!cs.is(Kind::kBool)) in.Error(site, "sort: case_sensitive must be a boolean");
  if (!attr.is(Kind::kString) && !attr.is(Kind::kInt) && !attr.is(Kind::kNull)) {
    in.Error(site, "sort: attribute must be a string, an integer or none");
  }
  auto key = [&](const Value& item) {
    if (attr.is(Kind::kNull)) return item;
    return AttributeAt(item, attr.is(Kind::kInt) ? JsNumberToString(attr.num()) : attr.str());
  };
  std::vector<Value> items = v.items();
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const int c = CompareValues(key(x), key(y), cs.boolean());
    return reverse.boolean() ? c > 0 : c < 0;
  });
  return in.NewList(std::move(items));
}

Value MapFilter(Interpreter& in, const Value& v, const FilterArgs& a, const Node& site) {
  const Value attr = a.Keyword("attribute", Value());
  if (attr.IsUndefined()) {
    if (!a.pos.empty() && a.pos[0].is(Kind::kString) && a.pos.size() == 1 && !a.kw) {
      std::vector<Value> out;  // extension: map('filter name')
      for (const Value& item : v.items())
        out.push_back(in.IdentifierFilter(item, a.pos[0].str(), site));
      return in.NewList(std::move(out));
    }
    in.Error(site, "map: only map(attribute=...) and map('filter') are supported");
  }
  if (!attr.is(Kind::kString)) in.Error(site, "map: attribute must be a string");
  const Value fallback = a.Keyword("default", Value());
  std::vector<Value> out;
  for (const Value& item : v.items()) {
    if (!item.HasAttributes())
      in.Error(site, std::string("map: items must be dicts, got ") + KindName(item));
    const Value found = AttributeAt(item, attr.str());
    out.push_back(found.IsUndefined() ? fallback : found);
  }
  return in.NewList(std::move(out));
}

// selectattr(attr[, test[, value]]) / rejectattr: items whose attribute passes the test (or
// is truthy). An item without the attribute never passes.
Value SelectAttr(Interpreter& in, const Value& v, const Node& call, const ScopePtr& scope,
                 bool select) {
  for (const Value& item : v.items()) {
    if (!item.HasAttributes()) {
      in.Error(call,
               call.a->str + " applies to a list of dicts, got a " + KindName(item) + " item");
    }
  }
  std::vector<Value> args;
  for (const NodePtr& n : call.args) args.push_back(in.Eval(*n, scope));
  if (args.empty() || !args[0].is(Kind::kString))
    in.Error(call, call.a->str + ": the attribute must be a string");
  if (args.size() > 1 && !args[1].is(Kind::kString))
    in.Error(call, call.a->str + ": the test must be a name");
  std::vector<Value> out;
  for (const Value& item : v.items()) {
    const Value* a = item.dict().Find(args[0].str());
    bool pass = false;
    if (a != nullptr) {
      pass = args.size() > 1
                 ? in.RunTest(args[1].str(), *a, args.size() > 2 ? &args[2] : nullptr, call)
                 : Truthy(*a);
    }
    if (pass == select) out.push_back(item);
  }
  return in.NewList(std::move(out));
}

Value IndentFilter(Interpreter& in, const Value& v, const FilterArgs& a, const Node& site) {
  const Value width = a.Get(0, "width", Value::Int(4));
  const bool first = JsTruthy(a.Get(1, "first", Value::Bool(false)));
  const bool blank = JsTruthy(a.Get(2, "blank", Value::Bool(false)));
  std::string indent;
  if (width.is(Kind::kString)) {
    indent = width.str();
  } else if (width.is(Kind::kInt)) {
    if (width.num() > static_cast<double>(in.max_bytes()))
      in.Error(site, "indent: width is too large");
    if (width.num() > 0) indent.assign(static_cast<size_t>(width.num()), ' ');
  } else {
    in.Error(site, "indent: width must be an integer or a string");
  }
  return in.NewString(IndentLines(v.str(), indent, first, blank, in.max_bytes()), site);
}

}  // namespace

Value Interpreter::CallFilter(const Value& v, const Node& call, const ScopePtr& scope) {
  const std::string& name = call.a->str;
  if ((name == "selectattr" || name == "rejectattr") && v.IsList()) {
    return SelectAttr(*this, v, call, scope, name == "selectattr");
  }
  auto [pos, kw] = EvalArguments(call.args, scope);
  const FilterArgs a{pos, kw};
  if (name == "tojson") return ToJsonFilter(*this, v, a, call);
  if (name == "join") return JoinFilter(*this, v, a, call);
  if (name == "int" || name == "float") return NumberConvert(*this, v, a, name == "int", call);
  if (name == "default" || name == "d") return DefaultFilter(*this, v, a, call);
  if (v.IsList() && name == "sort") return SortFilter(*this, v, a, call);
  if (v.IsList() && name == "map") return MapFilter(*this, v, a, call);
  if (v.is(Kind::kString) && name == "indent") return IndentFilter(*this, v, a, call);
  if (v.is(Kind::kString) && name == "replace") {
    std::vector<Value> args = pos;
    args.push_back(Value::Dict(kw ? kw : std::make_shared<ObjectData>(), Kind::kKwargs));
    return CallValue(StringMember(v, "replace"), std::move(args), call, nullptr);
  }
  if (v.IsDict()) {
    const Value method = DictMethod(v, name);
    if (method.is(Kind::kFunction)) {
      std::vector<Value> args = pos;
      if (kw && kw->size() > 0) args.push_back(Value::Dict(kw, Kind::kKwargs));
      return CallValue(method, std::move(args), call, nullptr);
    }
  }
  if (pos.empty() && !kw) return IdentifierFilter(v, name, call);  // x|upper()
  return ExtensionFilter(v, name, call, pos, kw);
}

}  // namespace switchyard::chat_template::internal
