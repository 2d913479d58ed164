#include "frontends/openai/openai_front.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <random>
#include <string_view>

#include "base/logging.h"
#include "base/thread_name.h"
#include "base/utf8.h"
#include "executors/cpu/model.h"
#include "executors/cpu/tokenizer.h"
#include "executors/generation.h"
#include "frontends/openai/openai_protocol.h"

namespace switchyard::frontends {

namespace oa = openai;

struct OpenAiFront::Session {
  std::mutex mu;  // guards everything below
  std::string tenant, id, workflow_id;
  int turn = 0, generation = 0;
  std::string context = "main";
  std::string model;               // the served model its context's KV belongs to
  std::vector<int32_t> tokens;     // the context as the engine holds it: prompt + output
  std::vector<std::string> waits;  // wait nodes running since the last answer
  std::chrono::steady_clock::time_point last_active = std::chrono::steady_clock::now();
  bool busy = false, ended = false;
};

struct OpenAiFront::Call {
  std::string tenant;
  http::HttpRequest original;  // proxy mode: forwarded as it came
  oa::Request req;
  SessionPtr session;  // null: a one-node workflow
  std::string wf, node, context;
  std::string model;  // the served id the request's model names (proxy mode: "")
  bool first = true, create = true;
  std::vector<int32_t> prompt, fresh;  // the whole prompt's ids; the new ones
  int64_t cached = 0, max_tokens = 0, deadline_ms = 0;
  int64_t keep = 0;  // > 0: the context continues from its first `keep` tokens
  int priority = 0;
  std::vector<std::string> waits_to_end;
  // A forced tool call: the tool, the call's id and the argument the model generates.
  std::optional<oa::ToolDef> tool;
  std::string call_id, arg_name;
  Respond respond;
  std::shared_ptr<http::ResponseStream> stream;
  oa::Response head;
  std::atomic<bool> answered{false};
  std::mutex mu;  // guards the output below (tokens arrive on the scheduler's thread)
  std::vector<int32_t> output;
  std::string sent;  // streamed text so far
  bool eos = false, stopped = false;
  http::HttpResponse proxied;  // proxy mode: the upstream's whole answer, sent once waits started
};

namespace {

constexpr char kSessionsPath[] = "/v1/sessions/";
constexpr char kModelsPath[] = "/v1/models/";  // GET /v1/models/{id}
constexpr size_t kMaxSessionId = 256;          // bytes

std::string Short(const std::string& wf) { return wf.size() > 8 ? wf.substr(wf.size() - 8) : wf; }

// A node id from a tool name: the id charset, at most 40 characters.
std::string NodeIdOf(const std::string& name, int turn) {
  std::string id;
  for (char ch : name)
    if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.')
      id.push_back(ch);
  if (id.empty()) id = "tool";
  return id.substr(0, 40) + "-" + std::to_string(turn);
}

std::vector<int32_t> PseudoTokens(const std::string& text) {  // the simulated engine's
  std::vector<int32_t> ids;
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t h = 2166136261u;
    for (size_t k = i; k < std::min(text.size(), i + 4); ++k)
      h = (h ^ static_cast<unsigned char>(text[k])) * 16777619u;
    ids.push_back(static_cast<int32_t>(h & 0xfffff));
  }
  return ids;
}

http::HttpResponse Json(int status, std::string body) {
  return http::HttpResponse{status, "application/json", {}, std::move(body)};
}

// A sampling seed for a request that gave none: OpenAI samples afresh on every request.
uint64_t FreshSeed() {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  return gen();
}

// The integer `key` of JSON object `o`, else `fallback` (an upstream's answer is not
// trusted to have the types it should).
int64_t IntOr(const nlohmann::json& o, const char* key, int64_t fallback) {
  if (!o.is_object()) return fallback;
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

// The names of the tool calls in an upstream's whole chat answer (choices[0].message).
std::vector<std::string> ToolCallNames(const nlohmann::json& answer) {
  std::vector<std::string> names;
  if (!answer.is_object()) return names;
  auto choices = answer.find("choices");
  if (choices == answer.end() || !choices->is_array() || choices->empty()) return names;
  const auto& first = (*choices)[0];
  if (!first.is_object()) return names;
  auto message = first.find("message");
  if (message == first.end() || !message->is_object()) return names;
  auto calls = message->find("tool_calls");
  if (calls == message->end() || !calls->is_array()) return names;
  for (const auto& t : *calls) {
    if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
    const auto& f = t["function"];
    names.push_back(f.contains("name") && f["name"].is_string() ? f["name"].get<std::string>()
                                                                : "tool");
  }
  return names;
}

}  // namespace

OpenAiFront::OpenAiFront(service::Service* service, const Clock* clock, Options options)
    : service_(service), clock_(clock), options_(options) {
  if (!options_.upstreams.empty()) {
    UpstreamOptions uo;
    uo.urls = options_.upstreams;
    auto u = UpstreamClient::Create(uo);
    if (u.ok())
      upstream_ = std::move(*u);
    else
      Log(LogLevel::kError, "openai front: no proxy",
          LogKeys().With("error", u.status().ToString()));
  }
  thread_ = std::thread([this]() { Run(); });
}

std::string OpenAiFront::UpstreamAuth() const {
  return options_.upstream_api_key.empty() ? "" : "Bearer " + options_.upstream_api_key;
}

std::string OpenAiFront::Describe() const {
  if (upstream_) {
    std::string urls;
    for (size_t i = 0; i < upstream_->size(); ++i) urls += (i ? ", " : "") + upstream_->url(i);
    return "proxy to " + urls +
           " (Switchyard orders and admits; the upstreams hold the KV: placement is advisory)";
  }
  return "answers from this server's " + service_->generation()->model_executor_name() +
         " (model " + model_id() + ")";
}

OpenAiFront::~OpenAiFront() {
  {  // no callback enters from now on; one running elsewhere is waited for
    std::unique_lock<std::mutex> lock(life_->mu);
    life_->alive = false;
    life_->idle.wait(lock, [this] { return life_->running == 0; });
  }
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool OpenAiFront::Serves(std::string_view path) {
  return path == "/v1/chat/completions" || path == "/v1/completions" || path == "/v1/models" ||
         path.substr(0, sizeof(kModelsPath) - 1) == kModelsPath ||
         path.substr(0, sizeof(kSessionsPath) - 1) == kSessionsPath;
}

http::HttpResponse OpenAiFront::Error(int status, const std::string& message,
                                      const std::string& type, const std::string& code,
                                      const std::string& param) {
  oa::Error e;
  e.http_status = status;
  e.message = message;
  e.type = type;
  e.code = code;
  e.param = param;
  return Json(status, oa::ErrorJson(e));
}

std::string OpenAiFront::model_id() const {
  if (upstream_) return "";  // the upstreams' models
  executors::Generation* d = service_->generation();
  if (!d) return "none";
  return d->model_name();
}

size_t OpenAiFront::sessions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

void OpenAiFront::Handle(const http::HttpRequest& req, const std::string& tenant, Respond respond) {
  std::string_view path = req.path();
  if (path == "/v1/models") {
    if (req.method != "GET") return respond(Error(405, "use GET", "invalid_request_error"));
    if (upstream_)
      return upstream_->Forward(req, upstream_->Pick(""), UpstreamAuth(), std::move(respond));
    return respond(Models());
  }
  if (path.substr(0, sizeof(kModelsPath) - 1) == kModelsPath) {
    if (req.method != "GET") return respond(Error(405, "use GET", "invalid_request_error"));
    if (upstream_)
      return upstream_->Forward(req, upstream_->Pick(""), UpstreamAuth(), std::move(respond));
    return respond(Model(std::string(path.substr(sizeof(kModelsPath) - 1))));
  }
  if (path.substr(0, sizeof(kSessionsPath) - 1) == kSessionsPath) {
    if (req.method != "DELETE") return respond(Error(405, "use DELETE", "invalid_request_error"));
    return DeleteSession(tenant, std::string(path.substr(sizeof(kSessionsPath) - 1)),
                         std::move(respond));
  }
  if (req.method != "POST") return respond(Error(405, "use POST", "invalid_request_error"));
  Complete(req, tenant, path == "/v1/chat/completions", std::move(respond));
}

http::HttpResponse OpenAiFront::Models() const {
  executors::Generation* d = service_->generation();
  std::vector<std::string> ids = d ? d->model_ids() : std::vector<std::string>{model_id()};
  return Json(200, oa::ModelsJson(ids, clock_->Now().millis() / 1000, "switchyard"));
}

http::HttpResponse OpenAiFront::Model(const std::string& id) const {
  executors::Generation* d = service_->generation();
  std::vector<std::string> ids = d ? d->model_ids() : std::vector<std::string>{model_id()};
  const bool served =
      std::find(ids.begin(), ids.end(), id) != ids.end() || (d && d->ResolveModel(id).ok());
  if (!served)
    return Error(404, "model '" + id + "' is not served here", "invalid_request_error",
                 "model_not_found", "model");
  return Json(200, oa::ModelJson(id, clock_->Now().millis() / 1000, "switchyard"));
}

void OpenAiFront::DeleteSession(const std::string& tenant, const std::string& id, Respond respond) {
  SessionPtr s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find({tenant, id});
    if (it != sessions_.end()) {
      s = it->second;
      sessions_.erase(it);
    }
  }
  if (!s)
    return respond(
        Error(404, "no session '" + id + "'", "invalid_request_error", "session_not_found"));
  EndSession(s);
  nlohmann::json j = {{"id", id}, {"object", "session.deleted"}, {"deleted", true}};
  respond(Json(200, j.dump()));
}

std::vector<int32_t> OpenAiFront::Tokenize(const std::string& text,
                                           const std::string& model) const {
  executors::Generation* d = service_->generation();
  const executors::cpu::Tokenizer* tok = d ? d->tokenizer(model) : nullptr;
  if (!tok) return PseudoTokens(text);
  auto ids = tok->Encode(text);
  if (!ids.ok()) return {};
  std::vector<int32_t> out;
  if (tok->bos_id() >= 0) out.push_back(tok->bos_id());
  out.insert(out.end(), ids->begin(), ids->end());
  return out;
}

// ---- A completion --------------------------------------------------------------------------

Status OpenAiFront::Prepare(const http::HttpRequest& req, const std::string& tenant, Call* c) {
  executors::Generation* d = service_->generation();
  if (!d) return Status::Unavailable("this server runs no scheduler");
  if (!upstream_ && !d->runs_llm_nodes())
    return Status::Unavailable("this server's LLM nodes are run by an external engine");
  const oa::Request& r = c->req;
  if (!upstream_) {
    Result<std::string> served =
        r.model.empty() ? Status::InvalidArgument("empty") : d->ResolveModel(r.model);
    if (!served.ok()) {
      std::string ids;
      for (const std::string& id : d->model_ids()) ids += (ids.empty() ? "'" : ", '") + id + "'";
      return Status::NotFound("model: '" + r.model + "' is not served here (this server serves " +
                              ids + ")");
    }
    c->model = *served;
  }
  const int64_t now_ms = clock_->Now().millis();
  if (std::string v = req.Header("x-switchyard-deadline"); !v.empty()) {
    SY_ASSIGN_OR_RETURN(c->deadline_ms, oa::ParseDeadline(v, now_ms));
  }
  if (std::string v = req.Header("x-switchyard-priority"); !v.empty()) {
    SY_ASSIGN_OR_RETURN(c->priority, oa::ParsePriority(v));
  } else if (r.hints.priority) {
    SY_ASSIGN_OR_RETURN(c->priority, oa::ParsePriority(std::to_string(*r.hints.priority)));
  }
  c->max_tokens = r.max_tokens > 0              ? r.max_tokens
                  : r.hints.osl.value_or(0) > 0 ? *r.hints.osl
                                                : options_.default_max_tokens;
  std::string text = r.chat ? oa::RenderChat(r.messages, r.tools) : r.prompt;
  bool forced = r.chat && !r.tools.empty() &&
                (r.tool_choice.kind == oa::ToolChoice::Kind::kRequired ||
                 r.tool_choice.kind == oa::ToolChoice::Kind::kFunction);
  if (forced) {
    c->tool = r.tools.front();
    for (const oa::ToolDef& t : r.tools)
      if (r.tool_choice.kind == oa::ToolChoice::Kind::kFunction && t.name == r.tool_choice.function)
        c->tool = t;
    c->arg_name = oa::ForcedArgument(*c->tool);
  }
  c->prompt = Tokenize(text, c->model);  // a forced call's prefix is added once the id is known
  if (c->prompt.empty() && !text.empty())
    return Status::InvalidArgument("messages: the text could not be tokenized");
  if (const executors::cpu::Model* m = upstream_ ? nullptr : d->cpu_model(c->model)) {
    int64_t need = static_cast<int64_t>(c->prompt.size()) + c->max_tokens + 64;
    if (need > m->shape().max_positions)
      return Status::InvalidArgument(
          "messages: the prompt (" + std::to_string(c->prompt.size()) + " tokens) and " +
          "max_tokens (" + std::to_string(c->max_tokens) + ") exceed the model's context of " +
          std::to_string(m->shape().max_positions) + " tokens");
  }
  return Status::OK();
}

void OpenAiFront::Complete(const http::HttpRequest& req, const std::string& tenant, bool chat,
                           Respond respond) {
  auto c = std::make_shared<Call>();
  c->tenant = tenant;
  c->respond = std::move(respond);
  if (upstream_) c->original = req;
  auto parsed = chat ? oa::ParseChat(req.body) : oa::ParseCompletion(req.body);
  if (!parsed.ok()) {
    return c->respond(Json(oa::ErrorFromStatus(parsed.status()).http_status,
                           oa::ErrorJson(oa::ErrorFromStatus(parsed.status()))));
  }
  c->req = std::move(*parsed);
  if (Status st = Prepare(req, tenant, c.get()); !st.ok()) {
    oa::Error e = oa::ErrorFromStatus(st);
    if (st.code() == StatusCode::kNotFound) e.code = "model_not_found", e.param = "model";
    if (st.message().find("exceed the model's context") != std::string::npos)
      e.code = "context_length_exceeded";
    return c->respond(Json(e.http_status, oa::ErrorJson(e)));
  }
  const std::string sid = oa::SessionIdOf(req.headers, c->req);
  // The id is stored with the session's workflow (its label "session"): UTF-8 text only.
  if (std::string problem = TextProblem(sid); !problem.empty() || sid.size() > kMaxSessionId) {
    return c->respond(Error(
        400,
        "session id: " +
            (problem.empty() ? "longer than " + std::to_string(kMaxSessionId) + " bytes" : problem),
        "invalid_request_error", "invalid_session_id", "x-session-id"));
  }
  if (!sid.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& s = sessions_[{tenant, sid}];
    if (!s) {
      s = std::make_shared<Session>();
      s->tenant = tenant;
      s->id = sid;
    }
    c->session = s;
  }
  int turn = 0;
  if (c->session) {
    if (auto refused = TakeSession(c, oa::SessionIdIsUser(req.headers, c->req), &turn))
      return c->respond(std::move(*refused));
  }
  if (!c->session) c->wf = service_->NewWorkflowId();
  c->node = "llm-" + std::to_string(turn);
  if (c->tool) {
    c->call_id = "call_" + Short(c->wf) + "_" + std::to_string(turn);
    std::vector<int32_t> more = Tokenize(
        oa::ForcedCallPrefix(c->call_id, c->tool->name, c->arg_name), c->model);  // BOS first
    executors::Generation* d = service_->generation();
    const executors::cpu::Tokenizer* tok = d ? d->tokenizer(c->model) : nullptr;
    size_t skip = tok && tok->bos_id() >= 0 ? 1 : 0;  // drop the BOS
    c->prompt.insert(c->prompt.end(), more.begin() + std::min(skip, more.size()), more.end());
  }
  if (c->session) {
    Session& s = *c->session;
    std::lock_guard<std::mutex> lock(s.mu);
    size_t lcp = 0;
    while (lcp < s.tokens.size() && lcp < c->prompt.size() && s.tokens[lcp] == c->prompt[lcp])
      ++lcp;
    // The longest common prefix of the context's tokens and the new prompt is reused, as
    // engines with prefix caching reuse it: the whole context when the prompt repeats the
    // last prompt and answer, else the context cut to that prefix (CacheRef.keep_tokens:
    // a client that re-sends the answer changed, e.g. without its reasoning); a new
    // context only when nothing is shared.
    c->create = c->first || s.tokens.empty() || lcp == 0;
    if (c->create && !c->first) s.context = "main-" + std::to_string(++s.generation);
    c->context = s.context;
    c->cached = c->create ? 0 : static_cast<int64_t>(lcp);
    c->keep = !c->create && lcp < s.tokens.size() ? static_cast<int64_t>(lcp) : 0;
  } else {
    c->context = "main";
  }
  c->fresh.assign(c->prompt.begin() + c->cached, c->prompt.end());
  Start(c);
}

std::optional<http::HttpResponse> OpenAiFront::TakeSession(const CallPtr& c, bool by_user,
                                                           int* turn) {
  Session& s = *c->session;
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.busy && !s.ended && by_user) {  // parallel requests of one end user: each on its own
    c->session = nullptr;
    return std::nullopt;
  }
  if (s.busy || s.ended)
    return Error(409, "session '" + s.id + "' is answering another request",
                 "invalid_request_error", "session_busy");
  if (!s.model.empty() && s.model != c->model)
    return Error(400,
                 "session '" + s.id + "' runs model '" + s.model +
                     "' (its context's KV is that model's); this request names '" + c->req.model +
                     "'",
                 "invalid_request_error", "model_mismatch");
  s.model = c->model;
  s.busy = true;
  s.last_active = std::chrono::steady_clock::now();
  c->first = s.workflow_id.empty();
  if (c->first) s.workflow_id = service_->NewWorkflowId();
  c->wf = s.workflow_id;
  *turn = s.turn;
  c->waits_to_end = s.waits;
  s.waits.clear();
  return std::nullopt;
}

void OpenAiFront::Start(const CallPtr& c) {
  executors::Generation* d = service_->generation();
  const oa::Request& r = c->req;
  c->head.id = (r.chat ? "chatcmpl-" : "cmpl-") + c->wf + "-" + c->node;
  c->head.created = clock_->Now().millis() / 1000;
  c->head.model = upstream_ ? model_id() : c->model;
  c->head.chat = r.chat;
  const executors::cpu::Model* cm = d->cpu_model(c->model);
  c->head.system_fingerprint = cm ? std::string("switchyard-cpu-engine") +
                                        (cm->shape().random_weights ? "-random-weights" : "")
                                  : "switchyard-simulated-engine-placeholder-text";
  if (upstream_) {
    d->WatchPlacement(c->wf, c->node, Guarded([this, c](int worker) {
                        Post([this, c, worker]() {
                          if (worker < 0)
                            return Fail(c, Status::Aborted("workflow " + c->wf + " ended"));
                          Forward(c);
                        });
                      }));
  }
  executors::Generation::NodeInput in;
  in.prompt_token_ids = c->fresh;
  in.temperature = r.temperature;
  in.top_p = r.top_p;
  in.seed = r.seed ? *r.seed : FreshSeed();
  in.stop_at_eos = !c->tool;
  in.token_mask =
      c->tool ? executors::Generation::kJsonStringMask : executors::Generation::kTextMask;
  if (!upstream_) {
    d->SetNodeInput(c->wf, c->node, std::move(in));
    d->Watch(c->wf, c->node, Guarded([this, c](const executors::Generation::TokenEvent& t) {
               if (t.finished)
                 Finish(c, t.status, t.output_tokens);
               else
                 OnToken(c, t.token);
             }));
  }

  v1::ProgramNode n;
  n.set_id(c->node);
  n.set_kind(v1::LLM);
  n.set_model_id(upstream_ ? model_id() : c->model);
  auto* ref = n.add_cache_refs();
  ref->set_context(c->context);
  ref->set_mode(c->create ? v1::CacheRef::CREATE : v1::CacheRef::EXTEND);
  if (c->keep > 0) ref->set_keep_tokens(c->keep);
  for (const std::string& w : c->waits_to_end) n.add_deps(w);
  n.mutable_hints()->set_prompt_tokens(static_cast<int64_t>(c->prompt.size()));
  n.mutable_hints()->set_extend_tokens(static_cast<int64_t>(c->fresh.size()));
  n.mutable_hints()->set_max_output_tokens(c->max_tokens);

  auto done = Guarded([this, c](const Status& st) {
    if (!st.ok()) return Fail(c, st);
    OpenStream(c);  // admitted: a streamed answer's head goes out now
    for (const std::string& w : c->waits_to_end) {
      v1::NodeEvent e;
      e.set_node_id(w);
      e.set_type(v1::TOOL_FINISHED);
      service_->ReportEventAsync(c->tenant, c->wf, e, nullptr, [](const Status&) {});
    }
    if (!c->session) service_->CloseAsync(c->tenant, c->wf, nullptr, [](const Status&) {});
  });
  if (c->first || !c->session) {
    v1::Workflow w;
    w.set_id(c->wf);
    w.set_tenant(c->tenant);
    w.set_deadline_ms(c->deadline_ms);
    if (c->priority > 0) w.set_priority(static_cast<v1::PriorityClass>(c->priority));
    (*w.mutable_labels())["front"] = "openai";
    if (c->session) (*w.mutable_labels())["session"] = c->session->id;
    *w.add_nodes() = std::move(n);
    service_->SubmitAsync(c->tenant, std::move(w), nullptr, done);
  } else {
    service_->AppendAsync(c->tenant, c->wf, {std::move(n)}, nullptr, done);
  }
}

void OpenAiFront::OnToken(const CallPtr& c, int32_t token) {
  executors::Generation* d = service_->generation();
  const executors::cpu::Tokenizer* tok = d->tokenizer(c->model);
  std::lock_guard<std::mutex> lock(c->mu);
  if (c->stopped) return;
  if (tok && token == tok->eos_id() && !c->tool) {
    c->eos = true;
    return;
  }
  c->output.push_back(token);
  if (!c->stream || c->tool || !tok) return;
  std::string text = tok->Decode(c->output);
  for (const std::string& stop : c->req.stop)
    if (size_t at = text.find(stop); at != std::string::npos) {
      text.resize(at);
      c->stopped = true;
    }
  size_t safe = text.size();
  if (!c->stopped) {
    safe -= oa::UnsettledTail(text, c->req.stop);
    safe = oa::Utf8SafePrefix(std::string_view(text).substr(0, safe));
  }
  if (safe > c->sent.size() && text.compare(0, c->sent.size(), c->sent) == 0) {
    c->stream->Write(
        oa::ChunkEvent(c->head, text.substr(c->sent.size(), safe - c->sent.size()), false, ""));
    c->sent = text.substr(0, safe);
  }
}

void OpenAiFront::Finish(const CallPtr& c, const Status& st, int64_t output_tokens) {
  Post([this, c, st, output_tokens]() {
    if (!st.ok()) return Fail(c, st);
    if (!service_->generation()->tokenizer(c->model)) {  // simulated engine: a placeholder
      std::lock_guard<std::mutex> lock(c->mu);
      c->output.assign(static_cast<size_t>(std::max<int64_t>(0, output_tokens)), 0);
    }
    Answer(c);
  });
}

void OpenAiFront::OpenStream(const CallPtr& c) {
  if (!c->req.stream || upstream_) return;
  std::lock_guard<std::mutex> lock(c->mu);
  if (c->stream || c->answered) return;
  c->stream = std::make_shared<http::ResponseStream>();
  http::HttpResponse h{200, "text/event-stream", {}, ""};
  h.headers["x-switchyard-workflow-id"] = c->wf;
  h.headers["x-switchyard-node-id"] = c->node;
  h.stream = c->stream;
  c->stream->Write(oa::ChunkEvent(c->head, "", /*first=*/true, ""));
  // A client that goes away before the answer ends: its generation stops (the workflow is
  // cancelled) and its session starts afresh with its next request.
  // (The call is held weakly: the stream keeps its hook after it ends, and the call holds
  // the stream.)
  std::weak_ptr<Call> weak = c;
  c->stream->SetOnCancel(Guarded([this, weak]() {
    if (CallPtr call = weak.lock()) Post([this, call]() { Abandon(call); });
  }));
  c->respond(std::move(h));
}

void OpenAiFront::Abandon(const CallPtr& c) {
  if (c->answered.exchange(true)) return;
  Log(LogLevel::kInfo, "openai front: the client went away; its workflow is cancelled",
      LogKeys().With("workflow", c->wf).With("node", c->node));
  ResetSession(c, "the client went away while " + c->node + " was answering");
}

void OpenAiFront::ResetSession(const CallPtr& c, const std::string& why) {
  if (c->session) {
    Session& s = *c->session;
    std::lock_guard<std::mutex> lock(s.mu);
    s.busy = false;
    if (s.workflow_id == c->wf) {  // the next request starts a new workflow and context
      s.workflow_id.clear();
      s.tokens.clear();
      s.waits.clear();
      s.turn = 0;
      s.generation = 0;
      s.context = "main";
    }
  }
  service_->CancelAsync(c->tenant, c->wf, why, nullptr, [](const Status&) {});
}

void OpenAiFront::Answer(const CallPtr& c) {
  OpenStream(c);  // the node ran, so it was admitted
  executors::Generation* d = service_->generation();
  const executors::cpu::Tokenizer* tok = d->tokenizer(c->model);
  oa::Response resp = c->head;
  std::vector<int32_t> output;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    output = c->output;
    std::string text;
    if (tok) {
      text = tok->Decode(output);
    } else {
      for (size_t i = 0; i < output.size(); ++i) text += i ? " simulated" : "simulated";
    }
    bool stopped = false;
    for (const std::string& stop : c->req.stop)
      if (size_t at = text.find(stop); at != std::string::npos) text.resize(at), stopped = true;
    resp.choice.finish_reason = c->eos || stopped ? "stop" : "length";
    if (c->tool) {
      resp.choice.tool_calls.push_back(
          oa::ToolCall{c->call_id, c->tool->name, oa::ForcedCallArguments(c->arg_name, text)});
      resp.choice.finish_reason = "tool_calls";
    } else {
      resp.choice.text = text;
    }
    if (c->stream && !c->tool && text.size() > c->sent.size() &&
        text.compare(0, c->sent.size(), c->sent) == 0)
      c->stream->Write(oa::ChunkEvent(c->head, text.substr(c->sent.size()), false, ""));
  }
  resp.usage.prompt_tokens = static_cast<int64_t>(c->prompt.size());
  resp.usage.completion_tokens = static_cast<int64_t>(output.size()) + (c->eos ? 1 : 0);
  resp.usage.cached_tokens = c->cached;

  // The session goes on: its context is the prompt and what the engine produced, and a
  // wait node per tool call (or one `client`) runs until its next request.
  std::vector<int32_t> context = c->prompt;
  context.insert(context.end(), output.begin(), output.end());
  if (c->eos && tok) context.push_back(tok->eos_id());  // the context holds it too
  std::vector<std::string> names;
  for (const oa::ToolCall& call : resp.choice.tool_calls) names.push_back(call.name);
  std::vector<v1::ProgramNode> waits = NextTurn(c, std::move(context), std::move(names));
  auto respond = [this, c, resp]() {
    if (c->answered.exchange(true)) return;
    if (c->session) {
      std::lock_guard<std::mutex> lock(c->session->mu);
      c->session->busy = false;
    }
    if (!c->req.stream) {
      http::HttpResponse h = Json(200, oa::ResponseJson(resp));
      h.headers["x-switchyard-workflow-id"] = c->wf;
      h.headers["x-switchyard-node-id"] = c->node;
      return c->respond(std::move(h));
    }
    if (c->tool) c->stream->Write(oa::ChunkEvent(c->head, "", false, "", &resp.choice.tool_calls));
    c->stream->Write(oa::ChunkEvent(c->head, "", false, resp.choice.finish_reason));
    if (c->req.include_usage) c->stream->Write(oa::UsageEvent(resp));
    c->stream->Write(oa::kDoneEvent);
    c->stream->Close();
  };
  StartWaits(c, std::move(waits), respond);
}

void OpenAiFront::Fail(const CallPtr& c, const Status& st) {
  std::shared_ptr<http::ResponseStream> stream;
  {
    std::lock_guard<std::mutex> lock(c->mu);  // OpenStream opens under it
    if (c->answered.exchange(true)) return;
    stream = c->stream;
  }
  // Whatever failed (the submit or append refused, the node failed, the workflow ended),
  // the session's workflow is not one its next request can build on: it is cancelled and
  // the session starts afresh.
  ResetSession(c, "request failed: " + st.message());
  oa::Error e = oa::ErrorFromStatus(st);
  if (e.http_status == 500) e.type = "server_error";
  Log(LogLevel::kWarn, "openai front: request failed",
      LogKeys().With("workflow", c->wf).With("node", c->node).With("error", st.ToString()));
  if (!stream) {
    http::HttpResponse r = Json(e.http_status, oa::ErrorJson(e));
    if (e.http_status == 429 || e.http_status == 503) r.headers["retry-after"] = "1";
    return c->respond(std::move(r));
  }
  stream->Write("data: " + oa::ErrorJson(e) + "\n\n");
  stream->Write(oa::kDoneEvent);
  stream->Close();
}

// ---- Proxy mode ----------------------------------------------------------------------------

void OpenAiFront::Forward(const CallPtr& c) {
  v1::NodeEvent started;
  started.set_node_id(c->node);
  started.set_type(v1::LLM_STARTED);
  service_->ReportEventAsync(c->tenant, c->wf, started, nullptr, [](const Status&) {});
  const std::string key = c->session ? c->tenant + "/" + c->session->id : "";
  UpstreamClient::Hooks hooks;
  auto usage = std::make_shared<std::string>();  // the tail of a stream: its usage chunk
  hooks.on_bytes = [usage](std::string_view bytes) {
    usage->append(bytes);
    if (usage->size() > 8192) usage->erase(0, usage->size() - 4096);
  };
  hooks.on_end = Guarded([this, c, usage](bool) {
    int64_t tokens = 0;
    if (size_t at = usage->rfind("\"completion_tokens\":"); at != std::string::npos)
      tokens = std::atoll(usage->c_str() + at + 20);
    Post([this, c, tokens]() { Ended(c, tokens, {}); });
  });
  upstream_->Forward(c->original, upstream_->Pick(key), UpstreamAuth(),
                     Guarded([this, c](http::HttpResponse r) {
                       Post([this, c, r = std::move(r)]() mutable { Forwarded(c, std::move(r)); });
                     }),
                     std::move(hooks));
}

void OpenAiFront::Forwarded(const CallPtr& c, http::HttpResponse r) {
  r.headers["x-switchyard-workflow-id"] = c->wf;
  r.headers["x-switchyard-node-id"] = c->node;
  if (r.stream) {  // the answer goes back as it comes; the node ends with the stream
    c->answered = true;
    return c->respond(std::move(r));
  }
  if (r.status >= 500) {  // the upstream failed the call (not retried: not idempotent)
    v1::NodeEvent failed;
    failed.set_node_id(c->node);
    failed.set_type(v1::LLM_FAILED);
    failed.set_error("upstream answered " + std::to_string(r.status));
    failed.set_retryable(false);
    service_->ReportEventAsync(c->tenant, c->wf, failed, nullptr, [](const Status&) {});
    // The failed node failed the session's workflow: the next request starts a new one.
    ResetSession(c, "upstream answered " + std::to_string(r.status));
    if (!c->answered.exchange(true)) c->respond(std::move(r));
    return;
  }
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  int64_t tokens =
      j.is_object() && j.contains("usage") ? IntOr(j["usage"], "completion_tokens", 0) : 0;
  std::vector<std::string> tools = ToolCallNames(j);
  c->head.usage.completion_tokens = tokens;
  c->proxied = std::move(r);
  Ended(c, tokens, std::move(tools));
}

// The proxied node ended: the service learns it, the session's waits start, and a whole
// answer goes back.
void OpenAiFront::Ended(const CallPtr& c, int64_t output_tokens, std::vector<std::string> tools) {
  v1::NodeEvent done;
  done.set_node_id(c->node);
  done.set_type(v1::LLM_FINISHED);
  done.set_output_tokens(output_tokens);
  service_->ReportEventAsync(c->tenant, c->wf, done, nullptr, [](const Status&) {});
  // The answer's tokens are the upstream's: not known here.
  std::vector<v1::ProgramNode> waits = NextTurn(c, c->prompt, std::move(tools));
  auto respond = [this, c]() {
    if (c->answered.exchange(true)) return;  // failed or abandoned: the session was reset
    if (c->session) {
      std::lock_guard<std::mutex> lock(c->session->mu);
      c->session->busy = false;
    }
    c->respond(std::move(c->proxied));
  };
  StartWaits(c, std::move(waits), respond);
}

// ---- Between turns -----------------------------------------------------------------------

// The session goes on: its context is `context` (what the engine holds), and a wait node
// per tool call (or one `client`) runs until its next request. Returns the wait nodes.
std::vector<v1::ProgramNode> OpenAiFront::NextTurn(const CallPtr& c, std::vector<int32_t> context,
                                                   std::vector<std::string> tools) {
  std::vector<v1::ProgramNode> waits;
  if (!c->session) return waits;
  Session& s = *c->session;
  std::lock_guard<std::mutex> lock(s.mu);
  s.tokens = std::move(context);
  if (tools.empty()) tools.push_back("client");
  for (size_t i = 0; i < tools.size(); ++i) {
    v1::ProgramNode w;
    w.set_id(NodeIdOf(tools[i], s.turn) + (i ? "-" + std::to_string(i) : ""));
    w.set_kind(v1::TOOL);
    w.set_tool_name(tools[i]);
    w.add_deps(c->node);
    s.waits.push_back(w.id());
    waits.push_back(std::move(w));
  }
  ++s.turn;
  s.last_active = std::chrono::steady_clock::now();
  return waits;
}

// Appends the wait nodes and starts them; `respond` runs once that is durable.
void OpenAiFront::StartWaits(const CallPtr& c, std::vector<v1::ProgramNode> waits,
                             std::function<void()> respond) {
  if (waits.empty()) return respond();
  std::vector<std::string> ids;
  for (const auto& w : waits) ids.push_back(w.id());
  service_->AppendAsync(c->tenant, c->wf, std::move(waits), nullptr,
                        Guarded([this, c, ids, respond](const Status& st) {
                          if (!st.ok()) return Fail(c, st);
                          for (const std::string& id : ids) {
                            v1::NodeEvent e;
                            e.set_node_id(id);
                            e.set_type(v1::TOOL_STARTED);
                            service_->ReportEventAsync(c->tenant, c->wf, e, nullptr,
                                                       [](const Status&) {});
                          }
                          service_->AfterDurable(Guarded([respond](const Status&) { respond(); }));
                        }));
}

// ---- Sessions ---------------------------------------------------------------------------

void OpenAiFront::EndSession(const SessionPtr& s) {
  std::string wf;
  std::vector<std::string> waits;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->ended) return;
    s->ended = true;
    wf = s->workflow_id;
    waits.swap(s->waits);
  }
  if (wf.empty()) return;
  for (const std::string& w : waits) {
    v1::NodeEvent e;
    e.set_node_id(w);
    e.set_type(v1::TOOL_FINISHED);
    service_->ReportEventAsync(s->tenant, wf, e, nullptr, [](const Status&) {});
  }
  service_->CloseAsync(s->tenant, wf, nullptr, [](const Status&) {});
}

void OpenAiFront::SweepIdle() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<SessionPtr> idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      Session& s = *it->second;
      std::lock_guard<std::mutex> slock(s.mu);
      if (!s.busy && now - s.last_active > options_.session_idle_timeout) {
        idle.push_back(it->second);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const SessionPtr& s : idle) EndSession(s);
}

void OpenAiFront::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    work_.push_back(std::move(fn));
  }
  work_cv_.notify_one();
}

void OpenAiFront::Run() {
  SetThreadName("sy-openai");
  auto next_sweep = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(work_mu_);
      work_cv_.wait_until(lock, next_sweep, [this]() { return stopping_ || !work_.empty(); });
      if (stopping_ && work_.empty()) return;
      if (!work_.empty()) {
        fn = std::move(work_.front());
        work_.pop_front();
      }
    }
    if (fn) {
      try {
        fn();
      } catch (const std::exception& e) {  // a defect: logged, the front goes on
        Log(LogLevel::kError, "openai front: a task threw", LogKeys().With("error", e.what()));
      }
    }
    if (std::chrono::steady_clock::now() >= next_sweep) {
      SweepIdle();
      next_sweep = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
  }
}

}  // namespace switchyard::frontends
