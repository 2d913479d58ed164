// The values a template computes with: see value.h.
#include "chat_template/internal/value.h"

#include <algorithm>
#include <cmath>

#include "chat_template/internal/error.h"
#include "chat_template/internal/js_number.h"
#include "chat_template/internal/json_out.h"
#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {

const Value* ObjectData::Find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void ObjectData::Set(std::string key, Value value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

bool ObjectData::Erase(std::string_view key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first == key) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

Value Value::Null() {
  Value v;
  v.kind_ = Kind::kNull;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.num_ = b ? 1 : 0;
  return v;
}

Value Value::Int(double n) {
  Value v;
  v.kind_ = Kind::kInt;
  v.num_ = n;
  return v;
}

Value Value::Float(double n) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.num_ = n;
  return v;
}

Value Value::Str(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.ptr_ = std::make_shared<std::string>(std::move(s));
  return v;
}

Value Value::List(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kArray;
  v.ptr_ = std::make_shared<ArrayData>(ArrayData{std::move(items)});
  return v;
}

Value Value::Tuple(std::vector<Value> items) {
  Value v = List(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}

Value Value::Dict(std::shared_ptr<ObjectData> data, Kind kind) {
  Value v;
  v.kind_ = kind;
  v.ptr_ = std::move(data);
  return v;
}

Value Value::Function(std::shared_ptr<const Callable> fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.ptr_ = std::const_pointer_cast<Callable>(std::move(fn));
  return v;
}

const std::string& Value::str() const { return *static_cast<const std::string*>(ptr_.get()); }
const std::vector<Value>& Value::items() const {
  return static_cast<const ArrayData*>(ptr_.get())->items;
}
ObjectData& Value::dict() const { return *static_cast<ObjectData*>(ptr_.get()); }
const Callable& Value::fn() const { return *static_cast<const Callable*>(ptr_.get()); }

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kUndefined:
      return "undefined";
    case Kind::kNull:
      return "none";
    case Kind::kBool:
      return "boolean";
    case Kind::kInt:
      return "integer";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "string";
    case Kind::kArray:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kObject:
      return "dict";
    case Kind::kKwargs:
      return "keyword arguments";
    case Kind::kNamespace:
      return "namespace";
    case Kind::kFunction:
      return "function";
  }
  return "value";
}

const char* KindName(const Value& v) { return KindName(v.kind()); }

namespace {

// An array index key as JavaScript orders them first: "0", or no leading zero, < 2^32 - 1.
bool IsArrayIndex(const std::string& key, uint64_t* index) {
  if (key.empty() || key.size() > 10 || (key.size() > 1 && key[0] == '0')) return false;
  uint64_t v = 0;
  for (char c : key) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *index = v;
  return v < 4294967295ULL;
}

Value FromJsonObject(const nlohmann::ordered_json& j) {
  auto data = std::make_shared<ObjectData>();
  std::vector<std::pair<uint64_t, const std::string*>> indexed;
  for (const auto& [key, value] : j.items()) {
    uint64_t index = 0;
    if (IsArrayIndex(key, &index)) indexed.emplace_back(index, &key);
  }
  std::sort(indexed.begin(), indexed.end());
  for (const auto& [index, key] : indexed) data->Set(*key, FromJson(j.at(*key)));
  for (const auto& [key, value] : j.items()) {
    uint64_t index = 0;
    if (!IsArrayIndex(key, &index)) data->Set(key, FromJson(value));
  }
  return Value::Dict(std::move(data));
}

}  // namespace

Value FromJson(const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null:
      return Value::Null();
    case T::boolean:
      return Value::Bool(j.get<bool>());
    case T::number_integer:
      return Value::Int(static_cast<double>(j.get<int64_t>()));
    case T::number_unsigned:
      return Value::Int(static_cast<double>(j.get<uint64_t>()));
    case T::number_float: {
      const double d = j.get<double>();
      return Value::Number(d, !(std::isfinite(d) && std::trunc(d) == d));
    }
    case T::string:
      return Value::Str(j.get<std::string>());
    case T::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(FromJson(e));
      return Value::List(std::move(items));
    }
    case T::object:
      return FromJsonObject(j);
    default:
      return Value::Null();
  }
}

bool Truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNull:
      return false;
    case Kind::kBool:
      return v.boolean();
    case Kind::kInt:
    case Kind::kFloat:
      return v.num() != 0 && !std::isnan(v.num());
    case Kind::kString:
      return !v.str().empty();
    case Kind::kArray:
    case Kind::kTuple:
      return !v.items().empty();
    case Kind::kObject:
    case Kind::kKwargs:
      return v.dict().size() > 0;
    case Kind::kNamespace:
    case Kind::kFunction:
      return true;
  }
  return false;
}

std::string DisplayString(const Value& v, size_t max_bytes) {
  switch (v.kind()) {
    // The reference's none holds JavaScript's undefined, so it prints as undefined too
    // (where it prints at all: {{ none }} prints nothing, tojson writes null).
    case Kind::kUndefined:
    case Kind::kNull:
      return "undefined";
    case Kind::kBool:
      return v.boolean() ? "true" : "false";
    case Kind::kInt:
      return JsNumberToString(v.num());
    case Kind::kFloat:
      return JsFloatToString(v.num());
    case Kind::kString:
      return v.str();
    case Kind::kArray:
    case Kind::kObject:
    case Kind::kNamespace: {
      JsonFormat f;
      f.undefined_as_null = false;
      f.max_bytes = max_bytes;
      return ToJson(v, f);
    }
    default:
      Fail({}, std::string("cannot print a ") + KindName(v));
  }
}

std::string JsString(const Value& v, size_t max_bytes) {
  switch (v.kind()) {
    case Kind::kInt:
    case Kind::kFloat:
      return JsNumberToString(v.num());
    case Kind::kArray:
    case Kind::kTuple: {
      std::string out;
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i > 0) out += ',';
        out += DisplayString(v.items()[i], max_bytes - std::min(max_bytes, out.size()));
        if (out.size() > max_bytes) FailStringTooLong();
      }
      return out;
    }
    case Kind::kObject:
    case Kind::kKwargs:
    case Kind::kNamespace:
      return "[object Map]";
    case Kind::kFunction:
      Fail({}, "cannot convert a function to a string");
    default:
      return DisplayString(v, max_bytes);
  }
}

std::string JoinString(const Value& v, size_t max_bytes) {
  if (v.is(Kind::kNull) || v.IsUndefined()) return "";
  return JsString(v, max_bytes);
}

namespace {

enum class JsType { kUndefined, kNull, kBoolean, kNumber, kString, kObject };

JsType TypeOf(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return JsType::kUndefined;
    case Kind::kNull:
      return JsType::kNull;
    case Kind::kBool:
      return JsType::kBoolean;
    case Kind::kInt:
    case Kind::kFloat:
      return JsType::kNumber;
    case Kind::kString:
      return JsType::kString;
    default:
      return JsType::kObject;
  }
}

// Loose equality on JavaScript primitives after conversion; `depth` bounds the recursion.
bool Loose(const Value& a, const Value& b, int depth, size_t max_bytes) {
  const JsType ta = TypeOf(a), tb = TypeOf(b);
  if (ta == tb) return StrictEquals(a, b);
  const auto is_nullish = [](JsType t) { return t == JsType::kNull || t == JsType::kUndefined; };
  if (is_nullish(ta) || is_nullish(tb)) return is_nullish(ta) && is_nullish(tb);
  if (depth > 3) return false;
  if (ta == JsType::kBoolean) return Loose(Value::Int(a.num()), b, depth + 1, max_bytes);
  if (tb == JsType::kBoolean) return Loose(a, Value::Int(b.num()), depth + 1, max_bytes);
  if (ta == JsType::kNumber && tb == JsType::kString) return a.num() == JsStringToNumber(b.str());
  if (ta == JsType::kString && tb == JsType::kNumber) return JsStringToNumber(a.str()) == b.num();
  if (ta == JsType::kObject)
    return Loose(Value::Str(JsString(a, max_bytes)), b, depth + 1, max_bytes);
  if (tb == JsType::kObject)
    return Loose(a, Value::Str(JsString(b, max_bytes)), depth + 1, max_bytes);
  return false;
}

}  // namespace

bool LooseEquals(const Value& a, const Value& b, size_t max_bytes) {
  return Loose(a, b, 0, max_bytes);
}

bool StrictEquals(const Value& a, const Value& b) {
  const JsType ta = TypeOf(a);
  if (ta != TypeOf(b)) return false;
  switch (ta) {
    case JsType::kUndefined:
    case JsType::kNull:
      return true;
    case JsType::kBoolean:
    case JsType::kNumber:
      return a.num() == b.num();
    case JsType::kString:
      return a.str() == b.str();
    case JsType::kObject:
      return a.identity() == b.identity();
  }
  return false;
}

bool SameValueZero(const Value& a, const Value& b) {
  if (a.IsNumber() && b.IsNumber() && std::isnan(a.num()) && std::isnan(b.num())) return true;
  return StrictEquals(a, b);
}

int CompareValues(const Value& a, const Value& b, bool case_sensitive) {
  const bool an = a.is(Kind::kNull), bn = b.is(Kind::kNull);
  const bool au = a.IsUndefined(), bu = b.IsUndefined();
  if ((an && bn) || (au && bu)) return 0;
  if (an || bn || au || bu) {
    Fail({}, std::string("cannot compare ") + KindName(a) + " with " + KindName(b));
  }
  if (a.IsNumeric() && b.IsNumeric()) return a.num() < b.num() ? -1 : a.num() > b.num() ? 1 : 0;
  if (a.is(Kind::kString) && b.is(Kind::kString)) {
    if (case_sensitive) return CompareUtf16(a.str(), b.str());
    return CompareUtf16(ToLower(a.str()), ToLower(b.str()));
  }
  Fail({}, std::string("cannot compare ") + KindName(a) + " with " + KindName(b));
}

bool JsTruthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNull:
      return false;
    case Kind::kBool:
    case Kind::kInt:
    case Kind::kFloat:
      return v.num() != 0 && !std::isnan(v.num());
    case Kind::kString:
      return !v.str().empty();
    default:
      return true;
  }
}

}  // namespace switchyard::chat_template::internal
