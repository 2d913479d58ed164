#include <fstream>
#include <sstream>

#include "cpu_engine/internal/json_fields.h"

namespace switchyard::cpu_engine::internal {

Result<Json> ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open");
  Json j = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(path + ": not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument(path + ": not a JSON object");
  return j;
}

Status Fields::Int(const char* key, int64_t* out, bool required) const {
  const Json* v = Find(key);
  if (!v) return required ? Bad(key, "is missing") : Status::OK();
  if (v->is_number_integer()) {
    *out = v->get<int64_t>();
    return Status::OK();
  }
  if (v->is_string()) {
    std::istringstream s(v->get<std::string>());
    int64_t x = 0;
    if (s >> x && s.eof()) {
      *out = x;
      return Status::OK();
    }
  }
  return Bad(key, "must be an integer");
}

Status Fields::Int32(const char* key, int32_t* out, bool required) const {
  int64_t x = *out;
  SY_RETURN_IF_ERROR(Int(key, &x, required));
  if (x < INT32_MIN || x > INT32_MAX) return Bad(key, "is out of range");
  *out = static_cast<int32_t>(x);
  return Status::OK();
}

Status Fields::Double(const char* key, double* out, bool required) const {
  const Json* v = Find(key);
  if (!v) return required ? Bad(key, "is missing") : Status::OK();
  if (!v->is_number()) return Bad(key, "must be a number");
  *out = v->get<double>();
  return Status::OK();
}

Status Fields::Bool(const char* key, bool* out) const {
  const Json* v = Find(key);
  if (!v || v->is_null()) return Status::OK();
  if (!v->is_boolean()) return Bad(key, "must be true or false");
  *out = v->get<bool>();
  return Status::OK();
}

Status Fields::String(const char* key, std::string* out) const {
  const Json* v = Find(key);
  if (!v || v->is_null()) return Status::OK();
  if (!v->is_string()) return Bad(key, "must be a string");
  *out = v->get<std::string>();
  return Status::OK();
}

Status Fields::Ids(const char* key, std::vector<int32_t>* out) const {
  const Json* v = Find(key);
  if (!v || v->is_null()) return Status::OK();
  std::vector<int32_t> ids;
  if (v->is_array()) {
    for (const Json& e : *v) {
      if (!e.is_number_integer() || e.get<int64_t>() < INT32_MIN || e.get<int64_t>() > INT32_MAX)
        return Bad(key, "must list integer ids");
      ids.push_back(e.get<int32_t>());
    }
  } else {
    int32_t id = -1;
    SY_RETURN_IF_ERROR(Int32(key, &id, true));
    ids.push_back(id);
  }
  *out = std::move(ids);
  return Status::OK();
}

const Json* Fields::Find(const char* key) const {
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

Status Fields::Bad(const char* key, const std::string& what) const {
  return Status::InvalidArgument(path_ + ": field '" + key + "' " + what);
}

Status Fields::Unsupported(const char* key, const std::string& what) const {
  return Status::NotSupported(path_ + ": field '" + key + "' " + what);
}

}  // namespace switchyard::cpu_engine::internal
