// The JSON helpers the Responses protocol's files share (not for the front): the body
// parser, the readers of input items, tools and tool_choice (responses_input.cc,
// responses_tools.cc), and the writers of items. The typed member readers and their error
// shape ("<param>: <what>") are the fronts' shared ones (json_params.h), so the fronts name
// parameters alike. No exception leaves these functions.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "frontends/json_params.h"
#include "frontends/responses/responses_items.h"
#include "frontends/responses/responses_request.h"

namespace switchyard::frontends::responses::detail {

using json::Bad;
using json::Dump;
using json::Get;
using json::Indexed;
using json::Json;
using json::NullIfEmpty;
using json::Path;
using json::Quoted;
using json::ReadBool;
using json::ReadInt;
using json::ReadNumber;
using json::ReadObject;
using json::ReadString;
using json::WrongType;

// Whether `word` is one of the space-separated `words` (" a b c ").
bool IsOneOf(std::string_view words, std::string_view word);

// A JSON object, or InvalidArgument naming no parameter: not JSON (with the byte where the
// parser stopped), not an object, or nested deeper than 64 levels (checked before parsing,
// so a hostile body cannot exhaust the stack).
Result<Json> ParseObject(std::string_view text);

// `input` of a request body (a string, or an array of items) into r->input; ignored item
// kinds are listed in r->ignored.
Status ParseInput(const Json& body, CreateRequest* r);
// One item at `path` ("input[3]", "output[0]"); nullopt for a kind that is accepted and left
// out (hosted tools' calls), with that kind in *skipped_kind.
Result<std::optional<Item>> ParseItem(const Json& item, const std::string& path,
                                      std::string* skipped_kind);
// `tools` and `tool_choice` of a request body (flattening namespaces; listing hosted tools).
Status ParseTools(const Json& body, CreateRequest* r);
Status ParseToolChoice(const Json& body, CreateRequest* r);

// An item as the API shows it (input and output alike).
Json ItemJson(const Item& item);
// The response object (ResponseJson's) as JSON, for the stored form and the stream's events.
Json ResponseObject(const StoredResponse& r);

}  // namespace switchyard::frontends::responses::detail
