// FrontCore's proxy mode (see front_core.h, "Proxy mode"): once the scheduler placed a
// call's node, the call's request goes unchanged to an upstream chosen with session
// affinity (UpstreamClient); the core reports the node's start and end, and the upstream's
// answer goes back unchanged — a stream at once, a whole answer once the session's waits
// started (named after the tool calls it holds).
#include "executors/generation.h"
#include "frontends/front_call.h"
#include "frontends/front_core.h"

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
  UpstreamClient::Hooks hooks;
  auto tail = std::make_shared<std::string>();  // the tail of a stream: its usage
  hooks.on_bytes = [tail](std::string_view bytes) {
    tail->append(bytes);
    if (tail->size() > 8192) tail->erase(0, tail->size() - 4096);
  };
  // The client's stream stays open until the session is free: an agent sends its next
  // turn as soon as it read the last event, and that turn must find the session released.
  hooks.on_end = life_.Guard([this, c, tail](bool complete, UpstreamClient::CloseHold hold) {
    int64_t tokens = c->reply->UpstreamStreamTokens(*tail);
    Post([this, c, tokens, complete, hold = std::move(hold)]() mutable {
      c->stream_hold = std::move(hold);
      if (!complete) return StreamBroke(c);
      Ended(c, tokens, {});
    });
  });
  upstream_->Forward(c->req.original, upstream_->Pick(key), UpstreamAuth(),
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

}  // namespace switchyard::frontends
