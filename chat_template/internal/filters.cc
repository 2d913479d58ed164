// The evaluator of a parsed template: filters written without arguments (x|upper). See
// interpreter.h; chat_template/README.md lists them.
//
// Which filters apply depends on the operand's type, exactly as in the reference (|length
// works on lists, strings and dicts, |trim only on strings, ...). A name the reference
// refuses for that type may still be one of the extensions (filters_call.cc).
#include <algorithm>
#include <cmath>
#include <set>

#include "chat_template/internal/interpreter.h"
#include "chat_template/internal/js_number.h"
#include "chat_template/internal/json_out.h"
#include "chat_template/internal/strings.h"
#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {
namespace {

using Maybe = std::optional<Value>;

Maybe ListFilter(Interpreter& in, const Value& v, const std::string& name, const Node& site) {
  const std::vector<Value>& items = v.items();
  if (name == "list") return v;
  if (name == "first") return items.empty() ? Value() : items.front();
  if (name == "last") return items.empty() ? Value() : items.back();
  if (name == "length") return Value::Int(static_cast<double>(items.size()));
  if (name == "reverse") return in.NewList(std::vector<Value>(items.rbegin(), items.rend()));
  if (name == "sort") {
    std::vector<Value> sorted = items;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Value& a, const Value& b) { return CompareValues(a, b, false) < 0; });
    return in.NewList(std::move(sorted));
  }
  if (name == "join") {
    std::string out;
    for (const Value& item : items) {
      out += JoinString(item, in.max_bytes());
      if (out.size() > in.max_bytes()) in.Error(site, "join: the result exceeds the output limit");
    }
    return in.NewString(std::move(out), site);
  }
  if (name == "string") {
    JsonFormat f;
    f.undefined_as_null = false;
    f.max_bytes = in.max_bytes();
    return in.NewString(ToJson(v, f), site);
  }
  if (name == "unique") {
    std::vector<Value> out;
    for (const Value& item : items) {
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const Value& o) { return SameValueZero(o, item); });
      if (!seen) out.push_back(item);
      in.Charge(out.size() / 16);
    }
    return in.NewList(std::move(out));
  }
  return std::nullopt;
}

Maybe StringFilter(Interpreter& in, const Value& v, const std::string& name, const Node& site) {
  const std::string& s = v.str();
  if (name == "length") return Value::Int(static_cast<double>(Utf16Length(s)));
  if (name == "upper") return in.NewString(ToUpper(s), site);
  if (name == "lower") return in.NewString(ToLower(s), site);
  if (name == "title") return in.NewString(TitleCase(s), site);
  if (name == "capitalize") return in.NewString(Capitalize(s), site);
  if (name == "trim") return in.NewString(std::string(Trim(s)), site);
  if (name == "indent")
    return in.NewString(IndentLines(s, "    ", false, false, in.max_bytes()), site);
  if (name == "join" || name == "string") return v;
  if (name == "int") {
    const double n = JsParseInt(s);
    return Value::Int(std::isnan(n) ? 0 : n);
  }
  if (name == "float") {
    const double n = JsParseFloat(s);
    return Value::Float(std::isnan(n) ? 0 : n);
  }
  return std::nullopt;
}

Maybe NumberFilter(Interpreter& in, const Value& v, const std::string& name, const Node& site) {
  if (name == "abs") return Value::Number(std::fabs(v.num()), v.is(Kind::kFloat));
  if (name == "int") return Value::Int(std::trunc(v.num()) + 0.0);
  if (name == "float") return Value::Float(v.num());
  if (name == "string") return in.NewString(DisplayString(v, in.max_bytes()), site);
  return std::nullopt;
}

Maybe BoolFilter(const Value& v, const std::string& name) {
  if (name == "bool") return v;
  if (name == "int") return Value::Int(v.num());
  if (name == "float") return Value::Float(v.num());
  if (name == "string") return Value::Str(v.boolean() ? "true" : "false");
  return std::nullopt;
}

bool IsKnownFilter(const std::string& name) {
  static const std::set<std::string> kNames = {
      "abs",      "batch",  "bool",       "capitalize", "count",   "d",       "default",
      "dictsort", "e",      "escape",     "first",      "float",   "get",     "indent",
      "int",      "items",  "join",       "keys",       "last",    "length",  "list",
      "lower",    "map",    "reject",     "rejectattr", "replace", "reverse", "round",
      "safe",     "select", "selectattr", "sort",       "string",  "title",   "tojson",
      "trim",     "unique", "upper",      "values"};
  return kNames.contains(name);
}

}  // namespace

Value Interpreter::ApplyFilter(const Value& operand, const Node& filter, const ScopePtr& scope) {
  if (filter.kind == NodeKind::kIdent) return IdentifierFilter(operand, filter.str, filter);
  if (filter.kind != NodeKind::kCall || filter.a->kind != NodeKind::kIdent) {
    Error(filter, "a filter must be a name or a call of one");
  }
  return CallFilter(operand, filter, scope);
}

Value Interpreter::IdentifierFilter(const Value& v, const std::string& name, const Node& site) {
  if (name == "safe") return v;
  if (name == "tojson") {
    JsonFormat f;
    f.max_bytes = max_bytes();
    return NewString(ToJson(v, f), site);
  }
  std::optional<Value> out;
  if (v.IsList()) {
    out = ListFilter(*this, v, name, site);
  } else if (v.is(Kind::kString)) {
    out = StringFilter(*this, v, name, site);
  } else if (v.IsNumber()) {
    out = NumberFilter(*this, v, name, site);
  } else if (v.IsDict()) {
    if (name == "items" || name == "length") {
      const Value method = DictMethod(v, "items");
      const Value items = CallValue(method, {}, site, nullptr);
      out = name == "items" ? items : Value::Int(static_cast<double>(v.dict().size()));
    } else if (const Value method = DictMethod(v, name); method.is(Kind::kFunction)) {
      out = CallValue(method, {}, site, nullptr);
    }
  } else if (v.is(Kind::kBool)) {
    out = BoolFilter(v, name);
  }
  if (out) return std::move(*out);
  return ExtensionFilter(v, name, site, {}, nullptr);
}

// Shared by both filter forms when neither the reference nor an extension applies.
[[noreturn]] void FilterError(const Interpreter& in, const Value& v, const std::string& name,
                              const Node& site) {
  if (!IsKnownFilter(name)) in.Error(site, "unknown filter '" + name + "'");
  in.Error(site, "filter '" + name + "' does not apply to a " + KindName(v));
}

}  // namespace switchyard::chat_template::internal
