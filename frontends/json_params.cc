// The JSON helpers the fronts' protocol layers share (see json_params.h).
#include "frontends/json_params.h"

#include <algorithm>
#include <limits>

#include "frontends/stream_text.h"

namespace switchyard::frontends::json {
namespace {

constexpr size_t kMaxQuoted = 64;

// The deepest nesting of [ and { outside strings; stops counting past kMaxDepth.
int NestingDepthOf(std::string_view body) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
      if (max_depth > kMaxDepth) break;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

// Records where nlohmann's parser gave up (a second, failing pass; no exception is thrown).
class ErrorSax : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t at, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: <what>; last read: ..."
    std::string what = ex.what();
    size_t start = what.find(": ", what.find("column"));
    size_t end = what.find("; last read");
    reason = start == std::string::npos ? "" : what.substr(start + 2, end - start - 2);
    position = at;
    return false;
  }
  size_t position = 0;
  std::string reason;
};

Status JsonSyntaxError(std::string_view body) {
  ErrorSax sax;
  Json::sax_parse(body.data(), body.data() + body.size(), &sax);
  std::string msg = "request body is not valid JSON (at byte " + std::to_string(sax.position);
  if (!sax.reason.empty()) msg += ": " + sax.reason;
  return Status::InvalidArgument(msg + ")");
}

}  // namespace

int NestingDepth(std::string_view text) { return NestingDepthOf(text); }

Result<Json> ParseBody(std::string_view body) {
  if (NestingDepthOf(body) > kMaxDepth) {
    return Status::InvalidArgument("request body nests deeper than " + std::to_string(kMaxDepth) +
                                   " levels");
  }
  Json j = Json::parse(body.data(), body.data() + body.size(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded()) return JsonSyntaxError(body);
  if (!j.is_object()) return Status::InvalidArgument("request body must be a JSON object");
  return j;
}

Status Bad(std::string_view param, std::string_view what) {
  std::string msg(param);
  msg += ": ";
  msg += what;
  return Status::InvalidArgument(std::move(msg));
}

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

Status RequireString(const Json& obj, std::string_view prefix, const char* key, std::string* out) {
  if (Get(obj, key) == nullptr) return Bad(Path(prefix, key), "required");
  return ReadString(obj, prefix, key, out);
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

}  // namespace switchyard::frontends::json
