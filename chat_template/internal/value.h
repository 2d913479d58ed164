// The values a template computes with (internal to chat_template).
//
// They mirror the runtime values of @huggingface/jinja: undefined, none, booleans,
// integers and floats (both JavaScript doubles; an integer is a double with no fraction,
// as the reference's IntegerValue), strings (UTF-8), lists, tuples, dicts (insertion
// ordered), keyword arguments, namespaces (the only mutable kind) and functions. Lists,
// dicts, namespaces and functions are shared by reference, so == on them compares identity
// as JavaScript does. Strings are shared and immutable, so copying a Value is cheap.
//
// Thread-safety: values are created and used by one render at a time; a Value must not be
// shared between threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace switchyard::chat_template::internal {

enum class Kind : uint8_t {
  kUndefined,
  kNull,
  kBool,
  kInt,
  kFloat,
  kString,
  kArray,
  kTuple,
  kObject,
  kKwargs,
  kNamespace,
  kFunction,
};

class Callable;
struct ArrayData;
class ObjectData;

class Value {
 public:
  Value() = default;  // undefined
  static Value Null();
  static Value Bool(bool b);
  static Value Int(double v);
  static Value Float(double v);
  static Value Number(double v, bool is_float) { return is_float ? Float(v) : Int(v); }
  static Value Str(std::string s);
  static Value List(std::vector<Value> items);
  static Value Tuple(std::vector<Value> items);
  static Value Dict(std::shared_ptr<ObjectData> data, Kind kind = Kind::kObject);
  static Value Function(std::shared_ptr<const Callable> fn);

  Kind kind() const { return kind_; }
  bool is(Kind k) const { return kind_ == k; }
  bool IsUndefined() const { return kind_ == Kind::kUndefined; }
  bool IsNumber() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool IsNumeric() const { return IsNumber() || kind_ == Kind::kBool; }  // bool counts as 0/1
  bool IsList() const { return kind_ == Kind::kArray || kind_ == Kind::kTuple; }
  bool IsDict() const { return kind_ == Kind::kObject || kind_ == Kind::kKwargs; }
  bool HasAttributes() const { return IsDict() || kind_ == Kind::kNamespace; }

  bool boolean() const { return num_ != 0; }
  double num() const { return num_; }
  const std::string& str() const;
  const std::vector<Value>& items() const;
  ObjectData& dict() const;
  const Callable& fn() const;
  // The shared object behind a list, dict, namespace or function (identity for ==).
  const void* identity() const { return ptr_.get(); }

 private:
  Kind kind_ = Kind::kUndefined;
  double num_ = 0;  // numbers, and booleans as 0 / 1
  std::shared_ptr<void> ptr_;
};

struct ArrayData {
  std::vector<Value> items;
};

// A dict in insertion order; setting an existing key keeps its place (a JavaScript Map).
class ObjectData {
 public:
  const Value* Find(std::string_view key) const;
  void Set(std::string key, Value value);
  bool Erase(std::string_view key);
  void Clear() { entries_.clear(); }
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<std::string, Value>> entries_;
};

// The reference's type names, for error messages ("StringValue" is "string").
const char* KindName(Kind k);
const char* KindName(const Value& v);

// Converts JSON as JavaScript's JSON.parse + the reference's value conversion do: numbers
// with no fraction become integers, and object keys that are array indexes ("0", "17")
// come first in numeric order, the others in document order.
Value FromJson(const nlohmann::ordered_json& j);

// Python-like truthiness as the reference defines it (empty list/dict false, any
// namespace or function true).
bool Truthy(const Value& v);

// How {{ v }} prints a value (the reference's toString): floats with ".0", true/false,
// lists and dicts as JSON, none and undefined as "undefined" (inside a list joined by ~). Throws
// TemplateError (pos unknown) for tuples, keyword arguments and functions, which the reference
// cannot print either. Every conversion here throws when its text would pass max_bytes.
std::string DisplayString(const Value& v, size_t max_bytes);
// JavaScript's String(v.value), used by ~ and + on strings: floats without ".0", lists as
// their items' display strings joined by ",", dicts as "[object Map]". Not for none.
std::string JsString(const Value& v, size_t max_bytes);
// Array.prototype.join's view of an item: "" for none and undefined, else JsString.
std::string JoinString(const Value& v, size_t max_bytes);

// JavaScript's == on the values (loose: 1 == "1", none == undefined, identity for lists
// and dicts) and === (strict; numbers compare by value whether integer or float).
bool LooseEquals(const Value& a, const Value& b, size_t max_bytes);
bool StrictEquals(const Value& a, const Value& b);
// Set membership (SameValueZero): as StrictEquals, but NaN equals NaN.
bool SameValueZero(const Value& a, const Value& b);
// The order of sort and dictsort: numbers (and booleans) by value, strings by UTF-16 code
// units (lower-cased first unless case_sensitive), none equal to none, undefined to
// undefined. Any other pair is an error (throws TemplateError).
int CompareValues(const Value& a, const Value& b, bool case_sensitive);
// JavaScript truthiness of the underlying value (a list or dict is always true), used where
// the reference tests `x.value` rather than the template's truthiness.
bool JsTruthy(const Value& v);

}  // namespace switchyard::chat_template::internal
