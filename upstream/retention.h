// RetentionModel: how long an upstream keeps a waiting session's prefix cached, learned
// from the cached_tokens its answers report, for upstreams that publish no KV events.
//
// An engine with automatic prefix caching (vLLM, SGLang, llama.cpp, the CPU engine) frees a
// finished request's blocks into an LRU and evicts them as new KV needs room. Whether a
// session's prefix is still there when its next turn comes therefore depends less on how
// long the session waited than on how much new KV the upstream wrote meanwhile: its churn.
// The model counts the churn each upstream's answers report (prompt tokens not cached plus
// output tokens: the KV they wrote) on one counter per upstream; a session's mark is the
// counter when its last answer came, and its churn at its next turn is the counter then
// less the mark.
//
// Each resumed turn that nothing steered in between (no warm-up, no discard) is one
// observation: its churn and whether the upstream still held its prefix (cached tokens at
// least half the previous turn's prompt and output). The model keeps the last
// kMaxObservations and learns the churn threshold that best separates held from lost
// prefixes (the LRU's effective capacity, in tokens, as this proxy's traffic fills it;
// traffic from other clients makes it smaller). A prediction needs kMinObservations, of
// which at least one lost: until the upstream has been seen to drop a prefix, it is
// assumed to keep them.
//
// Thread-safety: not thread-safe; ProxySteering guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

namespace switchyard::upstream {

class RetentionModel {
 public:
  static constexpr size_t kMaxObservations = 64;
  static constexpr size_t kMinObservations = 8;

  // What the figures show (/v1/cluster).
  struct Figures {
    uint64_t observations = 0;  // kept now
    uint64_t held = 0;          // of which the prefix was held
    uint64_t churn = 0;         // the counter: KV tokens the upstream's answers wrote
    // The learned threshold: a prefix is predicted lost past this many tokens of churn
    // (nullopt: no prediction yet).
    std::optional<uint64_t> capacity;
  };

  // An answer wrote `tokens` of new KV on the upstream.
  void AddWritten(int64_t tokens);
  uint64_t churn() const { return churn_; }

  // A resumed turn found `cached` of the `prefix` tokens its session's previous turn left,
  // after `churn` tokens written since.
  void Observe(uint64_t churn, int64_t prefix, int64_t cached);

  // Whether a prefix is still held after `churn` tokens written since its turn; nullopt
  // while the model cannot tell (too few observations, or none lost).
  std::optional<bool> Held(uint64_t churn) const;

  Figures figures() const;

 private:
  struct Observation {
    uint64_t churn = 0;
    bool held = false;
  };
  // The churn threshold with the fewest observations on its wrong side (held past it, lost
  // within it); among equals, the middle of the widest gap.
  std::optional<uint64_t> Capacity() const;

  std::deque<Observation> seen_;
  uint64_t churn_ = 0;
};

}  // namespace switchyard::upstream
