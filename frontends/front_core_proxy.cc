// FrontCore's proxy mode (see front_core.h, "Proxy mode"): once the scheduler placed a
// call's node, the call's request goes unchanged to an upstream chosen with session
// affinity (UpstreamClient); the core reports the node's start and end, and the upstream's
// answer goes back unchanged — a stream at once, a whole answer once the session's waits
// started (named after the tool calls it holds). A call to an upstream that speaks only
// Chat Completions goes translated, and its answer comes back through the call's Reply.
#include "executors/generation.h"
#include "frontends/front_call.h"
#include "frontends/front_core.h"
#include "frontends/translate/chat_answer.h"
#include "frontends/translate/chat_request.h"
#include "frontends/translate/translated_stream.h"

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
          Forward(c);
        });
      }));
}

void FrontCore::Forward(const CallPtr& c) {
  sessions_.ReportStarted(c->turn);
  const Sessions::Turn& t = c->turn;
  const std::string key = t.session_id.empty() ? "" : t.tenant + "/" + t.session_id;
  const size_t upstream = upstream_->Pick(key);
  if (Translated(*c, upstream)) return ForwardTranslated(c, upstream);
  upstream::UpstreamClient::Hooks hooks;
  // A stream's tool calls (the session's wait is named after them) and output tokens.
  std::shared_ptr<upstream::UpstreamStreamReader> reader = c->reply->NewUpstreamStreamReader();
  hooks.on_bytes = [reader](std::string_view bytes) { reader->Read(bytes); };
  // The client's stream stays open until the session is free: an agent sends its next
  // turn as soon as it read the last event, and that turn must find the session released.
  hooks.on_end = life_.Guard([this, c, reader](bool complete,
                                               upstream::UpstreamClient::CloseHold hold) {
    int64_t tokens = 0;
    std::vector<std::string> tools;
    reader->End(&tools, &tokens);
    Post([this, c, tokens, tools = std::move(tools), complete, hold = std::move(hold)]() mutable {
      c->stream_hold = std::move(hold);
      if (!complete) return StreamBroke(c);
      Ended(c, tokens, std::move(tools));
    });
  });
  upstream_->Forward(c->req.original, upstream, UpstreamAuth(),
                     life_.Guard([this, c](http::HttpResponse r) {
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

void FrontCore::ForwardTranslated(const CallPtr& c, size_t i) {
  auto t = std::make_shared<translate::TranslatedStream>(c->reply.get());
  upstream::UpstreamClient::Hooks hooks;
  if (c->req.stream) {
    // The client's stream carries the front's events, written by the call's Reply as the
    // upstream's chunks come (under the call's lock: the core's thread writes the end).
    hooks.transform = [c, t](std::string_view bytes) {
      MutexLock lock(&c->mu);
      return t->Feed(bytes);
    };
    hooks.on_end =
        life_.Guard([this, c, t](bool complete, upstream::UpstreamClient::CloseHold hold) {
          Post([this, c, t, complete, hold = std::move(hold)]() mutable {
            c->stream_hold = std::move(hold);
            TranslatedStreamEnded(c, t, complete);
          });
        });
  }
  upstream_->Forward(
      translate::ChatRequest(c->req.conv, c->req.max_tokens, c->req.stream), i, UpstreamAuth(),
      life_.Guard([this, c, t](http::HttpResponse r) {
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
