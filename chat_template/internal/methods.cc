// The evaluator of a parsed template: methods of dicts and strings (d.items(),
// s.startswith(...)). See interpreter.h.
//
// Dicts: get, items, keys, values, dictsort. Strings: upper, lower, strip, lstrip, rstrip
// (which, as in the reference, ignore a chars argument and strip whitespace), title,
// capitalize, startswith, endswith, split, replace, the length attribute, and join (an
// extension: sep.join(list)).
#include <algorithm>

#include "chat_template/internal/builtin.h"
#include "chat_template/internal/strings.h"
#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {
namespace {

Value Pairs(Interpreter& in, const ObjectData& d) {
  std::vector<Value> out;
  for (const auto& [k, v] : d.entries()) out.push_back(in.NewList({Value::Str(k), v}));
  return in.NewList(std::move(out));
}

// dictsort(case_sensitive=false, by='key', reverse=false)
Value DictSort(Interpreter& in, const ObjectData& d, std::vector<Value>& args, const Node& site) {
  const ObjectData* kw = nullptr;
  std::vector<Value> pos;
  for (const Value& a : args) {
    if (a.is(Kind::kKwargs))
      kw = &a.dict();
    else
      pos.push_back(a);
  }
  auto option = [&](size_t i, const char* name, Value fallback) {
    if (i < pos.size()) return pos[i];
    if (kw != nullptr) {
      if (const Value* v = kw->Find(name)) return *v;
    }
    return fallback;
  };
  const Value cs = option(0, "case_sensitive", Value::Bool(false));
  const Value by = option(1, "by", Value::Str("key"));
  const Value reverse = option(2, "reverse", Value::Bool(false));
  if (!cs.is(Kind::kBool)) in.Error(site, "dictsort: case_sensitive must be a boolean");
  if (!by.is(Kind::kString) || (by.str() != "key" && by.str() != "value")) {
    in.Error(site, "dictsort: by must be 'key' or 'value'");
  }
  if (!reverse.is(Kind::kBool)) in.Error(site, "dictsort: reverse must be a boolean");
  const size_t index = by.str() == "key" ? 0 : 1;
  std::vector<Value> items = Pairs(in, d).items();
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    const int c = CompareValues(a.items()[index], b.items()[index], cs.boolean());
    return reverse.boolean() ? c > 0 : c < 0;
  });
  return in.NewList(std::move(items));
}

}  // namespace

Value Interpreter::DictMethod(const Value& dict, const std::string& name) {
  if (name == "get") {
    return MakeBuiltin([dict](Interpreter& in, std::vector<Value>& args, const Node& site) {
      const Value key = ArgAt(args, 0);
      if (!key.is(Kind::kString)) {
        in.Error(site, std::string("dict.get: the key must be a string, got ") + KindName(key));
      }
      if (const Value* v = dict.dict().Find(key.str())) return *v;
      return args.size() > 1 ? args[1] : Value::Null();
    });
  }
  if (name == "items") {
    return MakeBuiltin([dict](Interpreter& in, std::vector<Value>&, const Node&) {
      return Pairs(in, dict.dict());
    });
  }
  if (name == "keys" || name == "values") {
    const bool keys = name == "keys";
    return MakeBuiltin([dict, keys](Interpreter& in, std::vector<Value>&, const Node&) {
      std::vector<Value> out;
      for (const auto& [k, v] : dict.dict().entries()) out.push_back(keys ? Value::Str(k) : v);
      return in.NewList(std::move(out));
    });
  }
  if (name == "dictsort") {
    return MakeBuiltin([dict](Interpreter& in, std::vector<Value>& args, const Node& site) {
      return DictSort(in, dict.dict(), args, site);
    });
  }
  return Value();
}

namespace {

// startswith / endswith with a string or a tuple (list) of strings.
Value Affix(Interpreter& in, const std::string& s, std::vector<Value>& args, const Node& site,
            bool start) {
  const char* what = start ? "startswith" : "endswith";
  if (args.empty()) in.Error(site, std::string(what) + "() needs an argument");
  auto test = [&](const std::string& p) { return start ? s.starts_with(p) : s.ends_with(p); };
  const Value& p = args[0];
  if (p.is(Kind::kString)) return Value::Bool(test(p.str()));
  if (!p.IsList()) in.Error(site, std::string(what) + "() takes a string or a tuple of strings");
  for (const Value& item : p.items()) {
    if (!item.is(Kind::kString))
      in.Error(site, std::string(what) + "() tuple items must be strings");
    if (test(item.str())) return Value::Bool(true);
  }
  return Value::Bool(false);
}

Value Split(Interpreter& in, const std::string& s, std::vector<Value>& args, const Node& site) {
  const Value sep = args.size() > 0 ? args[0] : Value::Null();
  const Value maxsplit = args.size() > 1 ? args[1] : Value::Int(-1);
  if (!sep.is(Kind::kString) && !sep.is(Kind::kNull))
    in.Error(site, "split: sep must be a string or none");
  if (!maxsplit.is(Kind::kInt)) in.Error(site, "split: maxsplit must be an integer");
  std::optional<std::string> sep_text;
  if (sep.is(Kind::kString)) {
    if (sep.str().empty()) in.Error(site, "split: empty separator");
    sep_text = sep.str();
  }
  std::vector<Value> out;
  for (std::string& part : SplitString(s, sep_text, maxsplit.num()))
    out.push_back(Value::Str(std::move(part)));
  return in.NewList(std::move(out));
}

Value Replace(Interpreter& in, const std::string& s, std::vector<Value>& args, const Node& site) {
  if (args.size() < 2) in.Error(site, "replace() needs at least two arguments");
  if (!args[0].is(Kind::kString) || !args[1].is(Kind::kString)) {
    in.Error(site, "replace() arguments must be strings");
  }
  Value count = Value::Null();
  if (args.size() > 2) {
    if (args[2].is(Kind::kKwargs)) {
      const Value* c = args[2].dict().Find("count");
      count = c != nullptr ? *c : Value::Null();
    } else {
      count = args[2];
    }
  }
  if (!count.is(Kind::kInt) && !count.is(Kind::kNull)) {
    in.Error(site, "replace() count must be an integer or none");
  }
  std::optional<double> n;
  if (count.is(Kind::kInt)) n = count.num();
  return in.NewString(ReplaceString(s, args[0].str(), args[1].str(), n, in.max_bytes()), site);
}

// Extension: sep.join(list of strings), as Python's str.join.
Value Join(Interpreter& in, const std::string& sep, std::vector<Value>& args, const Node& site) {
  const Value list = ArgAt(args, 0);
  if (!list.IsList()) in.Error(site, "join() takes a list of strings");
  std::string out;
  for (size_t i = 0; i < list.items().size(); ++i) {
    const Value& item = list.items()[i];
    if (!item.is(Kind::kString)) in.Error(site, "join(): list items must be strings");
    if (i > 0) out += sep;
    out += item.str();
    if (out.size() > in.max_bytes()) in.Error(site, "join(): the result exceeds the output limit");
  }
  return in.NewString(std::move(out), site);
}

using StringFn = Value (*)(Interpreter&, const std::string&, std::vector<Value>&, const Node&);

// The string methods that ignore their arguments.
std::string Transform(const std::string& name, const std::string& s) {
  if (name == "upper") return ToUpper(s);
  if (name == "lower") return ToLower(s);
  if (name == "strip") return std::string(Trim(s));
  if (name == "lstrip") return std::string(TrimStart(s));
  if (name == "rstrip") return std::string(TrimEnd(s));
  if (name == "title") return TitleCase(s);
  return Capitalize(s);
}

}  // namespace

Value Interpreter::StringMember(const Value& str, const std::string& name) {
  if (name == "length") return Value::Int(static_cast<double>(Utf16Length(str.str())));
  if (name == "upper" || name == "lower" || name == "strip" || name == "lstrip" ||
      name == "rstrip" || name == "title" || name == "capitalize") {
    return MakeBuiltin([str, name](Interpreter& in, std::vector<Value>&, const Node& site) {
      return in.NewString(Transform(name, str.str()), site);
    });
  }
  if (name == "startswith" || name == "endswith") {
    const bool start = name == "startswith";
    return MakeBuiltin([str, start](Interpreter& in, std::vector<Value>& args, const Node& site) {
      return Affix(in, str.str(), args, site, start);
    });
  }
  StringFn fn = nullptr;
  if (name == "split") fn = Split;
  if (name == "replace") fn = Replace;
  if (name == "join") fn = Join;
  if (fn == nullptr) return Value();
  return MakeBuiltin([str, fn](Interpreter& in, std::vector<Value>& args, const Node& site) {
    return fn(in, str.str(), args, site);
  });
}

}  // namespace switchyard::chat_template::internal
