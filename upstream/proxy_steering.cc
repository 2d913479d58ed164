#include "upstream/proxy_steering.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

#include "base/logging.h"
#include "upstream/internal/steering_tap.h"
#include "upstream/internal/warmup_timer.h"

namespace switchyard::upstream {

using KvDecision = executors::Generation::KvDecision;

struct ProxySteering::State {
  const Clock* clock = nullptr;
  upstream::UpstreamClient* client = nullptr;
  std::unique_ptr<upstream::Steering> steering;
  std::vector<std::string> kinds;

  struct Session {
    upstream::SessionRef ref;
    std::string workflow;
    upstream::WarmupPrefix prefix;  // the last request and the answer to it
    bool has_request = false;
    bool has_answer = false;
    uint64_t request_seq = 0;  // requests decorated so far
    uint64_t warmed_seq = 0;   // the request_seq whose prefix was warmed (0: none)
    // The last answered turn's token ids, prompt then output (vLLM's return_token_ids):
    // the prefix its next turn extends, as the upstream's KV events key it.
    std::vector<int32_t> tokens;
    // Its prefix's retention (RetentionModel): the upstream's churn counter when the last
    // answer came, and that turn's prompt and output tokens; set by an answer's usage.
    bool marked = false;
    size_t mark_upstream = 0;
    uint64_t mark = 0;
    int64_t prefix_tokens = 0;
    bool steered = false;  // warmed or discarded since: the next turn observes nothing
    std::optional<std::pair<uint64_t, int64_t>> pending;  // the turn sent: churn, prefix
  };
  mutable Mutex mu;
  std::map<std::string, Session> sessions GUARDED_BY(mu);
  std::map<std::string, std::string> by_workflow GUARDED_BY(mu);  // workflow -> session key
  std::vector<std::map<std::string, uint64_t>> decisions GUARDED_BY(mu);
  std::vector<uint64_t> prompt_tokens GUARDED_BY(mu), cached_tokens GUARDED_BY(mu);
  std::vector<double> latency_ms GUARDED_BY(mu);         // per upstream: an average of its answers'
  std::vector<RetentionModel> retention GUARDED_BY(mu);  // per upstream
  std::unique_ptr<internal::WarmupTimer> timer;          // last: stopped first

  // How long before a session's predicted return its warm-up goes: what the upstream took
  // to answer lately, with a margin.
  double LeadMs(size_t upstream) REQUIRES(mu) {
    return std::clamp(1.5 * latency_ms[upstream], 20.0, 2000.0);
  }

  // Sends the warm-up of session `key` for its request `seq`, unless a later request came,
  // no answer is known or it was warmed already.
  void Warm(const std::string& key, uint64_t seq) {
    upstream::SessionRef ref;
    upstream::WarmupPrefix prefix;
    {
      MutexLock lock(&mu);
      auto it = sessions.find(key);
      if (it == sessions.end()) return;
      Session& s = it->second;
      if (s.request_seq != seq || !s.has_answer || s.warmed_seq == seq) return;
      s.steered = true;
      s.warmed_seq = seq;
      ref = s.ref;
      prefix = s.prefix;
    }
    if (Status st = steering->OnPrefetch(ref, prefix); !st.ok()) {
      Log(LogLevel::kWarn, "upstream warm-up not sent",
          LogKeys().With("session", ref.key).With("error", st.ToString()));
    }
  }

  // An answer's usage: the KV it wrote on its upstream, the observation its turn was, and
  // the session's new mark.
  void Retain(Session* s, const internal::AnswerReading& r) REQUIRES(mu) {
    RetentionModel& model = retention[s->ref.upstream];
    if (s->pending) model.Observe(s->pending->first, s->pending->second, r.cached);
    s->pending.reset();
    model.AddWritten(std::max<int64_t>(0, r.prompt - r.cached) + std::max<int64_t>(0, r.output));
    s->marked = true;
    s->mark_upstream = s->ref.upstream;
    s->mark = model.churn();
    s->prefix_tokens = r.prompt + std::max<int64_t>(0, r.output);
  }

  // Applies what a tap or a whole answer read.
  void Apply(const std::string& key, uint64_t seq, const internal::AnswerReading& r) {
    upstream::SessionRef ref;
    {
      MutexLock lock(&mu);
      auto it = sessions.find(key);
      if (it == sessions.end() || it->second.request_seq != seq) return;
      ref = it->second.ref;
      if (!r.answer.is_null()) {
        it->second.prefix.answer = r.answer;
        it->second.has_answer = true;
      }
      if (!r.prompt_ids.empty()) {
        it->second.tokens = r.prompt_ids;
        it->second.tokens.insert(it->second.tokens.end(), r.output_ids.begin(), r.output_ids.end());
      }
      if (!r.usage) return;
      prompt_tokens[ref.upstream] += static_cast<uint64_t>(std::max<int64_t>(0, r.prompt));
      cached_tokens[ref.upstream] += static_cast<uint64_t>(std::max<int64_t>(0, r.cached));
      Retain(&it->second, r);
    }
    steering->ReportCachedTokens(ref, r.cached);
  }
};

Result<std::unique_ptr<ProxySteering>> ProxySteering::Create(
    const Clock* clock, upstream::UpstreamClient* client,
    std::vector<upstream::SteeringUpstream> upstreams, upstream::SteeringOptions options) {
  auto state = std::make_shared<State>();
  state->clock = clock;
  state->client = client;
  for (const auto& u : upstreams) state->kinds.emplace_back(upstream::UpstreamKindName(u.kind));
  SY_ASSIGN_OR_RETURN(state->steering,
                      upstream::Steering::Create(client, std::move(upstreams), options));
  {
    MutexLock lock(&state->mu);
    state->decisions.resize(state->kinds.size());
    state->prompt_tokens.assign(state->kinds.size(), 0);
    state->cached_tokens.assign(state->kinds.size(), 0);
    state->latency_ms.assign(state->kinds.size(), 100.0);
    state->retention.resize(state->kinds.size());
  }
  state->timer = std::make_unique<internal::WarmupTimer>();
  return std::unique_ptr<ProxySteering>(new ProxySteering(std::move(state)));
}

ProxySteering::ProxySteering(std::shared_ptr<State> state) : state_(std::move(state)) {}
ProxySteering::~ProxySteering() {
  state_->timer.reset();  // no warm-up fires from now on
}

void ProxySteering::ReportLatency(size_t upstream, double ms) {
  MutexLock lock(&state_->mu);
  if (upstream < state_->latency_ms.size())
    state_->latency_ms[upstream] = 0.7 * state_->latency_ms[upstream] + 0.3 * ms;
}

void ProxySteering::ProbeAll() {
  for (size_t i = 0; i < state_->kinds.size(); ++i) {
    std::string url = state_->client->url(i);
    std::string kind = state_->kinds[i];
    state_->steering->Probe(i, [url, kind](const upstream::Capabilities& caps) {
      Log(LogLevel::kInfo, "upstream capabilities",
          LogKeys()
              .With("upstream", url)
              .With("kind", kind)
              .With("capabilities", upstream::CapabilitiesToJson(caps).dump()));
    });
  }
}

void ProxySteering::BeforeTurn(const std::string& key, const std::string& workflow, size_t upstream,
                               std::function<void()> ready) {
  std::optional<upstream::SessionRef> moved;
  upstream::SessionRef ref;
  {
    MutexLock lock(&state_->mu);
    State::Session& s = state_->sessions[key];
    if (s.has_request && s.ref.upstream != upstream) moved = s.ref;  // placed elsewhere now
    if (!s.workflow.empty() && s.workflow != workflow) state_->by_workflow.erase(s.workflow);
    s.workflow = workflow;
    state_->by_workflow[workflow] = key;
  }
  if (moved) state_->steering->OnRelease(*moved);
  ref = state_->steering->Session(key, upstream);
  {
    MutexLock lock(&state_->mu);
    state_->sessions[key].ref = ref;
  }
  state_->steering->BeforeTurn(ref, std::move(ready));
}

void ProxySteering::Decorate(const std::string& key, int priority, http::HttpRequest* req) {
  nlohmann::json body = nlohmann::json::parse(req->body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return;
  upstream::SessionRef ref;
  {
    MutexLock lock(&state_->mu);
    auto it = state_->sessions.find(key);
    if (it == state_->sessions.end()) return;
    ref = it->second.ref;
    it->second.prefix.path = std::string(req->path());
    it->second.prefix.request = body;
    it->second.prefix.answer = nullptr;
    it->second.has_request = true;
    it->second.has_answer = false;
    ++it->second.request_seq;
    State::Session& s = it->second;
    s.pending.reset();
    if (s.marked && !s.steered && s.mark_upstream == ref.upstream)
      s.pending.emplace(state_->retention[ref.upstream].churn() - s.mark, s.prefix_tokens);
    s.steered = false;
  }
  // Switchyard's priority classes to the adapters' scale: larger is more urgent.
  const int urgency = priority == 1 ? 1 : priority == 3 ? -1 : 0;
  const nlohmann::json before = body;
  state_->steering->Decorate(ref, urgency, &body, &req->headers);
  if (body != before) req->body = body.dump();
}

void ProxySteering::Answered(const std::string& key, const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  std::string path;
  uint64_t seq = 0;
  {
    MutexLock lock(&state_->mu);
    auto it = state_->sessions.find(key);
    if (it == state_->sessions.end()) return;
    path = it->second.prefix.path;
    seq = it->second.request_seq;
  }
  internal::AnswerReading r;
  r.usage = UsageOf(j, &r.cached, &r.prompt);
  r.output = OutputTokensOf(j);
  r.answer = AnswerOf(path, j);
  internal::ReadTokenIds(j, &r);
  state_->Apply(key, seq, r);
}

namespace {

// Reads a stream's events as they pass; End applies the reading.
class Tapped : public ProxySteering::StreamTap {
 public:
  Tapped(std::shared_ptr<ProxySteering::State> state, std::string key, uint64_t seq,
         std::string path)
      : state_(std::move(state)), key_(std::move(key)), seq_(seq), reader_(std::move(path)) {}
  void Read(std::string_view bytes) override { reader_.Read(bytes); }
  void End() override {
    if (!ended_.exchange(true)) state_->Apply(key_, seq_, reader_.Reading());
  }

 private:
  std::shared_ptr<ProxySteering::State> state_;
  std::string key_;
  uint64_t seq_;
  internal::StreamAnswerReader reader_;
  std::atomic<bool> ended_{false};
};

}  // namespace

std::shared_ptr<ProxySteering::StreamTap> ProxySteering::Tap(const std::string& key) {
  std::string path;
  uint64_t seq = 0;
  {
    MutexLock lock(&state_->mu);
    auto it = state_->sessions.find(key);
    if (it != state_->sessions.end()) {
      path = it->second.prefix.path;
      seq = it->second.request_seq;
    }
  }
  return std::make_shared<Tapped>(state_, key, seq, path);
}

void ProxySteering::OnKv(const KvDecision& d) {
  upstream::SessionRef ref;
  std::string key;
  uint64_t seq = 0;
  double lead_ms = 0;
  {
    MutexLock lock(&state_->mu);
    auto w = state_->by_workflow.find(d.workflow);
    if (w == state_->by_workflow.end()) return;
    auto it = state_->sessions.find(w->second);
    if (it == state_->sessions.end() || !it->second.has_request) return;
    key = it->first;
    ref = it->second.ref;
    seq = it->second.request_seq;
    lead_ms = state_->LeadMs(ref.upstream);
    static const char* kNames[] = {"keep", "demote", "prefetch", "discard"};
    ++state_->decisions[ref.upstream][kNames[static_cast<int>(d.kind)]];
    // A discard acts on the upstream's cache except on a generic one (nothing to send):
    // there the next turn still shows what the upstream kept by itself, which is also how
    // the retention model learns whether a prediction that dropped the context was right.
    if (d.kind == KvDecision::Kind::kDiscard && state_->kinds[ref.upstream] != "generic")
      it->second.steered = true;
  }
  switch (d.kind) {
    case KvDecision::Kind::kKeep:
      return state_->steering->OnWait(ref, upstream::KvAction::kKeep);
    case KvDecision::Kind::kDiscard:
      return state_->steering->OnWait(ref, upstream::KvAction::kDiscard);
    case KvDecision::Kind::kDemote: {
      state_->steering->OnWait(ref, upstream::KvAction::kDemote);
      // The scheduler plans the context's return: the warm-up goes early enough for the
      // upstream to compute the prefix before the turn comes (its prefetch, timed for a
      // copy from host memory, would be late for a recompute).
      if (d.planned_prefetch_ms <= 0 || state_->clock == nullptr) return;
      const double in_ms = double(d.planned_prefetch_ms - state_->clock->Now().millis()) - lead_ms;
      if (in_ms <= 0) return;  // due now: the prefetch decision sends it
      std::weak_ptr<State> weak = state_;
      state_->timer->At(std::chrono::steady_clock::now() +
                            std::chrono::microseconds(static_cast<int64_t>(in_ms * 1000)),
                        [weak, key, seq] {
                          if (auto s = weak.lock()) s->Warm(key, seq);
                        });
      return;
    }
    case KvDecision::Kind::kPrefetch:
      return state_->Warm(key, seq);
  }
}

std::optional<ProxySteering::LastTurn> ProxySteering::last_turn(const std::string& key) const {
  MutexLock lock(&state_->mu);
  auto it = state_->sessions.find(key);
  if (it == state_->sessions.end() || !it->second.has_request) return std::nullopt;
  return LastTurn{it->second.ref.upstream, it->second.tokens};
}

std::optional<bool> ProxySteering::PredictHeld(const std::string& key) const {
  MutexLock lock(&state_->mu);
  auto it = state_->sessions.find(key);
  if (it == state_->sessions.end() || !it->second.marked) return std::nullopt;
  const State::Session& s = it->second;
  const RetentionModel& model = state_->retention[s.mark_upstream];
  return model.Held(model.churn() - s.mark);
}

void ProxySteering::Ended(const std::string& key) {
  upstream::SessionRef ref;
  {
    MutexLock lock(&state_->mu);
    auto it = state_->sessions.find(key);
    if (it == state_->sessions.end()) return;
    ref = it->second.ref;
    state_->by_workflow.erase(it->second.workflow);
    state_->sessions.erase(it);
  }
  state_->steering->OnRelease(ref);
}

std::vector<ProxySteering::Figures> ProxySteering::figures() const {
  std::vector<Figures> out(state_->kinds.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].kind = state_->kinds[i];
    out[i].caps = state_->steering->capabilities(i);
    out[i].counters = state_->steering->counters(i);
  }
  MutexLock lock(&state_->mu);
  for (const auto& [key, s] : state_->sessions) {
    if (s.ref.upstream < out.size()) ++out[s.ref.upstream].sessions;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].decisions = state_->decisions[i];
    out[i].prompt_tokens = state_->prompt_tokens[i];
    out[i].cached_tokens = state_->cached_tokens[i];
    out[i].retention = state_->retention[i].figures();
  }
  return out;
}

}  // namespace switchyard::upstream
