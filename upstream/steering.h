// Steering: the executor of the upstream adapters (adapter.h) in proxy mode.
//
// It owns one adapter and its capabilities per upstream of an UpstreamClient and sends
// what the adapters produce through that client:
//   - Probe(i): the adapter's probe GETs; the capabilities become what they show, with the
//     operator's declared ones over them (ApplyDeclared). Until then they are the declared.
//   - Session(key, i): the session's SessionRef; where the upstream has llama.cpp slots, the
//     session is pinned to a slot no other live session holds (none when all are held).
//     A session's state (and slot) lives until OnRelease and its calls are done: call it
//     when the session ends.
//   - Around each turn: BeforeTurn (cancels the session's warm-up, opens the session on
//     first use, and says when the turn may be forwarded), Decorate (the forwarded body
//     and headers), ReportCachedTokens (the turn's cached prompt tokens, from its usage).
//   - The scheduler's decisions: OnWait (when the wait starts), OnPrefetch (at the
//     predicted tool return minus the reload time: the caller times it), OnRelease (the
//     session ended). Decorate and OnPrefetch follow the decision of the session's last
//     OnWait (keep before any).
//
// Order. A session's calls are sent one at a time, in the order they were made: a save
// before its erase, a restore before the next turn. An erase after a failed save is
// skipped (UpstreamCall::needs_previous_ok). BeforeTurn's `ready` runs once every call the
// turn must follow (all but background ones: warm-ups, releases) is done, failed or
// skipped: steering is advisory, a failure never holds a turn back.
//
// Warm-ups. At most `max_warmups_in_flight` per upstream; a warm-up due while that many are
// in flight is dropped (counted). CancelWarmup (BeforeTurn calls it) removes the session's
// warm-up not yet sent (counted cancelled) and counts one in flight as wasted. A completed
// warm-up is a hit when the turn after it reports cached tokens covering the warmed prompt
// (its prompt tokens from the warm-up's usage, less `hit_slack_tokens`: the warm-up's own
// generation prompt and the engine's block rounding), else wasted.
//
// Ownership: the client is the caller's and must outlive the Steering. Destroying the
// Steering drops the calls not yet sent and runs the `ready` callbacks still waiting (on the
// destroying thread); calls in flight finish in the client, unobserved; Probe's `done` is
// not called after it.
// Thread-safety: every method may be called from any thread, concurrently. Callbacks
// (`ready`, `done`) run on the calling thread or a client I/O thread, never under a lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "upstream/adapter.h"
#include "upstream/upstream_client.h"
#include "upstream/warmup.h"

namespace switchyard::upstream {

// One upstream as the operator configured it.
struct SteeringUpstream {
  UpstreamKind kind = UpstreamKind::kGeneric;
  AdapterOptions adapter;
  Capabilities declared;  // the operator's (a flag with a source overrides the probe)
  std::string auth;       // the Authorization header of the calls; "" for none
};

struct SteeringOptions {
  int max_warmups_in_flight = 2;  // per upstream
  int64_t hit_slack_tokens = 64;
};

// Per upstream, for /v1/cluster and /metrics. Calls count when sent.
struct SteeringCounters {
  uint64_t probes = 0;
  uint64_t decorated = 0;    // forwarded requests decorated
  uint64_t kept_urgent = 0;  // ... of which made more urgent: the session was kept
  uint64_t opens = 0;
  uint64_t closes = 0;
  uint64_t saves = 0;
  uint64_t restores = 0;
  uint64_t erases = 0;
  uint64_t warmups_sent = 0;
  uint64_t warmups_done = 0;  // answered 2xx before the turn came (then hit or wasted)
  uint64_t warmups_hit = 0;
  uint64_t warmups_wasted = 0;     // in flight when cancelled, or not covered by the turn
  uint64_t warmups_dropped = 0;    // over the upstream's budget
  uint64_t warmups_cancelled = 0;  // not sent: the turn came first
  uint64_t failures = 0;           // calls answered other than 2xx (502/504 included)
};

class Steering {
 public:
  // InvalidArgument when `upstreams` does not have one entry per upstream of `client`;
  // NotFound when a kind has no adapter.
  static Result<std::unique_ptr<Steering>> Create(UpstreamClient* client,
                                                  std::vector<SteeringUpstream> upstreams,
                                                  SteeringOptions options = {});
  ~Steering();
  Steering(const Steering&) = delete;
  Steering& operator=(const Steering&) = delete;

  // Probes upstream `i` and runs `done` with its new capabilities (at once when its kind
  // has nothing to probe; never for an `i` out of range).
  void Probe(size_t i, std::function<void(const Capabilities&)> done);
  Capabilities capabilities(size_t i) const;
  SteeringCounters counters(size_t i) const;

  SessionRef Session(const std::string& key, size_t upstream);
  void BeforeTurn(const SessionRef& session, std::function<void()> ready);
  // `priority`: larger is more urgent, 0 a standard call. A session the scheduler kept
  // through its last wait goes one step more urgent (kKeptUrgency): an engine that evicts
  // its prefix cache by request priority (SGLang's --radix-eviction-policy priority, the
  // CPU engine) then keeps that session's blocks over those of sessions the scheduler let
  // go, so the upstream's eviction follows the scheduler's choice. `headers` are
  // lower-case.
  static constexpr int kKeptUrgency = 1;
  void Decorate(const SessionRef& session, int priority, nlohmann::json* body,
                std::map<std::string, std::string>* headers);
  void ReportCachedTokens(const SessionRef& session, int64_t cached_tokens);
  void OnWait(const SessionRef& session, KvAction decision);
  // InvalidArgument from MakeWarmup when `prefix` cannot be warmed (nothing is queued).
  Status OnPrefetch(const SessionRef& session, const WarmupPrefix& prefix);
  void OnRelease(const SessionRef& session);
  void CancelWarmup(const SessionRef& session);

  struct Core;  // in steering.cc

 private:
  explicit Steering(std::shared_ptr<Core> core);
  std::shared_ptr<Core> core_;
};

}  // namespace switchyard::upstream
