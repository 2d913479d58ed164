// Sessions: an agent's conversation as one workflow, for the fronts that speak an LLM API
// (frontends/openai/). A front parses its wire format, names the session, renders and
// tokenizes the prompt and produces the answer; this layer decides what each request is
// to the scheduler, in the service's terms only (workflows, nodes, contexts, token ids).
//
// A session is named by the front within its tenant; a request without one is a one-node
// workflow, closed once admitted. A session is a workflow of its tenant (labels
// front=<Options::front>, session=<id>). Every request is a turn: an LLM node `llm-N` on
// the session's context. The node EXTENDs the context (the previous prompt and the output
// the engine produced) from the longest prefix it shares with the new prompt: the whole
// context when it is a prefix of the prompt, else the context cut to the shared prefix
// (CacheRef.keep_tokens: the client re-sent the last answer changed, e.g. without its
// reasoning), as engines with prefix caching reuse it. Only a prompt sharing nothing
// CREATEs a fresh context (`main-K`), and the old one, no longer referenced, is the
// scheduler's to evict. When an answer ends, wait nodes start: TOOL nodes named after the
// tool calls it asked for (or one `client` when it asked for none); they end when the
// session's next turn is admitted, and its LLM node depends on them. So the scheduler's
// tool-wait decision (keep, demote, discard; a prefetch timed to the learned duration of
// that tool) runs between turns exactly as for native workflows.
//
// A turn: BeginTurn (takes the session) -> Extend (its prompt's tokens) -> LlmNode and
// Submit (the front runs the node, or watches the engine run it) -> EndTurn (the context
// the engine holds; the waits start) -> Release once the answer went out. A turn that
// fails, or whose client goes away, is Abort()ed instead: its workflow is cancelled (which
// stops its generation) and the session's next turn starts a new workflow and context.
// A session serves one turn at a time. It ends after Options::idle_timeout without a turn
// (SweepIdle) or by End(): its waits end and its workflow is closed, which frees its KV.
//
// Ownership: the callbacks handed to the service run under the Lifetime given at
// construction; end it before destroying Sessions.
// Thread-safety: every method may be called from any thread, concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "base/status.h"
#include "frontends/lifetime.h"
#include "service/service.h"

namespace switchyard::frontends {

class Sessions {
  struct Session;

 public:
  struct Options {
    std::string front;  // the workflows' label "front" ("openai")
    std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};
    // Called (outside the layer's locks) when a named session ended: idle, or End().
    std::function<void(const std::string& tenant, const std::string& id)> on_end;
  };
  using Done = std::function<void(const Status&)>;

  // One request of a session (or a one-node workflow): its LLM node and context.
  struct Turn {
    std::string tenant;
    std::string session_id;      // "": a one-node workflow
    std::string front;           // its workflow's label "front" ("": Options::front)
    std::string workflow, node;  // node: "llm-<index>"
    int index = 0;               // the turn's number in its session's workflow
    bool first = true;           // submits the workflow (later turns append to it)
    std::string context = "main";
    bool create = true;              // CREATE the context, else EXTEND it
    int64_t cached = 0;              // prompt tokens the context already holds
    int64_t keep = 0;                // > 0: the context continues from its first `keep`
    std::vector<std::string> waits;  // the wait nodes it ends (its LLM node's deps)
    // Set by the front before EndTurn: the retention the client asked for its prompt's
    // cache (Anthropic's cache_control ttl, OpenAI's prompt_cache_retention), given to the
    // wait nodes as Hints.retain_ms (0: none).
    int64_t retain_ms = 0;
    // Set by the front before Extend: the session this one branches from (a sub-agent's
    // parent). A CREATEd context then starts with the prefix it shares with the parent's
    // context, named for the scheduler as a shared prefix (CacheRef.shared_prefix).
    std::string parent;
    std::string shared_prefix;         // set by Extend: the prefix's name ("" none)
    int64_t shared_prefix_tokens = 0;  // and its length

   private:
    friend class Sessions;
    std::shared_ptr<Session> session;  // null: a one-node workflow
  };

  Sessions(service::Service* service, Options options, Lifetime life);
  ~Sessions();
  Sessions(const Sessions&) = delete;
  Sessions& operator=(const Sessions&) = delete;

  // Begins a turn of session `id` of `tenant` ("": a one-node workflow) on served model
  // `model`, taking the session until Release or Abort. InvalidArgument "session id: ..."
  // for an id that is not UTF-8 text or is longer than 256 bytes (it is stored as a
  // label); Aborted while the session serves another turn, unless `shared` (an id that
  // parallel requests share, e.g. an end user's: the turn then runs as a one-node workflow
  // of its own); FailedPrecondition when the session's context is another model's.
  Result<Turn> BeginTurn(const std::string& tenant, const std::string& id, bool shared,
                         const std::string& model);
  // The turn's context for its prompt's token ids: the longest prefix they share with the
  // session's context is reused (sets context, create, cached and keep; see above). A
  // context CREATEd for a turn with a `parent` session of the same model starts with the
  // prefix the prompt shares with the parent's context (at least kMinSharedPrefix tokens):
  // sets shared_prefix, named by its tokens' hash so that every session starting with the
  // same tokens (a parent's sub-agents) names the same prefix. The scheduler computes it
  // once per worker and keeps one copy where it shares prefixes (the simulated engine,
  // replay); an engine that computes each context whole (the CPU engine) ignores it.
  void Extend(Turn* turn, const std::vector<int32_t>& prompt);
  static constexpr int64_t kMinSharedPrefix = 16;
  // The turn's LLM node for served model `model` (the model id the scheduler sees).
  v1::ProgramNode LlmNode(const Turn& turn, const std::string& model, int64_t prompt_tokens,
                          int64_t max_output_tokens) const;
  // Submits the node: a first turn submits its workflow (with the deadline in ms since the
  // epoch and the priority class; 0: none), a later one appends to it. `admitted` runs
  // once that is durable or refused; then the waits the turn ends finish, and a one-node
  // workflow is closed.
  void Submit(const Turn& turn, v1::ProgramNode node, int64_t deadline_ms, int priority,
              Done admitted);
  // The events of a turn whose node the front runs itself (proxy mode: the service runs
  // with llm_executor "reported").
  void ReportStarted(const Turn& turn);
  void ReportFinished(const Turn& turn, int64_t output_tokens);
  void ReportFailed(const Turn& turn, const std::string& error);
  // The turn's answer ended: the session's context becomes `context` (the token ids the
  // engine holds), and a wait node per name in `tools` (or one `client`) starts. `done`
  // runs once that is durable (at once for a one-node workflow, or for a turn whose
  // session Abort reset first: the session no longer builds on its workflow), or with the
  // failure.
  void EndTurn(const Turn& turn, std::vector<int32_t> context, std::vector<std::string> tools,
               Done done);
  // The turn was answered: the session takes its next turn.
  void Release(const Turn& turn);
  // The turn failed or was abandoned: its workflow is cancelled (`why`) and, when it is its
  // session's, the session's next turn starts a new workflow and context.
  void Abort(const Turn& turn, const std::string& why);

  // Ends session `id` of `tenant` (DELETE); false when there is none.
  bool End(const std::string& tenant, const std::string& id);
  // Ends the sessions idle past Options::idle_timeout.
  void SweepIdle();
  size_t size() const;

 private:
  using SessionPtr = std::shared_ptr<Session>;

  // The tokens `prompt` shares with session `parent`'s context and their prefix's name
  // (see Extend); 0 tokens when the parent is unknown, another model's or shares too few.
  std::pair<std::string, int64_t> ParentPrefix(const Turn& turn, const std::string& model,
                                               const std::vector<int32_t>& prompt) const;
  // Takes the session for `turn`, or says why not (see BeginTurn).
  Status Take(const SessionPtr& s, bool shared, const std::string& model, Turn* turn);
  void EndSession(const SessionPtr& s);
  // Extend's own session part (s->mu held).
  static void ExtendLocked(Session* s, Turn* turn, const std::vector<int32_t>& prompt);
  // Records the turn's context and wait nodes in `s` (s->mu held); returns the waits.
  static std::vector<v1::ProgramNode> StoreTurnLocked(Session* s, const Turn& turn,
                                                      std::vector<int32_t> context,
                                                      std::vector<std::string> tools);
  // Reports TOOL_STARTED or TOOL_FINISHED for each of `waits`.
  void ReportWaits(const std::string& tenant, const std::string& workflow,
                   const std::vector<std::string>& waits, v1::NodeEventType type);
  void Report(const Turn& turn, v1::NodeEvent event);

  service::Service* service_;
  Options options_;
  Lifetime life_;
  mutable Mutex mu_;
  std::map<std::pair<std::string, std::string>, SessionPtr> sessions_
      GUARDED_BY(mu_);  // (tenant, id)
};

}  // namespace switchyard::frontends
