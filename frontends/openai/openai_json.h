// The JSON helpers of the OpenAI protocol's files: the fronts' shared ones
// (frontends/json_params.h) under the names these files use.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "frontends/json_params.h"

namespace switchyard::frontends::openai::detail {

using json::Bad;
using json::Dump;
using json::Get;
using json::Indexed;
using json::Json;
using json::NullIfEmpty;
using json::ParseBody;
using json::Path;
using json::Quoted;
using json::ReadBool;
using json::ReadInt;
using json::ReadNumber;
using json::ReadObject;
using json::ReadString;
using json::RequireString;
using json::WrongType;

}  // namespace switchyard::frontends::openai::detail
