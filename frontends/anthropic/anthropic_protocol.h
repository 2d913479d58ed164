// anthropic: the protocol layer of the Anthropic Messages API front door.
//
// Pure functions (and one small stateful formatter) between the wire and the service, one
// header per part:
//   anthropic_request.h   parse the bodies of POST /v1/messages and
//                         POST /v1/messages/count_tokens into a MessagesRequest: a
//                         frontends::Conversation, the cache_control breakpoints, and the
//                         fields accepted but not honoured (the table of every field is
//                         there);
//   anthropic_headers.h   read x-api-key, anthropic-version, anthropic-beta and Claude Code's
//                         session and agent headers; the session key; x-switchyard-ignored;
//   anthropic_response.h  format the message, the token count and errors (with usage
//                         derived from a frontends::Answer);
//   anthropic_stream.h    MessagesStream: the SSE events of a streamed answer.
// Nothing here calls the service or allocates ids. This header includes them all.
//
// JSON goes through nlohmann::json (anthropic_json.h, internal); no exception leaves this
// layer: a malformed body is an InvalidArgument naming the parameter, and text that is not
// valid UTF-8 is written with U+FFFD in place of the bad bytes.
//
// Thread-safety: every function is pure (no shared state); call from any thread. A
// MessagesStream belongs to one response.
#pragma once

#include "frontends/anthropic/anthropic_headers.h"
#include "frontends/anthropic/anthropic_request.h"
#include "frontends/anthropic/anthropic_response.h"
#include "frontends/anthropic/anthropic_stream.h"
