// OpenAiFront: the OpenAI-compatible front door. Agent frameworks that speak the Chat
// Completions API adopt Switchyard by changing their base URL; their sessions become
// workflows so the scheduler sees the tool waits between turns.
//
//   POST /v1/chat/completions, POST /v1/completions (non-streaming, or `stream: true`:
//   Server-Sent Events, `data: [DONE]` last), GET /v1/models, GET /v1/models/{id},
//   DELETE /v1/sessions/{id}.
//   Requests and answers have OpenAI's shapes (frontends/openai/openai_protocol.h), errors too.
//
// The front parses a request and its headers into a FrontRequest and hands it to the
// FrontCore it shares with the other fronts (frontends/front_core.h: the session, the
// prompt, the answer or proxy mode), with an OpenAiReply to write the answer.
//
// Sessions (frontends/session.h). The session id is the first of the headers x-session-id,
// x-claude-code-session-id, session_id, session-id, the body's metadata.session_id, or
// `user`; a request without one is a one-node workflow, closed at once. A session is a
// workflow of its tenant (labels front=openai, session=<id>); a second request while it
// answers gets 409, unless it is named only by `user` (then it runs as a one-node workflow).
// Answers carry the x-switchyard-workflow-id and x-switchyard-node-id headers.
//
// Hints. x-switchyard-deadline (seconds from now or RFC 3339) is the workflow's deadline
// (a session's first request sets it); x-switchyard-priority or nvext.agent_hints.priority
// its priority class; nvext.agent_hints.osl is the output-length hint when max_tokens is
// not given.
//
// Thread-safety: Handle() is called concurrently by the server threads.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "frontends/front_core.h"
#include "http/http.h"

namespace switchyard::frontends {

class OpenAiFront {
 public:
  using Respond = std::function<void(http::HttpResponse)>;

  // `core` outlives the front.
  explicit OpenAiFront(FrontCore* core) : core_(core) {}

  // Whether `path` is one of the front's.
  static bool Serves(std::string_view path);
  // An error in OpenAI's shape.
  static http::HttpResponse Error(int status, const std::string& message, const std::string& type,
                                  const std::string& code = "", const std::string& param = "");
  // Answers a request of an authenticated tenant.
  void Handle(const http::HttpRequest& req, const std::string& tenant, Respond respond);

 private:
  http::HttpResponse Models() const;
  http::HttpResponse Model(const std::string& id) const;  // GET /v1/models/{id}
  void DeleteSession(const std::string& tenant, const std::string& id, Respond respond);
  void Complete(const http::HttpRequest& req, const std::string& tenant, bool chat,
                Respond respond);

  FrontCore* core_;
};

}  // namespace switchyard::frontends
