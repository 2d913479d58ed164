// The request headers the Anthropic front reads, and the values it derives from them with
// the body: the API key to check, the version and betas the client asked for, the session
// (and sub-agent) a request belongs to, and the x-switchyard-ignored response header.
//
//   x-api-key                 the key, checked as a bearer token would be; Claude Code with
//                             ANTHROPIC_AUTH_TOKEN sends "authorization: Bearer <key>" instead
//   anthropic-version         any value accepted; missing is accepted and noted
//   anthropic-beta            a comma list; none is honoured, each is named as ignored
//   x-claude-code-session-id  the session (Claude Code's conversation)
//   x-claude-code-agent-id    the sub-agent within it
//
// The Switchyard headers (x-switchyard-deadline, x-switchyard-priority) read as the OpenAI
// front reads them (frontends/openai/openai_headers.h).
//
// Thread-safety: pure functions; call from any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontends/anthropic/anthropic_request.h"

namespace switchyard::frontends::anthropic {

struct Headers {
  std::string api_key;               // x-api-key, else the token of "authorization: Bearer ..."
  bool api_key_from_bearer = false;  // it came from authorization
  std::string version;               // anthropic-version as sent
  bool version_missing = true;       // no anthropic-version (accepted; worth a log line)
  std::vector<std::string> betas;    // anthropic-beta, split on ',' and trimmed; empties dropped
  std::string claude_code_session_id, claude_code_agent_id;
  std::string session_id;  // x-session-id (the fronts' generic session header)
};

// Reads them from a lower-case header map. Never fails: a header with an unusable value is
// treated as absent.
Headers ParseHeaders(const std::map<std::string, std::string>& headers);

// The session a request belongs to, first found of: x-claude-code-session-id, x-session-id,
// the session id in metadata.user_id, metadata.user_id itself (from_user: an identity of the
// user rather than of a conversation, so possibly shared by several). agent: the sub-agent.
struct SessionKey {
  std::string session_id, agent_id;
  bool from_user = false;
  // The key to serve turns under: session_id, or "<session_id>/agent/<agent_id>" for a
  // sub-agent, whose conversation runs beside its parent's; "" when there is no session.
  std::string Key() const;
};
SessionKey SessionKeyOf(const Headers& h, const MessagesRequest& r);

// What a request asked for that is not honoured: r.ignored, then "anthropic-beta:<name>" for
// each beta.
std::vector<std::string> IgnoredOf(const Headers& h, const MessagesRequest& r);
// Those names as one x-switchyard-ignored header value, ", "-separated: each stripped of
// spaces, ',' and bytes outside printable ASCII, then cut to 64 bytes; at most 2048 bytes in
// all (ending "..." when names were left out). "" when none.
std::string IgnoredHeaderValue(const std::vector<std::string>& names);

}  // namespace switchyard::frontends::anthropic
