// KvEventSubscriber: proxy mode's subscription to the KV cache events of the upstreams
// that publish them (vLLM's ZeroMQ publisher; kv_events.h), one SUB connection each, so
// that it knows which prompt prefixes each upstream holds at every moment.
//
// One thread polls every connection and applies each batch to that upstream's
// KvBlockIndex. Each message's sequence number is checked: a gap means events were lost
// (the publisher's high-water mark, a reconnect), and a lost removal would leave the index
// claiming blocks the engine dropped, so the index is cleared and fills again from the
// events that follow (prefixes stored before then are unknown until stored again). A
// batch that does not decode is counted with its reason and skipped.
//
// Ownership: Start returns the subscriber; destroying it stops the thread and closes the
// sockets. Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace switchyard::upstream {

class KvEventSubscriber {
 public:
  // One upstream's subscription, for /v1/cluster.
  struct Figures {
    std::string endpoint;    // "" when the upstream publishes none
    uint64_t batches = 0;    // applied
    uint64_t events = 0;     // in them
    uint64_t gaps = 0;       // sequence gaps (each cleared the index)
    uint64_t bad = 0;        // batches that did not decode
    uint64_t unchained = 0;  // stored blocks whose parent was unknown
    size_t gpu_blocks = 0;   // blocks the engine holds in its KV cache, as the index says
    size_t cpu_blocks = 0;   // and in its CPU offload tier
    std::string error;       // the last bad batch's reason
  };

  // `endpoints[i]`: upstream i's publisher ("tcp://host:5557"; "" for none). InvalidArgument
  // naming the endpoint ZeroMQ refuses.
  static Result<std::unique_ptr<KvEventSubscriber>> Start(std::vector<std::string> endpoints);
  ~KvEventSubscriber();
  KvEventSubscriber(const KvEventSubscriber&) = delete;
  KvEventSubscriber& operator=(const KvEventSubscriber&) = delete;

  // Leading tokens of `tokens` upstream `i` holds, in its KV cache or its CPU offload tier
  // (the longer; whole blocks; 0 for an upstream without events).
  int64_t HeldPrefixTokens(size_t i, std::span<const int32_t> tokens) const;
  std::vector<Figures> figures() const;

  struct State;  // kv_event_subscriber.cc

 private:
  explicit KvEventSubscriber(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace switchyard::upstream
