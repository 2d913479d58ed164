// The request headers the Responses front reads: the ids Codex and other clients send to
// name their session and thread, the request's own id, the client (originator) and the bearer
// token (the server authenticates; this only exposes it). Errors are InvalidArgument naming
// the header.
//
// Thread-safety: pure functions; call from any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "frontends/responses/responses_request.h"

namespace switchyard::frontends::responses {

struct Headers {
  std::string session_id;         // session-id (older clients: session_id)
  std::string thread_id;          // thread-id (older clients: thread_id, conversation_id)
  std::string client_request_id;  // x-client-request-id
  std::string originator;         // originator ("codex_cli_rs", "codex_exec", ...)
  std::string bearer_token;       // Authorization: Bearer <token>; "" if absent or another scheme
  // Headers recognised and deliberately not acted on (chatgpt-account-id, openai-beta,
  // version, x-codex-*), by name, for logs.
  std::vector<std::string> ignored;
};

// Reads `headers` (a map with lower-case names). The ids (session, thread, client request) must
// be at most 256 bytes of printable ASCII; otherwise InvalidArgument naming the header.
Result<Headers> ParseHeaders(const std::map<std::string, std::string>& headers);

// The session a request belongs to: the thread id (one conversation, served one turn at a
// time), else the session id, else the body's prompt_cache_key (Codex sets it to its
// conversation id), else metadata.session_id, else user. "" if none.
std::string SessionIdOf(const Headers& headers, const CreateRequest& request);

}  // namespace switchyard::frontends::responses
