// ResponsesFront: the OpenAI Responses API front door, for Codex, the OpenAI Agents SDK and
// the `openai` SDKs' responses.* calls.
//
//   POST /v1/responses (whole, or `stream: true`: the Responses event stream),
//   GET /v1/responses/{id}, DELETE /v1/responses/{id}, POST /v1/responses/{id}/cancel,
//   GET /v1/responses/{id}/input_items.
//
// A request is parsed (responses_request.h), its conversation built — with
// previous_response_id, the stored chain it continues, oldest first, then its input — and
// handed to the FrontCore the fronts share with a ResponsesReply. Its session: the
// thread-id or session-id header, prompt_cache_key (Codex sends its conversation id),
// metadata.session_id, or `user`. A response with `store` (the default) is durable in the
// service's store before it is answered, so GET and chains find it after a restart too;
// `store: false` (Codex) keeps nothing. Only background responses can be cancelled, and
// none is (background: true is refused), so cancel answers 400 as OpenAI does for a
// response that was not created in the background. Errors have OpenAI's shape.
//
// Proxy mode: POST /v1/responses is a call of its session like any other (ordered and
// admitted; the session's tool waits are named after its function calls). To upstreams
// that speak the Responses API it is forwarded as it came: they store the responses and
// read previous_response_id chains, so the prompt the scheduler sees is the new input
// only, and the other routes are forwarded as they came. With an upstream that speaks only
// Chat Completions (FrontCore::translates) this server keeps the Responses API itself and
// the call goes translated.
//
// Thread-safety: Handle() is called concurrently by the server threads.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "frontends/front_core.h"
#include "http/http.h"
#include "service/service.h"

namespace switchyard::frontends {

class ResponsesFront {
 public:
  using Respond = std::function<void(http::HttpResponse)>;

  // `core` and `service` outlive the front.
  ResponsesFront(FrontCore* core, service::Service* service) : core_(core), service_(service) {}

  // Whether `path` is one of the front's.
  static bool Serves(std::string_view path);
  // Answers a request of an authenticated tenant.
  void Handle(const http::HttpRequest& req, const std::string& tenant, Respond respond);

 private:
  void Create(const http::HttpRequest& req, const std::string& tenant, Respond respond);
  // GET, DELETE, cancel and input_items of stored response `id`.
  void Stored(const http::HttpRequest& req, const std::string& tenant, const std::string& id,
              const std::string& action, Respond respond);

  FrontCore* core_;
  service::Service* service_;
};

}  // namespace switchyard::frontends
