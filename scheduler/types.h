// Scheduler value types: where KV lives, transfer grants, and small identifiers.
//
// These are plain values shared by events, commands, policies and the core. Workers are
// the GPU replicas the scheduler places LLM nodes on (indices 0..n-1). A context is a
// workflow-owned growing KV sequence, named "<workflow>/<context>" inside the core.
//
// Thread-safety: values only.
#pragma once

#include <cstdint>
#include <string>

#include "base/time.h"
#include "net_budget/traffic_class.h"

namespace switchyard::scheduler {

// Where a context's KV blocks can live (docs/design.md "Tier").
enum class Tier : uint8_t { kHbm, kHost, kDisk, kPeer, kNone };
const char* TierName(Tier t);  // "hbm", "host", "disk", "peer", "none"

// Traffic class of a transfer: net_budget's, so that a scheduler grant and a budget grant
// speak of the same class (invariant 6).
using net_budget::TrafficClass;
inline const char* TrafficClassName(TrafficClass c) { return net_budget::ClassName(c).data(); }

// A (tier, worker) pair. For kPeer, `worker` is the peer worker whose HBM holds the copy.
struct Location {
  Tier tier = Tier::kNone;
  int worker = -1;
  friend bool operator==(const Location&, const Location&) = default;
};
std::string LocationString(const Location& l);  // "hbm@0", "peer@2", "none"

// A budget grant (invariant 6): the class and bytes a transfer was admitted in, on every
// link of its path. id 0 means "no grant" and is never attached to a transfer command.
struct Grant {
  uint64_t id = 0;
  TrafficClass traffic_class = TrafficClass::kBackground;
  uint64_t bytes = 0;
  bool valid() const { return id != 0; }
};

// Fully qualified context key "<workflow>/<context>".
inline std::string ContextKey(const std::string& workflow, const std::string& context) {
  return workflow + "/" + context;
}

// Key of a tenant's shared prefix of one model: "~prefix/<tenant>/<model>/<id>". It names
// the prefix's blocks in a worker's KV pool next to the contexts; '~' is not allowed in
// workflow ids, so no context key can take this form.
inline std::string PrefixKey(const std::string& tenant, const std::string& model,
                             const std::string& id) {
  return "~prefix/" + tenant + "/" + model + "/" + id;
}
inline bool IsPrefixKey(const std::string& key) { return key.rfind("~prefix/", 0) == 0; }

}  // namespace switchyard::scheduler
