// Strongly typed identifiers and their generation.
//
// Internal ids are 64-bit integers wrapped in a tag type so that a TransferId cannot be
// passed where a WorkflowId is meant. External (API) ids are strings; IdGenerator makes
// unique, non-guessable-by-accident ones ("wf_5f3a9c2e81d04b17") from a seeded
// generator so replay runs stay deterministic.
//
// Thread-safety: ids are values. IdGenerator is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>

#include "base/mutex.h"

namespace switchyard {

template <typename Tag>
struct StrongId {
  uint64_t value = 0;

  constexpr bool valid() const { return value != 0; }
  friend constexpr auto operator<=>(StrongId, StrongId) = default;
};

struct WorkflowIdTag {};
struct NodeIdTag {};
struct ContextIdTag {};
struct BlockIdTag {};
struct TransferIdTag {};
struct RequestIdTag {};
struct TenantIdTag {};
struct PeerIdTag {};

using TransferId = StrongId<TransferIdTag>;
using RequestId = StrongId<RequestIdTag>;
using BlockId = StrongId<BlockIdTag>;
using PeerId = StrongId<PeerIdTag>;

// Hands out increasing 64-bit ids (never 0) and random-looking string ids.
class IdGenerator {
 public:
  explicit IdGenerator(uint64_t seed = 0x5317c4a7d1ULL) : rng_(seed) {}

  uint64_t Next() { return counter_.fetch_add(1, std::memory_order_relaxed) + 1; }
  template <typename Id>
  Id NextId() {
    return Id{Next()};
  }
  // `prefix` + "_" + 16 hex digits, e.g. "wf_5f3a9c2e81d04b17".
  std::string NextString(std::string_view prefix);

 private:
  std::atomic<uint64_t> counter_{0};
  Mutex mu_;
  std::mt19937_64 rng_ GUARDED_BY(mu_);
};

// Formats a 64-bit value as 16 lower-case hex digits.
std::string HexId(uint64_t v);

}  // namespace switchyard

template <typename Tag>
struct std::hash<switchyard::StrongId<Tag>> {
  size_t operator()(const switchyard::StrongId<Tag>& id) const noexcept {
    return std::hash<uint64_t>()(id.value);
  }
};
