#include "upstream/internal/steering_core.h"

#include <algorithm>
#include <string_view>

#include "http/http.h"
#include "upstream/upstream_stream.h"

namespace switchyard::upstream {
namespace {

using nlohmann::json;

constexpr size_t kMaxAnswerBytes = size_t{1} << 20;  // what a call's answer is read to

bool Ok(int status) { return status >= 200 && status < 300; }

// The prompt tokens of a warm-up's answer; -1 when its usage does not say.
int64_t PromptTokens(const std::string& body) {
  const json answer = json::parse(body, nullptr, /*allow_exceptions=*/false);
  auto usage = answer.is_object() ? answer.find("usage") : answer.end();
  if (!answer.is_object() || usage == answer.end() || !usage->is_object()) return -1;
  const int64_t prompt = UpstreamInt(*usage, "prompt_tokens", -1);  // chat, completions
  if (prompt >= 0) return prompt;
  const int64_t input = UpstreamInt(*usage, "input_tokens", -1);  // messages, responses
  if (input < 0) return -1;
  // Messages leaves what its cache read or wrote out of input_tokens.
  return input + std::max<int64_t>(0, UpstreamInt(*usage, "cache_read_input_tokens", 0)) +
         std::max<int64_t>(0, UpstreamInt(*usage, "cache_creation_input_tokens", 0));
}

void Count(SteeringCounters* c, CallKind kind) {
  switch (kind) {
    case CallKind::kProbe:
      ++c->probes;
      break;
    case CallKind::kOpen:
      ++c->opens;
      break;
    case CallKind::kClose:
      ++c->closes;
      break;
    case CallKind::kSave:
      ++c->saves;
      break;
    case CallKind::kRestore:
      ++c->restores;
      break;
    case CallKind::kErase:
      ++c->erases;
      break;
    case CallKind::kWarmup:
      ++c->warmups_sent;
      break;
  }
}

}  // namespace

Steering::Core::SessionState* Steering::Core::StateLocked(const SessionRef& ref) {
  if (ref.upstream >= upstreams.size()) return nullptr;
  auto [it, inserted] = sessions.try_emplace(Key{ref.upstream, ref.key});
  SessionState& s = it->second;
  if (s.released) {  // the key came back while its release drains: a new session, same slot
    s.released = false;
    s.opened = false;
    s.last = KvAction::kKeep;
  }
  Upstream& u = upstreams[ref.upstream];
  if (inserted && u.caps.slots.on) {
    auto free = std::find(u.slot_held.begin(), u.slot_held.end(), false);
    if (free != u.slot_held.end()) {
      *free = true;
      s.slot = static_cast<int>(free - u.slot_held.begin());
    }
  }
  return &s;
}

SessionRef Steering::Core::RefLocked(const Key& key, const SessionState& s) const {
  return SessionRef{key.second, key.first, s.slot};
}

void Steering::Core::EnqueueLocked(const Key& key, SessionState* s, std::vector<UpstreamCall> calls,
                                   Effects* fx) {
  for (UpstreamCall& call : calls) {
    if (!call.background) ++s->foreground_queued;
    s->queue.push_back(std::move(call));
  }
  PumpLocked(key, fx);
}

void Steering::Core::PumpLocked(const Key& key, Effects* fx) {
  auto it = sessions.find(key);
  if (it == sessions.end()) return;
  SessionState& s = it->second;
  Upstream& u = upstreams[key.first];
  while (!stopped && !s.busy && !s.queue.empty()) {
    UpstreamCall call = std::move(s.queue.front());
    s.queue.pop_front();
    bool skip = call.needs_previous_ok && !s.previous_ok;
    if (!skip && call.kind == CallKind::kWarmup &&
        u.warmups_in_flight >= options.max_warmups_in_flight) {
      ++u.counters.warmups_dropped;
      skip = true;
    }
    if (skip) {
      s.previous_ok = false;
      if (!call.background) ++s.foreground_done;
      continue;
    }
    Count(&u.counters, call.kind);
    if (call.kind == CallKind::kWarmup) {
      ++u.warmups_in_flight;
      s.busy_warmup = true;
    }
    s.busy = true;
    fx->send.emplace(key, std::move(call));
  }
  for (auto w = s.waiters.begin(); w != s.waiters.end();) {
    if (s.foreground_done < w->first) {
      ++w;
      continue;
    }
    fx->ready.push_back(std::move(w->second));
    w = s.waiters.erase(w);
  }
  if (s.released && !s.busy && s.queue.empty() && s.waiters.empty()) {
    if (s.slot >= 0 && s.slot < static_cast<int>(u.slot_held.size())) u.slot_held[s.slot] = false;
    sessions.erase(it);
  }
}

void Steering::Core::CancelWarmupLocked(Upstream* u, SessionState* s) {
  for (auto c = s->queue.begin(); c != s->queue.end();) {
    if (c->kind != CallKind::kWarmup) {
      ++c;
      continue;
    }
    ++u->counters.warmups_cancelled;
    c = s->queue.erase(c);
  }
  if (s->busy_warmup && !s->overtaken) {
    s->overtaken = true;
    ++u->counters.warmups_wasted;
  }
}

void Steering::Core::Run(Effects fx) {
  if (fx.send) Send(fx.send->first, fx.send->second);
  for (auto& ready : fx.ready) ready();
}

void Steering::Core::Send(const Key& key, const UpstreamCall& call) {
  auto self = shared_from_this();
  Forward(key.first, call, [self, key, call](int status, std::string body) {
    self->Complete(key, call, status, body);
  });
}

void Steering::Core::Complete(const Key& key, const UpstreamCall& call, int status,
                              const std::string& body) {
  Effects fx;
  {
    MutexLock lock(&mu);
    auto it = sessions.find(key);
    if (stopped || it == sessions.end()) return;
    SessionState& s = it->second;
    Upstream& u = upstreams[key.first];
    s.busy = false;
    s.previous_ok = Ok(status);
    if (!Ok(status)) ++u.counters.failures;
    if (!call.background) ++s.foreground_done;
    if (call.kind == CallKind::kWarmup) {
      --u.warmups_in_flight;
      s.busy_warmup = false;
      if (Ok(status) && !s.overtaken) {
        ++u.counters.warmups_done;
        if (s.warmed_tokens) ++u.counters.warmups_wasted;  // never reported: it did not help
        s.warmed_tokens = PromptTokens(body);
      }
      s.overtaken = false;
    }
    PumpLocked(key, &fx);
  }
  Run(std::move(fx));
}

void Steering::Core::Forward(size_t upstream, const UpstreamCall& call,
                             std::function<void(int status, std::string body)> complete) {
  http::HttpRequest req;
  req.method = call.method;
  req.target = call.path;
  req.body = call.body;
  if (!call.body.empty()) req.headers["content-type"] = "application/json";
  for (const auto& [name, value] : call.headers) req.headers[name] = value;
  // A streamed answer is read through the hooks (nothing is queued in its stream) and
  // completes at its end; a whole one completes in `done`.
  struct Answer {
    int status = 0;
    std::string body;
    std::function<void(int, std::string)> complete;
  };
  auto answer = std::make_shared<Answer>();
  answer->complete = std::move(complete);
  UpstreamClient::Hooks hooks;
  hooks.on_bytes = [answer](std::string_view bytes) {
    const size_t room = kMaxAnswerBytes - std::min(kMaxAnswerBytes, answer->body.size());
    answer->body.append(bytes.substr(0, room));
  };
  hooks.transform = [](std::string_view) { return std::string(); };
  hooks.on_end = [answer](bool whole, UpstreamClient::CloseHold) {
    answer->complete(whole ? answer->status : 502, std::move(answer->body));
  };
  client->Forward(
      req, upstream, auth[upstream],
      [answer](http::HttpResponse r) {
        if (r.stream) {
          answer->status = r.status;
          return;
        }
        answer->complete(r.status, std::move(r.body));
      },
      std::move(hooks));
}

std::optional<Capabilities> Steering::Core::SetProbed(size_t i, const Capabilities& probed) {
  MutexLock lock(&mu);
  if (stopped) return std::nullopt;
  Upstream& u = upstreams[i];
  u.caps = ApplyDeclared(probed, u.declared);
  if (u.caps.slots.on && u.caps.total_slots > static_cast<int>(u.slot_held.size())) {
    u.slot_held.resize(u.caps.total_slots, false);
  }
  return u.caps;
}

}  // namespace switchyard::upstream
