// OpenAiFront: the OpenAI-compatible front door. Agent frameworks that speak the Chat
// Completions API adopt Switchyard by changing their base URL; the front turns their
// sessions into workflows so the scheduler sees the tool waits between turns.
//
//   POST /v1/chat/completions, POST /v1/completions (non-streaming, or `stream: true`:
//   Server-Sent Events, `data: [DONE]` last), GET /v1/models, GET /v1/models/{id},
//   DELETE /v1/sessions/{id}.
//   Requests and answers have OpenAI's shapes (frontends/openai/openai_protocol.h), errors too.
//
// Sessions (frontends/session.h). The session id is the first of the headers x-session-id,
// x-claude-code-session-id, session_id, session-id, the body's metadata.session_id, or
// `user`; a request without one is a one-node workflow, closed at once. A session is a
// workflow of its tenant (labels front=openai, session=<id>). Every request is an LLM node
// `llm-N` on the session's context: its prompt is rendered (the chat template of
// openai_prompt.h, or the prompt of /v1/completions) and tokenized, and the node EXTENDs
// the session's context from the longest prefix it shares with the new prompt (a fresh
// context only when it shares nothing). When an answer ends, wait nodes start, TOOL nodes
// named after the tool calls it asked for (or one `client` when it asked for none); they
// end when the session's next request arrives, which the LLM node of that request depends
// on. So the scheduler's tool-wait decision runs between turns exactly as for native
// workflows. A session ends after Options::session_idle_timeout without a request, or by
// DELETE /v1/sessions/{id}: its waits end and its workflow is closed, which frees its KV.
// Answers carry the x-switchyard-workflow-id and x-switchyard-node-id headers.
//
// Failures. A request that fails (its submit or append refused, its node failed, the
// upstream answered 5xx, the workflow ended) or whose streaming client goes away has its
// workflow cancelled, which stops its generation; its session stays and its next request
// starts a new workflow and context (the prompt is then computed afresh). A streamed
// request's 200 and first chunk go out only once the call was admitted, so a refusal is
// an error with its own status (429 and 503 with Retry-After). A request without `seed`
// samples with a fresh one.
//
// Hints. x-switchyard-deadline (seconds from now or RFC 3339) is the workflow's deadline
// (a session's first request sets it); x-switchyard-priority or nvext.agent_hints.priority
// its priority class; nvext.agent_hints.osl is the output-length hint when max_tokens is
// not given.
//
// Answers. With the CPU engine they are computed: the text the model generated, decoded by
// its tokenizer. A random-weights model's text is meaningless (its byte tokenizer's output
// is restricted to printable ASCII, so a client echoes it back unchanged and the next turn
// extends the context). A forced tool choice (`required` or a named function) makes the
// answer a call of that function: the front writes the call's header and the opening of
// its arguments object into the prompt, the model generates the first required string
// argument (characters a JSON string holds unescaped), and the object is closed — so the
// arguments are valid JSON and the client's echo of the call renders to exactly the tokens
// in the context. With the simulated engine the text is a placeholder of as many words as
// the engine decoded tokens, said so in `system_fingerprint`. `stop` sequences cut the
// text after the fact (generation runs to EOS or max_tokens); a stream holds back a tail
// that may begin one, and a character whose bytes have not all been generated.
//
// Proxy mode (Options::upstreams; `serve --upstream URL[,URL...]`): the front still makes
// sessions into workflows and the scheduler still orders and admits their LLM nodes, but
// when a node is placed the request is forwarded unchanged to an upstream chosen with
// session affinity (UpstreamClient, openai_upstream.h), and the upstream's answer —
// streamed or whole — goes back unchanged (plus the x-switchyard headers). The front
// reports the node's start and end (the service runs with llm_executor "reported"), takes
// the tool calls of a whole answer for the wait nodes' names, and prompt sizes are
// estimated (no tokenizer). The KV lives in the upstreams: Switchyard's KV decisions are
// advisory there (/v1/cluster says so).
//
// Thread-safety: Handle() is called concurrently by the server threads; a session serves
// one request at a time (a second one gets 409 — unless the session is named only by
// `user`: then the second runs as a one-node workflow of its own). Completion work runs on the
// scheduler's thread (tokens) and on the front's own thread (appends, answers).
//
// Files: openai_front.cc (requests: routing, parsing, the turn, failures),
// openai_front_engine.cc (answers of this server's engine, whole and streamed),
// openai_front_proxy.cc (proxy mode), openai_call.h (a request in flight).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "frontends/lifetime.h"
#include "frontends/openai/openai_upstream.h"
#include "frontends/session.h"
#include "http/http.h"
#include "service/service.h"

namespace switchyard::frontends {

namespace openai {
struct Response;  // openai_response.h
}  // namespace openai

class OpenAiFront {
 public:
  struct Options {
    std::chrono::milliseconds session_idle_timeout{std::chrono::minutes(10)};
    int64_t default_max_tokens = 128;
    // Proxy mode: upstream OpenAI servers ("http://host:port") and the bearer token sent
    // to them. Empty: answers come from this server's engine.
    std::vector<std::string> upstreams;
    std::string upstream_api_key;
  };
  using Respond = std::function<void(http::HttpResponse)>;

  OpenAiFront(service::Service* service, const Clock* clock, Options options);
  ~OpenAiFront();
  OpenAiFront(const OpenAiFront&) = delete;
  OpenAiFront& operator=(const OpenAiFront&) = delete;

  // Whether `path` is one of the front's.
  static bool Serves(std::string_view path);
  // An error in OpenAI's shape.
  static http::HttpResponse Error(int status, const std::string& message, const std::string& type,
                                  const std::string& code = "", const std::string& param = "");
  // Answers a request of an authenticated tenant.
  void Handle(const http::HttpRequest& req, const std::string& tenant, Respond respond);
  // The model id the front serves.
  std::string model_id() const;
  // What answers (this server's engine, or upstreams) and whether KV placement is real.
  std::string Describe() const;
  bool proxy() const { return upstream_ != nullptr; }
  size_t sessions() const;
  // Ends sessions idle past the timeout (the front's thread does it every second).
  void SweepIdle();

 private:
  struct Call;  // openai_call.h
  using CallPtr = std::shared_ptr<Call>;

  // ---- Requests (openai_front.cc)
  http::HttpResponse Models() const;
  http::HttpResponse Model(const std::string& id) const;  // GET /v1/models/{id}
  void DeleteSession(const std::string& tenant, const std::string& id, Respond respond);
  void Complete(const http::HttpRequest& req, const std::string& tenant, bool chat,
                Respond respond);
  // The call's model, hints, token budget, forced tool and prompt; the error to answer if
  // the request cannot be served.
  Status Prepare(const http::HttpRequest& req, Call* c) const;
  // The served model the request names (Call::model).
  Status ResolveModel(Call* c) const;
  // The prompt's token ids for served model `model` (its tokenizer; pseudo tokens for a
  // simulated engine's).
  std::vector<int32_t> Tokenize(const std::string& text, const std::string& model) const;
  // A forced call's header and opened arguments, appended to the prompt (once the call's
  // id, which names its workflow and turn, is known).
  void AddForcedPrefix(Call* c) const;
  void Start(const CallPtr& c);
  void Fail(const CallPtr& c, const Status& st);
  // The client of a streamed call went away before its answer ended.
  void Abandon(const CallPtr& c);
  void Post(std::function<void()> fn);
  void Run();

  // ---- Answers of this server's engine (openai_front_engine.cc)
  // Hands the node's input to the engine and watches its tokens.
  void Generate(const CallPtr& c);
  void OnToken(const CallPtr& c, int32_t token);
  void Finish(const CallPtr& c, const Status& st, int64_t output_tokens);
  void Answer(const CallPtr& c);
  // The answer from the call's output (sets *output; streams the text not yet sent).
  openai::Response Compose(const CallPtr& c, std::vector<int32_t>* output);
  // Sends the answer, whole or as the stream's last chunks; once only.
  void Reply(const CallPtr& c, const openai::Response& resp);
  // A streamed request's head (200, the role chunk), sent once the call was admitted (its
  // submit or append acknowledged, or its node ran): a refusal before that is a plain
  // error with its status. Once only; not for whole answers or proxy mode.
  void OpenStream(const CallPtr& c);

  // ---- Proxy mode (openai_front_proxy.cc)
  void WatchPlacement(const CallPtr& c);  // forwards the request once the node is placed
  void Forward(const CallPtr& c);
  std::string UpstreamAuth() const;  // the Authorization header sent upstream
  void Forwarded(const CallPtr& c, http::HttpResponse r);
  void Ended(const CallPtr& c, int64_t output_tokens, std::vector<std::string> tools);

  service::Service* service_;
  const Clock* clock_;
  Options options_;
  // Whether the front lives, for the callbacks it hands the scheduler driver, the service,
  // the upstream client and its streams, which may call after it is gone (the service
  // outlives it); the session layer's callbacks share it.
  Lifetime life_;
  std::unique_ptr<UpstreamClient> upstream_;  // proxy mode
  Sessions sessions_;

  Mutex work_mu_;
  CondVar work_cv_;
  std::deque<std::function<void()>> work_ GUARDED_BY(work_mu_);
  bool stopping_ GUARDED_BY(work_mu_) = false;
  std::thread thread_;
};

}  // namespace switchyard::frontends
