// Sessions (see session.h): the session registry, turns as LLM nodes on a session's
// context, and the wait nodes between turns.
#include "frontends/session.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "base/mutex.h"
#include "base/utf8.h"

namespace switchyard::frontends {

struct Sessions::Session {
  std::string tenant, id;  // set before it is shared
  Mutex mu;                // guards everything below
  std::string workflow_id GUARDED_BY(mu);
  int turn GUARDED_BY(mu) = 0;
  int generation GUARDED_BY(mu) = 0;
  std::string context GUARDED_BY(mu) = "main";
  std::string model GUARDED_BY(mu);  // the served model its context's KV belongs to
  // The context as the engine holds it: prompt + output.
  std::vector<int32_t> tokens GUARDED_BY(mu);
  std::vector<std::string> waits GUARDED_BY(mu);  // wait nodes running since the last answer
  std::chrono::steady_clock::time_point last_active GUARDED_BY(mu) =
      std::chrono::steady_clock::now();
  bool busy GUARDED_BY(mu) = false;
  bool ended GUARDED_BY(mu) = false;
};

namespace {

constexpr size_t kMaxSessionId = 256;  // bytes

void Ignore(const Status&) {}

// The id is stored with the session's workflow (its label "session"): UTF-8 text only.
Status CheckId(const std::string& id) {
  std::string problem = TextProblem(id);
  if (problem.empty() && id.size() <= kMaxSessionId) return Status::OK();
  return Status::InvalidArgument(
      "session id: " +
      (problem.empty() ? "longer than " + std::to_string(kMaxSessionId) + " bytes" : problem));
}

// A node id from a tool name: the id charset, at most 40 characters.
std::string NodeIdOf(const std::string& name, int turn) {
  std::string id;
  for (char ch : name)
    if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.')
      id.push_back(ch);
  if (id.empty()) id = "tool";
  return id.substr(0, 40) + "-" + std::to_string(turn);
}

}  // namespace

Sessions::Sessions(service::Service* service, Options options, Lifetime life)
    : service_(service), options_(std::move(options)), life_(std::move(life)) {}

Sessions::~Sessions() = default;

size_t Sessions::size() const {
  MutexLock lock(&mu_);
  return sessions_.size();
}

// ---- A turn -------------------------------------------------------------------------------

Result<Sessions::Turn> Sessions::BeginTurn(const std::string& tenant, const std::string& id,
                                           bool shared, const std::string& model) {
  SY_RETURN_IF_ERROR(CheckId(id));
  Turn turn;
  turn.tenant = tenant;
  SessionPtr s;
  if (!id.empty()) {
    MutexLock lock(&mu_);
    SessionPtr& slot = sessions_[{tenant, id}];
    if (!slot) {
      slot = std::make_shared<Session>();
      slot->tenant = tenant;
      slot->id = id;
    }
    s = slot;
  }
  if (s) SY_RETURN_IF_ERROR(Take(s, shared, model, &turn));
  if (!turn.session) turn.workflow = service_->NewWorkflowId();
  turn.node = "llm-" + std::to_string(turn.index);
  return turn;
}

Status Sessions::Take(const SessionPtr& s, bool shared, const std::string& model, Turn* turn) {
  MutexLock lock(&s->mu);
  if (s->busy && !s->ended && shared) return Status::OK();  // runs on its own
  if (s->busy || s->ended)
    return Status::Aborted("session '" + s->id + "' is answering another request");
  if (!s->model.empty() && s->model != model)
    return Status::FailedPrecondition("session '" + s->id + "' runs model '" + s->model +
                                      "' (its context's KV is that model's)");
  s->model = model;
  s->busy = true;
  s->last_active = std::chrono::steady_clock::now();
  turn->first = s->workflow_id.empty();
  if (turn->first) s->workflow_id = service_->NewWorkflowId();
  turn->session = s;
  turn->session_id = s->id;
  turn->workflow = s->workflow_id;
  turn->index = s->turn;
  turn->waits = s->waits;
  s->waits.clear();
  return Status::OK();
}

void Sessions::Extend(Turn* turn, const std::vector<int32_t>& prompt) {
  if (!turn->session) return;  // a one-node workflow: a fresh "main"
  Session& s = *turn->session;
  std::string model;
  {
    MutexLock lock(&s.mu);
    ExtendLocked(&s, turn, prompt);
    model = s.model;
  }
  if (turn->create && !turn->parent.empty()) {
    auto [name, tokens] = ParentPrefix(*turn, model, prompt);
    turn->shared_prefix = std::move(name);
    turn->shared_prefix_tokens = tokens;
  }
}

std::pair<std::string, int64_t> Sessions::ParentPrefix(const Turn& turn, const std::string& model,
                                                       const std::vector<int32_t>& prompt) const {
  SessionPtr parent;
  {
    MutexLock lock(&mu_);
    auto it = sessions_.find({turn.tenant, turn.parent});
    if (it == sessions_.end() || it->second == turn.session) return {"", 0};
    parent = it->second;
  }
  MutexLock lock(&parent->mu);
  if (parent->model != model) return {"", 0};
  size_t lcp = 0;
  const size_t n = std::min(parent->tokens.size(), prompt.size());
  while (lcp < n && parent->tokens[lcp] == prompt[lcp]) ++lcp;
  if (static_cast<int64_t>(lcp) < kMinSharedPrefix) return {"", 0};
  // FNV-1a over the token ids: the name says which tokens, so equal prefixes share.
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < lcp; ++i) {
    h ^= static_cast<uint32_t>(prompt[i]);  // the parent's tokens too, up to lcp
    h *= 1099511628211ULL;
  }
  char name[40];
  std::snprintf(name, sizeof(name), "session-prefix-%016llx", static_cast<unsigned long long>(h));
  return {name, static_cast<int64_t>(lcp)};
}

void Sessions::ExtendLocked(Session* sp, Turn* turn, const std::vector<int32_t>& prompt) {
  Session& s = *sp;
  s.mu.AssertHeld();
  size_t lcp = 0;
  while (lcp < s.tokens.size() && lcp < prompt.size() && s.tokens[lcp] == prompt[lcp]) ++lcp;
  // The longest common prefix of the context's tokens and the new prompt is reused, as
  // engines with prefix caching reuse it: the whole context when the prompt repeats the
  // last prompt and answer, else the context cut to that prefix (CacheRef.keep_tokens:
  // a client that re-sends the answer changed, e.g. without its reasoning); a new
  // context only when nothing is shared.
  turn->create = turn->first || s.tokens.empty() || lcp == 0;
  if (turn->create && !turn->first) s.context = "main-" + std::to_string(++s.generation);
  turn->context = s.context;
  turn->cached = turn->create ? 0 : static_cast<int64_t>(lcp);
  turn->keep = !turn->create && lcp < s.tokens.size() ? static_cast<int64_t>(lcp) : 0;
}

v1::ProgramNode Sessions::LlmNode(const Turn& turn, const std::string& model, int64_t prompt_tokens,
                                  int64_t max_output_tokens) const {
  v1::ProgramNode n;
  n.set_id(turn.node);
  n.set_kind(v1::LLM);
  n.set_model_id(model);
  auto* ref = n.add_cache_refs();
  ref->set_context(turn.context);
  ref->set_mode(turn.create ? v1::CacheRef::CREATE : v1::CacheRef::EXTEND);
  if (turn.keep > 0) ref->set_keep_tokens(turn.keep);
  if (turn.create && !turn.shared_prefix.empty()) {
    ref->set_shared_prefix(turn.shared_prefix);
    ref->set_shared_prefix_tokens(turn.shared_prefix_tokens);
  }
  for (const std::string& w : turn.waits) n.add_deps(w);
  n.mutable_hints()->set_prompt_tokens(prompt_tokens);
  n.mutable_hints()->set_extend_tokens(prompt_tokens - turn.cached);
  n.mutable_hints()->set_max_output_tokens(max_output_tokens);
  return n;
}

void Sessions::Submit(const Turn& turn, v1::ProgramNode node, int64_t deadline_ms, int priority,
                      Done admitted) {
  auto done = life_.Guard([this, turn, admitted = std::move(admitted)](const Status& st) {
    admitted(st);
    if (!st.ok()) return;
    ReportWaits(turn.tenant, turn.workflow, turn.waits, v1::TOOL_FINISHED);
    if (!turn.session) service_->CloseAsync(turn.tenant, turn.workflow, nullptr, Ignore);
  });
  if (!turn.first && turn.session) {
    service_->AppendAsync(turn.tenant, turn.workflow, {std::move(node)}, nullptr, std::move(done));
    return;
  }
  v1::Workflow w;
  w.set_id(turn.workflow);
  w.set_tenant(turn.tenant);
  w.set_deadline_ms(deadline_ms);
  if (priority > 0) w.set_priority(static_cast<v1::PriorityClass>(priority));
  (*w.mutable_labels())["front"] = turn.front.empty() ? options_.front : turn.front;
  if (turn.session) (*w.mutable_labels())["session"] = turn.session_id;
  *w.add_nodes() = std::move(node);
  service_->SubmitAsync(turn.tenant, std::move(w), nullptr, std::move(done));
}

void Sessions::Report(const Turn& turn, v1::NodeEvent event) {
  event.set_node_id(turn.node);
  service_->ReportEventAsync(turn.tenant, turn.workflow, event, nullptr, Ignore);
}

void Sessions::ReportStarted(const Turn& turn) {
  v1::NodeEvent e;
  e.set_type(v1::LLM_STARTED);
  Report(turn, std::move(e));
}

void Sessions::ReportFinished(const Turn& turn, int64_t output_tokens) {
  v1::NodeEvent e;
  e.set_type(v1::LLM_FINISHED);
  e.set_output_tokens(output_tokens);
  Report(turn, std::move(e));
}

void Sessions::ReportFailed(const Turn& turn, const std::string& error) {
  v1::NodeEvent e;
  e.set_type(v1::LLM_FAILED);
  e.set_error(error);
  e.set_retryable(false);
  Report(turn, std::move(e));
}

// ---- Between turns ------------------------------------------------------------------------

// The turn's context and its wait nodes, recorded in the session (s->mu held).
std::vector<v1::ProgramNode> Sessions::StoreTurnLocked(Session* s, const Turn& turn,
                                                       std::vector<int32_t> context,
                                                       std::vector<std::string> tools) {
  s->mu.AssertHeld();
  std::vector<v1::ProgramNode> waits;
  s->tokens = std::move(context);
  if (tools.empty()) tools.push_back("client");
  for (size_t i = 0; i < tools.size(); ++i) {
    v1::ProgramNode w;
    w.set_id(NodeIdOf(tools[i], s->turn) + (i ? "-" + std::to_string(i) : ""));
    w.set_kind(v1::TOOL);
    w.set_tool_name(tools[i]);
    if (turn.retain_ms > 0) w.mutable_hints()->set_retain_ms(turn.retain_ms);
    w.add_deps(turn.node);
    s->waits.push_back(w.id());
    waits.push_back(std::move(w));
  }
  ++s->turn;
  s->last_active = std::chrono::steady_clock::now();
  return waits;
}

void Sessions::EndTurn(const Turn& turn, std::vector<int32_t> context,
                       std::vector<std::string> tools, Done done) {
  if (!turn.session) return done(Status::OK());
  std::vector<v1::ProgramNode> waits;
  bool stale = false;
  {
    Session& s = *turn.session;
    MutexLock lock(&s.mu);
    // The turn's call was abandoned or failed first (Abort reset the session, or a later
    // turn began a new workflow): the session no longer builds on this workflow.
    stale = s.workflow_id != turn.workflow;
    if (!stale) waits = StoreTurnLocked(&s, turn, std::move(context), std::move(tools));
  }
  if (stale) return done(Status::OK());
  std::vector<std::string> ids;
  for (const auto& w : waits) ids.push_back(w.id());
  // The waits start once appended; `done` runs once that is durable.
  service_->AppendAsync(
      turn.tenant, turn.workflow, std::move(waits), nullptr,
      life_.Guard([this, turn, ids, done](const Status& st) {
        if (!st.ok()) return done(st);
        ReportWaits(turn.tenant, turn.workflow, ids, v1::TOOL_STARTED);
        service_->AfterDurable(life_.Guard([done](const Status&) { done(Status::OK()); }));
      }));
}

void Sessions::ReportWaits(const std::string& tenant, const std::string& workflow,
                           const std::vector<std::string>& waits, v1::NodeEventType type) {
  for (const std::string& w : waits) {
    v1::NodeEvent e;
    e.set_node_id(w);
    e.set_type(type);
    service_->ReportEventAsync(tenant, workflow, e, nullptr, Ignore);
  }
}

void Sessions::Release(const Turn& turn) {
  if (!turn.session) return;
  MutexLock lock(&turn.session->mu);
  turn.session->busy = false;
}

void Sessions::Abort(const Turn& turn, const std::string& why) {
  if (turn.session) {
    Session& s = *turn.session;
    MutexLock lock(&s.mu);
    s.busy = false;
    if (s.workflow_id == turn.workflow) {  // the next turn starts a new workflow and context
      s.workflow_id.clear();
      s.tokens.clear();
      s.waits.clear();
      s.turn = 0;
      s.generation = 0;
      s.context = "main";
    }
  }
  service_->CancelAsync(turn.tenant, turn.workflow, why, nullptr, Ignore);
}

// ---- Ending sessions ----------------------------------------------------------------------

bool Sessions::End(const std::string& tenant, const std::string& id) {
  SessionPtr s;
  {
    MutexLock lock(&mu_);
    auto it = sessions_.find({tenant, id});
    if (it == sessions_.end()) return false;
    s = it->second;
    sessions_.erase(it);
  }
  EndSession(s);
  return true;
}

void Sessions::EndSession(const SessionPtr& s) {
  std::string wf;
  std::vector<std::string> waits;
  {
    MutexLock lock(&s->mu);
    if (s->ended) return;
    s->ended = true;
    wf = s->workflow_id;
    waits.swap(s->waits);
  }
  if (options_.on_end) options_.on_end(s->tenant, s->id);
  if (wf.empty()) return;
  ReportWaits(s->tenant, wf, waits, v1::TOOL_FINISHED);
  service_->CloseAsync(s->tenant, wf, nullptr, Ignore);
}

void Sessions::SweepIdle() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<SessionPtr> idle;
  {
    MutexLock lock(&mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      Session& s = *it->second;
      MutexLock slock(&s.mu);
      if (!s.busy && now - s.last_active > options_.idle_timeout) {
        idle.push_back(it->second);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const SessionPtr& s : idle) EndSession(s);
}

}  // namespace switchyard::frontends
