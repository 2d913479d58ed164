// AnthropicFront: the Anthropic Messages API front door, for Claude Code and the Anthropic
// SDKs (ANTHROPIC_BASE_URL pointed at Switchyard).
//
//   POST /v1/messages (and ?beta=true; whole, or `stream: true`: the Messages event
//   stream), POST /v1/messages/count_tokens.
//
// A request is parsed (anthropic_request.h) and handed to the FrontCore the fronts share
// (frontends/front_core.h) with an AnthropicReply. Its session: x-claude-code-session-id,
// x-session-id, or the session id Claude Code puts in metadata.user_id (a sub-agent,
// x-claude-code-agent-id, is a session of its own beside its parent's); else
// metadata.user_id itself, shared by parallel requests. Auth takes x-api-key like a bearer
// token (the router checks it). What the request asks for and the server does not honour
// (thinking, context_management, betas, hosted tools, ...) is accepted and named in the
// x-switchyard-ignored response header and the debug log. Errors have Anthropic's shape.
//
// Thread-safety: Handle() is called concurrently by the server threads.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "frontends/front_core.h"
#include "http/http.h"

namespace switchyard::frontends {

class AnthropicFront {
 public:
  using Respond = std::function<void(http::HttpResponse)>;

  // `core` outlives the front.
  explicit AnthropicFront(FrontCore* core) : core_(core) {}

  // Whether `path` is one of the front's.
  static bool Serves(std::string_view path);
  // An error in Anthropic's shape.
  static http::HttpResponse Error(int status, const std::string& message);
  // Answers a request of an authenticated tenant.
  void Handle(const http::HttpRequest& req, const std::string& tenant, Respond respond);

 private:
  FrontCore* core_;
};

}  // namespace switchyard::frontends
