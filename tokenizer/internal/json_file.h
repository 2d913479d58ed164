// Reading the JSON files of a checkpoint directory, and the errors that name them.
//
// Every error of the tokenizer's loader names the file and, when the problem is inside
// it, the JSON path of the offending part ("tokenizer.json: pre_tokenizer.pretokenizers[1]
// .behavior: ..."). nlohmann's exceptions never leave this module: parsing catches them.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/status.h"

namespace switchyard::tokenizer::internal {

using Json = nlohmann::json;

// The whole file as bytes: NotFound when it does not exist, InvalidArgument when it cannot
// be read (a directory, no permission).
Result<std::string> ReadFileBytes(const std::string& path);

// The parsed file: NotFound when missing, InvalidArgument naming the file and the parser's
// complaint (with its byte offset) when it is not JSON.
Result<Json> ReadJsonFile(const std::string& path);

// The parsed file, or nullopt when it does not exist (an optional file of a checkpoint).
Result<std::optional<Json>> ReadOptionalJsonFile(const std::string& path);

bool FileExists(const std::string& path);

// "<file>: <path>: <what>" as InvalidArgument / NotSupported.
Status JsonInvalid(std::string_view file, std::string_view path, std::string_view what);
Status JsonUnsupported(std::string_view file, std::string_view path, std::string_view what);

// A JSON value as short text for messages (strings quoted, long values cut).
std::string Describe(const Json& value);

// Reads an optional boolean member: absent or null leaves *out unchanged; anything but a
// boolean is InvalidArgument naming `path`.`key`.
Status ReadBool(const Json& object, const char* key, std::string_view file, std::string_view path,
                bool* out);

}  // namespace switchyard::tokenizer::internal
