// The evaluator of a parsed template: "is" tests. See interpreter.h.
//
// The reference's tests: boolean, callable, odd, even, false, true, none, string, number,
// integer, iterable (list or string, not tuple), mapping (dict), sequence, lower, upper,
// defined, undefined, equalto and eq (=== with the argument). Extensions with Jinja's
// meaning, for tests the reference does not know: ne, lt, le, gt, ge, sameas, divisibleby,
// float, and "==", "!=", "<", "<=", ">", ">=" as names in select/selectattr.
#include <cmath>

#include "chat_template/internal/interpreter.h"
#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {
namespace {

bool CompareNumbers(const std::string& name, const Value& a, const Value& b, bool* out) {
  if (!a.IsNumber() || !b.IsNumber()) return false;
  const double x = a.num(), y = b.num();
  if (name == "lt" || name == "<") *out = x < y;
  if (name == "le" || name == "<=") *out = x <= y;
  if (name == "gt" || name == ">") *out = x > y;
  if (name == "ge" || name == ">=") *out = x >= y;
  return true;
}

}  // namespace

bool Interpreter::RunTest(const std::string& name, const Value& v, const Value* arg,
                          const Node& site) {
  const Value none_given;
  const Value& other = arg != nullptr ? *arg : none_given;
  if (name == "boolean") return v.is(Kind::kBool);
  if (name == "callable") return v.is(Kind::kFunction);
  if (name == "odd" || name == "even") {
    if (!v.is(Kind::kInt)) Error(site, "cannot test '" + name + "' on a " + KindName(v));
    const double r = std::fmod(v.num(), 2);
    return name == "odd" ? r != 0 : r == 0;
  }
  if (name == "false") return v.is(Kind::kBool) && !v.boolean();
  if (name == "true") return v.is(Kind::kBool) && v.boolean();
  if (name == "none") return v.is(Kind::kNull);
  if (name == "string") return v.is(Kind::kString);
  if (name == "number") return v.IsNumber();
  if (name == "integer") return v.is(Kind::kInt);
  if (name == "iterable") return v.is(Kind::kArray) || v.is(Kind::kString);
  if (name == "mapping") return v.IsDict();
  if (name == "sequence") return v.IsList() || v.IsDict() || v.is(Kind::kString);
  if (name == "lower") return v.is(Kind::kString) && v.str() == ToLower(v.str());
  if (name == "upper") return v.is(Kind::kString) && v.str() == ToUpper(v.str());
  if (name == "defined") return !v.IsUndefined();
  if (name == "undefined") return v.IsUndefined();
  if (name == "equalto" || name == "eq" || name == "==") return StrictEquals(v, other);
  // Extensions.
  if (name == "ne" || name == "!=") return !StrictEquals(v, other);
  if (name == "sameas") return StrictEquals(v, other);
  if (name == "float") return v.is(Kind::kFloat);
  if (name == "divisibleby") {
    if (!v.IsNumber() || !other.IsNumber() || other.num() == 0) {
      Error(site, "'divisibleby' needs two numbers, the second not zero");
    }
    return std::fmod(v.num(), other.num()) == 0;
  }
  bool result = false;
  if (name == "lt" || name == "le" || name == "gt" || name == "ge" || name == "<" || name == "<=" ||
      name == ">" || name == ">=") {
    if (!CompareNumbers(name, v, other, &result)) {
      Error(site,
            "'" + name + "' compares numbers, got " + KindName(v) + " and " + KindName(other));
    }
    return result;
  }
  Error(site, "unknown test '" + name + "'");
}

}  // namespace switchyard::chat_template::internal
