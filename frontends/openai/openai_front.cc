// OpenAiFront's requests (see openai_front.h): routing, models, DELETE of a session, and a
// completion's way in — parsed, prepared (model, hints, prompt), made a turn of its
// session (frontends/session.h) and submitted — and out when it fails. Its answers are
// openai_front_engine.cc's, or openai_front_proxy.cc's in proxy mode.
#include "frontends/openai/openai_front.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>

#include "base/logging.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "executors/cpu/model.h"
#include "executors/cpu/tokenizer.h"
#include "executors/generation.h"
#include "frontends/openai/openai_call.h"
#include "frontends/openai/openai_protocol.h"

namespace switchyard::frontends {

namespace oa = openai;

namespace {

constexpr char kSessionsPath[] = "/v1/sessions/";
constexpr char kModelsPath[] = "/v1/models/";  // GET /v1/models/{id}

std::string Short(const std::string& wf) { return wf.size() > 8 ? wf.substr(wf.size() - 8) : wf; }

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

bool HasPrefix(std::string_view path, std::string_view prefix) {
  return path.substr(0, prefix.size()) == prefix;
}

// The tool a forced tool choice calls (`required`: the first; or the named function), if
// the request has one.
std::optional<oa::ToolDef> ForcedTool(const oa::Request& r) {
  using Kind = oa::ToolChoice::Kind;
  const Kind kind = r.tool_choice.kind;
  if (!r.chat || r.tools.empty() || (kind != Kind::kRequired && kind != Kind::kFunction))
    return std::nullopt;
  for (const oa::ToolDef& t : r.tools)
    if (kind == Kind::kFunction && t.name == r.tool_choice.function) return t;
  return r.tools.front();
}

// The error for a request Prepare refused.
http::HttpResponse PrepareError(const Status& st) {
  oa::Error e = oa::ErrorFromStatus(st);
  if (st.code() == StatusCode::kNotFound) e.code = "model_not_found", e.param = "model";
  if (st.message().find("exceed the model's context") != std::string::npos)
    e.code = "context_length_exceeded";
  return Json(e.http_status, oa::ErrorJson(e));
}

// The error for a request its session refused (Sessions::BeginTurn); `model` as named.
http::HttpResponse TurnError(const Status& st, const std::string& model) {
  const std::string type = "invalid_request_error";
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
      return OpenAiFront::Error(400, st.message(), type, "invalid_session_id", "x-session-id");
    case StatusCode::kAborted:
      return OpenAiFront::Error(409, st.message(), type, "session_busy");
    default:
      return OpenAiFront::Error(400, st.message() + "; this request names '" + model + "'", type,
                                "model_mismatch");
  }
}

}  // namespace

OpenAiFront::OpenAiFront(service::Service* service, const Clock* clock, Options options)
    : service_(service),
      clock_(clock),
      options_(options),
      sessions_(service, {"openai", options.session_idle_timeout}, life_) {
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

OpenAiFront::~OpenAiFront() {
  life_.End();  // no callback enters from now on; one running elsewhere is waited for
  {
    MutexLock lock(&work_mu_);
    stopping_ = true;
  }
  work_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
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

bool OpenAiFront::Serves(std::string_view path) {
  return path == "/v1/chat/completions" || path == "/v1/completions" || path == "/v1/models" ||
         HasPrefix(path, kModelsPath) || HasPrefix(path, kSessionsPath);
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

size_t OpenAiFront::sessions() const { return sessions_.size(); }

void OpenAiFront::SweepIdle() { sessions_.SweepIdle(); }

void OpenAiFront::Handle(const http::HttpRequest& req, const std::string& tenant, Respond respond) {
  std::string_view path = req.path();
  if (path == "/v1/models" || HasPrefix(path, kModelsPath)) {
    if (req.method != "GET") return respond(Error(405, "use GET", "invalid_request_error"));
    if (upstream_)
      return upstream_->Forward(req, upstream_->Pick(""), UpstreamAuth(), std::move(respond));
    if (path == "/v1/models") return respond(Models());
    return respond(Model(std::string(path.substr(sizeof(kModelsPath) - 1))));
  }
  if (HasPrefix(path, kSessionsPath)) {
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
  if (!sessions_.End(tenant, id))
    return respond(
        Error(404, "no session '" + id + "'", "invalid_request_error", "session_not_found"));
  nlohmann::json j = {{"id", id}, {"object", "session.deleted"}, {"deleted", true}};
  respond(Json(200, j.dump()));
}

// ---- A completion --------------------------------------------------------------------------

void OpenAiFront::Complete(const http::HttpRequest& req, const std::string& tenant, bool chat,
                           Respond respond) {
  auto c = std::make_shared<Call>();
  c->respond = std::move(respond);
  if (upstream_) c->original = req;
  auto parsed = chat ? oa::ParseChat(req.body) : oa::ParseCompletion(req.body);
  if (!parsed.ok()) {
    oa::Error e = oa::ErrorFromStatus(parsed.status());
    return c->respond(Json(e.http_status, oa::ErrorJson(e)));
  }
  c->req = std::move(*parsed);
  if (Status st = Prepare(req, c.get()); !st.ok()) return c->respond(PrepareError(st));
  auto turn = sessions_.BeginTurn(tenant, oa::SessionIdOf(req.headers, c->req),
                                  oa::SessionIdIsUser(req.headers, c->req), c->model);
  if (!turn.ok()) return c->respond(TurnError(turn.status(), c->req.model));
  c->turn = std::move(*turn);
  if (c->tool) AddForcedPrefix(c.get());
  sessions_.Extend(&c->turn, c->prompt);
  Start(c);
}

Status OpenAiFront::Prepare(const http::HttpRequest& req, Call* c) const {
  SY_RETURN_IF_ERROR(ResolveModel(c));
  const oa::Request& r = c->req;
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
  c->tool = ForcedTool(r);
  if (c->tool) c->arg_name = oa::ForcedArgument(*c->tool);
  c->prompt = Tokenize(text, c->model);  // a forced call's prefix is added once the id is known
  if (c->prompt.empty() && !text.empty())
    return Status::InvalidArgument("messages: the text could not be tokenized");
  const executors::cpu::Model* m =
      upstream_ ? nullptr : service_->generation()->cpu_model(c->model);
  if (m && static_cast<int64_t>(c->prompt.size()) + c->max_tokens + 64 > m->shape().max_positions)
    return Status::InvalidArgument(
        "messages: the prompt (" + std::to_string(c->prompt.size()) + " tokens) and " +
        "max_tokens (" + std::to_string(c->max_tokens) + ") exceed the model's context of " +
        std::to_string(m->shape().max_positions) + " tokens");
  return Status::OK();
}

Status OpenAiFront::ResolveModel(Call* c) const {
  executors::Generation* d = service_->generation();
  if (!d) return Status::Unavailable("this server runs no scheduler");
  if (upstream_) return Status::OK();  // the upstreams' models: c->model stays ""
  if (!d->runs_llm_nodes())
    return Status::Unavailable("this server's LLM nodes are run by an external engine");
  const std::string& asked = c->req.model;
  Result<std::string> served =
      asked.empty() ? Status::InvalidArgument("empty") : d->ResolveModel(asked);
  if (!served.ok()) {
    std::string ids;
    for (const std::string& id : d->model_ids()) ids += (ids.empty() ? "'" : ", '") + id + "'";
    return Status::NotFound("model: '" + asked + "' is not served here (this server serves " + ids +
                            ")");
  }
  c->model = *served;
  return Status::OK();
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

void OpenAiFront::AddForcedPrefix(Call* c) const {
  c->call_id = "call_" + Short(c->turn.workflow) + "_" + std::to_string(c->turn.index);
  std::vector<int32_t> more =
      Tokenize(oa::ForcedCallPrefix(c->call_id, c->tool->name, c->arg_name), c->model);
  executors::Generation* d = service_->generation();
  const executors::cpu::Tokenizer* tok = d ? d->tokenizer(c->model) : nullptr;
  size_t skip = tok && tok->bos_id() >= 0 ? 1 : 0;  // Tokenize put a BOS first: dropped
  c->prompt.insert(c->prompt.end(), more.begin() + std::min(skip, more.size()), more.end());
}

void OpenAiFront::Start(const CallPtr& c) {
  const executors::cpu::Model* cm = service_->generation()->cpu_model(c->model);
  c->head.id = (c->req.chat ? "chatcmpl-" : "cmpl-") + c->turn.workflow + "-" + c->turn.node;
  c->head.created = clock_->Now().millis() / 1000;
  c->head.model = upstream_ ? model_id() : c->model;
  c->head.chat = c->req.chat;
  c->head.system_fingerprint = cm ? std::string("switchyard-cpu-engine") +
                                        (cm->shape().random_weights ? "-random-weights" : "")
                                  : "switchyard-simulated-engine-placeholder-text";
  if (upstream_)
    WatchPlacement(c);
  else
    Generate(c);
  v1::ProgramNode n = sessions_.LlmNode(c->turn, c->head.model,
                                        static_cast<int64_t>(c->prompt.size()), c->max_tokens);
  sessions_.Submit(c->turn, std::move(n), c->deadline_ms, c->priority, [this, c](const Status& st) {
    if (!st.ok()) return Fail(c, st);
    OpenStream(c);  // admitted: a streamed answer's head goes out now
  });
}

void OpenAiFront::Fail(const CallPtr& c, const Status& st) {
  std::shared_ptr<http::ResponseStream> stream;
  {
    MutexLock lock(&c->mu);  // OpenStream opens under it
    if (c->answered.exchange(true)) return;
    stream = c->stream;
  }
  // Whatever failed (the submit or append refused, the node failed, the workflow ended),
  // the session's workflow is not one its next request can build on: it is cancelled and
  // the session starts afresh.
  sessions_.Abort(c->turn, "request failed: " + st.message());
  oa::Error e = oa::ErrorFromStatus(st);
  if (e.http_status == 500) e.type = "server_error";
  Log(LogLevel::kWarn, "openai front: request failed",
      LogKeys()
          .With("workflow", c->turn.workflow)
          .With("node", c->turn.node)
          .With("error", st.ToString()));
  if (!stream) {
    http::HttpResponse r = Json(e.http_status, oa::ErrorJson(e));
    if (e.http_status == 429 || e.http_status == 503) r.headers["retry-after"] = "1";
    return c->respond(std::move(r));
  }
  stream->Write("data: " + oa::ErrorJson(e) + "\n\n");
  stream->Write(oa::kDoneEvent);
  stream->Close();
}

void OpenAiFront::Abandon(const CallPtr& c) {
  if (c->answered.exchange(true)) return;
  Log(LogLevel::kInfo, "openai front: the client went away; its workflow is cancelled",
      LogKeys().With("workflow", c->turn.workflow).With("node", c->turn.node));
  sessions_.Abort(c->turn, "the client went away while " + c->turn.node + " was answering");
}

// ---- The front's thread ----------------------------------------------------------------------

void OpenAiFront::Post(std::function<void()> fn) {
  {
    MutexLock lock(&work_mu_);
    work_.push_back(std::move(fn));
  }
  work_cv_.Signal();
}

void OpenAiFront::Run() {
  SetThreadName("sy-openai");
  auto next_sweep = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    std::function<void()> fn;
    {
      MutexLock lock(&work_mu_);
      while (!stopping_ && work_.empty() && work_cv_.WaitUntil(&work_mu_, next_sweep)) {
      }
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
