// Steering's state: the upstreams, each live session's queue of calls, the counters, and
// the one pump that picks a session's next call. steering.cc turns the public methods into
// these steps; steering_core.cc sends and completes calls.
//
// Locking: one mutex over everything. A step takes it, changes the state and collects
// what to do outside it (a call to send, `ready` callbacks to run) in an Effects, which
// Run() performs after the lock is released: nothing is sent or called under the lock.
// Lifetime: shared by the Steering and every call in flight (their callbacks hold it);
// Stop() makes completions arriving later change nothing and send nothing.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "upstream/steering.h"

namespace switchyard::upstream {

struct Steering::Core : std::enable_shared_from_this<Steering::Core> {
  using Key = std::pair<size_t, std::string>;  // upstream, session key

  struct Upstream {
    Capabilities declared;
    Capabilities caps;
    std::vector<bool> slot_held;
    int warmups_in_flight = 0;
    SteeringCounters counters;
  };

  struct SessionState {
    int slot = -1;
    bool opened = false;
    bool released = false;
    KvAction last = KvAction::kKeep;
    bool decided = false;            // `last` came from the scheduler (OnWait)
    std::deque<UpstreamCall> queue;  // not sent yet
    bool busy = false;               // a call in flight
    bool busy_warmup = false;        // ... which is a warm-up
    bool overtaken = false;          // ... which the turn overtook (counted wasted)
    bool previous_ok = true;
    uint64_t foreground_queued = 0;
    uint64_t foreground_done = 0;
    std::vector<std::pair<uint64_t, std::function<void()>>> waiters;  // ready at done >= first
    std::optional<int64_t> warmed_tokens;  // a completed warm-up awaiting the turn (-1: unknown)
  };

  // What a step does once the lock is released.
  struct Effects {
    std::optional<std::pair<Key, UpstreamCall>> send;
    std::vector<std::function<void()>> ready;
  };

  // Set by Create, immutable after (adapters are immutable themselves).
  UpstreamClient* client = nullptr;
  SteeringOptions options;
  std::vector<std::unique_ptr<UpstreamAdapter>> adapters;
  std::vector<std::string> auth;

  mutable Mutex mu;
  bool stopped GUARDED_BY(mu) = false;
  std::vector<Upstream> upstreams GUARDED_BY(mu);
  std::map<Key, SessionState> sessions GUARDED_BY(mu);

  // The session's state, created on first use (with its slot); null for a bad upstream.
  SessionState* StateLocked(const SessionRef& ref) REQUIRES(mu);
  SessionRef RefLocked(const Key& key, const SessionState& s) const REQUIRES(mu);
  // Queues `calls` for the session and pumps it.
  void EnqueueLocked(const Key& key, SessionState* s, std::vector<UpstreamCall> calls, Effects* fx)
      REQUIRES(mu);
  // Picks the session's next call when none is in flight (skipping, dropping), collects
  // waiters now ready, and forgets a released session with nothing left.
  void PumpLocked(const Key& key, Effects* fx) REQUIRES(mu);
  void CancelWarmupLocked(Upstream* u, SessionState* s) REQUIRES(mu);
  void Run(Effects fx);

  // Sends one call; Complete() runs when its answer is in.
  void Send(const Key& key, const UpstreamCall& call);
  void Complete(const Key& key, const UpstreamCall& call, int status, const std::string& body);
  // Upstream i's capabilities after a probe showed `probed`; nullopt once stopped.
  std::optional<Capabilities> SetProbed(size_t i, const Capabilities& probed);
  // Forwards a request and calls `complete` once with the whole answer's status and body.
  void Forward(size_t upstream, const UpstreamCall& call,
               std::function<void(int status, std::string body)> complete);
};

}  // namespace switchyard::upstream
