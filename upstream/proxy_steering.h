// ProxySteering: proxy mode's link between the scheduler's KV decisions and the upstream
// adapters (upstream/steering.h), so that Switchyard's decisions act on the engines behind
// it instead of being advisory.
//
// For each session (key "<tenant>/<session id>") it keeps the upstream the session's turns
// go to, its SessionRef there (a llama.cpp slot), the last request forwarded for it (the
// JSON body and its API path) and the upstream's answer to it: the prefix the session's
// next turn will extend, which a warm-up sends back (warmup.h).
//   - BeforeTurn / Decorate: before a turn is forwarded (cancels the session's warm-up,
//     opens it upstream on first use, adds session id, priority and KV controls to the
//     body), and records the request.
//   - Answered / Tap: the upstream's whole answer, or a streamed answer's bytes as they
//     pass: the answer's text (or the API's own shape) for the prefix, and the cached
//     prompt tokens its usage reports (Steering::ReportCachedTokens: warm-up hits), and the
//     token ids a vLLM upstream returns (return_token_ids: last_turn).
//   - OnKv: the scheduler's decision for a waiting session's context (keep, demote,
//     discard: Steering::OnWait). A demotion with a planned return schedules the session's
//     warm-up (Steering::OnPrefetch with the recorded prefix) at that time less the
//     upstream's recent answer time (ReportLatency, x1.5): a recompute takes longer than the
//     host copy the scheduler timed its prefetch for. The prefetch decision sends it if it
//     was not sent yet. One warm-up per answered request. Decisions for workflows that are
//     not a session's current one are ignored.
//   - PredictHeld: whether a session's prefix is probably still cached on its upstream, from
//     the cached_tokens its answers report (retention.h), for proxy mode to tell the
//     scheduler a context is gone where no KV events say so.
//   - Ended: the session ended (Steering::OnRelease).
//
// Thread-safety: every method may be called from any thread. Callbacks run on the calling
// thread or an upstream client thread, never under this object's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"
#include "executors/generation.h"
#include "http/http.h"
#include "upstream/retention.h"
#include "upstream/steering.h"
#include "upstream/upstream_client.h"

namespace switchyard::upstream {

class ProxySteering {
 public:
  // One upstream's figures, for /v1/cluster and /metrics.
  struct Figures {
    std::string kind;
    upstream::Capabilities caps;
    upstream::SteeringCounters counters;
    uint64_t sessions = 0;  // sessions whose turns go to it
    // The scheduler's decisions for its sessions: "keep", "demote", "discard", "prefetch".
    std::map<std::string, uint64_t> decisions;
    uint64_t prompt_tokens = 0;         // prompt tokens its answers reported
    uint64_t cached_tokens = 0;         // of which it reported cached
    RetentionModel::Figures retention;  // how long it keeps a waiting session's prefix
  };
  // Reads a streamed answer's bytes (on the client's thread, in order); End applies what
  // it read (once; a tap dropped without End applies nothing).
  class StreamTap {
   public:
    virtual ~StreamTap() = default;
    virtual void Read(std::string_view bytes) = 0;
    virtual void End() = 0;
  };

  // `clock` is the scheduler's (KvDecision times are its); `client` must outlive this
  // object. Errors of upstream::Steering::Create.
  static Result<std::unique_ptr<ProxySteering>> Create(
      const Clock* clock, upstream::UpstreamClient* client,
      std::vector<upstream::SteeringUpstream> upstreams, upstream::SteeringOptions options = {});
  ~ProxySteering();

  // Probes every upstream (capabilities as their answers show, under the declared ones).
  void ProbeAll();
  // Session `key`'s turn of `workflow` goes to `upstream`: `ready` runs when it may be
  // forwarded (at once when nothing must go first).
  void BeforeTurn(const std::string& key, const std::string& workflow, size_t upstream,
                  std::function<void()> ready);
  // Adds what the session's upstream takes to `req` (a JSON body; another body is left as
  // is) and records it as the session's last request. `priority`: v1::PriorityClass.
  void Decorate(const std::string& key, int priority, http::HttpRequest* req);
  // The upstream's whole answer to the session's last request (a 2xx JSON body).
  void Answered(const std::string& key, const std::string& body);
  // A tap on the streamed answer to the session's last request. What a tap or a whole
  // answer reads is dropped when the session's next request was decorated meanwhile.
  std::shared_ptr<StreamTap> Tap(const std::string& key);
  void OnKv(const executors::Generation::KvDecision& d);
  // How long upstream `i` took to answer a forwarded call (to its answer's head): warm-ups
  // go that much (with a margin) before a session's predicted return.
  void ReportLatency(size_t upstream, double ms);
  void Ended(const std::string& key);
  // Where session `key`'s last turn went and, where its upstream returned them, that
  // turn's token ids (prompt then output; empty otherwise). nullopt: no turn sent yet.
  struct LastTurn {
    size_t upstream = 0;
    std::vector<int32_t> tokens;
  };
  std::optional<LastTurn> last_turn(const std::string& key) const;
  // Whether session `key`'s last turn's prefix is still cached on its upstream, as that
  // upstream's RetentionModel predicts from the KV written there since; nullopt when it
  // cannot tell (no answer with usage yet, or the model has not learned).
  std::optional<bool> PredictHeld(const std::string& key) const;

  std::vector<Figures> figures() const;

  struct State;  // proxy_steering.cc

 private:
  explicit ProxySteering(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// Reading an upstream's answers, whatever their API (proxy_steering_read.cc).
// The cached and total prompt tokens of a JSON answer or stream event's usage (Chat
// Completions' prompt_tokens_details, Responses' input_tokens_details, Messages'
// cache_read_input_tokens; at the top, under "message" or "response"); false when none.
bool UsageOf(const nlohmann::json& j, int64_t* cached, int64_t* prompt);
// The output tokens its usage reports (completion_tokens or output_tokens); -1 when none.
int64_t OutputTokensOf(const nlohmann::json& j);
// The answer of a whole JSON answer for `path`'s API, as a warm-up appends it (warmup.h):
// a chat message, Messages content blocks, Responses output items, or a completion's text.
nlohmann::json AnswerOf(const std::string& path, const nlohmann::json& body);

}  // namespace switchyard::upstream
