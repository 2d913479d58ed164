// The evaluator of a parsed template: extension filters, with Jinja's meaning, for names
// the reference refuses (it raises an error for each of these). See interpreter.h and
// chat_template/README.md. They never change what a template the reference accepts renders.
//
// count; d / default without arguments; e / escape; first, last and list of a string
// (list of a dict: its keys); round(precision, method); select / reject(test, value);
// batch(size, fill_with).
#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat_template/internal/filter_args.h"
#include "chat_template/internal/interpreter.h"
#include "chat_template/internal/strings.h"
#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {
namespace {

Value Round(Interpreter& in, const Value& v, const FilterArgs& a, const Node& site) {
  const Value precision = a.Get(0, "precision", Value::Int(0));
  const Value method = a.Get(1, "method", Value::Str("common"));
  if (!precision.is(Kind::kInt) || precision.num() < 0 || precision.num() > 20) {
    in.Error(site, "round: precision must be an integer from 0 to 20");
  }
  if (!method.is(Kind::kString) ||
      (method.str() != "common" && method.str() != "floor" && method.str() != "ceil")) {
    in.Error(site, "round: method must be 'common', 'floor' or 'ceil'");
  }
  if (!v.IsNumber()) FilterError(in, v, "round", site);
  const int p = static_cast<int>(precision.num());
  if (method.str() == "common") {
    if (v.is(Kind::kInt) || !std::isfinite(v.num())) return v;
    char buf[512];  // correctly rounded, ties to even: Python's round()
    std::snprintf(buf, sizeof buf, "%.*f", p, v.num());
    double out = 0;
    std::from_chars(buf + (buf[0] == '-' ? 1 : 0), buf + std::strlen(buf), out);
    return Value::Float(buf[0] == '-' ? -out : out);
  }
  const double scale = std::pow(10.0, p);
  const double x = v.num() * scale;
  return Value::Float((method.str() == "floor" ? std::floor(x) : std::ceil(x)) / scale);
}

Value Select(Interpreter& in, const Value& v, const FilterArgs& a, const Node& site, bool select) {
  if (!v.IsList()) FilterError(in, v, select ? "select" : "reject", site);
  const Value test = a.Get(0, "test", Value());
  if (!test.IsUndefined() && !test.is(Kind::kString))
    in.Error(site, "select: the test must be a name");
  const Value* arg = a.pos.size() > 1 ? &a.pos[1] : nullptr;
  std::vector<Value> out;
  for (const Value& item : v.items()) {
    const bool pass = test.IsUndefined() ? Truthy(item) : in.RunTest(test.str(), item, arg, site);
    if (pass == select) out.push_back(item);
  }
  return in.NewList(std::move(out));
}

Value Batch(Interpreter& in, const Value& v, const FilterArgs& a, const Node& site) {
  const Value size = a.Get(0, "linecount", Value());
  if (!v.IsList()) FilterError(in, v, "batch", site);
  if (!size.is(Kind::kInt) || size.num() < 1)
    in.Error(site, "batch: the size must be a positive integer");
  const Value fill = a.Get(1, "fill_with", Value());
  const double n = size.num();
  std::vector<Value> out, row;
  for (const Value& item : v.items()) {
    row.push_back(item);
    if (static_cast<double>(row.size()) >= n)
      out.push_back(in.NewList(std::move(row))), row.clear();
  }
  if (!row.empty()) {
    while (!fill.IsUndefined() && static_cast<double>(row.size()) < n) row.push_back(fill);
    out.push_back(in.NewList(std::move(row)));
  }
  return in.NewList(std::move(out));
}

}  // namespace

Value Interpreter::ExtensionFilter(const Value& v, const std::string& name, const Node& site,
                                   const std::vector<Value>& args,
                                   std::shared_ptr<ObjectData> kwargs) {
  const FilterArgs a{args, std::move(kwargs)};
  if (name == "count" && (v.IsList() || v.is(Kind::kString) || v.IsDict())) {
    return IdentifierFilter(v, "length", site);
  }
  if (name == "d" || name == "default") {
    const Value fallback = args.empty() ? Value::Str("") : args[0];
    return v.IsUndefined() ? fallback : v;
  }
  if ((name == "e" || name == "escape") && (v.is(Kind::kString) || v.IsNumeric())) {
    return NewString(HtmlEscape(DisplayString(v, max_bytes())), site);
  }
  if (v.is(Kind::kString) && (name == "first" || name == "last" || name == "list")) {
    const std::vector<std::string_view> chars = CodePoints(v.str());
    if (name == "list") {
      std::vector<Value> out;
      for (std::string_view c : chars) out.push_back(Value::Str(std::string(c)));
      return NewList(std::move(out));
    }
    if (chars.empty()) return Value();
    return Value::Str(std::string(name == "first" ? chars.front() : chars.back()));
  }
  if (v.IsDict() && name == "list") return CallValue(DictMethod(v, "keys"), {}, site, nullptr);
  if (name == "round") return Round(*this, v, a, site);
  if (name == "select" || name == "reject") return Select(*this, v, a, site, name == "select");
  if (name == "batch") return Batch(*this, v, a, site);
  FilterError(*this, v, name, site);
}

}  // namespace switchyard::chat_template::internal
