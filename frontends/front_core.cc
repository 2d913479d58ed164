// FrontCore's calls on their way in (see front_core.h): prepared (model, token budget,
// prompt), made a turn of their session and submitted — and out when they fail; the
// core's own thread. Answers are front_core_engine.cc's, or front_core_proxy.cc's.
#include "frontends/front_core.h"

#include <algorithm>

#include "base/logging.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "cpu_engine/model.h"
#include "cpu_engine/tokenizer.h"
#include "executors/generation.h"
#include "frontends/front_call.h"

namespace switchyard::frontends {

FrontCore::FrontCore(service::Service* service, const Clock* clock, Options options)
    : service_(service),
      clock_(clock),
      options_(options),
      sessions_(service,
                {"front", options.session_idle_timeout,
                 life_.Guard([this](const std::string& tenant, const std::string& id) {
                   if (steering_) steering_->Ended(tenant + "/" + id);
                 })},
                life_) {
  if (!options_.upstreams.empty()) {
    upstream::UpstreamOptions uo;
    uo.urls = options_.upstreams;
    auto u = upstream::UpstreamClient::Create(uo);
    if (u.ok())
      upstream_ = std::move(*u);
    else
      Log(LogLevel::kError, "front: no proxy", LogKeys().With("error", u.status().ToString()));
  }
  if (upstream_ && options_.upstream_steering) StartSteering();
  if (upstream_ && options_.upstream_load_interval_ms > 0) StartLoadMonitor();
  if (upstream_ &&
      std::any_of(options_.upstream_kv_events.begin(), options_.upstream_kv_events.end(),
                  [](const std::string& e) { return !e.empty(); })) {
    std::vector<std::string> endpoints = options_.upstream_kv_events;
    endpoints.resize(upstream_->size());
    auto s = upstream::KvEventSubscriber::Start(std::move(endpoints));
    if (s.ok())
      kv_events_ = std::move(*s);
    else
      Log(LogLevel::kError, "front: no KV events", LogKeys().With("error", s.status().ToString()));
    MutexLock lock(&evictions_mu_);
    evictions_.assign(upstream_->size(), 0);
  }
  thread_ = std::thread([this]() { Run(); });
}

FrontCore::~FrontCore() {
  life_.End();  // no callback enters from now on; one running elsewhere is waited for
  {
    MutexLock lock(&work_mu_);
    stopping_ = true;
  }
  work_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

std::string FrontCore::Describe() const {
  if (upstream_) {
    std::string urls;
    for (size_t i = 0; i < upstream_->size(); ++i) urls += (i ? ", " : "") + upstream_->url(i);
    if (!steering_)
      return "proxy to " + urls +
             " (Switchyard orders and admits; the upstreams hold the KV: placement is advisory)";
    return "proxy to " + urls +
           " (Switchyard orders, admits and routes; the upstreams hold the KV, steered by their "
           "adapters)";
  }
  return "answers from this server's " + service_->generation()->model_executor_name() +
         " (model " + model_id() + ")";
}

std::string FrontCore::model_id() const {
  if (upstream_) return "";  // the upstreams' models
  executors::Generation* d = service_->generation();
  if (!d) return "none";
  return d->model_name();
}

std::vector<std::string> FrontCore::model_ids() const {
  executors::Generation* d = service_->generation();
  return d ? d->model_ids() : std::vector<std::string>{model_id()};
}

bool FrontCore::ServesModel(const std::string& id) const {
  std::vector<std::string> ids = model_ids();
  executors::Generation* d = service_->generation();
  return std::find(ids.begin(), ids.end(), id) != ids.end() || (d && d->ResolveModel(id).ok());
}

size_t FrontCore::sessions() const { return sessions_.size(); }

void FrontCore::SweepIdle() { sessions_.SweepIdle(); }

bool FrontCore::EndSession(const std::string& tenant, const std::string& id) {
  return sessions_.End(tenant, id);
}

void FrontCore::ForwardAsIs(const http::HttpRequest& req, Respond respond) {
  upstream_->Forward(req, upstream_->Pick(""), UpstreamAuth(), std::move(respond));
}

// ---- A call --------------------------------------------------------------------------------

void FrontCore::Serve(FrontRequest request, std::unique_ptr<Reply> reply, Respond respond) {
  auto c = std::make_shared<Call>();
  c->req = std::move(request);
  c->reply = std::move(reply);
  c->respond = std::move(respond);
  if (Status st = Prepare(c.get()); !st.ok())
    return c->respond(c->reply->Error(st, Reply::Stage::kPrepare));
  auto turn =
      sessions_.BeginTurn(c->req.tenant, c->req.session_id, c->req.session_is_user, c->model);
  if (!turn.ok()) return c->respond(c->reply->Error(turn.status(), Reply::Stage::kTurn));
  c->turn = std::move(*turn);
  c->turn.front = c->req.front;
  c->turn.retain_ms = c->req.retain_ms;
  c->turn.parent = c->req.parent_session;
  c->head.workflow = c->turn.workflow;
  c->head.node = c->turn.node;
  c->head.turn = c->turn.index;
  c->reply->SetHead(c->head);  // the ids it writes; Start completes the head
  if (c->tool) {
    if (Status st = AddForcedPrefix(c.get()); !st.ok()) {
      sessions_.Abort(c->turn, "the forced call's opening could not be tokenized");
      return c->respond(c->reply->Error(st, Reply::Stage::kPrepare));
    }
  }
  sessions_.Extend(&c->turn, c->prompt);
  Start(c);
}

Result<int64_t> FrontCore::CountTokens(FrontRequest request) const {
  Call c;
  c.req = std::move(request);
  SY_RETURN_IF_ERROR(ResolveModel(&c));
  SY_ASSIGN_OR_RETURN(std::vector<int32_t> ids, PromptTokens(c.req, c.model));
  return static_cast<int64_t>(ids.size());
}

Status FrontCore::Prepare(Call* c) const {
  SY_RETURN_IF_ERROR(ResolveModel(c));
  const FrontRequest& r = c->req;
  c->max_tokens = r.max_tokens > 0 ? r.max_tokens : options_.default_max_tokens;
  c->tool = ForcedTool(r);
  if (c->tool && !upstream_) SY_RETURN_IF_ERROR(PrepareForcedCall(c));
  if (!upstream_) SY_RETURN_IF_ERROR(CheckGuided(*c));
  SY_ASSIGN_OR_RETURN(c->format, FormatOf(c->model));
  // A forced call's opening is added once the call's id is known.
  SY_ASSIGN_OR_RETURN(c->prompt, PromptTokens(r, c->model));
  c->parse_calls = !c->tool && c->format->parser() != nullptr && !r.conv.tools.empty() &&
                   r.conv.tool_choice.kind != ToolChoice::Kind::kNone;
  const cpu_engine::Model* m = upstream_ ? nullptr : service_->generation()->cpu_model(c->model);
  if (m && static_cast<int64_t>(c->prompt.size()) + c->max_tokens + 64 > m->shape().max_positions)
    return Status::InvalidArgument(
        "messages: the prompt (" + std::to_string(c->prompt.size()) + " tokens) and " +
        "max_tokens (" + std::to_string(c->max_tokens) + ") exceed the model's context of " +
        std::to_string(m->shape().max_positions) + " tokens");
  return Status::OK();
}

Status FrontCore::ResolveModel(Call* c) const {
  executors::Generation* d = service_->generation();
  if (!d) return Status::Unavailable("this server runs no scheduler");
  if (upstream_) return Status::OK();  // the upstreams' models: c->model stays ""
  if (!d->runs_llm_nodes())
    return Status::Unavailable("this server's LLM nodes are run by an external engine");
  const std::string& asked = c->req.conv.model;
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

void FrontCore::Start(const CallPtr& c) {
  const cpu_engine::Model* cm = service_->generation()->cpu_model(c->model);
  c->head.created = clock_->Now().millis() / 1000;
  c->head.prompt_tokens = static_cast<int64_t>(c->prompt.size());
  c->head.cached_tokens = c->turn.cached;
  c->head.model = upstream_ ? model_id() : c->model;
  c->head.engine = cm ? std::string("switchyard-cpu-engine") +
                            (cm->shape().random_weights ? "-random-weights" : "")
                      : "switchyard-simulated-engine-placeholder-text";
  c->reply->SetHead(c->head);
  if (upstream_) {
    CheckEvicted(*c);
    WatchPlacement(c);
  } else
    Generate(c);
  int64_t budget = c->max_tokens;
  if (!upstream_ && !service_->generation()->tokenizer(c->model))  // a placeholder
    budget = std::min(budget, options_.placeholder_tokens);
  v1::ProgramNode n =
      sessions_.LlmNode(c->turn, c->head.model, static_cast<int64_t>(c->prompt.size()), budget);
  sessions_.Submit(c->turn, std::move(n), c->req.deadline_ms, c->req.priority,
                   [this, c](const Status& st) {
                     if (!st.ok()) return Fail(c, st);
                     OpenStream(c);  // admitted: a streamed answer's head goes out now
                   });
}

void FrontCore::Fail(const CallPtr& c, const Status& st) {
  std::shared_ptr<http::ResponseStream> stream;
  {
    MutexLock lock(&c->mu);  // OpenStream opens under it
    if (c->answered.exchange(true)) return;
    stream = c->stream;
  }
  // Whatever failed (the submit or append refused, the node failed, the workflow ended),
  // the session's workflow is not one its next call can build on: it is cancelled and the
  // session starts afresh.
  sessions_.Abort(c->turn, "request failed: " + st.message());
  Log(LogLevel::kWarn, "front: request failed",
      LogKeys()
          .With("workflow", c->turn.workflow)
          .With("node", c->turn.node)
          .With("error", st.ToString()));
  if (!stream) return c->respond(c->reply->Error(st, Reply::Stage::kRun));
  MutexLock lock(&c->mu);
  stream->Write(c->reply->StreamError(st));
  stream->Close();
}

void FrontCore::Abandon(const CallPtr& c) {
  if (c->answered.exchange(true)) return;
  Log(LogLevel::kInfo, "front: the client went away; its workflow is cancelled",
      LogKeys().With("workflow", c->turn.workflow).With("node", c->turn.node));
  sessions_.Abort(c->turn, "the client went away while " + c->turn.node + " was answering");
}

// ---- The core's thread ---------------------------------------------------------------------

void FrontCore::Post(std::function<void()> fn) {
  {
    MutexLock lock(&work_mu_);
    work_.push_back(std::move(fn));
  }
  work_cv_.Signal();
}

void FrontCore::Run() {
  SetThreadName("sy-front");
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
      } catch (const std::exception& e) {  // a defect: logged, the core goes on
        Log(LogLevel::kError, "front: a task threw", LogKeys().With("error", e.what()));
      }
    }
    if (std::chrono::steady_clock::now() >= next_sweep) {
      SweepIdle();
      next_sweep = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
  }
}

}  // namespace switchyard::frontends
