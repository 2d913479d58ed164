// The evaluator of a parsed template: operators and tests. See interpreter.h.
//
// Binary operators follow the reference's dispatch order exactly (it decides which
// operand types an operator accepts): and/or; ==/!= as JavaScript's loose equality; then
// numbers; then undefined and none operands; ~; **; list + list; membership in a list;
// + with a string; substring and dict-key membership.
#include <cmath>

#include "chat_template/internal/interpreter.h"

namespace switchyard::chat_template::internal {
namespace {

// Math.pow, which differs from std::pow on NaN exponents and (+-1) ** infinity.
double JsPow(double a, double b) {
  if (std::isnan(b)) return std::nan("");
  if (b == 0) return 1;
  if (std::fabs(a) == 1 && std::isinf(b)) return std::nan("");
  return std::pow(a, b);
}

bool IsNone(const Value& v) { return v.is(Kind::kNull); }

}  // namespace

Value Interpreter::EvalArithmetic(const Node& n, const Value& l, const Value& r) {
  const std::string& op = n.str;
  const double a = l.num(), b = r.num();
  const bool is_float = l.is(Kind::kFloat) || r.is(Kind::kFloat);
  if (op == "+") return Value::Number(a + b, is_float);
  if (op == "-") return Value::Number(a - b, is_float);
  if (op == "*") return Value::Number(a * b, is_float);
  if (op == "/") return Value::Float(a / b);
  if (op == "//") return Value::Number(std::floor(a / b), is_float);
  if (op == "%") return Value::Number(std::fmod(a, b), is_float);
  if (op == "<") return Value::Bool(a < b);
  if (op == ">") return Value::Bool(a > b);
  if (op == ">=") return Value::Bool(a >= b);
  if (op == "<=") return Value::Bool(a <= b);
  Error(n, "unsupported operator '" + op + "' between " + KindName(l) + " and " + KindName(r));
}

Value Interpreter::EvalBinary(const Node& n, const ScopePtr& scope) {
  const std::string& op = n.str;
  const Value l = Eval(*n.a, scope);
  if (op == "and") return Truthy(l) ? Eval(*n.b, scope) : l;
  if (op == "or") return Truthy(l) ? l : Eval(*n.b, scope);
  const Value r = Eval(*n.b, scope);
  if (op == "==") return Value::Bool(LooseEquals(l, r, max_bytes()));
  if (op == "!=") return Value::Bool(!LooseEquals(l, r, max_bytes()));
  const bool in = op == "in" || op == "not in";
  if (l.IsNumber() && r.IsNumber() && op != "~" && op != "**") {
    if (!in) return EvalArithmetic(n, l, r);
  } else if (l.IsUndefined() || r.IsUndefined()) {
    if (r.IsUndefined() && in) return Value::Bool(op == "not in");
    if (op == "~" && !IsNone(l) && !IsNone(r)) {
      const std::string lhs = l.IsUndefined() ? "" : JsString(l, max_bytes());
      const std::string rhs = r.IsUndefined() ? "" : JsString(r, max_bytes());
      return NewString(lhs + rhs, n);
    }
    Error(n, "cannot apply '" + op + "' to an undefined value");
  } else if (IsNone(l) || IsNone(r)) {
    Error(n, "cannot apply '" + op + "' to none");
  } else if (op == "~") {
    return NewString(JsString(l, max_bytes()) + JsString(r, max_bytes()), n);
  } else if (op == "**" && l.IsNumeric() && r.IsNumeric()) {
    const double a = l.num(), b = r.num();
    if (a == 0 && b < 0) Error(n, "0.0 cannot be raised to a negative power");
    const double res = JsPow(a, b);
    if (!std::isfinite(res)) Error(n, "the result of '**' is not a finite number");
    return Value::Number(res, l.is(Kind::kFloat) || r.is(Kind::kFloat) || b < 0);
  } else if (l.IsList() && r.IsList()) {
    if (op == "+") {
      std::vector<Value> items = l.items();
      items.insert(items.end(), r.items().begin(), r.items().end());
      return NewList(std::move(items));
    }
  } else if (r.IsList() && in) {
    bool found = false;
    for (const Value& x : r.items()) found = found || StrictEquals(x, l);
    return Value::Bool(found == (op == "in"));
  }
  if ((l.is(Kind::kString) || r.is(Kind::kString)) && op == "+") {
    return NewString(JsString(l, max_bytes()) + JsString(r, max_bytes()), n);
  }
  if (l.is(Kind::kString) && r.is(Kind::kString) && in) {
    return Value::Bool((r.str().find(l.str()) != std::string::npos) == (op == "in"));
  }
  if (l.is(Kind::kString) && r.IsDict() && in) {
    return Value::Bool((r.dict().Find(l.str()) != nullptr) == (op == "in"));
  }
  Error(n, "unsupported operator '" + op + "' between " + KindName(l) + " and " + KindName(r));
}

Value Interpreter::EvalUnary(const Node& n, const ScopePtr& scope) {
  const Value v = Eval(*n.a, scope);
  if (n.str == "not") return Value::Bool(!Truthy(v));
  if (!v.IsNumeric()) Error(n, "cannot apply unary '" + n.str + "' to a " + KindName(v));
  const double sign = n.str == "-" ? -1 : 1;
  return Value::Number(sign * v.num(), v.is(Kind::kFloat));
}

Value Interpreter::EvalTest(const Node& n, const ScopePtr& scope) {
  const Value operand = Eval(*n.a, scope);
  Value arg;
  if (!n.args.empty()) arg = Eval(*n.args[0], scope);
  const bool result = RunTest(n.str, operand, n.args.empty() ? nullptr : &arg, n);
  return Value::Bool(n.flag ? !result : result);
}

}  // namespace switchyard::chat_template::internal
