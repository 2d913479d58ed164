// OpenAiFront's proxy mode (see openai_front.h, "Proxy mode"): once the scheduler placed a
// call's node, the request goes unchanged to an upstream chosen with session affinity
// (UpstreamClient, openai_upstream.h); the front reports the node's start and end, and the
// upstream's answer goes back unchanged — a stream at once, a whole answer once the
// session's waits started (named after the tool calls it holds).
#include <nlohmann/json.hpp>

#include <cstdlib>

#include "executors/generation.h"
#include "frontends/openai/openai_call.h"
#include "frontends/openai/openai_front.h"

namespace switchyard::frontends {

namespace {

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

std::string OpenAiFront::UpstreamAuth() const {
  return options_.upstream_api_key.empty() ? "" : "Bearer " + options_.upstream_api_key;
}

void OpenAiFront::WatchPlacement(const CallPtr& c) {
  service_->generation()->WatchPlacement(
      c->turn.workflow, c->turn.node, life_.Guard([this, c](int worker) {
        Post([this, c, worker]() {
          if (worker < 0)
            return Fail(c, Status::Aborted("workflow " + c->turn.workflow + " ended"));
          Forward(c);
        });
      }));
}

void OpenAiFront::Forward(const CallPtr& c) {
  sessions_.ReportStarted(c->turn);
  const Sessions::Turn& t = c->turn;
  const std::string key = t.session_id.empty() ? "" : t.tenant + "/" + t.session_id;
  UpstreamClient::Hooks hooks;
  auto usage = std::make_shared<std::string>();  // the tail of a stream: its usage chunk
  hooks.on_bytes = [usage](std::string_view bytes) {
    usage->append(bytes);
    if (usage->size() > 8192) usage->erase(0, usage->size() - 4096);
  };
  hooks.on_end = life_.Guard([this, c, usage](bool) {
    int64_t tokens = 0;
    if (size_t at = usage->rfind("\"completion_tokens\":"); at != std::string::npos)
      tokens = std::atoll(usage->c_str() + at + 20);
    Post([this, c, tokens]() { Ended(c, tokens, {}); });
  });
  upstream_->Forward(c->original, upstream_->Pick(key), UpstreamAuth(),
                     life_.Guard([this, c](http::HttpResponse r) {
                       Post([this, c, r = std::move(r)]() mutable { Forwarded(c, std::move(r)); });
                     }),
                     std::move(hooks));
}

void OpenAiFront::Forwarded(const CallPtr& c, http::HttpResponse r) {
  r.headers["x-switchyard-workflow-id"] = c->turn.workflow;
  r.headers["x-switchyard-node-id"] = c->turn.node;
  if (r.stream) {  // the answer goes back as it comes; the node ends with the stream
    c->answered = true;
    return c->respond(std::move(r));
  }
  if (r.status >= 500) {  // the upstream failed the call (not retried: not idempotent)
    const std::string why = "upstream answered " + std::to_string(r.status);
    sessions_.ReportFailed(c->turn, why);
    // The failed node failed the session's workflow: the next request starts a new one.
    sessions_.Abort(c->turn, why);
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
  sessions_.ReportFinished(c->turn, output_tokens);
  // The answer's tokens are the upstream's: not known here.
  sessions_.EndTurn(c->turn, c->prompt, std::move(tools), [this, c](const Status& st) {
    if (!st.ok()) return Fail(c, st);
    if (c->answered.exchange(true)) return;  // failed or abandoned: the session was reset
    sessions_.Release(c->turn);
    c->respond(std::move(c->proxied));
  });
}

}  // namespace switchyard::frontends
