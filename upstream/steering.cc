#include "upstream/steering.h"

#include <algorithm>
#include <string>
#include <utility>

#include "upstream/internal/steering_core.h"

namespace switchyard::upstream {

Result<std::unique_ptr<Steering>> Steering::Create(UpstreamClient* client,
                                                   std::vector<SteeringUpstream> upstreams,
                                                   SteeringOptions options) {
  if (client == nullptr || upstreams.size() != client->size()) {
    return Status::InvalidArgument(
        "steering: " + std::to_string(upstreams.size()) + " upstream settings for " +
        std::to_string(client == nullptr ? 0 : client->size()) + " upstreams");
  }
  auto core = std::make_shared<Core>();
  core->client = client;
  core->options = options;
  MutexLock lock(&core->mu);
  for (SteeringUpstream& setup : upstreams) {
    SY_ASSIGN_OR_RETURN(auto adapter, AdapterRegistry::Global().Create(setup.kind, setup.adapter));
    core->adapters.push_back(std::move(adapter));
    core->auth.push_back(std::move(setup.auth));
    Core::Upstream u;
    u.declared = setup.declared;
    u.caps = ApplyDeclared({}, setup.declared);
    if (u.caps.slots.on) u.slot_held.resize(std::max(0, u.caps.total_slots), false);
    core->upstreams.push_back(std::move(u));
  }
  return std::unique_ptr<Steering>(new Steering(std::move(core)));
}

Steering::Steering(std::shared_ptr<Core> core) : core_(std::move(core)) {}

Steering::~Steering() {
  Core::Effects fx;
  {
    MutexLock lock(&core_->mu);
    core_->stopped = true;
    for (auto& [key, s] : core_->sessions) {
      for (auto& waiter : s.waiters) fx.ready.push_back(std::move(waiter.second));
      s.waiters.clear();
      s.queue.clear();
    }
  }
  core_->Run(std::move(fx));
}

void Steering::Probe(size_t i, std::function<void(const Capabilities&)> done) {
  if (i >= core_->adapters.size()) return;
  std::vector<UpstreamCall> probes = core_->adapters[i]->ProbeRequests();
  if (probes.empty()) {
    if (auto caps = core_->SetProbed(i, Capabilities{})) done(*caps);
    return;
  }
  struct Gather {
    Mutex mu;
    std::vector<ProbeAnswer> answers GUARDED_BY(mu);
    size_t left GUARDED_BY(mu) = 0;
  };
  auto gather = std::make_shared<Gather>();
  {
    MutexLock lock(&gather->mu);
    gather->left = probes.size();
  }
  auto core = core_;
  for (const UpstreamCall& call : probes) {
    {
      MutexLock lock(&core->mu);
      ++core->upstreams[i].counters.probes;
    }
    core->Forward(i, call, [core, gather, i, path = call.path, done](int status, std::string body) {
      std::vector<ProbeAnswer> answers;
      {
        MutexLock lock(&gather->mu);
        gather->answers.push_back(ProbeAnswer{path, status, std::move(body)});
        if (--gather->left > 0) return;
        answers = std::move(gather->answers);
      }
      if (auto caps = core->SetProbed(i, core->adapters[i]->ReadProbe(answers))) done(*caps);
    });
  }
}

Capabilities Steering::capabilities(size_t i) const {
  MutexLock lock(&core_->mu);
  return i < core_->upstreams.size() ? core_->upstreams[i].caps : Capabilities{};
}

SteeringCounters Steering::counters(size_t i) const {
  MutexLock lock(&core_->mu);
  return i < core_->upstreams.size() ? core_->upstreams[i].counters : SteeringCounters{};
}

SessionRef Steering::Session(const std::string& key, size_t upstream) {
  SessionRef ref{key, upstream, -1};
  MutexLock lock(&core_->mu);
  Core::SessionState* s = core_->StateLocked(ref);
  return s == nullptr ? ref : core_->RefLocked({upstream, key}, *s);
}

void Steering::BeforeTurn(const SessionRef& session, std::function<void()> ready) {
  Core::Effects fx;
  bool now = false;
  {
    MutexLock lock(&core_->mu);
    Core::SessionState* s = core_->StateLocked(session);
    const Core::Key key{session.upstream, session.key};
    if (s == nullptr || core_->stopped) {
      now = true;
    } else {
      Core::Upstream& u = core_->upstreams[session.upstream];
      core_->CancelWarmupLocked(&u, s);
      if (!s->opened) {
        s->opened = true;
        auto calls = core_->adapters[session.upstream]->OnOpen(u.caps, core_->RefLocked(key, *s));
        core_->EnqueueLocked(key, s, std::move(calls), &fx);
      }
      if (s->foreground_done >= s->foreground_queued) {
        now = true;
      } else {
        s->waiters.emplace_back(s->foreground_queued, std::move(ready));
      }
    }
  }
  core_->Run(std::move(fx));
  if (now) ready();
}

void Steering::Decorate(const SessionRef& session, int priority, nlohmann::json* body,
                        std::map<std::string, std::string>* headers) {
  Capabilities caps;
  KvAction last = KvAction::kKeep;
  SessionRef ref = session;
  {
    MutexLock lock(&core_->mu);
    if (session.upstream >= core_->upstreams.size()) return;
    Core::Upstream& u = core_->upstreams[session.upstream];
    ++u.counters.decorated;
    caps = u.caps;
    auto it = core_->sessions.find({session.upstream, session.key});
    if (it != core_->sessions.end()) {
      last = it->second.last;
      if (it->second.decided && last == KvAction::kKeep) {
        priority += kKeptUrgency;
        ++u.counters.kept_urgent;
      }
      ref = core_->RefLocked(it->first, it->second);
    }
  }
  core_->adapters[session.upstream]->Decorate(caps, ref, last, priority, body, headers);
}

void Steering::ReportCachedTokens(const SessionRef& session, int64_t cached_tokens) {
  MutexLock lock(&core_->mu);
  auto it = core_->sessions.find({session.upstream, session.key});
  if (it == core_->sessions.end() || !it->second.warmed_tokens) return;
  const int64_t warmed = *it->second.warmed_tokens;
  const bool hit =
      warmed < 0 ? cached_tokens > 0 : cached_tokens + core_->options.hit_slack_tokens >= warmed;
  SteeringCounters& c = core_->upstreams[session.upstream].counters;
  ++(hit ? c.warmups_hit : c.warmups_wasted);
  it->second.warmed_tokens.reset();
}

void Steering::OnWait(const SessionRef& session, KvAction decision) {
  Core::Effects fx;
  {
    MutexLock lock(&core_->mu);
    Core::SessionState* s = core_->StateLocked(session);
    if (s == nullptr) return;
    const Core::Key key{session.upstream, session.key};
    s->last = decision;
    s->decided = true;
    auto calls = core_->adapters[session.upstream]->OnWait(core_->upstreams[session.upstream].caps,
                                                           core_->RefLocked(key, *s), decision);
    core_->EnqueueLocked(key, s, std::move(calls), &fx);
  }
  core_->Run(std::move(fx));
}

Status Steering::OnPrefetch(const SessionRef& session, const WarmupPrefix& prefix) {
  Capabilities caps;
  KvAction last;
  SessionRef ref;
  {
    MutexLock lock(&core_->mu);
    Core::SessionState* s = core_->StateLocked(session);
    if (s == nullptr) {
      return Status::InvalidArgument("steering: no upstream " + std::to_string(session.upstream));
    }
    caps = core_->upstreams[session.upstream].caps;
    last = s->last;
    ref = core_->RefLocked({session.upstream, session.key}, *s);
  }
  // Outside the lock: a warm-up copies the session's whole prompt.
  auto calls = core_->adapters[session.upstream]->OnPrefetch(caps, ref, last, prefix);
  if (!calls.ok()) return calls.status();
  Core::Effects fx;
  {
    MutexLock lock(&core_->mu);
    Core::SessionState* s = core_->StateLocked(session);
    core_->EnqueueLocked({session.upstream, session.key}, s, std::move(calls).value(), &fx);
  }
  core_->Run(std::move(fx));
  return Status::OK();
}

void Steering::OnRelease(const SessionRef& session) {
  Core::Effects fx;
  {
    MutexLock lock(&core_->mu);
    const Core::Key key{session.upstream, session.key};
    auto it = core_->sessions.find(key);
    if (it == core_->sessions.end()) return;
    Core::SessionState* s = &it->second;
    Core::Upstream& u = core_->upstreams[session.upstream];
    core_->CancelWarmupLocked(&u, s);
    auto calls = core_->adapters[session.upstream]->OnRelease(u.caps, core_->RefLocked(key, *s));
    s->released = true;
    core_->EnqueueLocked(key, s, std::move(calls), &fx);
  }
  core_->Run(std::move(fx));
}

void Steering::CancelWarmup(const SessionRef& session) {
  MutexLock lock(&core_->mu);
  auto it = core_->sessions.find({session.upstream, session.key});
  if (it == core_->sessions.end()) return;
  core_->CancelWarmupLocked(&core_->upstreams[session.upstream], &it->second);
}

}  // namespace switchyard::upstream
