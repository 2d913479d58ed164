// The conversation of a Messages request (internal to the request parser,
// anthropic_request.cc): `system` and `messages` with their content blocks, mapped onto
// frontends::Message turns as the table in anthropic_request.h says, and the cache_control
// markers on their blocks.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "frontends/anthropic/anthropic_json.h"
#include "frontends/anthropic/anthropic_request.h"

namespace switchyard::frontends::anthropic::detail {

// The cache_control of a block at path p: *ttl is set when it has one ({"type":"ephemeral"},
// ttl "5m" or "1h"), left unset when absent or null.
Status ReadCacheControl(const Json& block, const std::string& p, std::optional<std::string>* ttl);

// `system` (a string or text blocks) -> a system turn appended to r->conversation.messages
// (none when it is absent, "" or []).
Status ParseSystem(const Json& body, MessagesRequest* r);
// `messages` (required, non-empty) -> the turns after it; sets r->assistant_prefill.
Status ParseMessageList(const Json& body, MessagesRequest* r);

}  // namespace switchyard::frontends::anthropic::detail
