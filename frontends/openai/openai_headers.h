// The request headers the OpenAI front reads: the session id (with the body's
// metadata.session_id and user as fallbacks), x-switchyard-deadline and
// x-switchyard-priority. Errors are InvalidArgument naming the header.
//
// Thread-safety: pure functions; call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/result.h"
#include "frontends/openai/openai_request.h"

namespace switchyard::frontends::openai {

// The session id: the first non-empty of the headers x-session-id, x-claude-code-session-id,
// session_id, session-id (a lower-case header map), then metadata.session_id, then user.
// "" if none.
std::string SessionIdOf(const std::map<std::string, std::string>& headers, const Request& r);
// Whether that session id is the request's `user` (no header or metadata named one).
bool SessionIdIsUser(const std::map<std::string, std::string>& headers, const Request& r);
// x-switchyard-deadline: seconds from now ("30", "2.5"; plain decimal, at most 1e9) or an
// RFC 3339 time ("2025-06-01T12:00:00.5Z", "...+02:00"); returns the absolute deadline in ms
// since the Unix epoch given now_ms (a time in the past is returned as is). InvalidArgument
// naming the header otherwise.
Result<int64_t> ParseDeadline(std::string_view value, int64_t now_ms);
// x-switchyard-priority: "interactive" | "standard" | "batch" (any case) or an integer 0..2 ->
// 1..3 (v1::PriorityClass: INTERACTIVE=1, STANDARD=2, BATCH=3). InvalidArgument naming the
// header otherwise.
Result<int> ParsePriority(std::string_view value);

}  // namespace switchyard::frontends::openai
