// Reading the fields of a JSON configuration object (shape files, config.json,
// generation_config.json) with errors that name the file and the field. Internal to
// cpu_engine/ (model_shape.cc, hf_config.cc).
//
// Thread-safety: a Fields reads a JSON object it does not own; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/status.h"

namespace switchyard::cpu_engine::internal {

using Json = nlohmann::json;

// The file as a JSON object: NotFound when it cannot be opened, InvalidArgument otherwise.
Result<Json> ReadJson(const std::string& path);

class Fields {
 public:
  Fields(const Json& j, std::string path) : j_(j), path_(std::move(path)) {}

  // An integer (or a decimal string: proto3 JSON writes 64-bit integers as strings).
  Status Int(const char* key, int64_t* out, bool required) const;
  Status Int32(const char* key, int32_t* out, bool required) const;
  Status Double(const char* key, double* out, bool required) const;
  Status Bool(const char* key, bool* out) const;
  Status String(const char* key, std::string* out) const;
  // An id or a list of ids (HF's eos_token_id); null or absent leaves `out` unchanged.
  Status Ids(const char* key, std::vector<int32_t>* out) const;
  const Json* Find(const char* key) const;  // nullptr when absent
  // InvalidArgument "<path>: field '<key>' <what>".
  Status Bad(const char* key, const std::string& what) const;
  // NotSupported "<path>: field '<key>' <what>".
  Status Unsupported(const char* key, const std::string& what) const;
  const std::string& path() const { return path_; }

 private:
  const Json& j_;
  std::string path_;
};

}  // namespace switchyard::cpu_engine::internal
