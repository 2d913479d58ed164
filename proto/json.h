// JSON in and out of the schema, through protobuf's proto3 JSON mapping.
//
// Parsing rejects unknown fields (the error names the field) and reports where the
// input came from, so a user sees "workflow.json: INVALID_ARGUMENT: Cannot find field:
// dependz" rather than a silent default. Field names are accepted in lowerCamelCase (the
// JSON form) and in their original snake_case.
//
// Thread-safety: stateless functions.
#pragma once

#include <google/protobuf/message.h>

#include <string>
#include <string_view>

#include "base/result.h"
#include "base/status.h"

namespace switchyard::proto {

struct JsonParseOptions {
  bool ignore_unknown_fields = false;
  std::string_view source = "";  // e.g. a file name or "request body", used in errors
};

// Parses `json` into `msg` (cleared first). On failure `msg` is left cleared.
Status ParseJson(std::string_view json, google::protobuf::Message* msg,
                 const JsonParseOptions& options = {});

struct JsonPrintOptions {
  bool pretty = false;
  bool always_print_primitive_fields = false;
  bool preserve_proto_field_names = false;  // snake_case instead of lowerCamelCase
};

Result<std::string> ToJson(const google::protobuf::Message& msg,
                           const JsonPrintOptions& options = {});

// Reads a whole file into a string; NotFound or Unavailable naming the path on failure.
Result<std::string> ReadFile(const std::string& path);

// Reads and parses a JSON file into `msg`.
Status ParseJsonFile(const std::string& path, google::protobuf::Message* msg);

}  // namespace switchyard::proto
