// FrontCore: what every front door shares — a call, parsed by its front (OpenAI Chat
// Completions and Completions, Anthropic Messages, OpenAI Responses) into protocol-neutral
// terms (conversation/conversation.h), made a turn of its session (session.h), answered by this
// server's engine or forwarded to an upstream (proxy mode), and written back in its
// protocol by the call's Reply (conversation/reply.h). One session layer, one prompt, one model of
// a tool call, whatever the protocol.
//
// A call. Its served model is resolved, its prompt rendered (the conversation through the
// model's PromptFormat — its checkpoint's chat template, or the plain format for a
// tokenizer without one — or a completion's text as is) and tokenized, and checked
// against the model's context. Its session takes the turn (a second call of a busy session
// is refused, unless the session is named only by `user`: that one runs as a one-node
// workflow), its LLM node EXTENDs the session's context, and the node is submitted. A
// streamed call's start goes out once the node was admitted, so a refusal is an error with
// its own status (429 and 503 carry Retry-After). With this server's engine the node's
// tokens are decoded as they come (a stream holds back a tail that may begin a stop
// sequence, a character whose bytes have not all been generated, and text that may begin a
// tool call in the model's syntax); generation ends at any of the tokenizer's EOS ids. When
// the node ends the answer is composed — with tools and tool_choice "auto" or "required",
// its text is parsed for calls in the model family's syntax (prompt.h) — the session's
// waits start (TOOL nodes named after the answer's tool calls, or one `client`) and the
// answer goes out. A forced tool choice (`required` or a named function) makes the answer
// a call of that function: the call's opening in the family's syntax is written into the
// prompt and the engine generates the arguments constrained to the tool's schema (an
// object holding every required property, cpu_engine/json_constraint.h), closed by the
// constraint's completion if max_tokens cut it. With the simulated engine the text is a
// placeholder of as many words as the engine decoded tokens (at most
// Options::placeholder_tokens, then it ends as at an EOS). A call that fails, or whose
// streaming client goes away, has its workflow cancelled (which stops its generation) and
// its session starts afresh.
//
// Proxy mode (Options::upstreams): the scheduler still orders and admits each call's node;
// when it is placed, the call's original request goes unchanged to an upstream chosen
// with session affinity, and the upstream's answer — streamed or whole — goes back
// unchanged (plus the x-switchyard headers). To an upstream that speaks only Chat
// Completions (Options::upstream_apis) a Messages or Responses call goes translated
// instead (conversation/: the call's Conversation as a Chat Completions request),
// and the answer is read back into an Answer that the call's Reply writes — whole once the
// session's waits started, or as a stream whose text goes out as it comes and whose end
// goes once the session was released; an upstream's error becomes the front's error
// (Reply::Error). The core reports the node's start and end
// (the service runs with llm_executor "reported"); prompt sizes are estimated (no
// tokenizer), and the KV lives in the upstreams. With one scheduler worker per upstream
// (serve's default in proxy mode) a call goes to the upstream of the worker the scheduler
// placed it on — where its session's context is, or the least loaded one — else by session
// affinity. With steering on (Options::upstream_steering), each upstream's adapter acts on
// the scheduler's decisions (proxy_steering.h): session id, priority and KV controls on the
// forwarded request, slot save/restore during tool waits, and warm-ups of the session's
// prefix timed to the predicted tool return; off, the decisions are advisory.
//
// Thread-safety: Serve() and the others may be called concurrently from the server's
// threads. Completion work runs on the scheduler's thread (tokens) and on the core's own
// thread (appends, answers); callbacks it hands out run only while it lives.
//
// Files: front_core.cc (a call's way in, failures, the core's thread), front_core_prompt.cc
// (prompt formats, tokens), front_core_engine.cc
// (answers of this server's engine), front_core_proxy.cc (proxy mode), front_call.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "frontends/conversation_names.h"
#include "frontends/lifetime.h"
#include "frontends/prompt.h"
#include "frontends/session.h"
#include "http/http.h"
#include "service/service.h"
#include "upstream/kv_event_subscriber.h"
#include "upstream/proxy_steering.h"
#include "upstream/upstream_client.h"
#include "upstream/upstream_load.h"

namespace switchyard::conversation::translate {
class TranslatedStream;  // conversation/translated_stream.h
}  // namespace switchyard::conversation::translate

namespace switchyard::frontends {

// One call as its front parsed it.
struct FrontRequest {
  std::string front;  // the protocol it came in by ("openai", "anthropic", "responses")
  std::string tenant;
  bool chat = true;              // a conversation, else a completion's prompt taken as is
  Conversation conv;             // chat
  std::string prompt;            // completion
  std::string session_id;        // "": a one-node workflow
  bool session_is_user = false;  // the id is only the request's `user`
  // The session this one branches from (a sub-agent's parent session; "": none), and the
  // retention the client asked for its prompt's cache in ms (0: none). See Sessions::Turn.
  std::string parent_session;
  int64_t retain_ms = 0;
  int64_t deadline_ms = 0;  // 0: none
  int priority = 0;         // v1::PriorityClass, 0: the tenant's default
  int64_t max_tokens = 0;   // 0: Options::default_max_tokens
  bool stream = false;
  http::HttpRequest original;  // proxy mode forwards it as it came
};

class FrontCore {
 public:
  struct Options {
    std::chrono::milliseconds session_idle_timeout{std::chrono::minutes(10)};
    int64_t default_max_tokens = 128;
    // The simulated engine's answer: this many placeholder words (fewer when max_tokens is
    // lower), ending the turn as a model's end of sequence would (agents treat an answer
    // cut at its cap as an error).
    int64_t placeholder_tokens = 16;
    // Proxy mode: upstream servers ("http://host:port") and the bearer token sent to them.
    // Empty: answers come from this server's engine.
    std::vector<std::string> upstreams;
    // The API each upstream speaks, by index (none given: kSame): kSame, the API each call
    // came in by (forwarded unchanged); kChat, Chat Completions only — Messages and
    // Responses calls to it are translated to Chat Completions and its answers back,
    // streaming included (`switchyard serve --upstream-api chat`, or "URL#chat").
    std::vector<UpstreamApi> upstream_apis;
    std::string upstream_api_key;
    // Steering (proxy_steering.h): each upstream's kind and declared capabilities, by index
    // (none given: generic), and whether the scheduler's KV decisions act on the upstreams
    // (`serve --upstream-steering on|off`; off: they are advisory, as a plain proxy).
    std::vector<upstream::SteeringUpstream> upstream_setups;
    bool upstream_steering = true;
    // Each upstream's /metrics is read this often and its load reported to the scheduler
    // (upstream_load.h; `serve --upstream-load-interval-ms`); 0: not read.
    int upstream_load_interval_ms = 1000;
    // Each upstream's KV event publisher (vLLM's ZeroMQ endpoint, "tcp://host:5557"; "" or
    // missing: none), by index (`serve --upstream-kv-events`). With steering, a session's
    // next turn first checks that its upstream still holds the last turn's tokens (which
    // the upstream returns: capability token_ids) and, where it does not, tells the
    // scheduler the context was evicted (Generation::ReportContextEvicted).
    std::vector<std::string> upstream_kv_events;
  };
  using Respond = std::function<void(http::HttpResponse)>;

  FrontCore(service::Service* service, const Clock* clock, Options options);
  ~FrontCore();
  FrontCore(const FrontCore&) = delete;
  FrontCore& operator=(const FrontCore&) = delete;

  // Answers one call; `respond` is called once (a stream's head is a response whose
  // stream the core writes on).
  void Serve(FrontRequest request, std::unique_ptr<Reply> reply, Respond respond);
  // The tokens of the request's prompt as its model's tokenizer counts them (an estimate
  // for a simulated engine); the errors Serve would answer for its model.
  Result<int64_t> CountTokens(FrontRequest request) const;
  // Ends a session of `tenant` (its waits end, its workflow closes); false if none.
  bool EndSession(const std::string& tenant, const std::string& id);
  // Proxy mode: forwards a request that is not a call (a model list) to an upstream.
  void ForwardAsIs(const http::HttpRequest& req, Respond respond);

  // The default served model's id ("" in proxy mode: the upstreams'), and every served id.
  std::string model_id() const;
  std::vector<std::string> model_ids() const;
  // Whether `id` names a served model (an id or an alias).
  bool ServesModel(const std::string& id) const;
  // What answers (this server's engine, or upstreams) and whether KV placement is real.
  std::string Describe() const;
  bool proxy() const { return upstream_ != nullptr; }
  // Proxy mode: each upstream's URL, request counters and (with steering) its figures.
  struct UpstreamFigures {
    std::string url;
    upstream::UpstreamClient::Stats stats;
    std::optional<upstream::ProxySteering::Figures> steering;
    std::optional<upstream::LoadMonitor::Scrapes> load;  // with upstream_load_interval_ms
    std::optional<upstream::KvEventSubscriber::Figures> kv_events;  // with its endpoint
    uint64_t evictions_reported = 0;  // sessions found evicted there (upstream_kv_events)
    // Sessions predicted evicted there by its retention model (cached_tokens it reported).
    uint64_t evictions_predicted = 0;
  };
  std::vector<UpstreamFigures> upstream_figures() const;
  // Proxy mode with an upstream that speaks only Chat Completions: Messages calls to it and
  // every Responses call are translated, and this server answers what such an upstream
  // lacks (Messages' count_tokens, as an estimate; the Responses API's stored responses).
  bool translates() const;
  size_t sessions() const;
  // Ends sessions idle past the timeout (the core's thread does it every second).
  void SweepIdle();
  const Clock* clock() const { return clock_; }

 private:
  struct Call;  // front_call.h
  using CallPtr = std::shared_ptr<Call>;

  // ---- A call's way in (front_core.cc)
  // The call's model, token budget, forced tool and prompt; the error to answer if it
  // cannot be served.
  Status Prepare(Call* c) const;
  Status ResolveModel(Call* c) const;

  // ---- Prompts (front_core_prompt.cc)
  // The tool a forced tool choice calls (`required`: the first; or the named function).
  static std::optional<ToolDef> ForcedTool(const FrontRequest& r);
  // A forced call's schema (the tool's parameters), refused when the engine cannot
  // constrain its arguments to it.
  Status PrepareForcedCall(Call* c) const;
  // logit_bias and guided choices: only for a model this server computes, ids in its
  // vocabulary, a choice not with a forced call.
  Status CheckGuided(const Call& c) const;
  // Served model `model`'s prompt format (made once; a chat template that cannot be
  // parsed is an error naming the model).
  Result<std::shared_ptr<const PromptFormat>> FormatOf(const std::string& model) const;
  // The prompt's text: the conversation rendered, or a completion's prompt as is.
  Result<std::string> RenderPrompt(const FrontRequest& r, const PromptFormat& f) const;
  // Token ids of `text` for served model `model` (its tokenizer, with its BOS first when
  // `with_bos` and the tokenizer adds one; pseudo tokens for a simulated engine's).
  Result<std::vector<int32_t>> Tokenize(const std::string& text, const std::string& model,
                                        bool with_bos) const;
  // The request's prompt rendered and tokenized for `model`.
  Result<std::vector<int32_t>> PromptTokens(const FrontRequest& r, const std::string& model) const;
  // A forced call's opening in the model's syntax, appended to the prompt (once the call's
  // turn, which names its id, is known).
  Status AddForcedPrefix(Call* c) const;

  // ---- A call's start and failure, the core's thread (front_core.cc)
  void Start(const CallPtr& c);
  void Fail(const CallPtr& c, const Status& st);
  void Abandon(const CallPtr& c);  // a streamed call's client went away
  void Post(std::function<void()> fn);
  void Run();

  // ---- Answers of this server's engine (front_core_engine.cc)
  void Generate(const CallPtr& c);  // hands the node's input to the engine, watches tokens
  void OnToken(const CallPtr& c, int32_t token);
  // Streams content the answer's text settled (through the family's parser when the call
  // parses tool calls; `last`: the text ended). Under c->mu.
  void StreamContent(Call* c, std::string_view delta, bool last);
  // The calls the answer's text makes in the model's syntax, and the rest as its text.
  void ReadCalls(const Call& c, const std::string& text, frontends::Answer* a) const;
  void Finish(const CallPtr& c, const Status& st, int64_t output_tokens);
  void Answer(const CallPtr& c);
  // The answer from the call's output (sets *output; streams the text not yet sent).
  frontends::Answer Compose(const CallPtr& c, std::vector<int32_t>* output);
  // Sends the answer, whole or as the stream's end; once only.
  void Send(const CallPtr& c, const frontends::Answer& answer);
  // A streamed call's head, sent once the call was admitted. Once only; not for whole
  // answers or proxy mode.
  void OpenStream(const CallPtr& c);

  // ---- Proxy mode (front_core_proxy.cc)
  void WatchPlacement(const CallPtr& c);  // forwards the call once its node is placed
  // The upstream of a call placed on scheduler worker `worker`: that worker's upstream when
  // the scheduler has one worker per upstream, else by session affinity.
  size_t UpstreamFor(const Call& c, int worker);
  void Forward(const CallPtr& c, int worker);
  // Sends the call's request `out` (the original, or its translation) to upstream `i`.
  void Send(const CallPtr& c, size_t i, bool translated, http::HttpRequest out);
  void SendAsIs(const CallPtr& c, size_t i, http::HttpRequest out);
  void StartSteering();  // proxy mode with steering (front_core_proxy.cc)
  // Proxy mode: reads the upstreams' load and reports it as their workers' (one worker per
  // upstream; otherwise the readings are only shown).
  void StartLoadMonitor();
  // Proxy mode with KV events: before session c's turn is submitted, whether its upstream
  // still holds at least half of its last turn's tokens; if not, the scheduler hears the
  // context was evicted there.
  void CheckEvicted(const Call& c);
  // Upstream `i` answered a call sent at `sent` with `status` (steering times warm-ups).
  void ReportLatency(size_t i, std::chrono::steady_clock::time_point sent, int status);
  static std::string SessionKey(const Sessions::Turn& t);
  std::string UpstreamAuth() const;  // the Authorization header sent upstream
  void Forwarded(const CallPtr& c, http::HttpResponse r);
  void Ended(const CallPtr& c, int64_t output_tokens, std::vector<std::string> tools);
  void StreamBroke(const CallPtr& c);
  // Translated to Chat Completions (front_core_proxy.cc): whether c's call to upstream `i`
  // is; its forwarding; the upstream's answer (a stream's head, or whole); a stream's end;
  // the answer's end (the session's waits, Commit, then Send).
  UpstreamApi ApiOf(size_t i) const;
  bool Translated(const Call& c, size_t i) const;
  void ForwardTranslated(const CallPtr& c, size_t i, http::HttpRequest out);
  void TranslatedAnswer(const CallPtr& c, const std::shared_ptr<translate::TranslatedStream>& t,
                        http::HttpResponse r);
  void TranslatedStreamEnded(const CallPtr& c,
                             const std::shared_ptr<translate::TranslatedStream>& t, bool complete);
  void EndTranslated(const CallPtr& c, frontends::Answer a);

  service::Service* service_;
  const Clock* clock_;
  Options options_;
  // Whether the core lives, for the callbacks it hands the scheduler driver, the service,
  // the upstream client and its streams, which may call after it is gone (the service
  // outlives it); the session layer's callbacks share it.
  Lifetime life_;
  std::unique_ptr<upstream::UpstreamClient> upstream_;      // proxy mode
  std::unique_ptr<upstream::ProxySteering> steering_;       // proxy mode with steering
  std::unique_ptr<upstream::LoadMonitor> load_monitor_;     // proxy mode
  std::unique_ptr<upstream::KvEventSubscriber> kv_events_;  // proxy mode with endpoints
  mutable Mutex evictions_mu_;
  std::vector<uint64_t> evictions_ GUARDED_BY(evictions_mu_);  // per upstream
  std::vector<uint64_t> evictions_predicted_ GUARDED_BY(evictions_mu_);
  Sessions sessions_;
  mutable Mutex formats_mu_;
  mutable std::map<std::string, std::shared_ptr<const PromptFormat>> formats_
      GUARDED_BY(formats_mu_);

  Mutex work_mu_;
  CondVar work_cv_;
  std::deque<std::function<void()>> work_ GUARDED_BY(work_mu_);
  bool stopping_ GUARDED_BY(work_mu_) = false;
  std::thread thread_;
};

}  // namespace switchyard::frontends
