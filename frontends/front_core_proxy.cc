// FrontCore's proxy mode (see front_core.h, "Proxy mode"): once the scheduler placed a
// call's node, the call's request goes unchanged to an upstream chosen with session
// affinity (UpstreamClient); the core reports the node's start and end, and the upstream's
// answer goes back unchanged — a stream at once, a whole answer once the session's waits
// started (named after the tool calls it holds). A call to an upstream that speaks only
// Chat Completions goes translated, and its answer comes back through the call's Reply.
#include "base/logging.h"
#include "conversation/chat_answer.h"
#include "conversation/chat_request.h"
#include "conversation/translated_stream.h"
#include "executors/generation.h"
#include "frontends/front_call.h"
#include "frontends/front_core.h"
#include "upstream/stream_usage.h"

namespace switchyard::frontends {

std::string FrontCore::UpstreamAuth() const {
  return options_.upstream_api_key.empty() ? "" : "Bearer " + options_.upstream_api_key;
}

void FrontCore::WatchPlacement(const CallPtr& c) {
  service_->generation()->WatchPlacement(
      c->turn.workflow, c->turn.node, life_.Guard([this, c](int worker) {
        Post([this, c, worker]() {
          if (worker < 0)
            return Fail(c, Status::Aborted("workflow " + c->turn.workflow + " ended"));
          Forward(c, worker);
        });
      }));
}

std::string FrontCore::SessionKey(const Sessions::Turn& t) {
  return t.session_id.empty() ? "" : t.tenant + "/" + t.session_id;
}

size_t FrontCore::UpstreamFor(const Call& c, int worker) {
  if (worker >= 0 && static_cast<size_t>(worker) < upstream_->size() &&
      service_->generation()->workers() == static_cast<int>(upstream_->size()))
    return static_cast<size_t>(worker);
  return upstream_->Pick(SessionKey(c.turn));
}

void FrontCore::Forward(const CallPtr& c, int worker) {
  sessions_.ReportStarted(c->turn);
  const size_t i = UpstreamFor(*c, worker);
  const bool translated = Translated(*c, i);
  http::HttpRequest out =
      translated ? translate::ChatRequest(c->req.conv, c->req.max_tokens, c->req.stream)
                 : c->req.original;
  const std::string key = SessionKey(c->turn);
  if (!steering_ || key.empty()) return Send(c, i, translated, std::move(out));
  // Steering: what must reach the upstream first (a slot's restore, a session's open) goes
  // first; the session's warm-up, if the turn came before it was sent, is cancelled.
  auto ready = [this, c, i, translated, out = std::move(out)]() mutable {
    Post([this, c, i, translated, out = std::move(out)]() mutable {
      Send(c, i, translated, std::move(out));
    });
  };
  steering_->BeforeTurn(key, c->turn.workflow, i, life_.Guard(std::move(ready)));
}

void FrontCore::Send(const CallPtr& c, size_t i, bool translated, http::HttpRequest out) {
  const std::string key = SessionKey(c->turn);
  if (steering_ && !key.empty()) steering_->Decorate(key, c->req.priority, &out);
  if (translated) return ForwardTranslated(c, i, std::move(out));
  SendAsIs(c, i, std::move(out));
}

void FrontCore::SendAsIs(const CallPtr& c, size_t i, http::HttpRequest out) {
  upstream::UpstreamClient::Hooks hooks;
  // A stream's tool calls (the session's wait is named after them) and output tokens.
  std::shared_ptr<upstream::UpstreamStreamReader> reader = c->reply->NewUpstreamStreamReader();
  const std::string key = SessionKey(c->turn);
  std::shared_ptr<upstream::ProxySteering::StreamTap> tap;
  if (steering_ && !key.empty() && c->req.stream) {
    tap = steering_->Tap(key);
    // Steering reads the stream's usage; a client that did not ask for it does not get it.
    if (upstream::AskUsage(&out)) {
      auto filter = std::make_shared<upstream::UsageEventFilter>();
      hooks.transform = [filter](std::string_view bytes) { return filter->Filter(bytes); };
    }
  }
  hooks.on_bytes = [reader, tap](std::string_view bytes) {
    reader->Read(bytes);
    if (tap) tap->Read(bytes);
  };
  // The client's stream stays open until the session is free: an agent sends its next
  // turn as soon as it read the last event, and that turn must find the session released.
  hooks.on_end = life_.Guard([this, c, reader, tap](
                                 bool complete, upstream::UpstreamClient::CloseHold hold) mutable {
    int64_t tokens = 0;
    std::vector<std::string> tools;
    reader->End(&tools, &tokens);
    if (tap) tap->End();  // before the session's next turn can start
    Post([this, c, tokens, tools = std::move(tools), complete, hold = std::move(hold)]() mutable {
      c->stream_hold = std::move(hold);
      if (!complete) return StreamBroke(c);
      Ended(c, tokens, std::move(tools));
    });
  });
  const auto sent = std::chrono::steady_clock::now();
  upstream_->Forward(out, i, UpstreamAuth(), life_.Guard([this, c, i, sent](http::HttpResponse r) {
    ReportLatency(i, sent, r.status);
    Post([this, c, r = std::move(r)]() mutable { Forwarded(c, std::move(r)); });
  }),
                     std::move(hooks));
}

void FrontCore::Forwarded(const CallPtr& c, http::HttpResponse r) {
  r.headers["x-switchyard-workflow-id"] = c->turn.workflow;
  r.headers["x-switchyard-node-id"] = c->turn.node;
  if (r.stream) {  // the answer goes back as it comes; the node ends with the stream
    c->answered = true;
    return c->respond(std::move(r));
  }
  if (r.status >= 500) {  // the upstream failed the call (not retried: not idempotent)
    const std::string why = "upstream answered " + std::to_string(r.status);
    sessions_.ReportFailed(c->turn, why);
    // The failed node failed the session's workflow: the next call starts a new one.
    sessions_.Abort(c->turn, why);
    if (!c->answered.exchange(true)) c->respond(std::move(r));
    return;
  }
  int64_t tokens = 0;
  std::vector<std::string> tools;
  c->reply->ReadUpstreamAnswer(r.body, &tools, &tokens);
  if (steering_ && r.status < 300 && !SessionKey(c->turn).empty())
    steering_->Answered(SessionKey(c->turn), r.body);
  c->proxied = std::move(r);
  Ended(c, tokens, std::move(tools));
}

// The proxied node ended: the service learns it, the session's waits start, and a whole
// answer goes back.
void FrontCore::Ended(const CallPtr& c, int64_t output_tokens, std::vector<std::string> tools) {
  sessions_.ReportFinished(c->turn, output_tokens);
  // The answer's tokens are the upstream's: not known here.
  sessions_.EndTurn(c->turn, c->prompt, std::move(tools), [this, c](const Status& st) {
    if (c->stream_hold) {  // the answer went out as it came; its end goes now
      if (st.ok()) {
        sessions_.Release(c->turn);
      } else {
        sessions_.Abort(c->turn, "request failed: " + st.message());
      }
      c->stream_hold.reset();
      return;
    }
    if (!st.ok()) return Fail(c, st);
    if (c->answered.exchange(true)) return;  // failed or abandoned: the session was reset
    sessions_.Release(c->turn);
    c->respond(std::move(c->proxied));
  });
}

// A streamed answer that did not end as the upstream meant it to (the upstream broke or
// timed out, or the client went away): the node failed, and the session starts afresh.
void FrontCore::StreamBroke(const CallPtr& c) {
  const std::string why = "the upstream's stream did not complete";
  sessions_.ReportFailed(c->turn, why);
  sessions_.Abort(c->turn, why);
  c->stream_hold.reset();
}

// ---- Translated to Chat Completions ---------------------------------------------------------

bool FrontCore::translates() const {
  if (!upstream_) return false;
  for (UpstreamApi api : options_.upstream_apis) {
    if (api == UpstreamApi::kChat) return true;
  }
  return false;
}

UpstreamApi FrontCore::ApiOf(size_t i) const {
  return i < options_.upstream_apis.size() ? options_.upstream_apis[i] : UpstreamApi::kSame;
}

// Messages calls to a chat upstream, and every Responses call once one upstream speaks only
// chat (this server then keeps the Responses API: its stored responses, its chains); never
// Chat Completions or Completions calls, which every OpenAI-compatible upstream takes as
// they are.
bool FrontCore::Translated(const Call& c, size_t i) const {
  if (!c.req.chat) return false;
  if (c.req.front == "responses") return translates();
  return c.req.front == "anthropic" && ApiOf(i) == UpstreamApi::kChat;
}

void FrontCore::ForwardTranslated(const CallPtr& c, size_t i, http::HttpRequest out) {
  auto t = std::make_shared<translate::TranslatedStream>(c->reply.get());
  upstream::UpstreamClient::Hooks hooks;
  if (c->req.stream) {
    const std::string key = SessionKey(c->turn);
    std::shared_ptr<upstream::ProxySteering::StreamTap> tap;
    if (steering_ && !key.empty()) tap = steering_->Tap(key);
    // The client's stream carries the front's events, written by the call's Reply as the
    // upstream's chunks come (under the call's lock: the core's thread writes the end).
    hooks.transform = [c, t, tap](std::string_view bytes) {
      if (tap) tap->Read(bytes);
      MutexLock lock(&c->mu);
      return t->Feed(bytes);
    };
    hooks.on_end = life_.Guard(
        [this, c, t, tap](bool complete, upstream::UpstreamClient::CloseHold hold) mutable {
          if (tap) tap->End();
          Post([this, c, t, complete, hold = std::move(hold)]() mutable {
            c->stream_hold = std::move(hold);
            TranslatedStreamEnded(c, t, complete);
          });
        });
  }
  const auto sent = std::chrono::steady_clock::now();
  upstream_->Forward(
      out, i, UpstreamAuth(), life_.Guard([this, c, t, i, sent](http::HttpResponse r) {
        ReportLatency(i, sent, r.status);
        Post([this, c, t, r = std::move(r)]() mutable { TranslatedAnswer(c, t, std::move(r)); });
      }),
      std::move(hooks));
}

void FrontCore::TranslatedAnswer(const CallPtr& c,
                                 const std::shared_ptr<translate::TranslatedStream>& t,
                                 http::HttpResponse r) {
  auto respond_stream = [this, c](std::shared_ptr<http::ResponseStream> stream) {
    http::HttpResponse head{200, "text/event-stream", {}, ""};
    head.headers["x-switchyard-workflow-id"] = c->turn.workflow;
    head.headers["x-switchyard-node-id"] = c->turn.node;
    head.stream = std::move(stream);
    c->respond(std::move(head));
  };
  if (r.stream) {  // the front's events go out as they come; the end waits for the session
    {
      MutexLock lock(&c->mu);
      c->stream = r.stream;
    }
    return respond_stream(std::move(r.stream));
  }
  if (r.status >= 400) {
    const Status st = translate::ChatErrorStatus(r.status, r.body);
    if (r.status >= 500) {  // the upstream failed the call: its workflow fails (Fail)
      sessions_.ReportFailed(c->turn, "upstream answered " + std::to_string(r.status));
      return Fail(c, st);
    }
    // Refused: the session goes on, as for a call forwarded unchanged.
    c->proxied = c->reply->Error(st, Reply::Stage::kRun);
    c->proxied.headers["x-switchyard-workflow-id"] = c->turn.workflow;
    c->proxied.headers["x-switchyard-node-id"] = c->turn.node;
    return Ended(c, 0, {});
  }
  if (steering_ && !SessionKey(c->turn).empty()) steering_->Answered(SessionKey(c->turn), r.body);
  Result<frontends::Answer> a = translate::ReadChatAnswer(r.body);
  if (!a.ok()) {
    sessions_.ReportFailed(c->turn, a.status().message());
    return Fail(c, a.status());
  }
  if (c->req.stream) {  // a stream asked for and a whole answer given: a stream of it
    auto stream = std::make_shared<http::ResponseStream>();
    {
      MutexLock lock(&c->mu);
      c->stream = stream;
      stream->Write(c->reply->StreamStart() + c->reply->StreamText(a->text));
    }
    respond_stream(std::move(stream));
  }
  EndTranslated(c, std::move(*a));
}

void FrontCore::TranslatedStreamEnded(const CallPtr& c,
                                      const std::shared_ptr<translate::TranslatedStream>& t,
                                      bool complete) {
  Result<frontends::Answer> a = Status::Internal("no answer");
  {
    MutexLock lock(&c->mu);
    std::string tail = t->End(complete);
    if (c->stream) c->stream->Write(std::move(tail));
    a = t->answer();
  }
  if (!a.ok()) {  // its error event went out
    c->answered = true;
    return StreamBroke(c);
  }
  EndTranslated(c, std::move(*a));
}

// The translated answer ended: the service learns it, the session's waits start (named
// after its tool calls, which take this server's ids), the Reply commits it, then it goes
// out — whole, or as the stream's end after the session was released (Send).
void FrontCore::EndTranslated(const CallPtr& c, frontends::Answer a) {
  std::vector<std::string> tools;
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    a.tool_calls[i].id = c->reply->ToolCallId(static_cast<int>(i));
    tools.push_back(a.tool_calls[i].name);
  }
  if (a.prompt_tokens == 0) a.prompt_tokens = c->head.prompt_tokens;  // no usage: the estimate
  sessions_.ReportFinished(c->turn, a.completion_tokens);
  auto fail = [this, c](const Status& st) {
    Fail(c, st);
    c->stream_hold.reset();
  };
  sessions_.EndTurn(c->turn, c->prompt, std::move(tools), [this, c, a, fail](const Status& st) {
    if (!st.ok()) return fail(st);
    c->reply->Commit(a, life_.Guard([this, c, a, fail](const Status& st) {
      Post([this, c, a, st, fail]() {
        if (!st.ok()) return fail(st);
        Send(c, a);
        c->stream_hold.reset();
      });
    }));
  });
}

}  // namespace switchyard::frontends

namespace switchyard::frontends {

// ---- Steering ------------------------------------------------------------------------------

void FrontCore::StartSteering() {
  std::vector<upstream::SteeringUpstream> setups = options_.upstream_setups;
  setups.resize(upstream_->size());  // generic where none was given
  for (upstream::SteeringUpstream& s : setups) {
    if (s.auth.empty()) s.auth = UpstreamAuth();
    // Every OpenAI-compatible engine worth proxying caches prompt prefixes (vLLM, SGLang,
    // llama.cpp, TensorRT-LLM): a generic upstream gets warm-ups unless declared otherwise.
    if (s.kind == upstream::UpstreamKind::kGeneric && s.declared.prefix_caching.source.empty())
      s.declared.prefix_caching = {true, "assumed for a generic upstream (#no-prefix_caching)"};
  }
  auto steering = upstream::ProxySteering::Create(clock_, upstream_.get(), std::move(setups));
  if (!steering.ok()) {
    Log(LogLevel::kError, "front: upstream steering off",
        LogKeys().With("error", steering.status().ToString()));
    return;
  }
  steering_ = std::move(*steering);
  steering_->ProbeAll();
  if (service_->generation() == nullptr) return;  // no scheduler: no decisions to act on
  service_->generation()->WatchKv(
      life_.Guard([this](const executors::Generation::KvDecision& d) { steering_->OnKv(d); }));
}

void FrontCore::StartLoadMonitor() {
  upstream::LoadMonitor::Options o;
  o.interval_ms = options_.upstream_load_interval_ms;
  o.auth = UpstreamAuth();
  for (const upstream::SteeringUpstream& s : options_.upstream_setups) o.kinds.push_back(s.kind);
  executors::Generation* g = service_->generation();
  const bool per_worker = g && g->workers() == static_cast<int>(upstream_->size());
  load_monitor_ = std::make_unique<upstream::LoadMonitor>(
      upstream_.get(), std::move(o),
      life_.Guard([g, per_worker](size_t i, const upstream::UpstreamLoad& l) {
        if (per_worker) g->ReportLoad(static_cast<int>(i), {l.running, l.waiting, l.kv_usage});
      }));
}

void FrontCore::CheckEvicted(const Call& c) {
  const std::string key = SessionKey(c.turn);
  if (!steering_ || key.empty() || c.turn.first) return;
  std::optional<upstream::ProxySteering::LastTurn> last = steering_->last_turn(key);
  if (!last) return;
  const size_t u = last->upstream;
  // What the upstream's KV events say, where it publishes them and returned the turn's
  // token ids; else what its cached_tokens taught the retention model.
  const bool events = kv_events_ && u < options_.upstream_kv_events.size() &&
                      !options_.upstream_kv_events[u].empty() && !last->tokens.empty();
  bool evicted = false;
  if (events) {
    const int64_t held = kv_events_->HeldPrefixTokens(u, last->tokens);
    evicted = held * 2 < static_cast<int64_t>(last->tokens.size());
  } else {
    evicted = steering_->PredictHeld(key) == std::optional<bool>(false);
  }
  if (!evicted) return;
  // One worker per upstream: the context's worker is its upstream's index.
  executors::Generation* g = service_->generation();
  if (!g || g->workers() != static_cast<int>(upstream_->size())) return;
  g->ReportContextEvicted(c.turn.workflow + "/" + c.turn.context, static_cast<int>(u));
  MutexLock lock(&evictions_mu_);
  std::vector<uint64_t>& count = events ? evictions_ : evictions_predicted_;
  if (count.size() < upstream_->size()) count.resize(upstream_->size(), 0);
  ++count[u];
}

void FrontCore::ReportLatency(size_t i, std::chrono::steady_clock::time_point sent, int status) {
  if (!steering_ || status < 200 || status >= 300) return;
  steering_->ReportLatency(
      i,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count());
}

std::vector<FrontCore::UpstreamFigures> FrontCore::upstream_figures() const {
  std::vector<UpstreamFigures> out;
  if (!upstream_) return out;
  std::vector<upstream::ProxySteering::Figures> steered;
  if (steering_) steered = steering_->figures();
  std::vector<upstream::LoadMonitor::Scrapes> loads;
  if (load_monitor_) loads = load_monitor_->status();
  std::vector<upstream::KvEventSubscriber::Figures> events;
  if (kv_events_) events = kv_events_->figures();
  std::vector<uint64_t> evictions, predicted;
  {
    MutexLock lock(&evictions_mu_);
    evictions = evictions_;
    predicted = evictions_predicted_;
  }
  for (size_t i = 0; i < upstream_->size(); ++i) {
    UpstreamFigures f;
    f.url = upstream_->url(i);
    f.stats = upstream_->stats(i);
    if (i < steered.size()) f.steering = steered[i];
    if (i < loads.size()) f.load = loads[i];
    if (i < events.size() && !events[i].endpoint.empty()) f.kv_events = events[i];
    if (i < evictions.size()) f.evictions_reported = evictions[i];
    if (i < predicted.size()) f.evictions_predicted = predicted[i];
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace switchyard::frontends
