// The JSON helpers of the OpenAI protocol (see openai_json.h).
#include "frontends/openai/openai_json.h"

#include "frontends/stream_text.h"

#include <limits>

#include "frontends/openai/openai_response.h"

namespace switchyard::frontends::openai::detail {
namespace {

constexpr size_t kMaxQuoted = 64;

}  // namespace

Status Bad(std::string_view param, std::string_view what) {
  std::string msg(param);
  msg += ": ";
  msg += what;
  return Status::InvalidArgument(std::move(msg));
}

// 'value' for an error message, cut to kMaxQuoted bytes on a character boundary.
std::string Quoted(std::string_view s) {
  if (s.size() <= kMaxQuoted) return "'" + std::string(s) + "'";
  return "'" + std::string(s.substr(0, frontends::Utf8SafePrefix(s.substr(0, kMaxQuoted)))) +
         "...'";
}

Status WrongType(std::string_view param, const Json& v, std::string_view expected) {
  return Bad(param, "must be " + std::string(expected) + ", got " + v.type_name());
}

std::string Path(std::string_view prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : std::string(prefix) + "." + std::string(key);
}

std::string Indexed(std::string_view prefix, size_t i) {
  return std::string(prefix) + "[" + std::to_string(i) + "]";
}

// The member `key` of `obj`, or null when absent or JSON null.
const Json* Get(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

Status ReadString(const Json& obj, std::string_view prefix, const char* key, std::string* out) {
  const Json* v = Get(obj, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_string()) return WrongType(Path(prefix, key), *v, "a string");
  *out = v->get<std::string>();
  return Status::OK();
}

Status ReadBool(const Json& obj, std::string_view prefix, const char* key, bool* out) {
  const Json* v = Get(obj, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_boolean()) return WrongType(Path(prefix, key), *v, "a boolean");
  *out = v->get<bool>();
  return Status::OK();
}

Status ReadInt(const Json& obj, std::string_view prefix, const char* key,
               std::optional<int64_t>* out) {
  const Json* v = Get(obj, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_number_integer()) return WrongType(Path(prefix, key), *v, "an integer");
  if (v->is_number_unsigned() &&
      v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Bad(Path(prefix, key), "too large");
  }
  *out = v->get<int64_t>();
  return Status::OK();
}

Status ReadNumber(const Json& obj, std::string_view prefix, const char* key,
                  std::optional<double>* out) {
  const Json* v = Get(obj, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_number()) return WrongType(Path(prefix, key), *v, "a number");
  *out = v->get<double>();
  return Status::OK();
}

Status ReadObject(const Json& obj, std::string_view prefix, const char* key, const Json** out) {
  *out = Get(obj, key);
  if (*out != nullptr && !(*out)->is_object()) {
    return WrongType(Path(prefix, key), **out, "an object");
  }
  return Status::OK();
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json NullIfEmpty(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

}  // namespace switchyard::frontends::openai::detail
